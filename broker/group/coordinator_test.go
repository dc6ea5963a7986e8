package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const waitLimit = 10 * time.Second

// twin is the coordinator's metadata and controller: an in-memory raftfsm
// node, so group writes run the controller's real decisions, Raft commit
// and publisher, and every write is in Current when it returns.
type twin struct {
	node *raftfsm.Node
}

func (w *twin) Current() (*metadata.Image, uint64) { return w.node.Current() }

func (w *twin) image() *metadata.Image {
	img, _ := w.node.Current()
	return img
}

// apply commits recs as given.
func (w *twin) apply(t testing.TB, recs ...metadata.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := w.node.CommitRecords(ctx, recs...); err != nil {
		t.Fatal(err)
	}
}

var slotsID = [16]byte{0xc0}

// slotsImage: brokers 1 and 2, one slot led by leader.
func slotsImage(t testing.TB, leader int32) *twin {
	node, err := raftfsm.StartInMemory(raftfsm.Config{
		NodeID: 1, ClusterID: "group-test-cluster",
		// The brokers here never heartbeat: sessions must outlive the test.
		SessionTimeout: time.Hour, Logger: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Shutdown() })
	w := &twin{node: node}
	w.apply(t,
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 1},
		&metadata.RegisterBroker{BrokerID: 2, BrokerEpoch: 2},
		&metadata.CreateTopic{Name: OffsetsTopic, ID: slotsID, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: leader},
		}},
	)
	return w
}

// testCtrl is the twin's controller client with what tests inject: it
// counts persisted generations, can fail them, and can hold DeleteGroups.
type testCtrl struct {
	*raftfsm.ControllerClient
	mu          sync.Mutex
	gens        []metadata.GroupGeneration
	failPersist atomic.Bool
	// deleteGate, when set, holds DeleteGroups (after a send on
	// deleteStarted) until it is closed.
	deleteGate, deleteStarted chan struct{}
}

func (f *testCtrl) CommitGroupGeneration(ctx context.Context, gen *metadata.GroupGeneration) (uint64, error) {
	if f.failPersist.Load() {
		return 0, errors.New("no quorum")
	}
	index, err := f.ControllerClient.CommitGroupGeneration(ctx, gen)
	if err == nil {
		f.mu.Lock()
		f.gens = append(f.gens, *gen)
		f.mu.Unlock()
	}
	return index, err
}

func (f *testCtrl) DeleteGroups(ctx context.Context, groups []string) (uint64, error) {
	if f.deleteGate != nil {
		f.deleteStarted <- struct{}{}
		<-f.deleteGate
	}
	return f.ControllerClient.DeleteGroups(ctx, groups)
}

func newTestCoordinator(t *testing.T, md *twin) (*Coordinator, *testCtrl) {
	ctrl := &testCtrl{ControllerClient: md.node.Client()}
	c := NewCoordinator(CoordinatorConfig{
		NodeID: 1,
		Group:  Config{MinSessionTimeout: 10 * time.Millisecond, MaxSessionTimeout: time.Minute},
		Logger: zerolog.Nop(),
	}, md, ctrl)
	t.Cleanup(c.Close)
	return c, ctrl
}

func joinReq(memberID string, session time.Duration) JoinRequest {
	return JoinRequest{MemberID: memberID, ClientID: "c", ProtocolType: "consumer",
		Protocols: []Protocol{{Name: "range", Metadata: []byte{1}}}, SessionTimeout: session, RebalanceTimeout: session}
}

func await[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatal("no answer")
		panic("unreachable")
	}
}

