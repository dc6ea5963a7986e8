package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

// produceN appends n one-record batches with acks=all at the leader.
func produceN(t *testing.T, c *cluster, topic string, n int) {
	t.Helper()
	for range n {
		if _, err := produce(t, c, 1, topic, -1, "v"); err != nil {
			t.Fatal(err)
		}
	}
}

// DeleteRecords answers once every replica's log start offset has reached
// the offset, as followers report it in their fetches (Kafka's delayed
// DeleteRecords), with that low watermark. The followers' fetch wait is far
// beyond the test's deadline: they must be woken to learn the new start,
// not reach it at the end of a wait.
func TestDeleteRecordsWaitsForEveryReplica(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 3, fetchWait: time.Hour})
	c.createTopic("dr", 1, 1, 2, 3)
	produceN(t, c, "dr", 10)
	leader := c.partition(1, "dr")
	waitFor(t, "every replica to report its log start", func() bool { low, err := leader.LowWatermark(); return err == nil && low == 0 })

	d, err := leader.DeleteRecords(5)
	if err != nil {
		t.Fatal(err)
	}
	if d.Required != 5 || leader.Log().LogStartOffset() != 5 {
		t.Fatalf("deletion %+v, leader log start %d", d, leader.Log().LogStartOffset())
	}
	if err := WaitDeletions(context.Background(), 20*time.Second, []*Deletion{d})[0]; err != nil {
		t.Fatal(err)
	}
	if d.LowWatermark != 5 {
		t.Fatalf("low watermark %d, want 5", d.LowWatermark)
	}
	for _, id := range []int32{2, 3} {
		if start := c.partition(id, "dr").Log().LogStartOffset(); start != 5 {
			t.Fatalf("broker %d log start %d when DeleteRecords answered, want 5", id, start)
		}
	}

	// -1 deletes up to the high watermark; nothing waits for a broker the
	// image has fenced (unreachable here, its log still starting at 5).
	c.stop(3)
	c.ctrl.apply(t, &metadata.FenceBroker{BrokerID: 3, BrokerEpoch: 103})
	d, err = leader.DeleteRecords(-1)
	if err != nil {
		t.Fatal(err)
	}
	if err := WaitDeletions(context.Background(), 20*time.Second, []*Deletion{d})[0]; err != nil || d.Required != 10 || d.LowWatermark != 10 {
		t.Fatalf("deleting to the HW without the fenced broker: %v, %+v", err, d)
	}
	if start := c.partition(3, "dr").Log().LogStartOffset(); start != 5 {
		t.Fatalf("the stopped broker's log start moved to %d", start)
	}
}

// A replica on a live broker that does not fetch holds the low watermark
// back: the deletion times out with REQUEST_TIMED_OUT and the low watermark
// of when it was made; the deleted records stay deleted on the leader.
func TestDeleteRecordsTimesOutOnSilentReplica(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 3})
	c.createTopic("slow", 1, 1, 2, 3)
	produceN(t, c, "slow", 4)
	leader := c.partition(1, "slow")
	waitFor(t, "every replica to report its log start", func() bool { low, err := leader.LowWatermark(); return err == nil && low == 0 })
	c.stop(3)
	d, err := leader.DeleteRecords(3)
	if err != nil {
		t.Fatal(err)
	}
	if err := WaitDeletions(context.Background(), 100*time.Millisecond, []*Deletion{d})[0]; !errors.Is(err, kerr.RequestTimedOut) || d.LowWatermark != 0 {
		t.Fatalf("waiting for a silent replica: %v, low watermark %d", err, d.LowWatermark)
	}
	if leader.Log().LogStartOffset() != 3 {
		t.Fatalf("leader log start %d, want 3", leader.Log().LogStartOffset())
	}
	// Back: the same request completes.
	c.start(3)
	d, err = leader.DeleteRecords(3)
	if err != nil {
		t.Fatal(err)
	}
	if err := WaitDeletions(context.Background(), 20*time.Second, []*Deletion{d})[0]; err != nil || d.LowWatermark != 3 {
		t.Fatalf("after the replica is back: %v, %+v", err, d)
	}
}

func TestDeleteRecordsFailsOnLeaderChange(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 2})
	id := c.createTopic("moving", 1, 1, 2)
	produceN(t, c, "moving", 2)
	leader := c.partition(1, "moving")
	c.stop(2)
	d, err := leader.DeleteRecords(1)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error)
	go func() { errc <- WaitDeletions(context.Background(), 20*time.Second, []*Deletion{d})[0] }()
	waitFor(t, "the deletion to wait", func() bool { return leader.lowWatch.len() == 1 })
	c.ctrl.apply(t, &metadata.PartitionChange{TopicID: id, Partition: 0, Leader: 2, ISR: []int32{2}})
	if err := <-errc; !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("waiting deletion after losing leadership: %v", err)
	}
	if _, err := c.partition(1, "moving").DeleteRecords(1); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("DeleteRecords on a follower: %v", err)
	}
}

// As Kafka, a compact-only log refuses DeleteRecords: the cleaner, not the
// client, decides what goes.
func TestDeleteRecordsRefusedOnCompactOnlyLog(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 1})
	c.createTopic("kv", 1, 1)
	produceN(t, c, "kv", 2)
	leader := c.partition(1, "kv")
	cfg := leader.Log().Config()
	cfg.CleanupPolicy = storage.PolicyCompact
	if err := leader.Log().UpdateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.DeleteRecords(1); !errors.Is(err, kerr.PolicyViolation) || leader.Log().LogStartOffset() != 0 {
		t.Fatalf("DeleteRecords on a compact-only log: %v, log start %d", err, leader.Log().LogStartOffset())
	}
	cfg.CleanupPolicy = storage.PolicyCompact | storage.PolicyDelete
	if err := leader.Log().UpdateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if d, err := leader.DeleteRecords(1); err != nil || d.Required != 1 {
		t.Fatalf("DeleteRecords on a compact,delete log: %+v %v", d, err)
	}
}
