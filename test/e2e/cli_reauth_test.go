package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A long-running `raftka consume` on a SASL listener whose sessions last
// 2 s (connections.max.reauth.ms, KIP-368) re-authenticates its
// connections in place: every record produced over about five lifetimes
// is printed, the broker closes no connection for an expired session,
// and it answered more SaslHandshakes than it accepted connections.
// PLAIN and SCRAM-SHA-256 (SCRAM re-derives nothing: the CLI keeps the
// salted password).
func TestCLIConsumeReauthenticates(t *testing.T) {
	const reauthMs = 2000
	c := cluster.Prepare(t, cluster.Nodes(1), cluster.LogLevel("info"),
		cluster.FormatArgs("--add-scram", "SCRAM-SHA-256=[name=admin,password="+adminPassword+"]"))
	n := c.Nodes()[0]
	sasl := fmt.Sprintf("127.0.0.1:%d", cluster.FreePorts(t, 1)[0])
	extra := strings.Join([]string{
		"listeners=PLAINTEXT://" + n.ClientAddr() + ",CONTROLLER://" + n.ControllerAddr() + ",SASL_PLAINTEXT://" + sasl,
		"advertised.listeners=PLAINTEXT://" + n.ClientAddr() + ",SASL_PLAINTEXT://" + sasl,
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="admin" password="` + adminPassword + `" user_carol="` + carolPassword + `";`,
		"connections.max.reauth.ms=" + strconv.Itoa(reauthMs),
	}, "\n") + "\n"
	f, err := os.OpenFile(n.ConfigPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(extra); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c.StartAll()
	ctx := ctxFor(t, 3*time.Minute)

	prod, err := kgo.NewClient(kgo.SeedBrokers(n.ClientAddr()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	dir := t.TempDir()
	for _, tc := range []struct{ mech, jaas string }{
		{"PLAIN", `org.apache.kafka.common.security.plain.PlainLoginModule required username="carol" password="` + carolPassword + `";`},
		{"SCRAM-SHA-256", `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="` + adminPassword + `";`},
	} {
		t.Run(tc.mech, func(t *testing.T) {
			topic := "reauth-" + strings.ToLower(tc.mech)
			if _, err := kadm.NewClient(prod).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			conf := filepath.Join(dir, tc.mech+".properties")
			if err := os.WriteFile(conf, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism="+tc.mech+"\nsasl.jaas.config="+tc.jaas+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			before := saslCounts(t, n)

			const records = 40
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			cmd := exec.CommandContext(cctx, cluster.Binary(t), "consume", "--bootstrap-server", sasl, "--command-config", conf,
				"--topic", topic, "--from-beginning", "--max-messages", strconv.Itoa(records))
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// One record every 250 ms: 10 s, five session lifetimes.
			for i := range records {
				if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("r" + strconv.Itoa(i))}).FirstErr(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(250 * time.Millisecond)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("consume: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != records || lines[0] != "r0" || lines[records-1] != "r"+strconv.Itoa(records-1) {
				t.Fatalf("consume printed %d lines, want r0..r%d:\n%s", len(lines), records-1, out.String())
			}
			after := saslCounts(t, n)
			if d := after.expired - before.expired; d != 0 {
				t.Fatalf("%v connections closed for an expired session", d)
			}
			conns, handshakes := after.conns-before.conns, after.handshakes-before.handshakes
			if handshakes <= conns {
				t.Fatalf("%v SaslHandshakes on %v new connections: no connection re-authenticated in place", handshakes, conns)
			}
			t.Logf("%s: %v connections, %v SaslHandshakes over %d records", tc.mech, conns, handshakes, records)
		})
	}
}

type saslCount struct{ conns, handshakes, expired float64 }

// saslCounts reads the node's SASL listener connections, SaslHandshake v1
// requests and session_expired closes; an unlabelled series not yet
// exported is 0.
func saslCounts(t *testing.T, n *cluster.Node) saslCount {
	t.Helper()
	get := func(name string) float64 {
		v, err := metric(n, name)
		if err != nil && !strings.Contains(err.Error(), "not found") {
			t.Fatal(err)
		}
		return v
	}
	return saslCount{
		conns:      get(`raftka_connections_total{listener="SASL_PLAINTEXT"}`),
		handshakes: get(`raftka_requests_total{api_key="17",version="1"}`),
		expired:    get(`raftka_rejected_requests_total{reason="session_expired"}`),
	}
}
