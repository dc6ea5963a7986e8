package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestACLsRoundTrip(t *testing.T) {
	bs := startKfake(t)
	out := mustRun(t, "", "acls", "add", "--bootstrap-server", bs, "--allow-principal", "User:alice", "--operation", "Read",
		"--operation", "DescribeConfigs", "--topic", "orders-", "--resource-pattern-type", "prefixed")
	if !strings.Contains(out, "Added 2 ACLs") || !strings.Contains(out, "operation=DESCRIBE_CONFIGS") || !strings.Contains(out, "patternType=PREFIXED") {
		t.Fatalf("add printed %q", out)
	}
	mustRun(t, "", "acls", "add", "--bootstrap-server", bs, "--consumer", "--allow-principal", "User:bob", "--topic", "events", "--group", "g1")
	mustRun(t, "", "acls", "add", "--bootstrap-server", bs, "--deny-principal", "User:bob", "--deny-host", "10.0.0.1", "--operation", "Write", "--topic", "events")

	all := mustRun(t, "", "acls", "list", "--bootstrap-server", bs)
	for _, want := range []string{
		"ResourcePattern(resourceType=TOPIC, name=orders-, patternType=PREFIXED)",
		"(principal=User:bob, host=10.0.0.1, operation=WRITE, permissionType=DENY)",
		"ResourcePattern(resourceType=GROUP, name=g1, patternType=LITERAL)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("list lacks %q:\n%s", want, all)
		}
	}
	bobs := mustRun(t, "", "acls", "list", "--bootstrap-server", bs, "--principal", "User:bob")
	if strings.Contains(bobs, "alice") || strings.Count(bobs, "User:bob") != 4 {
		t.Errorf("list --principal User:bob:\n%s", bobs)
	}

	out = mustRun(t, "", "acls", "remove", "--bootstrap-server", bs, "--topic", "events", "--deny-principal", "User:bob")
	if strings.Count(out, "Removed ") != 1 {
		t.Fatalf("remove printed %q", out)
	}
	out = mustRun(t, "", "acls", "remove", "--bootstrap-server", bs, "--topic", "events")
	if strings.Count(out, "Removed ") != 2 {
		t.Fatalf("remove of the topic's ACLs printed %q", out)
	}
	if out := mustRun(t, "", "acls", "remove", "--bootstrap-server", bs, "--topic", "events"); !strings.Contains(out, "No ACLs matched") {
		t.Fatalf("second remove printed %q", out)
	}
}

func TestACLsFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"acls", "add", "--topic", "t", "--operation", "Read"},                                             // no principal
		{"acls", "add", "--allow-principal", "alice", "--topic", "t"},                                      // no type
		{"acls", "add", "--allow-principal", "User:a"},                                                     // no resource
		{"acls", "add", "--allow-principal", "User:a", "--topic", "t", "--operation", "Fly"},               // bad op
		{"acls", "add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"}, // filter type
		{"acls", "add", "--allow-principal", "User:a", "--consumer", "--topic", "t"},                       // no group
		{"acls", "remove", "--allow-principal", "User:a"},                                                  // no resource
	} {
		if _, _, err := runCLI(t, "", append(args, "--bootstrap-server", "127.0.0.1:1")...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// --command-config reads Kafka's client keys (config.ParseClientSecurity's
// tests cover the keys); a bad value is an error.
func TestCommandConfig(t *testing.T) {
	bs := startKfake(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain.properties", "security.protocol=PLAINTEXT\nclient.id=x\n")
	if _, _, err := runCLI(t, "", "topics", "list", "--bootstrap-server", bs, "--command-config", plain); err != nil {
		t.Fatalf("plaintext command config: %v", err)
	}
	bad := write("bad.properties", "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n")
	if _, _, err := runCLI(t, "", "topics", "list", "--bootstrap-server", bs, "--command-config", bad); err == nil || !strings.Contains(err.Error(), "sasl.mechanism") {
		t.Fatalf("GSSAPI: %v", err)
	}
}
