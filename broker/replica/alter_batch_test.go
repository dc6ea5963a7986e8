package replica

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeAlterController answers AlterPartition from a script: each request
// is handed to the test on reqs and waits for the answer the test sends
// on answers.
type fakeAlterController struct {
	reqs    chan *kmsg.AlterPartitionRequest
	answers chan fakeAnswer
}

type fakeAnswer struct {
	resp *kmsg.AlterPartitionResponse
	err  error
}

func (f *fakeAlterController) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	f.reqs <- req
	select {
	case a := <-f.answers:
		return a.resp, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// accept answers every partition of req with success at partition epoch
// 100+partition, except those in refuse, answered with their code.
func accept(req *kmsg.AlterPartitionRequest, refuse map[int32]int16) *kmsg.AlterPartitionResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.TopidID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition, rp.PartitionEpoch, rp.ErrorCode = p.Partition, 100+p.Partition, refuse[p.Partition]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

type alterHarness struct {
	ctrl    *fakeAlterController
	b       *alterBatcher
	wg      sync.WaitGroup
	closing bool

	mu       sync.Mutex
	got      map[string][2]int32 // "topic-partition" -> code, epoch
	shrinks  int
	expands  int
	answered chan struct{}
}

func newAlterHarness(t *testing.T, max int) *alterHarness {
	img, d := metadata.NewImage().Apply([]metadata.Record{
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 11}, &metadata.RegisterBroker{BrokerID: 2, BrokerEpoch: 12},
		&metadata.RegisterBroker{BrokerID: 3, BrokerEpoch: 13},
	})
	if len(d.Skipped) > 0 {
		t.Fatal(d.Skipped[0].Err)
	}
	h := &alterHarness{
		ctrl: &fakeAlterController{reqs: make(chan *kmsg.AlterPartitionRequest), answers: make(chan fakeAnswer)},
		got:  map[string][2]int32{}, answered: make(chan struct{}, 100),
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.b = &alterBatcher{
		client: h.ctrl, self: 1, image: func() *metadata.Image { return img }, ctx: ctx,
		timeout: time.Minute, log: zerolog.Nop(), max: max,
		start: func(fn func()) bool {
			if h.closing {
				return false
			}
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				fn()
			}()
			return true
		},
		accepted: func(shrink bool) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if shrink {
				h.shrinks++
			} else {
				h.expands++
			}
		},
	}
	t.Cleanup(func() {
		cancel()
		h.wg.Wait()
	})
	return h
}

var (
	alterTopicA = [16]byte{'a'}
	alterTopicB = [16]byte{'b'}
)

func (h *alterHarness) submit(topic string, id [16]byte, p int32, shrink bool, isr ...int32) {
	key := topic + "-" + string(rune('0'+p))
	h.b.submit(alterItem{
		topic: topic, topicID: id, partition: p, leaderEpoch: 5,
		ch: &isrChange{newISR: isr, partitionEpoch: 9, shrink: shrink},
		answer: func(code int16, epoch int32) {
			h.mu.Lock()
			h.got[key] = [2]int32{int32(code), epoch}
			h.mu.Unlock()
			h.answered <- struct{}{}
		},
	})
}

func (h *alterHarness) waitAnswers(t *testing.T, n int) map[string][2]int32 {
	t.Helper()
	for range n {
		select {
		case <-h.answered:
		case <-time.After(10 * time.Second):
			t.Fatal("answers did not come")
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.got)
}

func (h *alterHarness) nextRequest(t *testing.T) *kmsg.AlterPartitionRequest {
	t.Helper()
	select {
	case r := <-h.ctrl.reqs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no AlterPartition sent")
		return nil
	}
}

// partitionsOf lists a request's partitions as topic-partition keys.
func partitionsOf(req *kmsg.AlterPartitionRequest) []string {
	var out []string
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out = append(out, string(t.TopicID[0])+"-"+string(rune('0'+p.Partition)))
		}
	}
	return out
}

