package txn

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const waitLimit = 10 * time.Second

var (
	slotsID = [16]byte{0x7a}
	dataID  = [16]byte{0xda}
)

// twin is the coordinator's metadata and controller: the in-memory raftfsm
// node, so every state write runs the controller's decision and replay.
type twin struct{ node *raftfsm.Node }

func (w *twin) Current() (*metadata.Image, uint64) { return w.node.Current() }

func (w *twin) apply(t *testing.T, recs ...metadata.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := w.node.CommitRecords(ctx, recs...); err != nil {
		t.Fatal(err)
	}
}

// newTwin: brokers 1 and 2, one slot led by leader, a data topic "d" of
// two partitions led by 1 and 2.
func newTwin(t *testing.T, leader int32) *twin {
	node, err := raftfsm.StartInMemory(raftfsm.Config{NodeID: 1, ClusterID: "txn-test-cluster", SessionTimeout: time.Hour, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Shutdown() })
	w := &twin{node: node}
	w.apply(t,
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 1},
		&metadata.RegisterBroker{BrokerID: 2, BrokerEpoch: 2},
		&metadata.CreateTopic{Name: StateTopic, ID: slotsID, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: leader},
		}},
		&metadata.CreateTopic{Name: "d", ID: dataID, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
			{Partition: 1, Replicas: []int32{2, 1}, ISR: []int32{1, 2}, Leader: 2},
		}},
	)
	return w
}

// markers records what the coordinator sends and answers as told.
type markers struct {
	mu   sync.Mutex
	sent []sentMarker
	// code answers every partition; hold, when set, makes every call fail.
	code int16
	hold atomic.Bool
}

type sentMarker struct {
	leader    int32
	topic     string
	partition int32
	commit    bool
	epoch     int16
	coord     int32
}

func (m *markers) WriteMarkers(_ context.Context, leader int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	if m.hold.Load() {
		return nil, errors.New("leader unreachable")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, mk := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = mk.ProducerID
		for _, t := range mk.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				m.sent = append(m.sent, sentMarker{leader, t.Topic, p, mk.Committed, mk.ProducerEpoch, mk.CoordinatorEpoch})
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, m.code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

func (m *markers) got() []sentMarker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]sentMarker(nil), m.sent...)
}

// fakeClock is the coordinator's clock, moved by the test.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

func newCoordinator(t *testing.T, w *twin, m *markers, clk *fakeClock, node int32) *Coordinator {
	var next atomic.Int64
	next.Store(1000)
	c := NewCoordinator(Config{
		NodeID: node, Limits: Limits{MaxTimeoutMs: 60000, IDExpirationMs: 3600000},
		AbortTimedOutInterval: 20 * time.Millisecond, RemoveExpiredInterval: 20 * time.Millisecond,
		ResumeInterval: 20 * time.Millisecond, MarkerRetryBackoff: 10 * time.Millisecond,
		ProducerIDs: func(context.Context) (int64, error) { return next.Add(1), nil },
		Now:         clk.now, Logger: zerolog.Nop(),
	}, w, noWait{w.node.Client()}, m)
	t.Cleanup(c.Close)
	return c
}

// noWait is the controller as cmd gives it to the coordinator: writes do
// not wait for the local image, so the tests go through current's overlay.
type noWait struct{ *raftfsm.ControllerClient }

func (n noWait) WriteTxn(ctx context.Context, recs ...metadata.Record) (uint64, error) {
	return n.WriteTxnNoWait(ctx, recs...)
}

