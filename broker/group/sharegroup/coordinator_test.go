package sharegroup

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// fakeMeta is an image the test replaces, and the persister that applies
// what the coordinator writes to it, as the controller and replay do.
type fakeMeta struct {
	mu     sync.Mutex
	img    *metadata.Image
	writes int
	fail   error
}

func (f *fakeMeta) Current() (*metadata.Image, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.img, 0
}

func (f *fakeMeta) WriteShareGroup(_ context.Context, recs []metadata.Record) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return 0, f.fail
	}
	next, d := f.img.Apply(recs)
	if len(d.Skipped) > 0 {
		return 0, d.Skipped[0].Err
	}
	f.img = next
	f.writes++
	return 0, nil
}

func (f *fakeMeta) apply(t *testing.T, recs ...metadata.Record) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	next, d := f.img.Apply(recs)
	if len(d.Skipped) > 0 {
		t.Fatal(d.Skipped[0].Err)
	}
	f.img = next
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newTestCoordinator(t *testing.T, meta *fakeMeta, clk *clock, owned *bool) *Coordinator {
	c := NewCoordinator(CoordinatorConfig{
		Owner: func(*metadata.Image, string) error {
			if owned != nil && !*owned {
				return kerr.NotCoordinator
			}
			return nil
		},
		GroupConfig: func(string) Config { return cfg },
		Metadata:    meta,
		Persister:   NewControllerPersister(meta),
		Now:         clk.Now,
		TickEvery:   time.Hour, // the test ticks
	})
	t.Cleanup(c.Close)
	return c
}

func ordersImage(t *testing.T) *fakeMeta {
	m := &fakeMeta{img: metadata.NewImage()}
	m.apply(t, &metadata.CreateTopic{Name: "orders", ID: tA, Partitions: metadata.NewPartitions(0, [][]int32{{1}, {1}, {1}, {1}, {1}, {1}}, func(int32) bool { return true })})
	return m
}

func TestCoordinatorPersistsOnlyChanges(t *testing.T) {
	meta, clk := ordersImage(t), &clock{now: t0}
	c := newTestCoordinator(t, meta, clk, nil)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		mustOK(t, c.Heartbeat(ctx, "sg", join(id, "orders")))
	}
	// a and b move to the current epoch: one write each.
	mustOK(t, c.Heartbeat(ctx, "sg", beat("a", 1)))
	mustOK(t, c.Heartbeat(ctx, "sg", beat("b", 2)))
	before := meta.writes
	for range 50 {
		for _, id := range []string{"a", "b", "c"} {
			clk.add(100 * time.Millisecond)
			mustOK(t, c.Heartbeat(ctx, "sg", beat(id, 3)))
		}
	}
	if meta.writes != before {
		t.Fatalf("%d writes for 150 heartbeats that changed nothing", meta.writes-before)
	}
	img, _ := meta.Current()
	st, ok := img.ShareGroup("sg")
	if !ok || st.Epoch != 3 || st.AssignmentEpoch != 3 || len(st.Members) != 3 {
		t.Fatalf("image: %+v", st)
	}
	total := 0
	for _, m := range st.Members {
		total += len(m.Assigned[0].Partitions)
	}
	if total != 6 {
		t.Fatalf("recorded members hold %d partitions, want 6", total)
	}
}

// A new coordinator (a failover) resumes the group from the image: same
// epochs, members keep heartbeating at their epochs, and members that do
// not come back are expired a session after the takeover.
func TestCoordinatorFailoverResumes(t *testing.T) {
	meta, clk := ordersImage(t), &clock{now: t0}
	ctx := context.Background()
	old := newTestCoordinator(t, meta, clk, nil)
	for _, id := range []string{"a", "b", "c"} {
		mustOK(t, old.Heartbeat(ctx, "sg", join(id, "orders")))
	}
	for i, id := range []string{"a", "b", "c"} {
		mustOK(t, old.Heartbeat(ctx, "sg", beat(id, int32(i+1))))
	}
	owned := true
	next := newTestCoordinator(t, meta, clk, &owned)
	clk.add(10 * time.Second)
	r := mustOK(t, next.Heartbeat(ctx, "sg", beat("a", 3)))
	if r.MemberEpoch != 3 || r.SendAssignment {
		t.Fatalf("a after failover: %+v", r)
	}
	mustOK(t, next.Heartbeat(ctx, "sg", beat("b", 3)))
	takeover := clk.Now()
	clk.add(20 * time.Second)
	mustOK(t, next.Heartbeat(ctx, "sg", beat("a", 3)))
	mustOK(t, next.Heartbeat(ctx, "sg", beat("b", 3)))
	// c never returns: a session after the takeover it is gone.
	next.Tick(ctx, takeover.Add(cfg.SessionTimeout))
	s, err := next.Describe(ctx, "sg")
	if err != nil || len(s.Members) != 2 || s.Epoch != 4 {
		t.Fatalf("after c expired: %+v %v", s, err)
	}
	if has, err := next.ShareGroupHasMembers("sg"); !has || err != nil {
		t.Fatalf("ShareGroupHasMembers: %v %v", has, err)
	}
	img, _ := meta.Current()
	if st, _ := img.ShareGroup("sg"); len(st.Members) != 2 || st.Epoch != 4 {
		t.Fatalf("image after expiry: %+v", st)
	}
	// Another node takes the slot: this one answers NOT_COORDINATOR.
	owned = false
	if r := next.Heartbeat(ctx, "sg", beat("a", 3)); r.Err != kerr.NotCoordinator {
		t.Fatalf("after losing the slot: %v", r.Err)
	}
	if _, err := next.ShareGroupHasMembers("sg"); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("ShareGroupHasMembers elsewhere: %v", err)
	}
}

