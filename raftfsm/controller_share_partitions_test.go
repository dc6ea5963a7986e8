package raftfsm

import (
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
)

// Share-partition states through the controller: several in one entry,
// each fenced on its own when its leader epoch is not the partition's
// current one, its state epoch is older than the stored one, or its
// partition does not exist; the others are stored.
func TestWriteSharePartitionsFencesPerRecord(t *testing.T) {
	tc := startCluster(t, 1, nil)
	n := tc.nodes[tc.leader(10*time.Second)]
	for _, b := range startBrokers(t, tc, 1) {
		defer b.stop()
	}
	c := n.Client()
	mustCreate(t, c, "q", 2, 1)
	var id [16]byte
	var epoch int32
	waitFor(t, 10*time.Second, "the topic in the image", func() bool {
		img, _ := n.Current()
		ti, ok := img.Topic("q")
		if ok {
			id, epoch = ti.ID, ti.Partitions[0].LeaderEpoch
		}
		return ok
	})
	ctx := ctxT(t, 20*time.Second)
	st := func(p, leaderEpoch, stateEpoch int32, start int64) *metadata.SharePartitionState {
		return &metadata.SharePartitionState{Group: "sg", TopicID: id, Partition: p, LeaderEpoch: leaderEpoch, StateEpoch: stateEpoch, StartOffset: start}
	}
	fenced, err := c.WriteSharePartitions(ctx, []*metadata.SharePartitionState{
		st(0, epoch, 2, 5), st(1, epoch+1, 0, 5), st(7, epoch, 0, 5), st(1, epoch, 0, 9),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fenced, []int{1, 2}) {
		t.Fatalf("fenced %v, want [1 2] (a future leader epoch, a partition that does not exist)", fenced)
	}
	key := func(p int32) metadata.SharePartitionKey {
		return metadata.SharePartitionKey{Group: "sg", TopicID: id, Partition: p}
	}
	waitFor(t, 10*time.Second, "the states in the image", func() bool {
		img, _ := n.Current()
		s0, ok0 := img.SharePartition(key(0))
		s1, ok1 := img.SharePartition(key(1))
		return ok0 && ok1 && s0.StartOffset == 5 && s1.StartOffset == 9
	})
	// A leader still at state epoch 1 after an admin's rewrite to 2 is refused.
	if fenced, err = c.WriteSharePartitions(ctx, []*metadata.SharePartitionState{st(0, epoch, 1, 50)}); err != nil || !slices.Equal(fenced, []int{0}) {
		t.Fatalf("older state epoch: fenced %v, %v", fenced, err)
	}
	img, _ := n.Current()
	if s, _ := img.SharePartition(key(0)); s.StartOffset != 5 {
		t.Fatalf("a fenced state was stored: %+v", s)
	}
}
