package broker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

func testBatch(base int64, n int, pid int64, control bool) []byte {
	b := recordbatch.Batch{BaseOffset: base, ProducerID: pid, ProducerEpoch: 0, BaseSequence: -1, Control: control, Transactional: pid >= 0}
	for i := range n {
		b.Records = append(b.Records, recordbatch.Record{OffsetDelta: int32(i), Value: []byte("v")})
	}
	return b.Encode()
}

func TestBatchSpans(t *testing.T) {
	type span struct {
		first, last int64
		deliver     bool
	}
	for _, tc := range []struct {
		name    string
		buf     []byte
		aborted []storage.AbortedTxn
		want    []span
	}{
		{"plain batches", slices.Concat(testBatch(0, 3, -1, false), testBatch(3, 2, -1, false)), nil,
			[]span{{0, 2, true}, {3, 4, true}}},
		{"a control batch is not delivered", slices.Concat(testBatch(0, 2, 7, false), testBatch(2, 1, 7, true), testBatch(3, 1, -1, false)), nil,
			[]span{{0, 1, true}, {2, 2, false}, {3, 3, true}}},
		{"an aborted transaction until its marker", slices.Concat(testBatch(0, 2, 7, false), testBatch(2, 2, 8, false), testBatch(4, 1, 7, true), testBatch(5, 1, 7, false)),
			[]storage.AbortedTxn{{ProducerID: 7, FirstOffset: 0}},
			[]span{{0, 1, false}, {2, 3, true}, {4, 4, false}, {5, 5, true}}},
		{"a truncated batch at the end is left out", append(testBatch(0, 2, -1, false), testBatch(2, 2, -1, false)[:30]...), nil,
			[]span{{0, 1, true}}},
		{"empty", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []span
			for _, s := range batchSpans(tc.buf, tc.aborted) {
				got = append(got, span{s.first, s.last, s.deliver})
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("spans %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzBatchSpans: any bytes (a read is the leader's own log, but a
// corrupt segment must not take the node down) give spans inside the
// buffer, never a panic.
func FuzzBatchSpans(f *testing.F) {
	f.Add(slices.Concat(testBatch(0, 3, -1, false), testBatch(3, 1, 5, true)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		prev := 0
		for _, s := range batchSpans(b, []storage.AbortedTxn{{ProducerID: 5, FirstOffset: 0}}) {
			if s.pos != prev || s.end <= s.pos || s.end > len(b) {
				t.Fatalf("span %+v outside [%d, %d]", s, prev, len(b))
			}
			prev = s.end
		}
	})
}

func TestShareSessions(t *testing.T) {
	ss := newShareSessions(2)
	must := func(st sessionStep, err error) sessionStep {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	wantErr := func(want *kerr.Error) func(sessionStep, error) {
		return func(_ sessionStep, err error) {
			t.Helper()
			if !errors.Is(err, want) {
				t.Fatalf("error %v, want %v", err, want)
			}
		}
	}
	st := must(ss.step("g", "a", 0, 1, true))
	if st.s.epoch != 1 || st.replaced != nil {
		t.Fatalf("opened %+v", st)
	}
	wantErr(kerr.InvalidShareSessionEpoch)(ss.step("g", "a", 3, 1, true))
	must(ss.step("g", "a", 1, 1, true))
	must(ss.step("g", "a", 2, 1, false)) // ShareAcknowledge moves the epoch too
	wantErr(kerr.InvalidShareSessionEpoch)(ss.step("g", "a", 2, 1, true))
	wantErr(kerr.ShareSessionNotFound)(ss.step("g", "b", 1, 1, true))
	wantErr(kerr.InvalidShareSessionEpoch)(ss.step("g", "b", 0, 1, false))
	must(ss.step("g", "b", 0, 2, true))
	wantErr(kerr.ShareSessionLimitReached)(ss.step("g", "c", 0, 2, true))
	// Reopening replaces; closing removes.
	re := must(ss.step("g", "a", 0, 1, true))
	if re.replaced == nil || re.s.epoch != 1 {
		t.Fatalf("reopen %+v", re)
	}
	cl := must(ss.step("g", "a", -1, 1, true))
	if cl.closed == nil {
		t.Fatal("close did not close")
	}
	wantErr(kerr.ShareSessionNotFound)(ss.step("g", "a", 1, 1, true))
	// Connection 2's sessions go with it.
	if n := len(ss.dropConn(2)); n != 1 {
		t.Fatalf("dropConn: %d sessions, want 1", n)
	}
	wantErr(kerr.ShareSessionNotFound)(ss.step("g", "b", 1, 2, true))
}

// TestShareSessionChange: a ShareFetch's Topics are added before its
// ForgottenTopicsData is removed (Kafka's ShareSession.update), so a
// partition listed in both, as franz-go does for one it only carries
// acknowledgements for, is not fetched any more.
func TestShareSessionChange(t *testing.T) {
	id := func(p int32) sharePartitionID { return sharePartitionID{topicID: [16]byte{1}, partition: p} }
	for _, tc := range []struct {
		name              string
		have, add, forget []int32
		want              []int32
	}{
		{"add to empty", nil, []int32{0, 1}, nil, []int32{0, 1}},
		{"add again is one", []int32{0}, []int32{0}, nil, []int32{0}},
		{"forget", []int32{0, 1, 2}, nil, []int32{1}, []int32{0, 2}},
		{"forget what is not there", []int32{0}, nil, []int32{5}, []int32{0}},
		{"acks-only partition in the session", []int32{0, 1}, []int32{1}, []int32{1}, []int32{0}},
		{"acks-only partition not in the session", []int32{0}, []int32{3}, []int32{3}, []int32{0}},
		{"add one, forget another", []int32{0, 1}, []int32{2}, []int32{0}, []int32{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := newShareSessions(1)
			st, err := ss.step("g", "m", 0, 1, true)
			if err != nil {
				t.Fatal(err)
			}
			var have, add, forget []sharePartitionID
			for _, p := range tc.have {
				have = append(have, id(p))
			}
			for _, p := range tc.add {
				add = append(add, id(p))
			}
			for _, p := range tc.forget {
				forget = append(forget, id(p))
			}
			ss.change(st.s, have, nil)
			ss.change(st.s, add, forget)
			var got []int32
			for _, p := range st.s.parts {
				got = append(got, p.partition)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("session partitions %v, want %v", got, tc.want)
			}
		})
	}
}

func TestShareLag(t *testing.T) {
	st := metadata.SharePartitionState{StartOffset: 10, Ranges: []metadata.SharePartitionRange{
		{First: 11, Last: 12, State: 2}, {First: 13, Last: 13, State: 0, DeliveryCount: 1}, {First: 14, Last: 20, State: 4},
	}}
	for _, tc := range []struct{ hw, want int64 }{{-1, -1}, {10, 0}, {14, 2}, {16, 2}, {30, 11}} {
		if got := shareLag(st, tc.hw); got != tc.want {
			t.Errorf("lag at hw %d: %d, want %d", tc.hw, got, tc.want)
		}
	}
}

// countingWriter is a controller that takes 2 ms per write and fences the
// partitions named in fence.
type countingWriter struct {
	writes, states atomic.Int64
	fence          map[int32]bool
}

func (w *countingWriter) WriteSharePartitions(ctx context.Context, states []*metadata.SharePartitionState) ([]int, error) {
	w.writes.Add(1)
	w.states.Add(int64(len(states)))
	time.Sleep(2 * time.Millisecond)
	var fenced []int
	for i, s := range states {
		if w.fence[s.Partition] {
			fenced = append(fenced, i)
		}
	}
	return fenced, nil
}

// TestShareWriterCoalesces: 10,000 acknowledgements from 50 concurrent
// requests over 6 share-partitions, each waiting for its write, cost a
// small fraction of 10,000 controller writes (group commit), and fenced
// partitions fail their waiters with NOT_LEADER_OR_FOLLOWER.
func TestShareWriterCoalesces(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cw := &countingWriter{fence: map[int32]bool{5: true}}
	sw := newShareWriter(ctx, cw, zerolog.Nop())
	const acks, workers = 10000, 50
	var wg sync.WaitGroup
	var fencedSeen, okSeen atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range acks / workers {
				p := int32((w + i) % 6)
				err := <-sw.submit(&metadata.SharePartitionState{Group: "g", Partition: p, StartOffset: int64(i)})
				switch {
				case err == nil && p != 5:
					okSeen.Add(1)
				case errors.Is(err, kerr.NotLeaderForPartition) && p == 5:
					fencedSeen.Add(1)
				default:
					t.Errorf("partition %d: %v", p, err)
				}
			}
		}()
	}
	wg.Wait()
	writes := cw.writes.Load()
	t.Logf("%d acknowledgements: %d controller writes carrying %d states (%.1f acknowledgements per write); %d fenced", acks, writes, cw.states.Load(), float64(acks)/float64(writes), fencedSeen.Load())
	if writes*10 > acks {
		t.Fatalf("%d writes for %d acknowledgements: not coalesced", writes, acks)
	}
	if okSeen.Load()+fencedSeen.Load() != acks || fencedSeen.Load() == 0 {
		t.Fatalf("ok %d fenced %d", okSeen.Load(), fencedSeen.Load())
	}
	cancel()
}