// eventually polls cond until it holds, failing t with cond's last word
// after waitLimit.
func eventually(t *testing.T, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCoordinatorRebalanceThroughLoop(t *testing.T) {
	md := slotsImage(t, 1)
	c, ctrl := newTestCoordinator(t, md)
	ctx := context.Background()

	j := await(t, c.Join("g", joinReq("", time.Minute)))
	if j.ErrorCode != 0 || j.Generation != 1 {
		t.Fatalf("join %+v", j)
	}
	s := await(t, c.Sync("g", SyncRequest{MemberID: j.MemberID, Generation: 1, Assignments: map[string][]byte{j.MemberID: []byte("a")}}))
	if s.ErrorCode != 0 || string(s.Assignment) != "a" {
		t.Fatalf("sync %+v", s)
	}
	if gen, ok := md.image().GroupGeneration("g"); !ok || gen.Generation != 1 || gen.Members[0].MemberID != j.MemberID {
		t.Fatalf("generation not persisted before the sync answer: %+v", gen)
	}
	if err := c.Heartbeat(ctx, "g", j.MemberID, "", 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx, CommitRequest{Group: "g", MemberID: j.MemberID, Generation: 1,
		Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 9, Metadata: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if o, ok := md.image().Offset("g", "t", 0); !ok || o.Offset != 9 || o.Metadata != "x" {
		t.Fatalf("offset %+v", o)
	}
	if err := c.Commit(ctx, CommitRequest{Group: "g", Generation: -1}); !errors.Is(err, kerr.UnknownMemberID) {
		t.Fatalf("simple commit to live group: %v", err)
	}
	l, err := c.List(ctx)
	if err != nil || len(l) != 1 || l[0].State != Stable || l[0].ProtocolType != "consumer" {
		t.Fatalf("list %+v %v", l, err)
	}
	if errs := c.Delete(ctx, []string{"g"}); !errors.Is(errs[0], kerr.NonEmptyGroup) {
		t.Fatalf("delete live group: %v", errs[0])
	}
	ctrl.mu.Lock()
	persisted := len(ctrl.gens)
	ctrl.mu.Unlock()
	if persisted != 1 {
		t.Fatalf("%d generations persisted", persisted)
	}
}

func TestCoordinatorSessionExpiryEmptiesGroup(t *testing.T) {
	md := slotsImage(t, 1)
	c, _ := newTestCoordinator(t, md)
	j := await(t, c.Join("g", joinReq("", 20*time.Millisecond)))
	await(t, c.Sync("g", SyncRequest{MemberID: j.MemberID, Generation: 1}))
	// No heartbeats: the loop's timer expires the member and the group
	// goes Empty with a new generation in the image, then unloads.
	eventually(t, func() (bool, string) {
		gen, _ := md.image().GroupGeneration("g")
		c.mu.Lock()
		loaded := len(c.groups)
		c.mu.Unlock()
		return gen.Generation == 2 && len(gen.Members) == 0 && loaded == 0,
			fmt.Sprintf("group not emptied: %+v, %d loaded", gen, loaded)
	})
	d, err := c.Describe(context.Background(), "g")
	if err != nil || d.State != Empty || d.ProtocolType != "consumer" {
		t.Fatalf("describe from image: %+v %v", d, err)
	}
	if errs := c.Delete(context.Background(), []string{"g", "never"}); errs[0] != nil || !errors.Is(errs[1], kerr.GroupIDNotFound) {
		t.Fatalf("delete: %v", errs)
	}
	if _, ok := md.image().GroupGeneration("g"); ok {
		t.Fatal("deleted group still in the image")
	}
}

// Regression: a Describe queued behind a DeleteGroups on the group's loop
// was answered from the deleted group (Dead, no error) instead of
// GROUP_ID_NOT_FOUND, and a Join behind it COORDINATOR_NOT_AVAILABLE
// instead of starting the group afresh (TestGroupLifecycleEndToEnd flaked).
func TestCoordinatorForgetsDeletedGroup(t *testing.T) {
	md := slotsImage(t, 1)
	c, ctrl := newTestCoordinator(t, md)
	ctx := context.Background()
	if err := c.Commit(ctx, CommitRequest{Group: "g", Generation: -1,
		Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 1}}}); err != nil {
		t.Fatal(err)
	}
	ctrl.deleteGate, ctrl.deleteStarted = make(chan struct{}), make(chan struct{}, 1)
	deleted := make(chan []error, 1)
	go func() { deleted <- c.Delete(ctx, []string{"g"}) }()
	await(t, ctrl.deleteStarted)
	type described struct {
		d   Description
		err error
	}
	desc := make(chan described, 1)
	go func() {
		d, err := c.Describe(ctx, "g")
		desc <- described{d, err}
	}()
	// The Describe is queued on the loop (busy with the delete) before
	// the delete is let go.
	eventually(t, func() (bool, string) {
		c.mu.Lock()
		l := c.groups["g"]
		c.mu.Unlock()
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.queue) == 1, "describe not queued"
	})
	join := c.Join("g", joinReq("", time.Minute))
	close(ctrl.deleteGate)
	if errs := await(t, deleted); errs[0] != nil {
		t.Fatalf("delete: %v", errs[0])
	}
	if r := await(t, desc); !errors.Is(r.err, kerr.GroupIDNotFound) {
		t.Fatalf("describe after delete: %+v %v", r.d, r.err)
	}
	if j := await(t, join); j.ErrorCode != 0 || j.Generation != 1 {
		t.Fatalf("join after delete: %+v", j)
	}
}

