package replica

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/rs/zerolog"
)

// newLoneManager is a Manager with no partitions, for the applied-index
// bookkeeping.
func newLoneManager(t *testing.T) *Manager {
	t.Helper()
	sm, _, err := storage.OpenManager(storage.ManagerOptions{Dirs: []string{t.TempDir()}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Config{BrokerID: 1, Storage: sm, TopicConfig: topicConfigFromImage, Controller: newController(t),
		Dial: NewInmemNetwork().Dialer(1), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		sm.Close()
	})
	return m
}

func TestWaitAppliedReturnsOnceIndexReached(t *testing.T) {
	m := newLoneManager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.WaitApplied(ctx, 0); err != nil {
		t.Fatalf("index 0 before anything was applied: %v", err)
	}

	// Waiters for every index from 1 to 20, released by marks made one by
	// one from another goroutine; each must see its index applied.
	const n = 20
	errs := make(chan error, n)
	for i := uint64(1); i <= n; i++ {
		go func() {
			if err := m.WaitApplied(ctx, i); err != nil {
				errs <- err
				return
			}
			if got := m.AppliedIndex(); got < i {
				errs <- errors.New("WaitApplied returned before its index was applied")
				return
			}
			errs <- nil
		}()
	}
	go func() {
		for i := uint64(1); i <= n; i++ {
			m.MarkApplied(i)
		}
	}()
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	// A later index than asked for also satisfies a waiter.
	done := make(chan error, 1)
	go func() { done <- m.WaitApplied(ctx, 25) }()
	m.MarkApplied(30)
	if err := <-done; err != nil {
		t.Fatalf("waiting for 25 after 30 was applied: %v", err)
	}
}

func TestWaitAppliedEndsWithItsContext(t *testing.T) {
	m := newLoneManager(t)
	m.MarkApplied(3)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := m.WaitApplied(ctx, 4); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("index 4 with only 3 applied: %v, want the context's deadline", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.WaitApplied(ctx, 4) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v, want context.Canceled", err)
	}
}

func TestWaitAppliedEndsWhenManagerCloses(t *testing.T) {
	m := newLoneManager(t)
	m.MarkApplied(2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.WaitApplied(ctx, 9) }()
	m.Close()
	if err := <-done; !errors.Is(err, ErrManagerClosed) {
		t.Fatalf("a waiter when the manager closed: %v, want ErrManagerClosed", err)
	}
	if err := m.WaitApplied(ctx, 9); !errors.Is(err, ErrManagerClosed) {
		t.Fatalf("waiting on a closed manager: %v, want ErrManagerClosed", err)
	}
	// What was applied before the close still counts.
	if err := m.WaitApplied(ctx, 2); err != nil {
		t.Fatalf("an index applied before the close: %v", err)
	}
}

// The feed may hand MarkApplied an older index (a reset replaying from a
// snapshot the manager had already passed); the applied index never goes
// back, or a handler would wait for entries it already has.
func TestMarkAppliedNeverMovesBackwards(t *testing.T) {
	m := newLoneManager(t)
	m.MarkApplied(10)
	m.MarkApplied(4)
	m.MarkApplied(10)
	if got := m.AppliedIndex(); got != 10 {
		t.Fatalf("AppliedIndex after 10, 4, 10: %d", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := m.WaitApplied(ctx, 10); err != nil {
		t.Fatalf("index 10 after an older mark: %v", err)
	}
	if err := m.WaitApplied(ctx, 11); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("index 11 with 10 applied: %v, want the context's deadline", err)
	}
}

func TestRefusalBackoff(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		n     int
		limit time.Duration
		want  time.Duration
	}{
		{0, time.Second, 20 * ms},
		{1, time.Second, 40 * ms},
		{2, time.Second, 80 * ms},
		{5, time.Second, 640 * ms},
		{6, time.Second, time.Second}, // 1280 ms, capped
		{7, time.Second, time.Second},
		{1000, time.Second, time.Second}, // stops doubling at the cap: no overflow
		{1000, time.Hour, time.Hour},     // likewise for a long cap
		{3, 50 * ms, 50 * ms},            // 160 ms, capped
		{0, 20 * ms, 20 * ms},            // cap equal to the first wait
		{4, 20 * ms, 20 * ms},
		{0, 5 * ms, 5 * ms}, // a cap below the first wait wins at once
		{3, 5 * ms, 5 * ms},
		{2, 100 * ms, 80 * ms},                // below the cap: not rounded up to it
		{3, 100 * ms, 100 * ms},               // 160 ms, capped
		{0, time.Minute, firstRefusalBackoff}, // the first retry comes soon whatever the cap
	}
	for _, tt := range tests {
		if got := refusalBackoff(tt.n, tt.limit); got != tt.want {
			t.Errorf("refusalBackoff(%d, %v) = %v, want %v", tt.n, tt.limit, got, tt.want)
		}
	}
}

// ackWithin appends to broker id's partition of topic with acks=all and
// waits for the ack at most bound.
func ackWithin(t *testing.T, c *cluster, id int32, topic string, bound time.Duration) {
	t.Helper()
	p := c.partition(id, topic)
	res, ack, err := p.AppendAsLeader(batchOf("first"), -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := ack.Wait(context.Background(), bound); err != nil {
		t.Fatalf("acks=all produce to %s: %v", topic, err)
	}
	if hw := p.Log().HighWatermark(); hw <= res.LastOffset {
		t.Fatalf("acknowledged with the HW at %d, batch ends at %d", hw, res.LastOffset)
	}
}

// TestNewPartitionCutsLongPoll: a follower whose fetcher sits in a long
// poll on one topic learns of a second topic led by the same broker. The
// poll cannot carry the new partition and, with replica.fetch.wait.max.ms
// at two minutes, would hold it (and the new topic's first acks=all
// produce) that long; Apply cuts the poll (interruptForAdded), and the
// round after fetches the new partition together with the old one as soon
// as its truncation is done (no epochs: at once), instead of truncating it
// and then long-polling the old one alone. Either step missing blows the
// 30 s bound by minutes.
func TestNewPartitionCutsLongPoll(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		name := "inmem"
		if tcp {
			name = "tcp"
		}
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, clusterOpts{n: 2, tcp: tcp, fetchWait: 2 * time.Minute})
			c.createTopic("a", 2, 1, 2)
			// Without a produce broker 2 parks its fetch at broker 1. The
			// Apply that added "a" may cut the fetcher's first poll after it
			// parked (interruptForAdded races the fetcher's start, more often
			// under load); over TCP the cut poll's delayed fetch stays parked
			// at the leader until its MaxWait, beside the next one, so wait
			// for at least one rather than exactly one.
			pa := c.partition(1, "a")
			waitFor(t, "broker 2's fetch to wait at broker 1", func() bool { return pa.dataWatch.len() >= 1 })
			c.createTopic("b", 2, 1, 2)
			ackWithin(t, c, 1, "b", 30*time.Second)
		})
	}
}