func TestCoordinatorKinds(t *testing.T) {
	meta, clk := ordersImage(t), &clock{now: t0}
	meta.apply(t, &metadata.CommitOffsets{Group: "classic", Offsets: []metadata.OffsetCommit{{Topic: "orders", Offset: 1}}})
	c := newTestCoordinator(t, meta, clk, nil)
	ctx := context.Background()
	if r := c.Heartbeat(ctx, "classic", join("a", "orders")); r.Err != kerr.GroupIDNotFound {
		t.Fatalf("share join of a classic group: %v", r.Err)
	}
	if r := c.Heartbeat(ctx, "nope", beat("a", 2)); r.Err != kerr.GroupIDNotFound {
		t.Fatalf("heartbeat of no group: %v", r.Err)
	}
	if _, err := c.Describe(ctx, "nope"); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("describe of no group: %v", err)
	}
	if _, err := c.ShareGroupHasMembers("nope"); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("ShareGroupHasMembers of no group: %v", err)
	}
	mustOK(t, c.Heartbeat(ctx, "sg", join("a", "orders")))
	if !c.IsShareGroup("sg") || c.IsShareGroup("classic") {
		t.Fatal("IsShareGroup")
	}
	mustOK(t, c.Heartbeat(ctx, "sg", beat("a", LeaveEpoch)))
	if has, err := c.ShareGroupHasMembers("sg"); has || err != nil {
		t.Fatalf("empty group: %v %v", has, err)
	}
	l := c.List(ctx)
	if len(l) != 1 || l[0] != (Listing{Group: "sg", State: StateEmpty}) {
		t.Fatalf("list %v", l)
	}
	mustOK(t, c.Heartbeat(ctx, "sg", join("b", "orders")))
	if err := c.Delete(ctx, "sg"); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Fatalf("delete with a member: %v", err)
	}
	mustOK(t, c.Heartbeat(ctx, "sg", beat("b", LeaveEpoch)))
	if err := c.Delete(ctx, "sg"); err != nil {
		t.Fatal(err)
	}
	if img, _ := meta.Current(); len(img.ShareGroups()) != 0 || c.IsShareGroup("sg") {
		t.Fatal("deleted group still there")
	}
	if err := c.Delete(ctx, "sg"); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	// The id is free again, for any kind.
	mustOK(t, c.Heartbeat(ctx, "sg", join("a", "orders")))
}

// A write the controller refuses or cannot take leaves nothing behind: the
// group reloads from the image, and the client is told to retry.
func TestCoordinatorPersistFailure(t *testing.T) {
	meta, clk := ordersImage(t), &clock{now: t0}
	c := newTestCoordinator(t, meta, clk, nil)
	ctx := context.Background()
	mustOK(t, c.Heartbeat(ctx, "sg", join("a", "orders")))
	meta.fail = errors.New("no quorum")
	if r := c.Heartbeat(ctx, "sg", join("b", "orders")); r.Err != kerr.CoordinatorNotAvailable {
		t.Fatalf("join during an outage: %v", r.Err)
	}
	meta.fail = nil
	s, err := c.Describe(ctx, "sg")
	if err != nil || len(s.Members) != 1 || s.Epoch != 1 {
		t.Fatalf("after a failed write: %+v %v", s, err)
	}
}

// Members recorded by a previous coordinator that never heartbeat to the
// new one are expired by its ticks alone: no request needs to load the group.
func TestCoordinatorExpiresTakenOverGroup(t *testing.T) {
	meta, clk := ordersImage(t), &clock{now: t0}
	ctx := context.Background()
	old := newTestCoordinator(t, meta, clk, nil)
	mustOK(t, old.Heartbeat(ctx, "sg", join("a", "orders")))
	next := newTestCoordinator(t, meta, clk, nil)
	next.Tick(ctx, clk.Now()) // loads it, sessions start now
	next.Tick(ctx, clk.Now().Add(cfg.SessionTimeout))
	img, _ := meta.Current()
	if st, _ := img.ShareGroup("sg"); len(st.Members) != 0 || st.Epoch != 2 {
		t.Fatalf("image after expiry: %+v", st)
	}
}
