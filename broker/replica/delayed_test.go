package replica

import (
	"context"
	"errors"
	"sync"
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

// consumerFetch is a consumer's Fetch of partition 0 of topic from offset,
// waiting up to an hour for data: only a wake-up or ctx ends it early.
func consumerFetch(ctx context.Context, m *Manager, topic string, offset int64) []ReadResult {
	return m.Fetch(ctx, FetchRequest{ReplicaID: -1, MaxWait: time.Hour, MinBytes: 1, MaxBytes: 1 << 20,
		Parts: []FetchPartition{{Topic: topic, Offset: offset, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, KnownHighWatermark: -1}}})
}

// TestReplicatedProduceWakesWaiters: on RF=3, min.insync.replicas=2, an
// acks=all produce is answered, and a consumer fetch parked at the log end
// returns the batch, through wake-ups alone: followers' fetches wait an
// hour at the leader and the consumer's MaxWait is an hour, so a wake-up
// missed anywhere on the chain (append -> follower fetches -> their next
// fetches move the HW -> ack and consumer) leaves the test waiting on its
// context instead of finishing. Regression test for the end-to-end tail
// at low produce rates, where a missed wake-up cost a whole
// replica.fetch.wait.max.ms.
func TestReplicatedProduceWakesWaiters(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 3, fetchWait: time.Hour})
	c.createTopic("e2e", 2, 1, 2, 3)
	p := c.partition(1, "e2e")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for round := range int64(3) {
		// Both followers and the consumer are parked at the leader.
		done := make(chan []ReadResult, 1)
		go func() { done <- consumerFetch(ctx, c.ms[1], "e2e", round) }()
		waitFor(t, "two follower fetches and a consumer fetch to wait", func() bool { return p.dataWatch.len() == 3 })
		_, ack, err := p.AppendAsLeader(batchOf("r"), -1)
		if err != nil {
			t.Fatal(err)
		}
		if err := WaitAcks(ctx, time.Hour, []*Ack{ack})[0]; err != nil {
			t.Fatalf("round %d: acks=all produce: %v", round, err)
		}
		res := <-done
		if ctx.Err() != nil {
			t.Fatalf("round %d: a wake-up was missed: %v", round, ctx.Err())
		}
		if res[0].Err != nil || res[0].Region.Len == 0 || res[0].HighWatermark != round+1 {
			t.Fatalf("round %d: consumer fetch read %d bytes at HW %d, err %v", round, res[0].Region.Len, res[0].HighWatermark, res[0].Err)
		}
	}
}

// TestFollowerFetchAppendBeforeWatch: an acks=all append landing between a
// follower fetch's first read and its waiter's registration must still
// reach that follower at once. Before the fetch read again once
// registered, the follower slept for replica.fetch.wait.max.ms (here an
// hour) and the produce, which needs every ISR member, waited with it.
func TestFollowerFetchAppendBeforeWatch(t *testing.T) {
	// Cleanups run last first: this one runs once the managers (and their
	// fetchers, which read the hook) are closed.
	t.Cleanup(func() { fetchBeforeWatch = nil })
	var c *cluster
	acks := make(chan *Ack, 1)
	var once sync.Once
	// Only leader 1 serves fetches, and the first to reach the gap is a
	// follower's: no consumer fetches in this test.
	fetchBeforeWatch = func() {
		once.Do(func() {
			p, err := c.ms[1].Partition("gap", 0)
			if err != nil {
				t.Error(err)
				close(acks)
				return
			}
			_, ack, err := p.AppendAsLeader(batchOf("in", "the gap"), -1)
			if err != nil {
				t.Error(err)
				close(acks)
				return
			}
			acks <- ack
		})
	}
	c = newCluster(t, clusterOpts{n: 3, fetchWait: time.Hour})
	c.createTopic("gap", 2, 1, 2, 3)
	ack := <-acks
	if ack == nil {
		t.FailNow()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := WaitAcks(ctx, time.Hour, []*Ack{ack})[0]; err != nil {
		t.Fatalf("acks=all produce appended in a follower fetch's gap: %v", err)
	}
	c.sameBelow("gap", 2, 1, 2, 3)
}

// A waiting fetch shows in Health's fetch purgatory size and runs its
// request's delay hook once, before it waits; an answered fetch leaves
// the purgatory empty, and a fetch answered at once never runs the hook.
func TestDelayedFetchPurgatorySizeAndDelayHook(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 1})
	c.createTopic("w", 1, 1)
	m := c.ms[1]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var hooked sync.WaitGroup
	hooked.Add(1)
	var calls int
	hctx := WithDelayHook(ctx, func() { calls++; hooked.Done() })
	req := FetchRequest{ReplicaID: -1, MaxWait: time.Hour, MinBytes: 1, MaxBytes: 1 << 20,
		Parts: []FetchPartition{{Topic: "w", Partition: 0, Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, KnownHighWatermark: -1}}}
	done := make(chan []ReadResult)
	go func() { done <- m.Fetch(hctx, req) }()
	waitFor(t, "the fetch to wait in the purgatory", func() bool { return m.Health().FetchPurgatory == 1 })
	hooked.Wait()
	if h := m.Health(); h.ProducePurgatory != 0 || h.DeleteRecordsPurgatory != 0 {
		t.Fatalf("produce purgatory %d, delete-records purgatory %d with only a fetch waiting", h.ProducePurgatory, h.DeleteRecordsPurgatory)
	}
	if _, err := produce(t, c, 1, "w", -1, "wake"); err != nil {
		t.Fatal(err)
	}
	<-done
	if n := m.Health().FetchPurgatory; n != 0 {
		t.Fatalf("fetch purgatory %d after the fetch was answered", n)
	}
	// Data is there now: answered at once, the hook is not called.
	m.Fetch(WithDelayHook(ctx, func() { t.Error("delay hook called for a fetch answered at once") }), req)
	if calls != 1 {
		t.Fatalf("delay hook called %d times, want 1", calls)
	}
}

// An acks=all produce waiting for a stopped follower shows in the produce
// purgatory size until it times out.
func TestDelayedProducePurgatorySize(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 2})
	c.createTopic("p", 1, 1, 2)
	c.stop(2)
	p := c.partition(1, "p")
	_, ack, err := p.AppendAsLeader(batchOf("wait"), -1)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []error)
	go func() { done <- WaitAcks(context.Background(), 5*time.Second, []*Ack{ack}) }()
	waitFor(t, "the produce to wait in the purgatory", func() bool { return c.ms[1].Health().ProducePurgatory == 1 })
	c.start(2)
	if errs := <-done; errs[0] != nil {
		t.Fatal(errs[0])
	}
	if n := c.ms[1].Health().ProducePurgatory; n != 0 {
		t.Fatalf("produce purgatory %d after the ack", n)
	}
}