func waitState(t *testing.T, w *twin, id string, want metadata.TxnState) metadata.Transaction {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		img, _ := w.Current()
		tx, ok := img.Transaction(id)
		if ok && tx.State == want {
			return tx
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: state %v (%v), want %v", id, tx.State, ok, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return c
}

// A whole transaction through the coordinator and the controller twin:
// init, add partitions and offsets, commit; the markers go to each
// partition's leader with the coordinator epoch, the offsets become the
// group's, and the next InitProducerId bumps the epoch.
func TestCoordinatorCommit(t *testing.T) {
	w := newTwin(t, 1)
	m := &markers{}
	clk := &fakeClock{}
	clk.ms.Store(1_000_000)
	c := newCoordinator(t, w, m, clk, 1)

	pid, epoch, err := c.InitProducerID(ctx(t), "t1", InitInput{TimeoutMs: 30000, ProducerID: -1, ProducerEpoch: -1, Version: 5})
	if err != nil || epoch != 0 {
		t.Fatalf("init: %d/%d %v", pid, epoch, err)
	}
	parts := []metadata.TopicPartition{{Topic: "d", Partition: 0}, {Topic: "d", Partition: 1}}
	if err := c.AddPartitions(ctx(t), "t1", pid, epoch, parts); err != nil {
		t.Fatal(err)
	}
	if err := c.AddOffsets(ctx(t), "t1", pid, epoch, "g"); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitOffsets(ctx(t), "t1", pid, epoch, "g", []metadata.OffsetCommit{{Topic: "d", Partition: 0, Offset: 7, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	if codes, err := c.Verify(ctx(t), "t1", pid, epoch, parts); err != nil || codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("verify: %v %v", codes, err)
	}
	if err := c.EndTxn(ctx(t), "t1", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	waitState(t, w, "t1", metadata.TxnCompleteCommit)
	img, _ := w.Current()
	if o, ok := img.Offset("g", "d", 0); !ok || o.Offset != 7 {
		t.Fatalf("committed offset %+v %v", o, ok)
	}
	sent := m.got()
	if len(sent) != 2 {
		t.Fatalf("markers %+v", sent)
	}
	for _, s := range sent {
		want := int32(1)
		if s.partition == 1 {
			want = 2
		}
		if s.leader != want || !s.commit || s.epoch != 0 || s.coord != 0 || s.topic != "d" {
			t.Fatalf("marker %+v", s)
		}
	}
	if err := c.EndTxn(ctx(t), "", pid, epoch, true); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("empty transactional id: %v", err)
	}
	// Retried commit: done; abort of it: INVALID_TXN_STATE.
	if err := c.EndTxn(ctx(t), "t1", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	if err := c.EndTxn(ctx(t), "t1", pid, epoch, false); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("abort after commit: %v", err)
	}
	_, epoch2, err := c.InitProducerID(ctx(t), "t1", InitInput{TimeoutMs: 30000, ProducerID: -1, ProducerEpoch: -1, Version: 5})
	if err != nil || epoch2 != 1 {
		t.Fatalf("re-init: %d %v", epoch2, err)
	}
	if err := c.AddPartitions(ctx(t), "t1", pid, epoch, parts); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("the old epoch: %v", err)
	}
}

// An InitProducerId while a transaction is open fences it: the open one
// is aborted with the bumped epoch, and the client gets that epoch once
// the abort is complete. A timed-out transaction is aborted the same way.
func TestCoordinatorFencesAndTimesOut(t *testing.T) {
	w := newTwin(t, 1)
	m := &markers{}
	clk := &fakeClock{}
	clk.ms.Store(1_000_000)
	c := newCoordinator(t, w, m, clk, 1)
	in := InitInput{TimeoutMs: 30000, ProducerID: -1, ProducerEpoch: -1, Version: 5}
	pid, epoch, err := c.InitProducerID(ctx(t), "t2", in)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitions(ctx(t), "t2", pid, epoch, []metadata.TopicPartition{{Topic: "d", Partition: 0}}); err != nil {
		t.Fatal(err)
	}
	// The fencing abort's markers are written while the call waits, and
	// its answer is the epoch after the abort's (what Kafka's client gets
	// by retrying CONCURRENT_TRANSACTIONS).
	_, e2, err := c.InitProducerID(ctx(t), "t2", in)
	if err != nil || e2 != epoch+2 {
		t.Fatalf("init over an open transaction: %d %v", e2, err)
	}
	if s := m.got(); len(s) != 1 || s[0].commit || s[0].epoch != epoch+1 {
		t.Fatalf("fencing abort markers %+v", s)
	}
	// With the markers held, the wait gives up: CONCURRENT_TRANSACTIONS.
	m.hold.Store(true)
	if err := c.AddPartitions(ctx(t), "t2", pid, e2, []metadata.TopicPartition{{Topic: "d", Partition: 0}}); err != nil {
		t.Fatal(err)
	}
	if err := c.EndTxn(ctx(t), "t2", pid, e2, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitions(ctx(t), "t2", pid, e2, []metadata.TopicPartition{{Topic: "d", Partition: 1}}); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("add while the abort cannot complete: %v", err)
	}
	m.hold.Store(false)
	waitState(t, w, "t2", metadata.TxnCompleteAbort)

	if err := c.AddPartitions(ctx(t), "t2", pid, e2, []metadata.TopicPartition{{Topic: "d", Partition: 1}}); err != nil {
		t.Fatal(err)
	}
	clk.ms.Add(30001)
	tx := waitState(t, w, "t2", metadata.TxnCompleteAbort)
	if tx.ProducerEpoch != e2+1 {
		t.Fatalf("timed-out abort epoch %d, want %d", tx.ProducerEpoch, e2+1)
	}
	if err := c.EndTxn(ctx(t), "t2", pid, e2, true); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("the timed-out producer: %v", err)
	}
	// transactional.id.expiration.ms: the idle id goes.
	clk.ms.Add(3600001)
	deadline := time.Now().Add(waitLimit)
	for {
		img, _ := w.Current()
		if _, ok := img.Transaction("t2"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle id did not expire")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A coordinator that takes a slot over finishes the PrepareCommit its
// predecessor left (the markers again, with the new coordinator epoch);
// the old one, no longer the slot's leader, answers NOT_COORDINATOR.
func TestCoordinatorTakeover(t *testing.T) {
	w := newTwin(t, 1)
	m := &markers{}
	m.hold.Store(true) // the first coordinator never gets its markers out
	clk := &fakeClock{}
	clk.ms.Store(1_000_000)
	c1 := newCoordinator(t, w, m, clk, 1)
	in := InitInput{TimeoutMs: 30000, ProducerID: -1, ProducerEpoch: -1, Version: 5}
	pid, epoch, err := c1.InitProducerID(ctx(t), "t3", in)
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.AddPartitions(ctx(t), "t3", pid, epoch, []metadata.TopicPartition{{Topic: "d", Partition: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := c1.EndTxn(ctx(t), "t3", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	c1.Close()
	w.apply(t, &metadata.PartitionChange{TopicID: slotsID, Partition: 0, Leader: 2})
	m.hold.Store(false)
	c2 := newCoordinator(t, w, m, clk, 2)
	waitState(t, w, "t3", metadata.TxnCompleteCommit)
	s := m.got()
	if len(s) == 0 || s[len(s)-1].coord != 1 || !s[len(s)-1].commit {
		t.Fatalf("takeover markers %+v", s)
	}
	c3 := newCoordinator(t, w, m, clk, 1)
	if err := c3.EndTxn(ctx(t), "t3", pid, epoch, true); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("the old coordinator: %v", err)
	}
	if err := c2.EndTxn(ctx(t), "t3", pid, epoch, true); err != nil {
		t.Fatalf("retried commit at the new coordinator: %v", err)
	}
}

// gatedController counts the coordinator's writes and, while gate is set,
// holds each write until the test lets it go.
type gatedController struct {
	noWait
	writes  atomic.Int32
	gate    chan struct{}
	entered chan struct{}
}

func (g *gatedController) WriteTxn(ctx context.Context, recs ...metadata.Record) (uint64, error) {
	g.writes.Add(1)
	if g.gate != nil {
		g.entered <- struct{}{}
		<-g.gate
	}
	return g.noWait.WriteTxn(ctx, recs...)
}

// Adds to one id that arrive while one of its writes is in flight are
// decided together and recorded with one write; each caller gets its own
// answer (a stale epoch among them is refused alone).
func TestCoordinatorCoalescesAdds(t *testing.T) {
	w := newTwin(t, 1)
	m := &markers{}
	clk := &fakeClock{}
	clk.ms.Store(1_000_000)
	var next atomic.Int64
	next.Store(1000)
	g := &gatedController{noWait: noWait{w.node.Client()}}
	c := NewCoordinator(Config{
		NodeID: 1, Limits: Limits{MaxTimeoutMs: 60000, IDExpirationMs: 3600000},
		ResumeInterval: 20 * time.Millisecond, MarkerRetryBackoff: 10 * time.Millisecond,
		ProducerIDs: func(context.Context) (int64, error) { return next.Add(1), nil },
		Now:         clk.now, Logger: zerolog.Nop(),
	}, w, g, m)
	t.Cleanup(c.Close)
	pid, epoch, err := c.InitProducerID(ctx(t), "t4", InitInput{TimeoutMs: 30000, ProducerID: -1, ProducerEpoch: -1, Version: 5})
	if err != nil {
		t.Fatal(err)
	}
	g.gate, g.entered = make(chan struct{}), make(chan struct{}, 16)
	before := g.writes.Load()
	// The first add's write is held; the others queue behind it.
	errs := make([]error, 5)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[0] = c.AddPartitions(ctx(t), "t4", pid, epoch, []metadata.TopicPartition{{Topic: "d", Partition: 0}})
	}()
	<-g.entered
	for i := 1; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, part := epoch, int32(i) // partitions 1-3 (the records do not check that they exist)
			if i == 4 {
				e = epoch - 1 // a fenced producer's add, refused alone
			}
			errs[i] = c.AddPartitions(ctx(t), "t4", pid, e, []metadata.TopicPartition{{Topic: "d", Partition: part}})
		}()
	}
	// Wait until the four are queued behind the held write.
	deadline := time.Now().Add(waitLimit)
	for {
		c.mu.Lock()
		n := 0
		if q := c.adding["t4"]; q != nil {
			n = len(q.adds)
		}
		c.mu.Unlock()
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d adds queued, want 4", n)
		}
		time.Sleep(time.Millisecond)
	}
	close(g.gate)
	wg.Wait()
	if got := g.writes.Load() - before; got != 2 {
		t.Fatalf("%d writes for 5 adds, want 2 (the held one and one for the three queued that add)", got)
	}
	for i, err := range errs[:4] {
		if err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	if !errors.Is(errs[4], kerr.ProducerFenced) && !errors.Is(errs[4], kerr.InvalidProducerEpoch) {
		t.Fatalf("stale epoch add: %v", errs[4])
	}
	tx, ok := c.Transaction("t4")
	if !ok || tx.State != metadata.TxnOngoing || len(tx.Partitions) != 4 {
		t.Fatalf("state %+v", tx)
	}
	c.mu.Lock()
	left := len(c.adding)
	c.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d add queues left open", left)
	}
}

// An add that finds the previous transaction's markers all written but its
// CompleteCommit not yet recorded records both in one write: the
// committed offsets become the group's, the new transaction is open with
// the new partition, and the marker writer finds nothing left to do.
func TestCoordinatorAddRecordsCompleteWithIt(t *testing.T) {
	w := newTwin(t, 1)
	m := &markers{}
	m.hold.Store(true) // the marker writer never gets to record CompleteCommit itself
	clk := &fakeClock{}
	clk.ms.Store(1_000_000)
	var next atomic.Int64
	next.Store(1000)
	g := &gatedController{noWait: noWait{w.node.Client()}}
	c := NewCoordinator(Config{
		NodeID: 1, Limits: Limits{MaxTimeoutMs: 60000, IDExpirationMs: 3600000},
		ResumeInterval: 20 * time.Millisecond, MarkerRetryBackoff: 10 * time.Millisecond,
		ProducerIDs: func(context.Context) (int64, error) { return next.Add(1), nil },
		Now:         clk.now, Logger: zerolog.Nop(),
	}, w, g, m)
	t.Cleanup(c.Close)
	pid, epoch, err := c.InitProducerID(ctx(t), "t5", InitInput{TimeoutMs: 30000, ProducerID: -1, ProducerEpoch: -1, Version: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitions(ctx(t), "t5", pid, epoch, []metadata.TopicPartition{{Topic: "d", Partition: 0}}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddOffsets(ctx(t), "t5", pid, epoch, "g"); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitOffsets(ctx(t), "t5", pid, epoch, "g", []metadata.OffsetCommit{{Topic: "d", Partition: 0, Offset: 9, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	if err := c.EndTxn(ctx(t), "t5", pid, epoch, true); err != nil {
		t.Fatal(err)
	}
	// Without its markers the add waits and is told to retry.
	if err := c.AddPartitions(ctx(t), "t5", pid, epoch, []metadata.TopicPartition{{Topic: "d", Partition: 1}}); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("add before the markers: %v", err)
	}
	// The markers are written (as the marker writer records it).
	prep, ok := c.Transaction("t5")
	if !ok || prep.State != metadata.TxnPrepareCommit {
		t.Fatalf("state %+v", prep)
	}
	c.mu.Lock()
	c.markersWritten["t5"] = prep
	c.mu.Unlock()
	before := g.writes.Load()
	if err := c.AddPartitions(ctx(t), "t5", pid, epoch, []metadata.TopicPartition{{Topic: "d", Partition: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := g.writes.Load() - before; got != 1 {
		t.Fatalf("%d writes, want 1 (CompleteCommit and Ongoing together)", got)
	}
	tx := waitState(t, w, "t5", metadata.TxnOngoing)
	if len(tx.Partitions) != 1 || tx.Partitions[0].Partition != 1 {
		t.Fatalf("new transaction %+v", tx)
	}
	img, _ := w.Current()
	if o, ok := img.Offset("g", "d", 0); !ok || o.Offset != 9 {
		t.Fatalf("the committed transaction's offset %+v %v", o, ok)
	}
	// The marker writer, let go, finds the transaction moved on.
	m.hold.Store(false)
	time.Sleep(50 * time.Millisecond)
	if got, _ := c.Transaction("t5"); got.State != metadata.TxnOngoing {
		t.Fatalf("after the marker writer ran: %+v", got)
	}
}

// The marker writer, its markers written, waits CompleteGrace for the
// producer's next transaction: an add arriving then records the
// CompleteCommit state with its own in one write, where the writer would
// otherwise have made one and the add a second after it. With no add, the
// writer records CompleteCommit itself once the grace is over.
func TestCoordinatorCompleteWaitsForNextAdd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grace  time.Duration
		addNow bool
		want   int32 // writes from the EndTxn's answer to the new transaction being open
	}{
		{"add within the grace", time.Hour, true, 1},
		{"no grace", -1, false, 2},
		{"grace over without an add", 20 * time.Millisecond, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTwin(t, 1)
			m := &markers{}
			clk := &fakeClock{}
			clk.ms.Store(1_000_000)
			var next atomic.Int64
			next.Store(1000)
			g := &gatedController{noWait: noWait{w.node.Client()}}
			c := NewCoordinator(Config{
				NodeID: 1, Limits: Limits{MaxTimeoutMs: 60000, IDExpirationMs: 3600000},
				ResumeInterval: 20 * time.Millisecond, MarkerRetryBackoff: 10 * time.Millisecond, CompleteGrace: tc.grace,
				ProducerIDs: func(context.Context) (int64, error) { return next.Add(1), nil },
				Now:         clk.now, Logger: zerolog.Nop(),
			}, w, g, m)
			t.Cleanup(c.Close)
			pid, epoch, err := c.InitProducerID(ctx(t), "t6", InitInput{TimeoutMs: 30000, ProducerID: -1, ProducerEpoch: -1, Version: 5})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.AddPartitions(ctx(t), "t6", pid, epoch, []metadata.TopicPartition{{Topic: "d", Partition: 0}, {Topic: "d", Partition: 1}}); err != nil {
				t.Fatal(err)
			}
			if err := c.EndTxn(ctx(t), "t6", pid, epoch, true); err != nil {
				t.Fatal(err)
			}
			before := g.writes.Load()
			if tc.addNow {
				// Once the markers are written, the writer is in its grace.
				deadline := time.Now().Add(waitLimit)
				for {
					c.mu.Lock()
					_, ok := c.markersWritten["t6"]
					c.mu.Unlock()
					if ok {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("markers never written")
					}
					time.Sleep(time.Millisecond)
				}
			} else {
				waitState(t, w, "t6", metadata.TxnCompleteCommit)
			}
			if err := c.AddPartitions(ctx(t), "t6", pid, epoch, []metadata.TopicPartition{{Topic: "d", Partition: 1}}); err != nil {
				t.Fatal(err)
			}
			if got := g.writes.Load() - before; got != tc.want {
				t.Fatalf("%d writes, want %d", got, tc.want)
			}
			tx := waitState(t, w, "t6", metadata.TxnOngoing)
			if len(tx.Partitions) != 1 || tx.Partitions[0].Partition != 1 {
				t.Fatalf("new transaction %+v", tx)
			}
			if n := len(m.got()); n != 2 {
				t.Fatalf("%d markers sent, want 2", n)
			}
		})
	}
}