// commitTo commits recs to the controller's image but delivers the change
// to the brokers given only; deliver hands it to the others. A broker's
// metadata subscription can run ahead of another's, so a follower may hear
// of a leadership before its leader does.
func (c *cluster) commitTo(recs []metadata.Record, ids ...int32) (*metadata.Image, *metadata.Delta) {
	c.t.Helper()
	skip := map[int32]bool{}
	for id := range c.ms {
		skip[id] = !slices.Contains(ids, id)
	}
	c.ctrl.mu.Lock()
	c.ctrl.skip = skip
	c.ctrl.mu.Unlock()
	index := c.ctrl.commit(c.t, recs)
	c.ctrl.mu.Lock()
	defer c.ctrl.mu.Unlock()
	held := c.ctrl.held
	c.ctrl.skip, c.ctrl.held = nil, nil
	for _, ev := range held {
		if ev.Index == index {
			return ev.Image, ev.Delta
		}
	}
	c.t.Fatalf("the commit at %d was not published", index)
	return nil, nil
}

// refusals is how many times in a row source has refused p to broker id's
// fetcher.
func (c *cluster) refusals(id, source int32, p *Partition) int {
	m := c.ms[id]
	m.applyMu.Lock()
	f := m.fetchers[fetcherKey{source: source, id: fetcherID(p.Topic(), p.Index(), m.cfg.NumFetchers)}]
	m.applyMu.Unlock()
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if st := f.parts[p]; st != nil {
		return st.refusals
	}
	return 0
}

// TestRefusedPartitionRetriedSoon: broker 2 hears of a new topic led by
// broker 1 before broker 1 does, and its first fetch of the new partition
// is refused. Broker 1 then catches up. With replica.fetch.backoff.ms and
// replica.fetch.wait.max.ms both at two minutes, the partition must still
// be fetched again within 30 s: a refusal is retried after 20 ms (not the
// full backoff), and the long poll on the other topic ends when the
// refused partition falls due instead of holding it for the poll's wait.
// Over TCP it also proves that the poll cut when the topic was added
// starts the next round at once rather than after the failure backoff.
func TestRefusedPartitionRetriedSoon(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		name := "inmem"
		if tcp {
			name = "tcp"
		}
		t.Run(name, func(t *testing.T) { testRefusedPartitionRetriedSoon(t, tcp) })
	}
}

func testRefusedPartitionRetriedSoon(t *testing.T, tcp bool) {
	c := newCluster(t, clusterOpts{n: 2, tcp: tcp, fetchWait: 2 * time.Minute, fetchBackoff: 2 * time.Minute})
	c.createTopic("a", 2, 1, 2)
	pa := c.partition(1, "a")
	waitFor(t, "broker 2's fetch to wait at broker 1", func() bool { return pa.dataWatch.len() == 1 })

	parts := metadata.NewPartitions(0, [][]int32{{1, 2}}, c.ctrl.image().UsableBrokers())
	img, delta := c.commitTo([]metadata.Record{&metadata.CreateTopic{Name: "b", ID: [16]byte{2, 'b'},
		Configs: map[string]string{"min.insync.replicas": "2"}, Partitions: parts}}, 2)
	pb := c.partition(2, "b")
	waitFor(t, "broker 1 to refuse b to broker 2", func() bool { return c.refusals(2, 1, pb) > 0 })
	c.ms[1].Apply(img, delta, false)
	ackWithin(t, c, 1, "b", 30*time.Second)
	if n := c.refusals(2, 1, pb); n != 0 {
		t.Fatalf("refusals still counted after a fetched answer: %d", n)
	}
}
