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
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// aclCluster is three nodes with the StandardAuthorizer on: the harness's
// PLAINTEXT listener (whose anonymous principal is a super user here, so
// the harness and the tests' admin calls keep working) and a
// SASL_PLAINTEXT listener with PLAIN users admin (super user, the
// inter-broker principal: followers fetch over it), alice and bob.
type aclCluster struct {
	c    *cluster.Cluster
	sasl []string // each node's SASL_PLAINTEXT address
}

func startACLCluster(t *testing.T) *aclCluster {
	t.Helper()
	c := cluster.Prepare(t, cluster.Nodes(3), cluster.LogLevel("info"))
	ports := cluster.FreePorts(t, len(c.Nodes()))
	ac := &aclCluster{c: c}
	for i, n := range c.Nodes() {
		addr := fmt.Sprintf("127.0.0.1:%d", ports[i])
		ac.sasl = append(ac.sasl, addr)
		extra := strings.Join([]string{
			"listeners=PLAINTEXT://" + n.ClientAddr() + ",CONTROLLER://" + n.ControllerAddr() + ",SASL_PLAINTEXT://" + addr,
			"advertised.listeners=PLAINTEXT://" + n.ClientAddr() + ",SASL_PLAINTEXT://" + addr,
			"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
			"listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN",
			`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw" user_bob="bob-pw";`,
			"inter.broker.listener.name=SASL_PLAINTEXT",
			"sasl.mechanism.inter.broker.protocol=PLAIN",
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users=User:admin;User:ANONYMOUS",
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
	return ac
}

func (ac *aclCluster) client(t *testing.T, user, password string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	o := []kgo.Opt{kgo.SeedBrokers(ac.sasl...), kgo.RetryTimeout(15 * time.Second),
		kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism())}
	cl, err := kgo.NewClient(append(o, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// ACLs on real processes: a client without an ACL is refused and nothing
// is appended; ALLOW by a PREFIXED pattern lets it produce with acks=all
// (followers fetch as the super user admin); a DENY overrides the ALLOW;
// Metadata hides what it may not describe; fetching as a replica without
// CLUSTER_ACTION is refused; raftka acls drives it all over SASL with
// --command-config.
func TestACLsEnforcedOnRealCluster(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	ac := startACLCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	anon, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(ac.c.Bootstrap(), ",")...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	adm := kadm.NewClient(anon)
	for _, topic := range []string{"orders", "secret-logs"} {
		if r, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	endOffset := func() int64 {
		t.Helper()
		offs, err := adm.ListEndOffsets(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup("orders", 0)
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		return o.Offset
	}

	alice := ac.client(t, "alice", "alice-pw", kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	produce := func() error {
		pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
		defer pcancel()
		return alice.ProduceSync(pctx, &kgo.Record{Topic: "orders", Value: []byte("v")}).FirstErr()
	}
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if n := endOffset(); n != 0 {
		t.Fatalf("a refused produce appended: end offset %d", n)
	}

	// The CLI over SASL as the super user admin, with Kafka's client keys.
	conf := filepath.Join(t.TempDir(), "admin.properties")
	if err := os.WriteFile(conf, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-pw";`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	acls := func(args ...string) string {
		t.Helper()
		out, err := cluster.Run(t, append(args, "--bootstrap-server", ac.sasl[0], "--command-config", conf)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	acls("acls", "add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "ord", "--resource-pattern-type", "prefixed")
	if err := produce(); err != nil {
		t.Fatalf("produce with a PREFIXED ALLOW: %v", err)
	}
	if n := endOffset(); n != 1 {
		t.Fatalf("end offset %d after one acknowledged record", n)
	}

	// Metadata: alice describes orders (WRITE implies DESCRIBE), not
	// secret-logs, which a listing leaves out and a named request refuses.
	meta := kmsg.NewPtrMetadataRequest()
	resp, err := meta.RequestWith(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tp := range resp.Topics {
		listed = append(listed, *tp.Topic)
	}
	if len(listed) != 1 || listed[0] != "orders" {
		t.Fatalf("alice lists %v, want only orders", listed)
	}
	named := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("secret-logs")
	named.Topics = append(named.Topics, rt)
	if resp, err := named.RequestWith(ctx, alice); err != nil || resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("named secret-logs: %v %+v", err, resp)
	}

	// Fetching as a replica needs CLUSTER_ACTION; a consumer needs READ.
	topicID := func() [16]byte {
		td, err := adm.ListTopics(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		return td["orders"].ID
	}()
	leader := func() int32 {
		td, _ := adm.ListTopics(ctx, "orders")
		return td["orders"].Partitions[0].Leader
	}()
	for _, replica := range []int32{leader%3 + 1, -1} {
		f := kmsg.NewPtrFetchRequest()
		f.ReplicaID, f.ReplicaState.ID, f.ReplicaState.Epoch = replica, replica, -1
		f.MaxWaitMillis, f.MaxBytes = 100, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "orders", topicID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		fr, err := alice.Broker(int(leader)).Request(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		got := fr.(*kmsg.FetchResponse)
		if len(got.Topics) != 1 || got.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("fetch as replica %d: %+v", replica, got.Topics)
		}
	}

	// A DENY overrides the ALLOW: refused again, nothing appended.
	acls("acls", "add", "--deny-principal", "User:alice", "--operation", "Write", "--topic", "orders")
	waitRefused := time.Now().Add(30 * time.Second)
	for {
		err := produce()
		if errors.Is(err, kerr.TopicAuthorizationFailed) {
			break
		}
		if err != nil || time.Now().After(waitRefused) {
			t.Fatalf("produce after the DENY: %v", err)
		}
		// Another broker may apply the ACL a moment later; an accepted
		// record before that is fine, the check below counts them.
		time.Sleep(100 * time.Millisecond)
	}
	before := endOffset()
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce after the DENY: %v", err)
	}
	if n := endOffset(); n != before {
		t.Fatalf("a denied produce appended: end offset %d, was %d", n, before)
	}

	// The super user needs no ACL; bob, with none, is refused a group.
	admin := ac.client(t, "admin", "admin-pw")
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "secret-logs", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("super user produce: %v", err)
	}
	bob := kadm.NewClient(ac.client(t, "bob", "bob-pw"))
	if _, err := bob.FetchOffsets(ctx, "g1"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("bob's offset fetch: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}

	list := acls("acls", "list", "--topic", "orders", "--resource-pattern-type", "match")
	for _, want := range []string{"patternType=PREFIXED", "permissionType=ALLOW", "permissionType=DENY"} {
		if !strings.Contains(list, want) {
			t.Errorf("acls list lacks %q:\n%s", want, list)
		}
	}
	if out := acls("acls", "remove", "--topic", "orders", "--deny-principal", "User:alice"); !strings.Contains(out, "Removed ") {
		t.Fatalf("remove: %s", out)
	}
}
