package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/raftka/raftka/test/certs"
	"github.com/raftka/raftka/test/cluster"
	"github.com/segmentio/kafka-go"
	kgoscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// securedCluster is a three-node cluster whose nodes serve, beside the
// harness's PLAINTEXT and CONTROLLER listeners, one listener of each
// secured kind, configured with Kafka's keys only:
//
//	SSL             TLS, client certificate optional
//	MTLS            TLS, client certificate required (ssl.client.auth=required)
//	SASL_SSL        SCRAM-SHA-256 and SCRAM-SHA-512 over TLS
//	SASL_PLAINTEXT  PLAIN (users in the JAAS config), SCRAM-SHA-256 and
//	                OAUTHBEARER (unsecured tokens with the scope kafka)
//
// The cluster starts with the SCRAM user admin from storage format
// --add-scram, and brokers replicate over SASL_SSL as that user; the TLS
// material is made for this run.
type securedCluster struct {
	c     *cluster.Cluster
	certs *certs.Set
	addrs map[string][]string // listener -> each node's host:port
}

const (
	adminPassword = "admin-secret"
	carolPassword = "carol-secret" // PLAIN user
	alicePassword = "alice-pw"     // SCRAM user made through AlterUserScramCredentials
)

func startSecuredCluster(t *testing.T) *securedCluster {
	t.Helper()
	set, err := certs.New("client")
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	c := cluster.Prepare(t, cluster.Nodes(3), cluster.LogLevel("info"),
		cluster.FormatArgs(
			"--add-scram", "SCRAM-SHA-256=[name=admin,password="+adminPassword+"]",
			"--add-scram", "SCRAM-SHA-512=[name=admin,password="+adminPassword+",iterations=8192]"))
	names := []string{"SSL", "MTLS", "SASL_SSL", "SASL_PLAINTEXT"}
	ports := cluster.FreePorts(t, len(names)*len(c.Nodes()))
	sc := &securedCluster{c: c, certs: set, addrs: map[string][]string{}}
	for i, n := range c.Nodes() {
		listeners := []string{"PLAINTEXT://" + n.ClientAddr(), "CONTROLLER://" + n.ControllerAddr()}
		advertised := []string{"PLAINTEXT://" + n.ClientAddr()}
		for j, name := range names {
			addr := fmt.Sprintf("127.0.0.1:%d", ports[i*len(names)+j])
			sc.addrs[name] = append(sc.addrs[name], addr)
			listeners = append(listeners, name+"://"+addr)
			advertised = append(advertised, name+"://"+addr)
		}
		// Appended: a later key wins in a properties file.
		extra := strings.Join([]string{
			"listeners=" + strings.Join(listeners, ","),
			"advertised.listeners=" + strings.Join(advertised, ","),
			"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
			"ssl.keystore.type=PKCS12",
			"ssl.keystore.location=" + set.Files.ServerP12,
			"ssl.keystore.password=" + certs.Password,
			"ssl.truststore.type=PEM",
			"ssl.truststore.location=" + set.Files.CAPEM,
			"listener.name.mtls.ssl.client.auth=required",
			"listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
			"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,OAUTHBEARER",
			`listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="kafka";`,
			`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="admin" password="` + adminPassword + `" user_admin="` + adminPassword + `" user_carol="` + carolPassword + `";`,
			"connection.failed.authentication.delay.ms=50",
			// Followers fetch over SASL_SSL as the bootstrap admin, with
			// their keystore as client certificate.
			"inter.broker.listener.name=SASL_SSL",
			"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
			`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="` + adminPassword + `";`,
		}, "\n") + "\n"
		f, err := os.OpenFile(n.ConfigPath(), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(extra); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	c.StartAll()
	return sc
}

func (sc *securedCluster) tls(withClientCert bool) *tls.Config {
	tc := &tls.Config{RootCAs: sc.certs.Pool()}
	if withClientCert {
		tc.Certificates = []tls.Certificate{sc.certs.Client.TLS()}
	}
	return tc
}

// kgoOn returns a franz-go client for one kind of listener.
func (sc *securedCluster) kgoOn(t testing.TB, listener string, tc *tls.Config, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	o := []kgo.Opt{kgo.SeedBrokers(sc.addrs[listener]...), kgo.RetryTimeout(20 * time.Second)}
	if tc != nil {
		o = append(o, kgo.DialTLSConfig(tc))
	}
	if m != nil {
		o = append(o, kgo.SASL(m))
	}
	cl, err := kgo.NewClient(append(o, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// roundTripKgo produces n records to topic and reads them back in a group.
func roundTripKgo(t *testing.T, ctx context.Context, sc *securedCluster, listener string, tc *tls.Config, m sasl.Mechanism, topic string, n int) {
	t.Helper()
	prod := sc.kgoOn(t, listener, tc, m)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%s-%d", listener, i))})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce over %s: %v", listener, err)
	}
	cons := sc.kgoOn(t, listener, tc, m, kgo.ConsumeTopics(topic), kgo.ConsumerGroup("g-"+topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]bool{}
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d over %s", len(got), n, listener)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch over %s: %v", listener, err) })
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit over %s: %v", listener, err)
	}
}

