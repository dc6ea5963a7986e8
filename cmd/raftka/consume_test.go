package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestConsumeGroupCommits(t *testing.T) {
	bs := startKfake(t, kfake.SeedTopics(3, "events"))
	var in strings.Builder
	for i := range 30 {
		fmt.Fprintf(&in, "k%d\tv%d\n", i, i)
	}
	mustRun(t, in.String(), "produce", "--bootstrap-server", bs, "--topic", "events", "--parse-key")

	group := []string{"consume", "--bootstrap-server", bs, "--topic", "events", "--group", "g1", "--from-beginning"}
	// The first run stops after 20 of 30: only those 20 may be committed.
	first := mustRun(t, "", append(group, "--max-messages", "20", "--print-key")...)
	second := mustRun(t, "", append(group, "--timeout-ms", "3000", "--print-key")...)
	seen := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(first+second, "\n"), "\n") {
		seen[l]++
	}
	if len(strings.Split(strings.TrimSuffix(first, "\n"), "\n")) != 20 || len(seen) != 30 {
		t.Fatalf("first run:\n%s\nsecond run:\n%s", first, second)
	}
	for l, n := range seen {
		if n != 1 {
			t.Errorf("%q read %d times", l, n)
		}
	}

	// Everything is committed now: a third run reads nothing.
	if third := mustRun(t, "", append(group, "--timeout-ms", "1500")...); third != "" {
		t.Fatalf("third run of a fully committed group read %q", third)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != 30 {
		t.Fatalf("committed offsets add up to %d, want 30: %v", total, offs)
	}
}

func TestConsumeIdleTimeoutOnEmptyTopic(t *testing.T) {
	bs := startKfake(t, kfake.SeedTopics(1, "empty"))
	out, errOut, err := runCLI(t, "", "consume", "--bootstrap-server", bs, "--topic", "empty", "--from-beginning", "--timeout-ms", "300")
	if err != nil || out != "" || errOut != "Processed a total of 0 messages\n" {
		t.Fatalf("out %q, stderr %q, err %v", out, errOut, err)
	}
}

func TestGroupProtocolOptions(t *testing.T) {
	for _, tc := range []struct {
		protocol, assignor string
		opts               int
		err                string
	}{
		{"classic", "", 0, ""},
		{"CLASSIC", "", 0, ""},
		{"consumer", "", 2, ""},
		{"consumer", "uniform", 2, ""},
		{"consumer", "range", 2, ""},
		{"consumer", "sticky", 0, "want uniform or range"},
		{"classic", "range", 0, "needs --group-protocol consumer"},
		{"share", "", 0, "want classic or consumer"},
	} {
		opts, err := groupProtocolOpts(tc.protocol, tc.assignor)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s/%s: error %v, want %q", tc.protocol, tc.assignor, err, tc.err)
			}
			continue
		}
		if err != nil || len(opts) != tc.opts {
			t.Errorf("%s/%s: %d options, error %v; want %d", tc.protocol, tc.assignor, len(opts), err, tc.opts)
		}
	}
	if _, _, err := runCLI(t, "", "consume", "--bootstrap-server", "127.0.0.1:1", "--topic", "x", "--group-protocol", "consumer"); err == nil ||
		!strings.Contains(err.Error(), "need --group") {
		t.Errorf("--group-protocol without --group: %v", err)
	}
}

// consume --share-group refuses the options a share group decides itself
// and unknown acknowledgement types, before connecting.
func TestConsumeShareGroupFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--group", "g"}, {"--from-beginning"}, {"--offset", "earliest"}, {"--partition", "0"},
		{"--isolation-level", "read_committed"}, {"--share-acknowledge", "maybe"},
	} {
		full := append([]string{"consume", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--share-group", "sg"}, args...)
		if _, _, err := runCLI(t, "", full...); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%v: %v, want a flag error", args, err)
		}
	}
}
