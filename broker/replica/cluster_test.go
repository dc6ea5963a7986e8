package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// produce appends one batch at broker id with acks and waits for the ack.
func produce(t *testing.T, c *cluster, id int32, topic string, acks int16, values ...string) (int64, error) {
	t.Helper()
	p := c.partition(id, topic)
	res, ack, err := p.AppendAsLeader(batchOf(values...), acks)
	if err != nil {
		return -1, err
	}
	if ack != nil {
		if err := ack.Wait(context.Background(), 10*time.Second); err != nil {
			return res.BaseOffset, err
		}
	}
	return res.BaseOffset, nil
}

func TestReplicationAcksAll(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		name := "inmem"
		if tcp {
			name = "tcp"
		}
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, clusterOpts{n: 3, tcp: tcp})
			c.createTopic("orders", 2, 1, 2, 3)
			if s := c.partition(1, "orders").State(); s.Role != RoleLeader {
				t.Fatalf("broker 1 is %v, want leader", s.Role)
			}
			for _, id := range []int32{2, 3} {
				if s := c.partition(id, "orders").State(); s.Role != RoleFollower || s.Leader != 1 {
					t.Fatalf("broker %d is %v of %d, want follower of 1", id, s.Role, s.Leader)
				}
			}
			for i := range 20 {
				p := c.partition(1, "orders")
				res, ack, err := p.AppendAsLeader(batchOf("a", "b", string(rune('c'+i))), -1)
				if err != nil {
					t.Fatal(err)
				}
				if err := ack.Wait(context.Background(), 10*time.Second); err != nil {
					t.Fatalf("batch %d: %v", i, err)
				}
				// The ack means both followers have the batch.
				for _, id := range []int32{2, 3} {
					if leo := c.partition(id, "orders").Log().LogEndOffset(); leo <= res.LastOffset {
						t.Fatalf("batch %d acknowledged with broker %d's LEO at %d, batch ends at %d", i, id, leo, res.LastOffset)
					}
				}
				if hw := p.Log().HighWatermark(); hw <= res.LastOffset {
					t.Fatalf("acknowledged below the HW: hw %d, last offset %d", hw, res.LastOffset)
				}
			}
			leo := c.partition(1, "orders").Log().LogEndOffset()
			if leo != 60 {
				t.Fatalf("leader LEO %d, want 60", leo)
			}
			waitFor(t, "followers to learn the HW", func() bool {
				return c.partition(2, "orders").Log().HighWatermark() == leo && c.partition(3, "orders").Log().HighWatermark() == leo
			})
			c.sameBelow("orders", leo, 1, 2, 3)
		})
	}
}

