package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startKfake starts an in-process kfake cluster, closed when the test ends,
// and returns its --bootstrap-server value.
func startKfake(t *testing.T, opts ...kfake.Opt) string {
	_, bs := startKfakeCluster(t, opts...)
	return bs
}

func startKfakeCluster(t *testing.T, opts ...kfake.Opt) (*kfake.Cluster, string) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, strings.Join(c.ListenAddrs(), ",")
}

// runCLI runs one raftka command line with stdin, returning what it wrote.
func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	app.Reader = strings.NewReader(stdin)
	err = app.Run(append([]string{"raftka", "--log-level", "error"}, args...))
	return out.String(), errOut.String(), err
}

// mustRun is runCLI for commands that must succeed.
func mustRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := runCLI(t, stdin, args...)
	if err != nil {
		t.Fatalf("raftka %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func TestClientParseAcks(t *testing.T) {
	for _, tc := range []struct {
		in      string
		all, ok bool
	}{
		{"all", true, true}, {"-1", true, true}, {"ALL", true, true},
		{"1", false, true}, {"0", false, true},
		{"2", false, false}, {"", false, false}, {"leader", false, false},
	} {
		acks, all, err := parseAcks(tc.in)
		if (err == nil) != tc.ok || all != tc.all {
			t.Errorf("parseAcks(%q) = all %v, err %v", tc.in, all, err)
		}
		if err == nil && tc.all && acks != kgo.AllISRAcks() {
			t.Errorf("parseAcks(%q) is not AllISRAcks", tc.in)
		}
	}
}

func TestClientParseCompression(t *testing.T) {
	for _, ok := range []string{"none", "gzip", "snappy", "lz4", "zstd", "GZIP"} {
		if _, err := parseCompression(ok); err != nil {
			t.Errorf("parseCompression(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"brotli", "lzma", "gz"} {
		if _, err := parseCompression(bad); err == nil {
			t.Errorf("parseCompression(%q): want an error", bad)
		}
	}
}

func TestClientSeedBrokersAndUnescape(t *testing.T) {
	if got, err := seedBrokers("a:1, b:2"); err != nil || len(got) != 2 || got[1] != "b:2" {
		t.Fatalf("seedBrokers = %v, %v", got, err)
	}
	for _, bad := range []string{"", "a:1,,b:2", "host", "host:"} {
		if _, err := seedBrokers(bad); err == nil {
			t.Errorf("seedBrokers(%q): want an error", bad)
		}
	}
	for in, want := range map[string]string{`\t`: "\t", `a\nb`: "a\nb", `:`: ":", `"x"`: `"x"`, `\q`: `\q`} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