// Real clients against every secured listener kind of one cluster, and
// the ways a client is refused. Subtests run one after another on the
// shared cluster.
func TestSecurityListenersWithRealClients(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	sc := startSecuredCluster(t)
	ctx := ctxFor(t, 4*time.Minute)
	admin := scram.Auth{User: "admin", Pass: adminPassword}

	// The cluster's first user came from storage format --add-scram.
	adm := kadm.NewClient(sc.kgoOn(t, "SASL_SSL", sc.tls(false), admin.AsSha256Mechanism()))
	for _, topic := range []string{"sec-franz", "sec-mtls", "sec-ssl", "sec-sarama", "sec-kafka-go", "sec-kcat", "sec-py-ssl", "sec-py-scram", "sec-py-plain", "sec-oauth", "sec-py-oauth"} {
		if err := createTopic(ctx, adm, topic, 3, 3); err != nil {
			t.Fatalf("create %s over SASL_SSL: %v", topic, err)
		}
	}

	t.Run("franz-go SCRAM-SHA-256 over TLS, users managed through the SCRAM APIs", func(t *testing.T) {
		roundTripKgo(t, ctx, sc, "SASL_SSL", sc.tls(false), admin.AsSha256Mechanism(), "sec-franz", 100)
		// acks=all needed the followers, which fetch over SASL_SSL: every
		// replica is in sync.
		td, err := adm.ListTopics(ctx, "sec-franz")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range td["sec-franz"].Partitions {
			if len(p.ISR) != 3 {
				t.Errorf("partition %d ISR %v, want all 3 replicas", p.Partition, p.ISR)
			}
		}
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
			{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: alicePassword},
			{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: alicePassword},
		})
		if err != nil || len(res) != 1 || res["alice"].Err != nil {
			t.Fatalf("AlterUserScramCredentials: %v %+v", err, res)
		}
		// Describe reads the answering broker's image, which may be a
		// moment behind the controller's (as in Kafka): wait for it.
		cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
			described, err := adm.DescribeUserSCRAMs(ctx)
			if err != nil {
				return false, err.Error()
			}
			a, ad := described["alice"], described["admin"]
			return len(a.CredInfos) == 2 && len(ad.CredInfos) == 2, fmt.Sprintf("described %+v", described)
		})
		one, err := adm.DescribeUserSCRAMs(ctx, "nobody")
		if err != nil || !errors.Is(one["nobody"].Err, kerr.ResourceNotFound) {
			t.Fatalf("describing an unknown user: %v %+v", err, one)
		}
		// Every node authenticates alice: the credential is in the
		// replicated metadata.
		for i, addr := range sc.addrs["SASL_SSL"] {
			cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
				err := pingOver(ctx, addr, sc.tls(false), scram.Auth{User: "alice", Pass: alicePassword}.AsSha512Mechanism())
				return err == nil, fmt.Sprintf("alice on node %d: %v", i+1, err)
			})
		}
	})

	t.Run("franz-go mTLS", func(t *testing.T) {
		roundTripKgo(t, ctx, sc, "MTLS", sc.tls(true), nil, "sec-mtls", 100)
		if err := pingOver(ctx, sc.addrs["MTLS"][0], sc.tls(false), nil); err == nil {
			t.Fatal("a client without a certificate was served on the mTLS listener")
		}
	})

	t.Run("franz-go TLS", func(t *testing.T) {
		roundTripKgo(t, ctx, sc, "SSL", sc.tls(false), nil, "sec-ssl", 50)
	})

	t.Run("raftka CLI with --command-config", func(t *testing.T) {
		dir := t.TempDir()
		for _, c := range []struct{ name, listener, props string }{
			{"sasl_ssl", "SASL_SSL", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n" +
				`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="` + adminPassword + `";` + "\n" +
				"ssl.truststore.type=PEM\nssl.truststore.location=" + sc.certs.Files.CAPEM + "\n"},
			{"mtls", "MTLS", "security.protocol=SSL\nssl.truststore.location=" + sc.certs.Files.CAPEM + "\n" +
				"ssl.keystore.type=PKCS12\nssl.keystore.location=" + sc.certs.Files.ClientP12 + "\nssl.keystore.password=" + certs.Password + "\n"},
			{"sasl_plaintext", "SASL_PLAINTEXT", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" +
				`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="carol" password="` + carolPassword + `";` + "\n"},
		} {
			path := dir + "/" + c.name + ".properties"
			if err := os.WriteFile(path, []byte(c.props), 0o600); err != nil {
				t.Fatal(err)
			}
			topic := "sec-cli-" + c.name
			if out, err := cluster.Run(t, "topics", "create", "--bootstrap-server", sc.addrs[c.listener][0], "--command-config", path,
				"--topic", topic, "--partitions", "1", "--replication-factor", "3"); err != nil {
				t.Fatalf("%s: %v\n%s", c.name, err, out)
			}
			if out, err := cluster.Run(t, "topics", "list", "--bootstrap-server", sc.addrs[c.listener][0], "--command-config", path); err != nil || !strings.Contains(out, topic) {
				t.Fatalf("%s: list: %v\n%s", c.name, err, out)
			}
		}
	})

	t.Run("raftka users scram", func(t *testing.T) { usersScramCLI(t, ctx, sc) })

	t.Run("sarama SASL PLAIN", func(t *testing.T) { saramaPlain(t, sc, "sec-sarama") })

	t.Run("kafka-go SCRAM-SHA-512 over TLS", func(t *testing.T) { kafkaGoScram(t, ctx, sc, "sec-kafka-go") })

	t.Run("kcat", func(t *testing.T) {
		kcat, missing := findKcat()
		if missing != "" {
			missingTool(t, missing)
		}
		ca := "ssl.ca.location=" + sc.certs.Files.CAPEM
		modes := []struct {
			name     string
			listener string
			conf     []string
		}{
			{"SSL", "SSL", []string{"security.protocol=SSL", ca}},
			{"SASL_SSL SCRAM-SHA-512", "SASL_SSL", []string{"security.protocol=SASL_SSL", ca, "sasl.mechanisms=SCRAM-SHA-512", "sasl.username=alice", "sasl.password=" + alicePassword}},
			{"SASL_PLAINTEXT PLAIN", "SASL_PLAINTEXT", []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=PLAIN", "sasl.username=carol", "sasl.password=" + carolPassword}},
		}
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				payload := "kcat over " + m.name
				out, err := runKcat(ctx, kcat, sc.addrs[m.listener][0], m.conf, payload, "-P", "-t", "sec-kcat", "-p", "0")
				if err != nil {
					t.Fatalf("produce: %v\n%s", err, out)
				}
				out, err = runKcat(ctx, kcat, sc.addrs[m.listener][1], m.conf, "", "-C", "-t", "sec-kcat", "-p", "0", "-o", "beginning", "-e", "-q")
				if err != nil || !strings.Contains(out, payload) {
					t.Fatalf("consume: %v\n%s", err, out)
				}
			})
		}
		refused := []struct {
			name     string
			listener string
			conf     []string
		}{
			{"wrong password", "SASL_SSL", []string{"security.protocol=SASL_SSL", ca, "sasl.mechanisms=SCRAM-SHA-512", "sasl.username=alice", "sasl.password=wrong"}},
			{"unknown user", "SASL_PLAINTEXT", []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=PLAIN", "sasl.username=mallory", "sasl.password=x"}},
			{"untrusted broker certificate", "SSL", []string{"security.protocol=SSL", "ssl.ca.location=" + otherCA(t)}},
		}
		for _, m := range refused {
			t.Run(m.name, func(t *testing.T) {
				out, err := runKcat(ctx, kcat, sc.addrs[m.listener][0], m.conf, "", "-L", "-m", "8")
				if err == nil {
					t.Fatalf("kcat was served:\n%s", out)
				}
			})
		}
	})

	t.Run("confluent-kafka-python", func(t *testing.T) {
		py, missing := findConfluentPython()
		if missing != "" {
			missingTool(t, missing)
		}
		ca := "ssl.ca.location=" + sc.certs.Files.CAPEM
		for _, m := range []struct {
			name, listener, topic string
			conf                  []string
		}{
			{"SSL", "SSL", "sec-py-ssl", []string{"security.protocol=SSL", ca}},
			{"SASL_SSL SCRAM-SHA-512", "SASL_SSL", "sec-py-scram", []string{"security.protocol=SASL_SSL", ca, "sasl.mechanisms=SCRAM-SHA-512", "sasl.username=alice", "sasl.password=" + alicePassword}},
			{"SASL_PLAINTEXT PLAIN", "SASL_PLAINTEXT", "sec-py-plain", []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=PLAIN", "sasl.username=carol", "sasl.password=" + carolPassword}},
		} {
			t.Run(m.name, func(t *testing.T) {
				args := []string{"../compat/confluent_secure.py", "--bootstrap", strings.Join(sc.addrs[m.listener], ","), "--topic", m.topic}
				for _, kv := range m.conf {
					args = append(args, "-X", kv)
				}
				pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				runScript(t, pctx, exec.CommandContext(pctx, py, args...), "confluent-kafka-python")
			})
		}
		for _, m := range []struct {
			name, listener string
			conf           []string
		}{
			{"wrong password", "SASL_SSL", []string{"security.protocol=SASL_SSL", ca, "sasl.mechanisms=SCRAM-SHA-512", "sasl.username=alice", "sasl.password=wrong"}},
			{"unknown user", "SASL_SSL", []string{"security.protocol=SASL_SSL", ca, "sasl.mechanisms=SCRAM-SHA-512", "sasl.username=mallory", "sasl.password=x"}},
		} {
			t.Run("refused: "+m.name, func(t *testing.T) {
				args := []string{"../compat/confluent_secure.py", "--bootstrap", sc.addrs[m.listener][0], "--expect-auth-failure"}
				for _, kv := range m.conf {
					args = append(args, "-X", kv)
				}
				pctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				runScript(t, pctx, exec.CommandContext(pctx, py, args...), "confluent-kafka-python")
			})
		}
	})

	t.Run("OAUTHBEARER unsecured tokens", func(t *testing.T) { oauthBearerClients(t, ctx, sc) })

	t.Run("refused: franz-go wrong password and unknown user", func(t *testing.T) {
		for _, m := range []sasl.Mechanism{
			scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism(),
			scram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism(),
			plain.Auth{User: "carol", Pass: "wrong"}.AsMechanism(),
		} {
			listener, tc := "SASL_SSL", sc.tls(false)
			if m.Name() == "PLAIN" {
				listener, tc = "SASL_PLAINTEXT", nil
			}
			if err := pingOver(ctx, sc.addrs[listener][0], tc, m); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Errorf("%s: err %v, want SASL_AUTHENTICATION_FAILED", m.Name(), err)
			}
		}
	})

	t.Run("refused: untrusted broker certificate", func(t *testing.T) {
		other, err := certs.New("x")
		if err != nil {
			t.Fatal(err)
		}
		err = pingOver(ctx, sc.addrs["SSL"][0], &tls.Config{RootCAs: other.Pool()}, nil)
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			t.Fatalf("err %v, want an unknown-authority error", err)
		}
	})

	t.Run("refused: plaintext client on a TLS listener", func(t *testing.T) {
		n := sc.c.Node(1)
		if err := pingOver(ctx, sc.addrs["SSL"][0], nil, nil); err == nil {
			t.Fatal("a plaintext client was served on the TLS listener")
		}
		cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
			v, err := metric(n, `raftka_rejected_requests_total{reason="not_tls"}`)
			return err == nil && v >= 1, fmt.Sprintf("not_tls metric: %v %v", v, err)
		})
		if !strings.Contains(n.Logs(), "does not speak TLS on a TLS listener") {
			t.Error("no log line for the plaintext client")
		}
	})
}

