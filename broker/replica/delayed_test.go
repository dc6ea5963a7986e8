package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestDelayedFetchWakesOnAppend(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 1})
	c.createTopic("w", 1, 1)
	m := c.ms[1]
	// The fetch's context ends long before MaxWait: if no append wakes the
	// fetch, it returns its first (empty) read when ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan []ReadResult)
	go func() {
		done <- m.Fetch(ctx, FetchRequest{ReplicaID: -1, MaxWait: time.Hour, MinBytes: 1, MaxBytes: 1 << 20,
			Parts: []FetchPartition{{Topic: "w", Partition: 0, Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, KnownHighWatermark: -1}}})
	}()
	p := c.partition(1, "w")
	waitFor(t, "the fetch to wait in the purgatory", func() bool { return p.dataWatch.len() == 1 })
	if _, err := produce(t, c, 1, "w", -1, "wake", "up"); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if res[0].Region.Len == 0 || res[0].HighWatermark != 2 {
		t.Fatalf("woken fetch read %d bytes at HW %d", res[0].Region.Len, res[0].HighWatermark)
	}
	if p.dataWatch.len() != 0 {
		t.Fatal("the fetch left its waiter registered")
	}
}

func TestDelayedFetchWaitsForHWNotLEO(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 2})
	c.createTopic("w", 1, 1, 2)
	c.stop(2)
	p := c.partition(1, "w")
	if _, _, err := p.AppendAsLeader(batchOf("uncommitted"), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan []ReadResult)
	go func() {
		done <- c.ms[1].Fetch(ctx, FetchRequest{ReplicaID: -1, MaxWait: time.Hour, MinBytes: 1,
			Parts: []FetchPartition{{Topic: "w", Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, KnownHighWatermark: -1}}})
	}()
	waitFor(t, "the fetch to wait", func() bool { return p.dataWatch.len() == 1 })
	// More appends do not complete a consumer fetch: only the HW does.
	if _, _, err := p.AppendAsLeader(batchOf("still uncommitted"), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		t.Fatalf("the fetch completed below the HW: %d bytes, err %v", r[0].Region.Len, r[0].Err)
	default:
	}
	c.start(2)
	res := <-done
	if res[0].Err != nil || res[0].Region.Len == 0 || res[0].HighWatermark != 2 {
		t.Fatalf("after replication: %d bytes, HW %d, err %v", res[0].Region.Len, res[0].HighWatermark, res[0].Err)
	}
}

func TestDelayedProduceTimesOut(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 3})
	c.createTopic("slow", 2, 1, 2, 3)
	c.stop(2)
	c.stop(3)
	p := c.partition(1, "slow")
	_, ack, err := p.AppendAsLeader(batchOf("waits"), -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := WaitAcks(context.Background(), 50*time.Millisecond, []*Ack{ack, nil}); !errors.Is(got[0], kerr.RequestTimedOut) || got[1] != nil {
		t.Fatalf("WaitAcks: %v, want REQUEST_TIMED_OUT and nil", got)
	}
	if p.hwWatch.len() != 0 {
		t.Fatal("the produce left its waiter registered")
	}
	// The batch stays in the log and completes once the followers return.
	c.start(2)
	c.start(3)
	if err := ack.Wait(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestDelayedProduceFailsOnLeaderChange(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 2})
	id := c.createTopic("moved", 1, 1, 2)
	c.stop(2)
	_, ack, err := c.partition(1, "moved").AppendAsLeader(batchOf("orphan"), -1)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error)
	go func() { errc <- ack.Wait(context.Background(), 10*time.Second) }()
	waitFor(t, "the produce to wait", func() bool { return c.partition(1, "moved").hwWatch.len() == 1 })
	c.ctrl.apply(t, &metadata.PartitionChange{TopicID: id, Partition: 0, Leader: 2, ISR: []int32{2}})
	if err := <-errc; !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("waiting produce after losing leadership: %v", err)
	}
}

// TestDelayedFetchAppendBeforeWatch: an append that lands after a fetch's
// first read but before its waiter is registered wakes nobody; the fetch
// must still see it (it reads again once registered) rather than sleep
// until the next append or MaxWait. Regression test for a lost wake-up.
func TestDelayedFetchAppendBeforeWatch(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 1})
	c.createTopic("w", 1, 1)
	m := c.ms[1]
	fetchBeforeWatch = func() {
		if _, err := produce(t, c, 1, "w", -1, "in", "the gap"); err != nil {
			t.Error(err)
		}
	}
	defer func() { fetchBeforeWatch = nil }()
	// No append follows: without the second read this fetch returns empty
	// when ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := m.Fetch(ctx, FetchRequest{ReplicaID: -1, MaxWait: time.Hour, MinBytes: 1, MaxBytes: 1 << 20,
		Parts: []FetchPartition{{Topic: "w", Partition: 0, Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, KnownHighWatermark: -1}}})
	if res[0].Err != nil || res[0].Region.Len == 0 || ctx.Err() != nil {
		t.Fatalf("fetch read %d bytes (err %v) and waited out its context: %v", res[0].Region.Len, res[0].Err, ctx.Err())
	}
}
