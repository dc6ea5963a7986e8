package replica

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
)

// TestFollowerDropsEpochItLedWithoutRecords: broker 3 leads epoch 2 and
// appends nothing, so its epoch cache ends with epoch 2 starting at its log
// end; broker 1, which never had epoch 2, leads epoch 3 without broker 3 in
// the ISR. Broker 3's truncation finds nothing to cut (epoch 1 ends at its
// log end on both sides) but must still drop epoch 2: kept, it is the
// LastFetchedEpoch of every fetch, which broker 1 answers with
// DivergingEpoch (epoch 1 ends at broker 3's log end) instead of records,
// forever, and broker 3 never rejoins the ISR. With the empty epoch gone it
// fetches, rejoins through an AlterPartition within 30 s and ends with the
// leader's log and epochs.
func TestFollowerDropsEpochItLedWithoutRecords(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		name := "inmem"
		if tcp {
			name = "tcp"
		}
		t.Run(name, func(t *testing.T) { testFollowerDropsEmptyEpoch(t, tcp) })
	}
}

func testFollowerDropsEmptyEpoch(t *testing.T, tcp bool) {
	c := newCluster(t, clusterOpts{n: 3, tcp: tcp})
	id := c.createTopic("e", 2, 1, 2, 3)

	// Epoch 1, led by broker 1, with records every replica has.
	c.ctrl.apply(t, &metadata.PartitionChange{TopicID: id, Partition: 0, Leader: 1})
	if s := c.partition(1, "e").State(); s.Role != RoleLeader || s.LeaderEpoch != 1 {
		t.Fatalf("broker 1: %v at epoch %d, want leader at 1", s.Role, s.LeaderEpoch)
	}
	for range 3 {
		if _, err := produce(t, c, 1, "e", -1, "epoch", "one"); err != nil {
			t.Fatal(err)
		}
	}
	const end = 6 // where epoch 1 ends
	for _, b := range []int32{1, 2, 3} {
		if leo := c.partition(b, "e").Log().LogEndOffset(); leo != end {
			t.Fatalf("broker %d's log ends at %d, want %d", b, leo, end)
		}
	}

	// Epoch 2, led by broker 3, which appends nothing: its epoch cache
	// ends with an epoch that starts at its log end and holds no record.
	c.ctrl.apply(t, &metadata.PartitionChange{TopicID: id, Partition: 0, Leader: 3})
	p3 := c.partition(3, "e")
	if s := p3.State(); s.Role != RoleLeader || s.LeaderEpoch != 2 {
		t.Fatalf("broker 3: %v at epoch %d, want leader at 2", s.Role, s.LeaderEpoch)
	}
	if latest, _ := p3.Log().LeaderEpochs().Latest(); latest != (storage.EpochEntry{Epoch: 2, StartOffset: end}) {
		t.Fatalf("broker 3's latest epoch %+v, want epoch 2 at %d", latest, end)
	}

	// Epoch 3, led by broker 1 with ISR [1, 2]: broker 3 has to catch up
	// and be added back by the leader.
	c.ctrl.apply(t, &metadata.PartitionChange{TopicID: id, Partition: 0, Leader: 1, ISR: []int32{1, 2}})
	p1 := c.partition(1, "e")
	if s := p1.State(); s.Role != RoleLeader || s.LeaderEpoch != 3 {
		t.Fatalf("broker 1: %v at epoch %d, want leader at 3", s.Role, s.LeaderEpoch)
	}
	for _, e := range p1.Log().LeaderEpochs().Entries() {
		if e.Epoch == 2 {
			t.Fatalf("broker 1 has epoch 2 (%v): the leader must not know the follower's empty epoch", p1.Log().LeaderEpochs().Entries())
		}
	}
	alters := c.alterCount()
	for range 3 {
		if _, err := produce(t, c, 1, "e", -1, "epoch", "three"); err != nil {
			t.Fatal(err)
		}
	}

	waitWithin(t, 30*time.Second, "broker 3 to rejoin the ISR in the controller's image", func() bool {
		reg, _ := c.ctrl.image().Topic("e")
		return slices.Contains(reg.Partitions[0].ISR, 3)
	})
	if n := c.alterCount(); n <= alters {
		t.Fatalf("broker 3 is in the ISR with no AlterPartition sent (%d before, %d after)", alters, n)
	}
	waitFor(t, "the leader to take the new ISR", func() bool { return len(p1.State().ISR) == 3 })

	// With broker 3 in the ISR an acks=all produce needs it too.
	if _, err := produce(t, c, 1, "e", -1, "with", "three"); err != nil {
		t.Fatal(err)
	}
	leo := p1.Log().LogEndOffset()
	if l := p3.Log().LogEndOffset(); l != leo {
		t.Fatalf("broker 3's log ends at %d after an acks=all produce, leader's at %d", l, leo)
	}
	c.sameBelow("e", leo, 1, 2, 3)
	want := p1.Log().LeaderEpochs().Entries()
	for _, b := range []int32{2, 3} {
		if got := c.partition(b, "e").Log().LeaderEpochs().Entries(); !reflect.DeepEqual(got, want) {
			t.Fatalf("broker %d's epochs %v, leader's %v", b, got, want)
		}
	}
}

func (c *cluster) alterCount() int {
	return int(c.ctrl.alters.Load())
}

// waitWithin is waitFor with its own bound.
func waitWithin(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, bound)
		}
		<-tick.C
	}
}