func TestConsumerReadsOnlyBelowHW(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 2})
	c.createTopic("t", 1, 1, 2)
	if _, err := produce(t, c, 1, "t", -1, "x"); err != nil {
		t.Fatal(err)
	}
	c.net.SetDown(2, true)
	p := c.partition(1, "t")
	if _, _, err := p.AppendAsLeader(batchOf("y"), 1); err != nil {
		t.Fatal(err)
	}
	r := p.Read(ReadRequest{Offset: 0, MaxBytes: 1 << 20, ReplicaID: -1, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.HighWatermark != 1 || p.Log().LogEndOffset() != 2 {
		t.Fatalf("hw %d leo %d, want 1 and 2", r.HighWatermark, p.Log().LogEndOffset())
	}
	if want := logBytes(t, p.Log(), 1); r.Region.Len != int64(len(want)) {
		t.Fatalf("consumer read %d bytes, want the %d below the HW", r.Region.Len, len(want))
	}
	// A consumer reading at the HW gets nothing, not an error.
	if r := p.Read(ReadRequest{Offset: 1, MaxBytes: 1 << 20, ReplicaID: -1, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}); r.Err != nil || r.Region.Len != 0 {
		t.Fatalf("read at the HW: %v, %d bytes", r.Err, r.Region.Len)
	}
	if r := p.Read(ReadRequest{Offset: 3, MaxBytes: 1, ReplicaID: -1, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("read past the LEO: %v", r.Err)
	}
	if r := c.partition(2, "t").Read(ReadRequest{Offset: 0, MaxBytes: 1, ReplicaID: -1, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}); !errors.Is(r.Err, kerr.NotLeaderForPartition) {
		t.Fatalf("read from a follower: %v", r.Err)
	}
	if r := p.Read(ReadRequest{Offset: 0, MaxBytes: 1, ReplicaID: -1, CurrentLeaderEpoch: 5, LastFetchedEpoch: -1}); !errors.Is(r.Err, kerr.UnknownLeaderEpoch) {
		t.Fatalf("read with a future epoch: %v", r.Err)
	}
	lo, err := p.ListOffsets(-1, LatestTimestamp, ReadUncommitted)
	if err != nil || lo.Offset != 1 {
		t.Fatalf("ListOffsets latest: %+v %v, want the HW 1", lo, err)
	}
	if _, err := p.DeleteRecords(2); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("DeleteRecords past the HW: %v", err)
	}
	d, err := p.DeleteRecords(-1)
	if err != nil || d.Required != 1 || p.Log().LogStartOffset() != 1 {
		t.Fatalf("DeleteRecords to the HW: %+v %v, leader log start %d", d, err, p.Log().LogStartOffset())
	}
	// Broker 2 is alive in the image but unreachable: its log still starts
	// at 0, so the low watermark stays there and the deletion times out.
	if d.LowWatermark != 0 {
		t.Fatalf("low watermark %d, want 0 (broker 2's log start)", d.LowWatermark)
	}
	if err := WaitDeletions(context.Background(), 50*time.Millisecond, []*Deletion{d})[0]; !errors.Is(err, kerr.RequestTimedOut) || d.LowWatermark != 0 {
		t.Fatalf("waiting for an unreachable replica: %v, low watermark %d", err, d.LowWatermark)
	}
}

func TestMinISRAndISRShrinkExpand(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 3, lag: 300 * time.Millisecond})
	c.createTopic("t", 2, 1, 2, 3)
	if _, err := produce(t, c, 1, "t", -1, "committed"); err != nil {
		t.Fatal(err)
	}
	leader := c.partition(1, "t")
	if h := c.ms[1].Health(); h.IsrShrinks != 0 || len(h.Partitions) != 1 || h.Partitions[0].UnderReplicated() || !h.Partitions[0].Leader {
		t.Fatalf("health before any failure: %+v", h)
	}

	// Both followers stop: an acks=all batch appended while the ISR is
	// still whole completes only once the ISR shrank to the leader, and
	// then as NOT_ENOUGH_REPLICAS_AFTER_APPEND.
	c.net.SetDown(2, true)
	c.net.SetDown(3, true)
	if _, err := produce(t, c, 1, "t", -1, "after"); !errors.Is(err, kerr.NotEnoughReplicasAfterAppend) {
		t.Fatalf("acks=all with the followers gone: %v, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", err)
	}
	waitFor(t, "ISR shrink to the leader", func() bool {
		reg, _ := c.ctrl.image().Topic("t")
		return len(reg.Partitions[0].ISR) == 1 && len(leader.State().ISR) == 1
	})
	// One shrink or two: the two followers may expire in the same pass or not.
	waitFor(t, "the shrink to be counted", func() bool { return c.ms[1].Health().IsrShrinks >= 1 })
	h := c.ms[1].Health()
	shrinks := h.IsrShrinks
	if ph := h.Partitions[0]; !ph.UnderReplicated() || !ph.UnderMinISR() || ph.AtMinISR() || ph.LogEndOffset != leader.Log().LogEndOffset() {
		t.Fatalf("leader health with the ISR shrunk to itself: %+v", ph)
	}
	if ph := c.ms[2].Health().Partitions[0]; ph.Leader || ph.UnderReplicated() {
		t.Fatalf("a follower reports leader health: %+v", ph)
	}
	leo := leader.Log().LogEndOffset()
	if _, err := produce(t, c, 1, "t", -1, "refused"); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all below min ISR: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	if got := leader.Log().LogEndOffset(); got != leo {
		t.Fatalf("a refused batch was appended: LEO %d -> %d", leo, got)
	}
	if _, err := produce(t, c, 1, "t", 1, "acks=1 still works"); err != nil {
		t.Fatal(err)
	}

	// Broker 2 comes back: it catches up, rejoins the ISR, and acks=all
	// works again.
	c.net.SetDown(2, false)
	waitFor(t, "broker 2 to rejoin the ISR", func() bool {
		return slicesEqual(leader.State().ISR, []int32{1, 2})
	})
	if _, err := produce(t, c, 1, "t", -1, "flowing again"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the expansion to be counted", func() bool { return c.ms[1].Health().IsrExpands == 1 })
	if ph := c.ms[1].Health().Partitions[0]; !ph.UnderReplicated() || ph.UnderMinISR() || !ph.AtMinISR() {
		t.Fatalf("leader health with ISR {1,2} of 3, min 2: %+v", ph)
	}
	c.net.SetDown(3, false)
	waitFor(t, "broker 3 to rejoin the ISR", func() bool { return len(leader.State().ISR) == 3 })
	waitFor(t, "the second expansion to be counted", func() bool { return c.ms[1].Health().IsrExpands == 2 })
	if h := c.ms[1].Health(); h.Partitions[0].UnderReplicated() || h.IsrShrinks != shrinks {
		t.Fatalf("health with the ISR whole again: %+v", h)
	}
	end := leader.Log().LogEndOffset()
	waitFor(t, "followers to catch up", func() bool {
		return c.partition(2, "t").Log().LogEndOffset() == end && c.partition(3, "t").Log().LogEndOffset() == end
	})
	c.sameBelow("t", end, 1, 2, 3)
}

func slicesEqual(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || x == y
		}
		if !found {
			return false
		}
	}
	return true
}

