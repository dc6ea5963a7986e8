package broker

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The coordinator is written against an interface; the real controller
// client must satisfy it.
var _ group.Controller = (*raftfsm.ControllerClient)(nil)

// groupNode is one in-process node: Raft (a single in-memory voter), a registered and
// unfenced broker, and the group coordinator, on loopback.
type groupNode struct {
	node   *raftfsm.Node
	srv    *Server
	groups *group.Coordinator
	addr   string
}

func startGroupNode(t *testing.T) *groupNode {
	t.Helper()
	node, err := raftfsm.StartInMemory(raftfsm.Config{
		NodeID: 1, ClusterID: "group-test-cluster-0001",
		HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: 2 * time.Second,
		DefaultPartitions: 3, DefaultReplicationFactor: 1,
		Logger: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Shutdown() })

	groups := group.NewCoordinator(group.CoordinatorConfig{
		NodeID: 1,
		Group: group.Config{
			MinSessionTimeout: 100 * time.Millisecond, MaxSessionTimeout: time.Minute,
			InitialRebalanceDelay: 50 * time.Millisecond,
		},
		OffsetsTopicPartitions: 5, OffsetsTopicReplicationFactor: 1,
		Logger: testLogger(t),
	}, node.Publisher(), node.Client())
	t.Cleanup(groups.Close)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).AddrPort().Port()
	srv, err := New(Options{
		Logger: testLogger(t), NodeID: 1, Listeners: []Listener{{Name: "CLIENT", Listener: ln}},
		Deps: Deps{Metadata: node, Controller: node.Client(), Groups: groups},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	t.Cleanup(func() { _ = srv.Close(); <-done })

	life, err := StartLifecycle(LifecycleOptions{
		NodeID: 1, ClusterID: "group-test-cluster-0001", Controller: node.Client(),
		Endpoints: []metadata.Endpoint{{Listener: "CLIENT", Host: "127.0.0.1", Port: port}},
		Applied:   func() uint64 { _, i := node.Current(); return i },
		Interval:  100 * time.Millisecond, Logger: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(life.Close)
	waitUntil(t, "broker unfenced", func() bool { return !life.Fenced() })

	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	ct := kmsg.NewPtrCreateTopicsRequest()
	tt := kmsg.NewCreateTopicsRequestTopic()
	tt.Topic, tt.NumPartitions, tt.ReplicationFactor = "orders", 4, 1
	ct.Topics = append(ct.Topics, tt)
	if _, err := node.Client().CreateTopics(ctx, ct); err != nil {
		t.Fatal(err)
	}
	return &groupNode{node: node, srv: srv, groups: groups, addr: ln.Addr().String()}
}

func (n *groupNode) client(t *testing.T) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RetryTimeout(testDeadline))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// rawMember drives the classic protocol by hand with kmsg.
type rawMember struct {
	t      *testing.T
	n      *groupNode
	cl     *kgo.Client
	group  string
	id     string
	gen    int32
	leader string
	peers  []kmsg.JoinGroupResponseMember
}

func (m *rawMember) join(ctx context.Context) error {
	for range 3 { // the KIP-394 round trip, then the real join
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = m.group, m.id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", (&kmsg.ConsumerMemberMetadata{Topics: []string{"orders"}}).AppendTo(nil)
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, m.cl)
		if err != nil {
			return err
		}
		m.id = resp.MemberID
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			continue
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		m.gen, m.leader, m.peers = resp.Generation, resp.LeaderID, resp.Members
		return nil
	}
	return errors.New("join did not settle")
}

func (m *rawMember) sync(ctx context.Context, plan map[string][]byte) ([]byte, error) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.gen
	for id, a := range plan {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return nil, err
	}
	return resp.MemberAssignment, kerr.ErrorForCode(resp.ErrorCode)
}

func (m *rawMember) heartbeat(ctx context.Context) error {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.gen
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

func (m *rawMember) commit(ctx context.Context, partition int32, offset int64, md string) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = "orders"
	img, _ := m.n.node.Current()
	ti, _ := img.Topic("orders")
	t.TopicID = ti.ID // v10 names topics by id
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.Metadata, p.LeaderEpoch = partition, offset, kmsg.StringPtr(md), -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

func assignmentFor(partitions ...int32) []byte {
	a := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "orders", Partitions: partitions}}}
	return a.AppendTo(nil)
}

