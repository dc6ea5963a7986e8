package main

import (
	"strings"
	"testing"
)

func TestQuotasRoundTrip(t *testing.T) {
	bs := startKfake(t)
	out := mustRun(t, "", "quotas", "set", "--bootstrap-server", bs, "--user", "alice", "--client-default",
		"--add-config", "producer_byte_rate=1048576", "--add-config", "consumer_byte_rate=2048")
	if !strings.Contains(out, "user='alice', client-id=<default>") {
		t.Fatalf("set printed %q", out)
	}
	mustRun(t, "", "quotas", "set", "--bootstrap-server", bs, "--client-id", "etl", "--add-config", "request_percentage=25.5")
	all := mustRun(t, "", "quotas", "describe", "--bootstrap-server", bs)
	for _, want := range []string{
		"Quota configs for user='alice', client-id=<default> are consumer_byte_rate=2048, producer_byte_rate=1048576",
		"Quota configs for client-id='etl' are request_percentage=25.5",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("describe lacks %q:\n%s", want, all)
		}
	}
	mustRun(t, "", "quotas", "set", "--bootstrap-server", bs, "--client-id", "etl", "--delete-config", "request_percentage")
	one := mustRun(t, "", "quotas", "describe", "--bootstrap-server", bs, "--client-id", "etl")
	if strings.Contains(one, "etl") {
		t.Fatalf("after delete: %q", one)
	}
	for _, args := range [][]string{
		{"quotas", "set", "--add-config", "producer_byte_rate=1"},                                  // no entity
		{"quotas", "set", "--user", "a"},                                                           // no ops
		{"quotas", "set", "--user", "a", "--user-default", "--add-config", "producer_byte_rate=1"}, // both
		{"quotas", "set", "--user", "a", "--add-config", "producer_byte_rate=fast"},                // not a number
	} {
		if _, _, err := runCLI(t, "", append(args, "--bootstrap-server", bs)...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
