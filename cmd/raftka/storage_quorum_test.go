package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftka/raftka/storage"
)

func writeDynamicConfig(t *testing.T, root, roles string) string {
	t.Helper()
	text := "process.roles=" + roles + `
node.id=2
controller.quorum.bootstrap.servers=127.0.0.1:19093
listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093
controller.listener.names=CONTROLLER
log.dirs=` + filepath.Join(root, "a") + `
metadata.log.dir=` + filepath.Join(root, "meta") + "\n"
	path := filepath.Join(root, "server.properties")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseInitialControllers(t *testing.T) {
	dir := storage.RandomUUID().String()
	cases := []struct {
		in   string
		ok   bool
		want string
	}{
		{"1@h1:9093:" + dir, true, "1@h1:9093:" + dir},
		{"1@h1:9093:" + dir + ",2@[::1]:9093:" + dir, true, "1@h1:9093:" + dir + " 2@[::1]:9093:" + dir},
		{"1@h1:9093", false, ""},
		{"h1:9093:" + dir, false, ""},
		{"x@h1:9093:" + dir, false, ""},
		{"1@h1:0:" + dir, false, ""},
		{"1@h1:9093:notauuid", false, ""},
		{"1@h1:9093:" + dir + ",1@h2:9093:" + dir, false, ""},
	}
	for _, tc := range cases {
		got, err := parseInitialControllers(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if tc.ok {
			var s []string
			for _, v := range got {
				s = append(s, v.String())
			}
			if strings.Join(s, " ") != tc.want {
				t.Errorf("%q: %v", tc.in, s)
			}
		}
	}
}

// kafka-storage.sh's rules for the three quorum flags, and what a format
// with each writes.
func TestStorageFormatQuorumFlags(t *testing.T) {
	id := storage.RandomUUID().String()
	dir := storage.RandomUUID().String()
	cases := []struct {
		name   string
		roles  string
		static bool
		args   []string
		err    string
		voters string // bootstrap.voters, "" for none
	}{
		{name: "controller needs a flag", roles: "broker,controller", err: "you must give one of --standalone"},
		{name: "two flags", roles: "broker,controller", args: []string{"--standalone", "--no-initial-controllers"}, err: "only one of"},
		{name: "flags with static voters", roles: "broker,controller", static: true, args: []string{"--standalone"}, err: "when controller.quorum.voters is set"},
		{name: "standalone", roles: "broker,controller", args: []string{"--standalone"}, voters: "2@127.0.0.1:19093:"},
		{name: "initial controllers", roles: "broker,controller", args: []string{"--initial-controllers", "1@127.0.0.1:1:" + id + ",2@127.0.0.1:19093:" + dir}, voters: "1@127.0.0.1:1:" + id + "\n2@127.0.0.1:19093:" + dir + "\n"},
		{name: "initial controllers without this node", roles: "broker,controller", args: []string{"--initial-controllers", "1@127.0.0.1:1:" + id}, err: "does not list node.id 2"},
		{name: "no initial controllers", roles: "broker,controller", args: []string{"--no-initial-controllers"}},
		{name: "broker", roles: "broker"},
		{name: "broker standalone", roles: "broker", args: []string{"--standalone"}, err: "are for controllers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			var cfg string
			if tc.static {
				cfg = writeNodeConfig(t, root, 2)
			} else {
				cfg = writeDynamicConfig(t, root, tc.roles)
			}
			out, err := runApp(append([]string{"storage", "format", "--config", cfg, "--cluster-id", storage.RandomUUID().String()}, tc.args...)...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q\n%s", err, tc.err, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			meta := filepath.Join(root, "meta")
			b, err := os.ReadFile(filepath.Join(meta, votersFile))
			if tc.voters == "" {
				if err == nil {
					t.Fatalf("wrote voters %q", b)
				}
				return
			}
			if err != nil || !strings.HasPrefix(string(b), tc.voters) {
				t.Fatalf("voters %q (%v), want %q", b, err, tc.voters)
			}
			m, err := storage.ReadMetaProperties(meta)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "2@127.0.0.1:19093:"+m.DirectoryID) {
				t.Fatalf("metadata dir's directory.id %s is not this node's voter entry in %q", m.DirectoryID, b)
			}
			vs, err := readVoters(meta)
			if err != nil || len(vs) == 0 {
				t.Fatalf("readVoters: %v %v", vs, err)
			}
			boot, err := readBootstrap(meta)
			if err != nil || len(boot) != 1+len(vs) || !strings.Contains(boot[0].Type().String(), "FeatureLevel") {
				t.Fatalf("bootstrap records %v (%v), want kraft.version 1 and each voter's directory id", boot, err)
			}
			for _, r := range boot[1:] {
				if r.Type().String() != "VoterDirectory" {
					t.Fatalf("bootstrap record %v, want VoterDirectory", r)
				}
			}
		})
	}
}