// pingOver asks one broker for its API versions and metadata.
func pingOver(ctx context.Context, addr string, tc *tls.Config, m sasl.Mechanism) error {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return cl.Ping(pctx)
}

// otherCA writes a CA that did not sign the brokers' certificates.
func otherCA(t *testing.T) string {
	t.Helper()
	other, err := certs.New("x")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return other.Files.CAPEM
}

func runKcat(ctx context.Context, kcat, broker string, conf []string, stdin string, args ...string) (string, error) {
	kctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	full := []string{"-b", broker}
	for _, kv := range conf {
		full = append(full, "-X", kv)
	}
	cmd := exec.CommandContext(kctx, kcat, append(full, args...)...)
	cmd.WaitDelay = 5 * time.Second
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin + "\n")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// saramaPlain produces and consumes through sarama with SASL/PLAIN.
func saramaPlain(t *testing.T, sc *securedCluster, topic string) {
	cfg := saramaConfig(sarama.V3_6_0_0)
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	cfg.Net.SASL.User, cfg.Net.SASL.Password = "carol", carolPassword
	cfg.Net.SASL.Handshake = true
	cfg.Net.SASL.Version = sarama.SASLHandshakeV1
	cl, err := sarama.NewClient(sc.addrs["SASL_PLAINTEXT"], cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	prod, err := sarama.NewSyncProducerFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 50
	for i := range n {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(fmt.Sprintf("sarama-%d", i))}); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cons, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for p := int32(0); p < 3; p++ {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		hw := pc.HighWaterMarkOffset()
		timeout := time.After(30 * time.Second)
		for read := int64(0); read < hw; read++ {
			select {
			case m := <-pc.Messages():
				if !strings.HasPrefix(string(m.Value), "sarama-") {
					t.Fatalf("unexpected record %q", m.Value)
				}
				got++
			case err := <-pc.Errors():
				t.Fatalf("consume: %v", err)
			case <-timeout:
				t.Fatalf("partition %d: consumed %d of %d", p, read, hw)
			}
		}
		pc.Close()
	}
	if got != n {
		t.Fatalf("consumed %d records, produced %d", got, n)
	}
	// SASL handshake v0 (sarama's legacy path) authenticates too.
	cfg0 := saramaConfig(sarama.V3_6_0_0)
	cfg0.Net.SASL.Enable, cfg0.Net.SASL.Mechanism = true, sarama.SASLTypePlaintext
	cfg0.Net.SASL.User, cfg0.Net.SASL.Password = "carol", carolPassword
	cfg0.Net.SASL.Handshake, cfg0.Net.SASL.Version = true, sarama.SASLHandshakeV0
	cfg0.ApiVersionsRequest = false // sarama's rule for SASL v0
	cl0, err := sarama.NewClient(sc.addrs["SASL_PLAINTEXT"][1:2], cfg0)
	if err != nil {
		t.Fatalf("sarama with SASL handshake v0: %v", err)
	}
	cl0.Close()
	// A wrong password is refused.
	bad := saramaConfig(sarama.V3_6_0_0)
	bad.Net.SASL.Enable, bad.Net.SASL.Mechanism = true, sarama.SASLTypePlaintext
	bad.Net.SASL.User, bad.Net.SASL.Password = "carol", "wrong"
	bad.Net.SASL.Handshake, bad.Net.SASL.Version = true, sarama.SASLHandshakeV1
	bad.Metadata.Retry.Max = 0
	if c, err := sarama.NewClient(sc.addrs["SASL_PLAINTEXT"][:1], bad); err == nil {
		c.Close()
		t.Fatal("sarama with a wrong password was served")
	}
}