func TestCoordinatorUnloadsWhenSlotMoves(t *testing.T) {
	md := slotsImage(t, 1)
	c, _ := newTestCoordinator(t, md)
	c.cfg.Group.InitialRebalanceDelay = time.Hour // the join waits
	ch := c.Join("g", joinReq("", time.Minute))
	// The slot moves to broker 2: the waiting join is answered
	// NOT_COORDINATOR at the next event, and new requests too.
	md.apply(t, &metadata.PartitionChange{TopicID: slotsID, Partition: 0, Leader: 2})
	err := c.Heartbeat(context.Background(), "g", "m", "", 1)
	if !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("heartbeat after move: %v", err)
	}
	if j := await(t, ch); j.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("waiting join after move: %+v", j)
	}
	if err := c.Ownership(md.image(), "g"); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("ownership: %v", err)
	}
	// Back to broker 1 with a new leader epoch: a fresh group.
	md.apply(t, &metadata.PartitionChange{TopicID: slotsID, Partition: 0, Leader: 1})
	c.cfg.Group.InitialRebalanceDelay = 0
	if j := await(t, c.Join("g", joinReq("", time.Minute))); j.ErrorCode != 0 {
		t.Fatalf("join after move back: %+v", j)
	}
}

func TestCoordinatorPersistFailureAnswersSync(t *testing.T) {
	md := slotsImage(t, 1)
	c, ctrl := newTestCoordinator(t, md)
	j := await(t, c.Join("g", joinReq("", time.Minute)))
	ctrl.failPersist.Store(true)
	s := await(t, c.Sync("g", SyncRequest{MemberID: j.MemberID, Generation: j.Generation}))
	if s.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("sync with failed persist: %+v", s)
	}
}

func TestCoordinatorClosedAnswersNotCoordinator(t *testing.T) {
	md := slotsImage(t, 1)
	c, _ := newTestCoordinator(t, md)
	c.cfg.Group.InitialRebalanceDelay = time.Hour
	ch := c.Join("g", joinReq("", time.Minute))
	c.Close()
	if j := await(t, ch); j.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("join across Close: %+v", j)
	}
	if j := await(t, c.Join("g", joinReq("", time.Minute))); j.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("join after Close: %+v", j)
	}
}

func TestSlotMatchesKafka(t *testing.T) {
	// The hash itself is broker/coordslot's (tested there); this checks
	// the group coordinator places by it: "my-group".hashCode() is
	// -1906497762, and "polygenelubricants".hashCode() is Integer.MIN_VALUE,
	// which Kafka's Utils.abs maps to 0.
	if s := Slot("my-group", 50); s != (-1906497762&0x7fffffff)%50 {
		t.Fatalf("slot %d", s)
	}
	if s := Slot("polygenelubricants", 50); s != 0 {
		t.Fatalf("slot %d", s)
	}
	if Slot("x", 0) != -1 {
		t.Fatal("no slots")
	}
}

func FuzzSubscribedTopics(f *testing.F) {
	f.Add((&kmsg.ConsumerMemberMetadata{Topics: []string{"a", "b"}}).AppendTo(nil))
	f.Add([]byte{})
	f.Add([]byte{0, 3, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		topics, ok := SubscribedTopics([][]byte{b})
		if !ok {
			return
		}
		var m kmsg.ConsumerMemberMetadata
		if err := m.ReadFrom(b); err != nil {
			t.Fatal("decoded once, not twice")
		}
		for _, tp := range m.Topics {
			if !topics[tp] {
				t.Fatalf("topic %q lost", tp)
			}
		}
	})
}