func TestGroupLifecycleEndToEnd(t *testing.T) {
	n := startGroupNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	adm := kadm.NewClient(n.client(t))

	a := &rawMember{t: t, n: n, cl: n.client(t), group: "g1"}
	b := &rawMember{t: t, n: n, cl: n.client(t), group: "g1"}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, m := range []*rawMember{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = m.join(ctx) }()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("joins: %v %v", errs[0], errs[1])
	}
	leader, follower := a, b
	if b.id == a.leader {
		leader, follower = b, a
	}
	if leader.id != leader.leader || len(leader.peers) != 2 || len(follower.peers) != 0 || a.gen != b.gen || a.gen < 1 {
		t.Fatalf("join answers: leader %+v follower %+v", leader, follower)
	}

	// Sync: the follower waits for the leader's plan.
	var fAssign []byte
	var fErr error
	wg.Add(1)
	go func() { defer wg.Done(); fAssign, fErr = follower.sync(ctx, nil) }()
	lAssign, err := leader.sync(ctx, map[string][]byte{leader.id: assignmentFor(0, 1), follower.id: assignmentFor(2, 3)})
	wg.Wait()
	if err != nil || fErr != nil {
		t.Fatalf("syncs: %v %v", err, fErr)
	}
	var la, fa kmsg.ConsumerMemberAssignment
	if la.ReadFrom(lAssign) != nil || fa.ReadFrom(fAssign) != nil || len(la.Topics[0].Partitions) != 2 || fa.Topics[0].Partitions[0] != 2 {
		t.Fatalf("assignments %x %x", lAssign, fAssign)
	}
	if err := follower.heartbeat(ctx); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}

	// Commits by members of the generation, read back with kadm.
	if err := leader.commit(ctx, 0, 42, "leader-md"); err != nil {
		t.Fatal(err)
	}
	if err := follower.commit(ctx, 2, 7, ""); err != nil {
		t.Fatal(err)
	}
	stale := *follower
	stale.gen--
	if err := stale.commit(ctx, 2, 9, ""); !errors.Is(err, kerr.IllegalGeneration) {
		t.Fatalf("stale-generation commit: %v", err)
	}
	fetched, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("orders", 0); !ok || o.At != 42 || o.Metadata != "leader-md" {
		t.Fatalf("fetched p0 %+v", o)
	}
	if o, ok := fetched.Lookup("orders", 2); !ok || o.At != 7 {
		t.Fatalf("fetched p2 %+v", o)
	}
	// A standalone commit (no member, generation -1) to a live group is
	// refused, as in Kafka.
	simple := rawMember{t: t, n: n, cl: leader.cl, group: "g1", gen: -1}
	if err := simple.commit(ctx, 1, 3, ""); !errors.Is(err, kerr.UnknownMemberID) {
		t.Fatalf("simple commit to a live group: %v", err)
	}

	described, err := adm.DescribeGroups(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	dg := described["g1"]
	if dg.Err != nil || dg.State != "Stable" || len(dg.Members) != 2 || dg.Protocol != "range" || dg.ProtocolType != "consumer" {
		t.Fatalf("described %+v", dg)
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lg, ok := listed["g1"]; !ok || lg.State != "Stable" {
		t.Fatalf("listed %+v", listed)
	}

	// OffsetDelete of a subscribed topic is refused while members consume it.
	od, err := adm.DeleteOffsets(ctx, "g1", kadm.TopicsSet{"orders": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e := od["orders"][0]; !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Fatalf("offset delete while subscribed: %v", e)
	}
	dels, err := adm.DeleteGroups(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(dels["g1"].Err, kerr.NonEmptyGroup) {
		t.Fatalf("delete non-empty group: %v", dels["g1"].Err)
	}

	// The follower leaves; the leader is told to rejoin and takes over
	// alone in the next generation.
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group = "g1"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = follower.id
	lv.Members = append(lv.Members, lm)
	lresp, err := lv.RequestWith(ctx, follower.cl)
	if err != nil || lresp.ErrorCode != 0 || len(lresp.Members) != 1 || lresp.Members[0].ErrorCode != 0 {
		t.Fatalf("leave: %v %+v", err, lresp)
	}
	if err := leader.heartbeat(ctx); !errors.Is(err, kerr.RebalanceInProgress) {
		t.Fatalf("heartbeat after leave: %v", err)
	}
	oldGen := leader.gen
	if err := leader.join(ctx); err != nil {
		t.Fatal(err)
	}
	if leader.gen != oldGen+1 || len(leader.peers) != 1 {
		t.Fatalf("rejoin: gen %d peers %d", leader.gen, len(leader.peers))
	}
	if _, err := leader.sync(ctx, map[string][]byte{leader.id: assignmentFor(0, 1, 2, 3)}); err != nil {
		t.Fatal(err)
	}
	if err := leader.commit(ctx, 3, 100, "took over"); err != nil {
		t.Fatal(err)
	}
	gen, ok := func() (metadata.GroupGeneration, bool) { img, _ := n.node.Current(); return img.GroupGeneration("g1") }()
	if !ok || gen.Generation != leader.gen || len(gen.Members) != 1 || gen.Members[0].MemberID != leader.id {
		t.Fatalf("persisted generation %+v", gen)
	}

	// The last member leaves: Empty, offsets stay; then the group can go.
	lm.MemberID = leader.id
	lv.Members = []kmsg.LeaveGroupRequestMember{lm}
	if _, err := lv.RequestWith(ctx, leader.cl); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "group empty", func() bool {
		d, err := adm.DescribeGroups(ctx, "g1")
		return err == nil && d["g1"].State == "Empty"
	})
	od, err = adm.DeleteOffsets(ctx, "g1", kadm.TopicsSet{"orders": {2: {}}})
	if err != nil || od["orders"][2] != nil {
		t.Fatalf("offset delete of an empty group: %v %v", err, od)
	}
	fetched, err = adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup("orders", 2); ok {
		t.Fatal("deleted offset still fetched")
	}
	if o, ok := fetched.Lookup("orders", 3); !ok || o.At != 100 || o.Metadata != "took over" {
		t.Fatalf("offset after takeover %+v", o)
	}
	dels, err = adm.DeleteGroups(ctx, "g1")
	if err != nil || dels["g1"].Err != nil {
		t.Fatalf("delete empty group: %v %v", err, dels["g1"].Err)
	}
	described, err = adm.DescribeGroups(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["g1"]; d.State != "Dead" || !errors.Is(d.Err, kerr.GroupIDNotFound) {
		t.Fatalf("deleted group described as %+v", d)
	}
}

func TestSimpleCommitAndFindCoordinator(t *testing.T) {
	n := startGroupNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	cl := n.client(t)
	adm := kadm.NewClient(cl)

	// Standalone commits (generation -1) to a group that has no members.
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 5, LeaderEpoch: -1, Metadata: "m"})
	offs.Add(kadm.Offset{Topic: "nope", Partition: 0, At: 5, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "orders", Partition: 9, At: 5, LeaderEpoch: -1})
	res, err := adm.CommitOffsets(ctx, "simple", offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("orders", 1); r.Err != nil {
		t.Fatalf("simple commit: %v", r.Err)
	}
	// kadm answers a topic it cannot resolve to an id itself; the broker
	// answers the partition the topic does not have.
	for _, tp := range []struct {
		t string
		p int32
	}{{"nope", 0}, {"orders", 9}} {
		if r, _ := res.Lookup(tp.t, tp.p); !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("%s-%d: %v", tp.t, tp.p, r.Err)
		}
	}
	fetched, err := adm.FetchOffsets(ctx, "simple")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("orders", 1); !ok || o.At != 5 || o.Metadata != "m" {
		t.Fatalf("fetched %+v", o)
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lg, ok := listed["simple"]; !ok || lg.State != "Empty" {
		t.Fatalf("simple group listed as %+v", listed)
	}

	// FindCoordinator v4+ batches; transactions are not served.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"a", "b"}
	fresp, err := fc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range fresp.Coordinators {
		if c.ErrorCode != 0 || c.NodeID != 1 || c.Host != "127.0.0.1" {
			t.Fatalf("coordinator %+v", c)
		}
	}
	fc.CoordinatorType = 1
	fresp, err = fc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if fresp.Coordinators[0].ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("transaction coordinator %+v", fresp.Coordinators[0])
	}
	img, _ := n.node.Current()
	if tp, ok := img.Topic(group.OffsetsTopic); !ok || len(tp.Partitions) != 5 {
		t.Fatal("slots topic not created with offsets.topic.num.partitions")
	}

	// Metadata lists the slots topic as internal.
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range md.Topics {
		if *mt.Topic == group.OffsetsTopic && !mt.IsInternal {
			t.Fatal("__consumer_offsets not internal")
		}
	}
}

// segmentio/kafka-go and old librdkafka join with v1; KIP-394 must not be
// demanded of them.
func TestJoinGroupV1NeedsNoMemberID(t *testing.T) {
	n := startGroupNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	// Create the slots first, as a client's FindCoordinator would.
	waitUntil(t, "coordinator found", func() bool {
		r := kadm.NewClient(n.client(t)).FindGroupCoordinators(ctx, "old")
		return r.Error() == nil
	})
	rc := dialRaw(t, n.addr)
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 1
	req.Group, req.ProtocolType = "old", "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 6000, 6000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 1}
	req.Protocols = append(req.Protocols, p)
	rc.send(req, 1)
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = 1
	rc.readResponse(resp)
	if resp.ErrorCode != 0 || resp.MemberID == "" || resp.LeaderID != resp.MemberID || resp.Generation < 1 || len(resp.Members) != 1 || resp.Protocol == nil || *resp.Protocol != "range" {
		t.Fatalf("v1 join %+v", resp)
	}
}

// Two franz-go consumers in one group split the topic's partitions; when
// one leaves, the other takes all of them. (Only the group protocol is
// exercised: this node has no partition layer, so fetches fail and are
// retried by the client.)
func TestKgoConsumerGroupSplitsAndTakesOver(t *testing.T) {
	n := startGroupNode(t)
	type owner struct {
		mu       sync.Mutex
		assigned map[int32]bool
	}
	newConsumer := func(o *owner) *kgo.Client {
		track := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
			return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				o.mu.Lock()
				defer o.mu.Unlock()
				for _, p := range m["orders"] {
					if add {
						o.assigned[p] = true
					} else {
						delete(o.assigned, p)
					}
				}
			}
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.ConsumerGroup("cg"), kgo.ConsumeTopics("orders"),
			kgo.HeartbeatInterval(50*time.Millisecond), kgo.SessionTimeout(6*time.Second),
			kgo.OnPartitionsAssigned(track(true)), kgo.OnPartitionsRevoked(track(false)), kgo.OnPartitionsLost(track(false)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
		t.Cleanup(func() { cancel(); <-done; cl.Close() })
		return cl
	}
	a, b := &owner{assigned: map[int32]bool{}}, &owner{assigned: map[int32]bool{}}
	newConsumer(a)
	clB := newConsumer(b)
	snapshot := func(o *owner) map[int32]bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		m := make(map[int32]bool, len(o.assigned))
		for p := range o.assigned {
			m[p] = true
		}
		return m
	}
	waitUntil(t, "partitions split between two members", func() bool {
		sa, sb := snapshot(a), snapshot(b)
		if len(sa) == 0 || len(sb) == 0 || len(sa)+len(sb) != 4 {
			return false
		}
		for p := range sa {
			if sb[p] {
				return false
			}
		}
		return true
	})
	// b leaves the group (Close sends LeaveGroup); a takes everything.
	clB.CloseAllowingRebalance()
	waitUntil(t, "the remaining member owns all partitions", func() bool { return len(snapshot(a)) == 4 })
}
