package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// usersScramCLI drives `raftka users scram` over SASL_SSL as the bootstrap
// admin, with kafka-configs.sh's --add-config syntax: the user it sets logs
// in with franz-go's SCRAM client on every node (so the salted password the
// CLI computed is what the brokers verify), a deleted mechanism stops
// logging in everywhere while the other still works, and a user deleted
// altogether is RESOURCE_NOT_FOUND to describe.
func usersScramCLI(t *testing.T, ctx context.Context, sc *securedCluster) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "admin.properties")
	if err := os.WriteFile(conf, []byte("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="`+adminPassword+`";`+"\n"+
		"ssl.truststore.type=PEM\nssl.truststore.location="+sc.certs.Files.CAPEM+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addrs := sc.addrs["SASL_SSL"]
	users := func(node int, args ...string) (string, error) {
		return cluster.Run(t, append(append([]string{"users", "scram"}, args...), "--bootstrap-server", addrs[node], "--command-config", conf)...)
	}
	must := func(node int, args ...string) string {
		t.Helper()
		out, err := users(node, args...)
		if err != nil {
			t.Fatalf("users scram %v: %v\n%s", args, err, out)
		}
		return out
	}
	const davePassword = "dave,pw=1" // a comma and '=' inside the brackets are the password's
	out := must(0, "set", "--user", "dave",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password="+davePassword+"],SCRAM-SHA-512=[password="+davePassword+"]")
	if !strings.Contains(out, "Completed updating config for user dave.") {
		t.Fatalf("set printed %q", out)
	}
	// Describe reads the answering broker's image, which may be a moment
	// behind the controller's: ask another node until it has dave.
	want := "SCRAM credential configs for user-principal 'dave' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		out, err := users(1, "describe", "--user", "dave")
		return err == nil && strings.Contains(out, want), fmt.Sprintf("describe on node 2: %v\n%s", err, out)
	})
	if all := must(2, "describe"); !strings.Contains(all, "SCRAM credential configs for user-principal 'admin' are SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192") {
		t.Fatalf("describe of every user lacks admin:\n%s", all)
	}

	dave256 := scram.Auth{User: "dave", Pass: davePassword}.AsSha256Mechanism()
	dave512 := scram.Auth{User: "dave", Pass: davePassword}.AsSha512Mechanism()
	// everywhere waits until every node's login with m gives the wanted
	// outcome (nil, or SASL_AUTHENTICATION_FAILED).
	everywhere := func(m sasl.Mechanism, refused bool) {
		t.Helper()
		for i, addr := range addrs {
			cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
				err := pingOver(ctx, addr, sc.tls(false), m)
				if refused {
					return errors.Is(err, kerr.SaslAuthenticationFailed), fmt.Sprintf("dave %s on node %d: %v, want SASL_AUTHENTICATION_FAILED", m.Name(), i+1, err)
				}
				return err == nil, fmt.Sprintf("dave %s on node %d: %v", m.Name(), i+1, err)
			})
		}
	}
	everywhere(dave256, false)
	everywhere(dave512, false)
	if err := pingOver(ctx, addrs[0], sc.tls(false), scram.Auth{User: "dave", Pass: "dave"}.AsSha256Mechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("dave with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	// A new password from a file replaces the old one.
	pwFile := filepath.Join(dir, "dave.pw")
	if err := os.WriteFile(pwFile, []byte("dave-new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	must(1, "set", "--user", "dave", "--mechanism", "SCRAM-SHA-512", "--password-file", pwFile)
	everywhere(dave512, true)
	everywhere(scram.Auth{User: "dave", Pass: "dave-new"}.AsSha512Mechanism(), false)

	must(0, "delete", "--user", "dave", "--mechanism", "SCRAM-SHA-512")
	everywhere(scram.Auth{User: "dave", Pass: "dave-new"}.AsSha512Mechanism(), true)
	everywhere(dave256, false)
	must(0, "delete", "--user", "dave")
	everywhere(dave256, true)
	out, err := users(0, "describe", "--user", "dave")
	if err == nil || !strings.Contains(out, "Error retrieving SCRAM credential configs for user-principal 'dave': RESOURCE_NOT_FOUND") {
		t.Fatalf("describe after delete: %v\n%s", err, out)
	}
	if out, err := users(0, "set", "--user", "dave", "--add-config", "SCRAM-SHA-256=[iterations=20000,password=x]"); err == nil || !strings.Contains(out, "UNACCEPTABLE_CREDENTIAL") {
		t.Fatalf("20000 iterations: %v\n%s", err, out)
	}
}