// kafkaGoScram produces with kafka-go's Writer and reads back with its
// Reader, over TLS with SCRAM-SHA-512 as the bootstrap admin.
func kafkaGoScram(t *testing.T, ctx context.Context, sc *securedCluster, topic string) {
	mech, err := kgoscram.Mechanism(kgoscram.SHA512, "admin", adminPassword)
	if err != nil {
		t.Fatal(err)
	}
	tr := &kafka.Transport{ClientID: "raftka-e2e-kafka-go", TLS: sc.tls(false), SASL: mech}
	t.Cleanup(tr.CloseIdleConnections)
	w := &kafka.Writer{Addr: kafka.TCP(sc.addrs["SASL_SSL"]...), Transport: tr, Topic: topic, RequiredAcks: kafka.RequireAll, Balancer: &kafka.LeastBytes{}}
	const n = 30
	var msgs []kafka.Message
	for i := range n {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("kafka-go-%d", i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go write: %v", err)
	}
	w.Close()
	dialer := &kafka.Dialer{Timeout: 10 * time.Second, TLS: sc.tls(false), SASLMechanism: mech, ClientID: "raftka-e2e-kafka-go"}
	got := 0
	for p := range 3 {
		conn, err := dialer.DialLeader(ctx, "tcp", sc.addrs["SASL_SSL"][0], topic, p)
		if err != nil {
			t.Fatalf("kafka-go dial leader of partition %d: %v", p, err)
		}
		last, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		if last == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: sc.addrs["SASL_SSL"], Topic: topic, Partition: p, Dialer: dialer, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 500 * time.Millisecond})
		for i := int64(0); i < last; i++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("kafka-go read partition %d: %v", p, err)
			}
			if !strings.HasPrefix(string(m.Value), "kafka-go-") {
				t.Fatalf("unexpected record %q", m.Value)
			}
			got++
		}
		r.Close()
	}
	if got != n {
		t.Fatalf("kafka-go read %d records, wrote %d", got, n)
	}
}