// One request in flight: changes started while it is out wait and go
// together in the next, one partition's newer change replacing its
// unsent older one; each partition gets its own result.
func TestAlterBatcherOneInFlightNextBatchCollects(t *testing.T) {
	h := newAlterHarness(t, alterBatchMax)
	h.submit("a", alterTopicA, 0, true, 1, 2)
	first := h.nextRequest(t)
	if got := partitionsOf(first); !slices.Equal(got, []string{"a-0"}) {
		t.Fatalf("first request %v", got)
	}
	p := first.Topics[0].Partitions[0]
	if first.Version != 3 || first.BrokerID != 1 || first.BrokerEpoch != 11 || p.LeaderEpoch != 5 || p.PartitionEpoch != 9 ||
		len(p.NewEpochISR) != 2 || p.NewEpochISR[1].BrokerID != 2 || p.NewEpochISR[1].BrokerEpoch != 12 {
		t.Fatalf("first request %+v", first)
	}
	// While the first is out: three partitions over two topics, and a-1
	// twice (the second replaces the first).
	h.submit("a", alterTopicA, 1, false, 1, 2)
	h.submit("b", alterTopicB, 0, false, 1, 2, 3)
	h.submit("a", alterTopicA, 1, false, 1, 2, 3)
	h.submit("a", alterTopicA, 2, true, 1)
	select {
	case r := <-h.ctrl.reqs:
		t.Fatalf("a second request %v while the first is in flight", partitionsOf(r))
	case <-time.After(50 * time.Millisecond):
	}
	h.ctrl.answers <- fakeAnswer{resp: accept(first, nil)}
	if got := h.waitAnswers(t, 1)["a-0"]; got != [2]int32{0, 100} {
		t.Fatalf("a-0 answer %v", got)
	}
	second := h.nextRequest(t)
	if got := partitionsOf(second); !slices.Equal(got, []string{"a-1", "a-2", "b-0"}) {
		t.Fatalf("second request %v, want a-1 a-2 b-0 in one request", got)
	}
	if isr := second.Topics[0].Partitions[0].NewISR; !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("a-1 sent with ISR %v, want the newer change's", isr)
	}
	h.ctrl.answers <- fakeAnswer{resp: accept(second, map[int32]int16{2: kerr.InvalidUpdateVersion.Code})}
	got := h.waitAnswers(t, 3)
	want := map[string][2]int32{"a-0": {0, 100}, "a-1": {0, 101}, "a-2": {int32(kerr.InvalidUpdateVersion.Code), 102}, "b-0": {0, 100}}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("%s answered %v, want %v (all %v)", k, got[k], w, got)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shrinks != 1 || h.expands != 2 {
		t.Fatalf("accepted shrinks %d expands %d, want 1 and 2", h.shrinks, h.expands)
	}
}

// A request-level error or a failed exchange answers every partition of
// the batch with it; a broken exchange is REQUEST_TIMED_OUT.
func TestAlterBatcherRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		ans  func(*kmsg.AlterPartitionRequest) fakeAnswer
		want int16
	}{
		{"top-level code", func(r *kmsg.AlterPartitionRequest) fakeAnswer {
			resp := r.ResponseKind().(*kmsg.AlterPartitionResponse)
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return fakeAnswer{resp: resp}
		}, kerr.StaleBrokerEpoch.Code},
		{"kerr error", func(*kmsg.AlterPartitionRequest) fakeAnswer {
			return fakeAnswer{err: kerr.NotController}
		}, kerr.NotController.Code},
		{"transport error", func(*kmsg.AlterPartitionRequest) fakeAnswer {
			return fakeAnswer{err: errors.New("connection reset")}
		}, kerr.RequestTimedOut.Code},
		{"partition missing from the answer", func(r *kmsg.AlterPartitionRequest) fakeAnswer {
			return fakeAnswer{resp: r.ResponseKind().(*kmsg.AlterPartitionResponse)}
		}, kerr.UnknownServerError.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newAlterHarness(t, alterBatchMax)
			h.submit("a", alterTopicA, 0, true, 1)
			first := h.nextRequest(t)
			h.submit("a", alterTopicA, 1, true, 1)
			h.submit("b", alterTopicB, 1, true, 1)
			h.ctrl.answers <- tc.ans(first)
			second := h.nextRequest(t)
			h.ctrl.answers <- tc.ans(second)
			got := h.waitAnswers(t, 3)
			for _, k := range []string{"a-0", "a-1", "b-1"} {
				if got[k] != [2]int32{int32(tc.want), -1} {
					t.Fatalf("%s answered %v, want code %d", k, got[k], tc.want)
				}
			}
		})
	}
}

// A queue longer than the per-request bound goes in several requests,
// in submission order.
func TestAlterBatcherSplitsAtMax(t *testing.T) {
	h := newAlterHarness(t, 2)
	h.submit("a", alterTopicA, 0, false, 1, 2)
	first := h.nextRequest(t)
	for p := int32(1); p <= 5; p++ {
		h.submit("a", alterTopicA, p, false, 1, 2)
	}
	h.ctrl.answers <- fakeAnswer{resp: accept(first, nil)}
	var sizes []int
	for range 3 {
		r := h.nextRequest(t)
		sizes = append(sizes, len(partitionsOf(r)))
		h.ctrl.answers <- fakeAnswer{resp: accept(r, nil)}
	}
	if !slices.Equal(sizes, []int{2, 2, 1}) {
		t.Fatalf("request sizes %v, want 2 2 1", sizes)
	}
	got := h.waitAnswers(t, 6)
	if len(got) != 6 {
		t.Fatalf("answers %v", got)
	}
}

// A change submitted once the manager is closing is answered at once
// (REQUEST_TIMED_OUT: retried after the backoff if the partition lives on).
func TestAlterBatcherClosing(t *testing.T) {
	h := newAlterHarness(t, alterBatchMax)
	h.closing = true
	h.submit("a", alterTopicA, 0, true, 1)
	if got := h.waitAnswers(t, 1)["a-0"]; got != [2]int32{int32(kerr.RequestTimedOut.Code), -1} {
		t.Fatalf("answer %v", got)
	}
}
