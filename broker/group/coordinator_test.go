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
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const waitLimit = 10 * time.Second

// fakeMeta is a swappable image.
type fakeMeta struct {
	cur atomic.Pointer[metadata.Image]
}

func (f *fakeMeta) Current() (*metadata.Image, uint64) { return f.cur.Load(), 1 }

func (f *fakeMeta) apply(t *testing.T, recs ...metadata.Record) {
	t.Helper()
	img, d := f.cur.Load().Apply(recs)
	if len(d.Skipped) > 0 {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	f.cur.Store(img)
}

var slotsID = [16]byte{0xc0}

// slotsImage: brokers 1 and 2, one slot led by leader.
func slotsImage(t *testing.T, leader int32) *fakeMeta {
	f := &fakeMeta{}
	f.cur.Store(metadata.NewImage())
	f.apply(t,
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 1},
		&metadata.RegisterBroker{BrokerID: 2, BrokerEpoch: 2},
		&metadata.CreateTopic{Name: OffsetsTopic, ID: slotsID, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: leader},
		}},
	)
	return f
}

// fakeCtrl applies group records to the fake image, as the controller
// would, and counts calls.
type fakeCtrl struct {
	md          *fakeMeta
	mu          sync.Mutex
	gens        []metadata.GroupGeneration
	failPersist atomic.Bool
	// deleteGate, when set, holds DeleteGroups (after a send on
	// deleteStarted) until it is closed.
	deleteGate, deleteStarted chan struct{}
}

func (f *fakeCtrl) CreateTopics(context.Context, *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	return nil, errors.New("not used")
}

func (f *fakeCtrl) CommitOffsets(_ context.Context, group string, offs []metadata.OffsetCommit) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	img, _ := f.md.cur.Load().Apply([]metadata.Record{&metadata.CommitOffsets{Group: group, Offsets: offs}})
	f.md.cur.Store(img)
	return 1, nil
}

func (f *fakeCtrl) CommitGroupGeneration(_ context.Context, gen *metadata.GroupGeneration) (uint64, error) {
	if f.failPersist.Load() {
		return 0, errors.New("no quorum")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gens = append(f.gens, *gen)
	img, _ := f.md.cur.Load().Apply([]metadata.Record{gen})
	f.md.cur.Store(img)
	return 1, nil
}

func (f *fakeCtrl) DeleteGroups(_ context.Context, groups []string) (uint64, error) {
	if f.deleteGate != nil {
		f.deleteStarted <- struct{}{}
		<-f.deleteGate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var recs []metadata.Record
	for _, g := range groups {
		recs = append(recs, &metadata.DeleteGroup{Group: g})
	}
	img, _ := f.md.cur.Load().Apply(recs)
	f.md.cur.Store(img)
	return 1, nil
}

func (f *fakeCtrl) DeleteOffsets(_ context.Context, group string, parts []metadata.TopicPartition) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	img, _ := f.md.cur.Load().Apply([]metadata.Record{&metadata.DeleteOffsets{Group: group, Partitions: parts}})
	f.md.cur.Store(img)
	return 1, nil
}

func newTestCoordinator(t *testing.T, md *fakeMeta) (*Coordinator, *fakeCtrl) {
	ctrl := &fakeCtrl{md: md}
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
	if gen, ok := md.cur.Load().GroupGeneration("g"); !ok || gen.Generation != 1 || gen.Members[0].MemberID != j.MemberID {
		t.Fatalf("generation not persisted before the sync answer: %+v", gen)
	}
	if err := c.Heartbeat(ctx, "g", j.MemberID, "", 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx, CommitRequest{Group: "g", MemberID: j.MemberID, Generation: 1,
		Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 9, Metadata: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if o, ok := md.cur.Load().Offset("g", "t", 0); !ok || o.Offset != 9 || o.Metadata != "x" {
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
		gen, _ := md.cur.Load().GroupGeneration("g")
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
	if _, ok := md.cur.Load().GroupGeneration("g"); ok {
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
	if err := c.Ownership(md.cur.Load(), "g"); !errors.Is(err, kerr.NotCoordinator) {
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
	// String.hashCode's formula over UTF-16 units, computed independently:
	// s[0]*31^(n-1) + ... + s[n-1] with int32 wrap-around.
	if h := javaStringHash("my-group"); h != -1906497762 {
		t.Fatalf("hash %d", h)
	}
	if s := Slot("my-group", 50); s != (-1906497762&0x7fffffff)%50 {
		t.Fatalf("slot %d", s)
	}
	// Negative hash: "polygenelubricants".hashCode() == Integer.MIN_VALUE,
	// which Kafka's Utils.abs maps to 0.
	if h := javaStringHash("polygenelubricants"); h != -2147483648 {
		t.Fatalf("hash %d", h)
	}
	if s := Slot("polygenelubricants", 50); s != 0 {
		t.Fatalf("slot %d", s)
	}
	// A supplementary character hashes as its UTF-16 surrogate pair.
	if javaStringHash("😀") != 31*0xD83D+0xDE00 {
		t.Fatal("surrogate pair hash")
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
