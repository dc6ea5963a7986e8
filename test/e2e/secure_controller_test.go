package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker"
	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/test/certs"
	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// saslSSLCluster is a cluster with SASL_SSL on every listener, the
// controller listener included: Raft between the voters, the brokers'
// registrations, heartbeats and AlterPartition to the controller, follower
// fetch and every client go over TLS with SCRAM-SHA-512, and the
// StandardAuthorizer is on with the brokers' user admin as the one super
// user. Nothing of the cluster listens in plaintext but /metrics.
type saslSSLCluster struct {
	c     *cluster.Cluster
	certs *certs.Set
	// next is a second CA's set, trusted from the start by every node and
	// client, for a rotation of the keystore to its server certificate.
	next  *certs.Set
	pool  *x509.CertPool // both CAs
	trust string         // both CAs, a PEM file
}

const secureMech = "SCRAM-SHA-512"

func scramJAAS(user, password string) string {
	return `org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + password + `";`
}

func startSASLSSLCluster(t *testing.T, opts ...cluster.Opt) *saslSSLCluster {
	t.Helper()
	set, err := certs.New("client")
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	next, err := certs.New("client")
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	sc := &saslSSLCluster{certs: set, next: next, pool: set.Pool()}
	sc.pool.AddCert(next.CA.Cert)
	trust := filepath.Join(t.TempDir(), "trust.pem")
	sc.trust = trust
	if err := os.WriteFile(trust, append(append([]byte{}, set.CA.CertPEM...), next.CA.CertPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	// Every client of the test, the harness's included, connects as admin.
	invariants.UseClientSecurity(t, invariants.ClientSecurity{
		Opts: []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: sc.pool}),
			kgo.SASL(scram.Auth{User: "admin", Pass: adminPassword}.AsSha512Mechanism())},
		Dial: sc.dialer(t, "admin", adminPassword),
	})
	base := []cluster.Opt{cluster.Nodes(3), cluster.LogLevel("info"),
		cluster.FormatArgs("--add-scram", secureMech+"=[name=admin,password="+adminPassword+"]"),
		cluster.Ready(sc.ready)}
	c := cluster.Prepare(t, append(base, opts...)...)
	sc.c = c
	for _, n := range c.Nodes() {
		// Appended: a later key wins in a properties file. The client
		// port keeps its number under the name SASL_SSL.
		extra := strings.Join([]string{
			"listeners=SASL_SSL://" + n.ClientAddr() + ",CONTROLLER://" + n.ControllerAddr(),
			"advertised.listeners=SASL_SSL://" + n.ClientAddr(),
			"listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL",
			"inter.broker.listener.name=SASL_SSL",
			"ssl.keystore.type=PKCS12",
			"ssl.keystore.location=" + set.Files.ServerP12,
			"ssl.keystore.password=" + certs.Password,
			"ssl.truststore.type=PEM",
			"ssl.truststore.location=" + trust,
			"sasl.enabled.mechanisms=" + secureMech,
			"sasl.mechanism.inter.broker.protocol=" + secureMech,
			"sasl.mechanism.controller.protocol=" + secureMech,
			"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=" + scramJAAS("admin", adminPassword),
			"listener.name.controller.scram-sha-512.sasl.jaas.config=" + scramJAAS("admin", adminPassword),
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users=User:admin",
			"connection.failed.authentication.delay.ms=50",
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

// dialer opens TLS connections logged in with SCRAM-SHA-512 as user, with
// raftka's own client (what --command-config uses).
func (sc *saslSSLCluster) dialer(t testing.TB, user, password string) func(ctx context.Context, addr string) (net.Conn, error) {
	t.Helper()
	cs, _, err := config.ParseClientSecurity(map[string]string{
		"security.protocol":       "SASL_SSL",
		"sasl.mechanism":          secureMech,
		"sasl.jaas.config":        scramJAAS(user, password),
		"ssl.truststore.type":     "PEM",
		"ssl.truststore.location": sc.trust,
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := broker.ClientDialer(cs, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// ready: the node answers ApiVersions over SASL_SSL, and /readyz says its
// broker registered and was unfenced, through the secured controller
// listener.
func (sc *saslSSLCluster) ready(ctx context.Context, n *cluster.Node) error {
	if _, err := invariants.RawRequest(ctx, n.ClientAddr(), kmsg.NewPtrApiVersionsRequest()); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.MetricsAddr()+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s", strings.TrimSpace(string(body)))
	}
	return nil
}

// roundTripOn sends one request on c and reads its answer (response
// header v1 for flexible versions).
func roundTripOn(c net.Conn, req kmsg.Request, corr int32) (kmsg.Response, error) {
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("e2e")).AppendRequest(nil, req, corr)); err != nil {
		return nil, err
	}
	r := bufio.NewReader(c)
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		body = body[1:]
	}
	return resp, resp.ReadFrom(body)
}

// closedWithoutAnswer reports whether c is closed by the other side before
// any Kafka frame comes (a TLS alert record may come first).
func closedWithoutAnswer(c net.Conn) error {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("still open after 10 s (read %d bytes)", len(b))
	}
	if len(b) >= 4 && b[0] == 0 {
		return fmt.Errorf("answered with a frame of %d bytes", len(b))
	}
	return nil
}

// The controller listener over SASL_SSL with the authorizer on: brokers
// (User:admin, a super user) form the cluster through it; a
// non-broker principal, authenticated, is refused every broker RPC and
// Raft; no credentials, a wrong password, and plaintext are closed.
//
// Node 4 is broker-only: it joins as a Raft non-voter through the secured
// listener (AddRaftVoter logged in), and the Raft leader replicates the
// metadata log to its SASL_SSL controller listener.
func TestControllerListenerSASLSSL(t *testing.T) {
	sc := startSASLSSLCluster(t, cluster.Nodes(4), cluster.BrokerOnly(4))
	ctx := ctxFor(t, 2*time.Minute)
	h := harness{Cluster: sc.c}

	// The cluster works: a replicated topic, produce and read back over
	// SASL_SSL (followers fetch over SASL_SSL, ISR changes and
	// registrations went through the secured controller listener).
	const topic = "secured"
	if err := invariants.CreateTopic(ctx, h.Seeds(), topic, 3, 3, nil); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, 3) })
	acks := produceAcked(t, h, topic, 3, "secured", 300)
	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, h, topic, "secured cluster", invariants.Check(acks, read))

	// alice: a SCRAM user with no ACL at all.
	admin, err := kgo.NewClient(append(invariantsOpts(sc), kgo.SeedBrokers(h.Seeds()...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const alicePw = "alice-secret"
	if _, err := kadm.NewClient(admin).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: alicePw}}); err != nil {
		t.Fatal(err)
	}
	aliceDial := sc.dialer(t, "alice", alicePw)
	n1 := sc.c.Nodes()[0]
	ctrl := n1.ControllerAddr()
	var aliceConn net.Conn
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		// Every node's image has alice once the commit reached it.
		c, err := aliceDial(ctx, ctrl)
		if err != nil {
			return false, err.Error()
		}
		aliceConn = c
		return true, ""
	})
	defer aliceConn.Close()

	t.Run("non-broker principal refused broker RPCs", func(t *testing.T) {
		reg := kmsg.NewPtrBrokerRegistrationRequest()
		reg.BrokerID, reg.ClusterID, reg.IncarnationID = 42, sc.c.ClusterID(), [16]byte{42}
		reg.SetVersion(reg.MaxVersion())
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch = n1.ID(), 1
		hb.SetVersion(hb.MaxVersion())
		ap := kmsg.NewPtrAlterPartitionRequest()
		ap.BrokerID, ap.BrokerEpoch = n1.ID(), 1
		apt := kmsg.NewAlterPartitionRequestTopic()
		apt.Topic = topic
		app := kmsg.NewAlterPartitionRequestTopicPartition()
		app.Partition, app.LeaderEpoch, app.PartitionEpoch = 0, 0, 0
		apt.Partitions = append(apt.Partitions, app)
		ap.Topics = append(ap.Topics, apt)
		ap.SetVersion(2)
		for i, req := range []kmsg.Request{reg, hb, ap} {
			resp, err := roundTripOn(aliceConn, req, int32(i+1))
			if err != nil {
				t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
			}
			var code int16
			switch r := resp.(type) {
			case *kmsg.BrokerRegistrationResponse:
				code = r.ErrorCode
			case *kmsg.BrokerHeartbeatResponse:
				code = r.ErrorCode
			case *kmsg.AlterPartitionResponse:
				code = r.ErrorCode
			}
			if code != kerr.ClusterAuthorizationFailed.Code {
				t.Errorf("%s from User:alice on the controller listener: error %v, want CLUSTER_AUTHORIZATION_FAILED", kmsg.NameForKey(req.Key()), kerr.ErrorForCode(code))
			}
		}
		// The refused registration left nothing behind.
		md, err := kadm.NewClient(admin).BrokerMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range md.Brokers {
			if b.NodeID == 42 {
				t.Error("broker 42 registered by User:alice is in the metadata")
			}
		}
	})

	t.Run("ApiVersions before the SASL login, as Kafka clients send it", func(t *testing.T) {
		// franz-go sends ApiVersions first, then logs in, then sends the
		// request: the listener answers with what it serves, to any
		// principal, as Kafka's controllers do for --bootstrap-controller.
		cl, err := kgo.NewClient(kgo.SeedBrokers(ctrl), kgo.DialTLSConfig(&tls.Config{RootCAs: sc.pool}),
			kgo.SASL(scram.Auth{User: "alice", Pass: alicePw}.AsSha512Mechanism()), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("ApiVersions from franz-go on the controller listener: %v %+v", err, resp)
		}
		keys := map[int16]bool{}
		for _, k := range resp.ApiKeys {
			keys[k.ApiKey] = true
		}
		if !keys[62] || !keys[63] || !keys[56] || keys[0] || keys[1] {
			t.Fatalf("controller listener advertises %v: want BrokerRegistration, BrokerHeartbeat, AlterPartition and no Produce or Fetch", keys)
		}
	})

	t.Run("admin tools over --bootstrap-controller", func(t *testing.T) {
		controllerAdminSASLSSL(t, ctx, sc, admin, alicePw)
	})

	t.Run("non-broker principal refused fetching as a replica", func(t *testing.T) {
		c, err := aliceDial(ctx, n1.ClientAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		f := kmsg.NewPtrFetchRequest()
		f.SetVersion(12)
		f.ReplicaID, f.MaxWaitMillis, f.MaxBytes = n1.ID()+1, 0, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		for p := range int32(3) {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch = p, 1<<20, -1, -1
			ft.Partitions = append(ft.Partitions, fp)
		}
		f.Topics = append(f.Topics, ft)
		resp, err := roundTripOn(c, f, 1)
		if err != nil {
			t.Fatal(err)
		}
		fr := resp.(*kmsg.FetchResponse)
		n := 0
		for _, rt := range fr.Topics {
			for _, rp := range rt.Partitions {
				n++
				// Kafka's KafkaApis answers a follower fetch without
				// CLUSTER_ACTION TOPIC_AUTHORIZATION_FAILED per partition.
				if rp.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(rp.RecordBatches) > 0 {
					t.Errorf("replica fetch by User:alice, partition %d: error %v, %d bytes", rp.Partition, kerr.ErrorForCode(rp.ErrorCode), len(rp.RecordBatches))
				}
			}
		}
		if n != 3 {
			t.Errorf("answer lists %d partitions, want 3", n)
		}
	})

	t.Run("non-broker principal refused a raft stream", func(t *testing.T) {
		c, err := aliceDial(ctx, ctrl)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte{0xFF, 0, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
		if err := closedWithoutAnswer(c); err != nil {
			t.Error(err)
		}
	})

	t.Run("non-voter join without credentials refused", func(t *testing.T) {
		// TLS but no SASL: the AddRaftVoter a joining broker-only node
		// sends is the first frame, which the SASL listener refuses.
		c, err := tls.Dial("tcp", ctrl, &tls.Config{RootCAs: sc.pool})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		join := kmsg.NewPtrAddRaftVoterRequest()
		join.ClusterID = kmsg.StringPtr(sc.c.ClusterID())
		join.VoterID = 9
		l := kmsg.NewAddRaftVoterRequestListener()
		l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", 1
		join.Listeners = append(join.Listeners, l)
		join.SetVersion(0)
		if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, join, 1)); err != nil {
			t.Fatal(err)
		}
		if err := closedWithoutAnswer(c); err != nil {
			t.Error(err)
		}
		// And a wrong password fails the login.
		if _, err := sc.dialer(t, "admin", "not-the-password")(ctx, ctrl); err == nil || !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("login with a wrong password to the controller listener: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})

	t.Run("plaintext to the TLS controller port closed", func(t *testing.T) {
		before, _ := metric(n1, `raftka_rejected_requests_total{reason="not_tls"}`)
		c, err := net.Dial("tcp", ctrl)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.SetVersion(hb.MaxVersion())
		if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, hb, 1)); err != nil {
			t.Fatal(err)
		}
		if err := closedWithoutAnswer(c); err != nil {
			t.Error(err)
		}
		cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
			after, err := metric(n1, `raftka_rejected_requests_total{reason="not_tls"}`)
			return err == nil && after == before+1, fmt.Sprintf("not_tls rejections %v -> %v (%v)", before, after, err)
		})
		if !strings.Contains(n1.Logs(), "does not speak TLS on the TLS controller listener") {
			t.Error("no log line for the plaintext connection")
		}
	})

	t.Run("keystore rotated on disk", func(t *testing.T) {
		// Every node's keystore is the one file: replaced by the other
		// CA's server certificate, it is served by the next handshakes of
		// the client and controller listeners, without a restart, while
		// the nodes keep reaching each other (Raft, fetch) with it.
		data, err := os.ReadFile(sc.next.Files.ServerP12)
		if err != nil {
			t.Fatal(err)
		}
		ks := sc.certs.Files.ServerP12
		if err := os.WriteFile(ks+".new", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(ks+".new", ks); err != nil {
			t.Fatal(err)
		}
		for _, n := range sc.c.Nodes() {
			for _, addr := range []string{n.ClientAddr(), n.ControllerAddr()} {
				cluster.WaitFor(t, 15*time.Second, func() (bool, string) {
					c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: sc.pool})
					if err != nil {
						return false, err.Error()
					}
					defer c.Close()
					got := c.ConnectionState().PeerCertificates[0]
					return got.Equal(sc.next.Server.Cert), fmt.Sprintf("%s serves the certificate issued by %s", addr, got.Issuer)
				})
			}
		}
		acks := produceAcked(t, h, topic, 3, "rotated", 100)
		if len(acks) != 100 {
			t.Errorf("%d acknowledged after the rotation", len(acks))
		}
	})

	// The cluster still serves after all of that.
	if err := invariants.CreateTopic(ctx, h.Seeds(), "after", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
}

// invariantsOpts are the client options of the secured cluster's admin.
func invariantsOpts(sc *saslSSLCluster) []kgo.Opt {
	return []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: sc.pool}),
		kgo.SASL(scram.Auth{User: "admin", Pass: adminPassword}.AsSha512Mechanism()), kgo.RetryTimeout(20 * time.Second)}
}
