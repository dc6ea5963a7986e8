package group

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
)

type rebalanceLog struct {
	mu sync.Mutex
	ds []time.Duration
}

func (r *rebalanceLog) RebalanceCompleted(d time.Duration) {
	r.mu.Lock()
	r.ds = append(r.ds, d)
	r.mu.Unlock()
}

func (r *rebalanceLog) get() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.ds...)
}

// A rebalance is reported once it reaches Stable, timed from its start on
// the coordinator's clock; Stats reports loaded groups in their state and
// groups only the image knows as Empty, without queueing on their loops.
func TestCoordinatorStatsAndRebalances(t *testing.T) {
	md := slotsImage(t, 1)
	var clockMu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }
	obs := &rebalanceLog{}
	c := NewCoordinator(CoordinatorConfig{
		NodeID: 1, Now: clock, Observer: obs, Logger: zerolog.Nop(),
		Group: Config{MinSessionTimeout: 10 * time.Millisecond, MaxSessionTimeout: time.Hour},
	}, md, &testCtrl{ControllerClient: md.node.Client()})
	t.Cleanup(c.Close)

	// Offsets committed for a group with no members: the image knows it.
	if err := c.Commit(context.Background(), CommitRequest{Group: "idle", Generation: -1,
		Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 3}}}); err != nil {
		t.Fatal(err)
	}
	j := await(t, c.Join("g", joinReq("", time.Hour)))
	if j.ErrorCode != 0 {
		t.Fatalf("join %+v", j)
	}
	eventually(t, func() (bool, string) {
		st := c.Stats(md.image())
		return len(st) == 2 && st[0] == (GroupStat{"g", CompletingRebalance}) && st[1] == (GroupStat{"idle", Empty}), "stats while completing the rebalance"
	})
	if got := obs.get(); len(got) != 0 {
		t.Fatalf("rebalances reported before Stable: %v", got)
	}
	advance(3 * time.Second)
	if s := await(t, c.Sync("g", SyncRequest{MemberID: j.MemberID, Generation: j.Generation, Assignments: map[string][]byte{j.MemberID: []byte("a")}})); s.ErrorCode != 0 {
		t.Fatalf("sync %+v", s)
	}
	eventually(t, func() (bool, string) {
		st := c.Stats(md.image())
		return len(st) == 2 && st[0] == (GroupStat{"g", Stable}), "g Stable in stats"
	})
	eventually(t, func() (bool, string) { return len(obs.get()) == 1, "one rebalance reported" })
	if got := obs.get(); got[0] != 3*time.Second {
		t.Fatalf("rebalance took %v on the coordinator's clock, want 3s", got[0])
	}
}

// A group whose slot another broker leads is not in this broker's stats.
func TestCoordinatorStatsOnlyCoordinatedGroups(t *testing.T) {
	md := slotsImage(t, 2)
	c, _ := newTestCoordinator(t, md)
	md.apply(t, &metadata.CommitOffsets{Group: "elsewhere", Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 1}}})
	if st := c.Stats(md.image()); len(st) != 0 {
		t.Fatalf("stats of groups coordinated elsewhere: %+v", st)
	}
}