func TestDivergenceTruncatedByLeaderEpoch(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		name := "inmem"
		if tcp {
			name = "tcp"
		}
		t.Run(name, func(t *testing.T) { testDivergence(t, tcp) })
	}
}

func testDivergence(t *testing.T, tcp bool) {
	c := newCluster(t, clusterOpts{n: 3, tcp: tcp})
	id := c.createTopic("d", 1, 1, 2, 3)
	for range 3 {
		if _, err := produce(t, c, 1, "d", -1, "committed", "twice"); err != nil {
			t.Fatal(err)
		}
	}
	committed := c.partition(1, "d").Log().HighWatermark()
	if committed != 6 {
		t.Fatalf("HW %d, want 6", committed)
	}
	// The followers stop (SIGSTOP); the leader takes acks=1 writes nobody
	// fetches, then dies.
	c.stop(2)
	c.stop(3)
	for range 2 {
		if _, err := produce(t, c, 1, "d", 1, "lost", "forever", "!"); err != nil {
			t.Fatal(err)
		}
	}
	if leo := c.partition(1, "d").Log().LogEndOffset(); leo != 12 {
		t.Fatalf("old leader LEO %d, want 12", leo)
	}
	c.stop(1)
	c.start(2)
	c.start(3)
	// The controller elects broker 2 from the ISR (leader epoch 1).
	c.ctrl.apply(t, &metadata.PartitionChange{TopicID: id, Partition: 0, Leader: 2, ISR: []int32{2, 3}})
	if s := c.partition(2, "d").State(); s.Role != RoleLeader || s.LeaderEpoch != 1 {
		t.Fatalf("broker 2: %v at epoch %d", s.Role, s.LeaderEpoch)
	}
	for range 2 {
		if _, err := produce(t, c, 2, "d", -1, "new", "leader"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := produce(t, c, 1, "d", 1, "old leader"); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("produce to the deposed leader: %v", err)
	}
	// The old leader returns as a follower: it truncates its 6 unfetched
	// records via OffsetForLeaderEpoch and fetches the new leader's.
	c.start(1)
	end := c.partition(2, "d").Log().LogEndOffset()
	if end != 10 {
		t.Fatalf("new leader LEO %d, want 10", end)
	}
	waitFor(t, "the old leader to converge", func() bool {
		return c.partition(1, "d").Log().LogEndOffset() == end && c.partition(3, "d").Log().LogEndOffset() == end
	})
	waitFor(t, "the HW to cover everything", func() bool {
		return c.partition(2, "d").Log().HighWatermark() == end
	})
	c.sameBelow("d", end, 2, 1, 3)
	waitFor(t, "the old leader to rejoin the ISR", func() bool { return len(c.partition(2, "d").State().ISR) == 3 })
	// The epoch caches agree too: epoch 1 starts at offset 6 everywhere.
	for _, b := range []int32{1, 2, 3} {
		e, endOff := c.partition(b, "d").Log().EndOffsetForEpoch(0)
		if e != 0 || endOff != 6 {
			t.Fatalf("broker %d: epoch 0 ends at %d (epoch %d), want 6", b, endOff, e)
		}
	}
}

// stop and start take a broker off the network and back, like SIGSTOP and
// SIGCONT: its requests and requests to it fail (for TCP runs the serving
// side checks the same InmemNetwork and drops the connection).
func (c *cluster) stop(id int32)  { c.net.SetDown(id, true) }
func (c *cluster) start(id int32) { c.net.SetDown(id, false) }

// A follower whose log ends before the leader's log start (records deleted
// while it was away) restarts its log at the leader's log start.
func TestFollowerBehindLogStartResets(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 2, lag: 200 * time.Millisecond})
	c.stop(2)
	c.createTopic("lso", 1, 1, 2)
	leader := c.partition(1, "lso")
	for range 3 {
		if _, _, err := leader.AppendAsLeader(batchOf("v"), 1); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the ISR to shrink and the HW to reach the LEO", func() bool { return leader.Log().HighWatermark() == 3 })
	if d, err := leader.DeleteRecords(-1); err != nil || d.Required != 3 || leader.Log().LogStartOffset() != 3 {
		t.Fatalf("DeleteRecords: %+v %v", d, err)
	}
	if _, _, err := leader.AppendAsLeader(batchOf("after"), 1); err != nil {
		t.Fatal(err)
	}
	c.start(2)
	f := c.partition(2, "lso")
	waitFor(t, "the follower to reset and catch up", func() bool { return f.Log().LogEndOffset() == 4 })
	if f.Log().LogStartOffset() != 3 {
		t.Fatalf("follower log start %d, want 3", f.Log().LogStartOffset())
	}
	waitFor(t, "the follower to rejoin the ISR", func() bool { return len(leader.State().ISR) == 2 })
	c.sameBelow("lso", 4, 1, 2)
	// The reset follower reports its new log start in its fetches.
	waitFor(t, "the low watermark to reach 3", func() bool { low, err := leader.LowWatermark(); return err == nil && low == 3 })
}