// oauthBearerClients logs in with unsecured OAUTHBEARER tokens through
// franz-go (a token it is given), librdkafka (kcat and
// confluent-kafka-python make theirs from sasl.oauthbearer.config) and the
// raftka CLI (unsecuredLoginStringClaim_sub), and is refused a token
// without the required scope.
func oauthBearerClients(t *testing.T, ctx context.Context, sc *securedCluster) {
	claims := fmt.Sprintf(`{"sub":"dora","exp":%d,"scope":["kafka"]}`, time.Now().Add(time.Hour).Unix())
	enc := base64.RawURLEncoding.EncodeToString
	token := enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
	t.Run("franz-go", func(t *testing.T) {
		roundTripKgo(t, ctx, sc, "SASL_PLAINTEXT", nil, oauth.Auth{Token: token, Extensions: map[string]string{"traceId": "e2e"}}.AsMechanism(), "sec-oauth", 50)
		noScope := enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(fmt.Sprintf(`{"sub":"dora","exp":%d}`, time.Now().Add(time.Hour).Unix()))) + "."
		if err := pingOver(ctx, sc.addrs["SASL_PLAINTEXT"][0], nil, oauth.Auth{Token: noScope}.AsMechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "insufficient_scope") {
			t.Fatalf("token without the scope: %v", err)
		}
	})
	t.Run("raftka CLI", func(t *testing.T) {
		path := t.TempDir() + "/oauth.properties"
		props := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="dora" unsecuredLoginListClaim_scope=",kafka";` + "\n"
		if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := cluster.Run(t, "topics", "list", "--bootstrap-server", sc.addrs["SASL_PLAINTEXT"][0], "--command-config", path); err != nil || !strings.Contains(out, "sec-oauth") {
			t.Fatalf("list: %v\n%s", err, out)
		}
	})
	// librdkafka makes its own unsecured token only when told to.
	libConf := []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt=true", "sasl.oauthbearer.config=principal=dora scope=kafka"}
	t.Run("kcat", func(t *testing.T) {
		kcat, missing := findKcat()
		if missing != "" {
			missingTool(t, missing)
		}
		payload := "kcat over OAUTHBEARER"
		if out, err := runKcat(ctx, kcat, sc.addrs["SASL_PLAINTEXT"][0], libConf, payload, "-P", "-t", "sec-kcat", "-p", "1"); err != nil {
			t.Fatalf("produce: %v\n%s", err, out)
		}
		out, err := runKcat(ctx, kcat, sc.addrs["SASL_PLAINTEXT"][1], libConf, "", "-C", "-t", "sec-kcat", "-p", "1", "-o", "beginning", "-e", "-q")
		if err != nil || !strings.Contains(out, payload) {
			t.Fatalf("consume: %v\n%s", err, out)
		}
		bad := []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt=true", "sasl.oauthbearer.config=principal=dora scope=other"}
		if out, err := runKcat(ctx, kcat, sc.addrs["SASL_PLAINTEXT"][0], bad, "", "-L", "-m", "8"); err == nil {
			t.Fatalf("kcat without the scope was served:\n%s", out)
		}
	})
	t.Run("confluent-kafka-python", func(t *testing.T) {
		py, missing := findConfluentPython()
		if missing != "" {
			missingTool(t, missing)
		}
		args := []string{"../compat/confluent_secure.py", "--bootstrap", strings.Join(sc.addrs["SASL_PLAINTEXT"], ","), "--topic", "sec-py-oauth"}
		for _, kv := range libConf {
			args = append(args, "-X", kv)
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		runScript(t, pctx, exec.CommandContext(pctx, py, args...), "confluent-kafka-python")
	})
}
