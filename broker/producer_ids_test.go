package broker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// blockSource hands out consecutive blocks of size ids, optionally gated.
type blockSource struct {
	size  int64
	next  atomic.Int64
	calls atomic.Int32
	gate  chan struct{} // when set, each fetch waits for a receive... or a close
	fail  atomic.Bool
}

func (b *blockSource) fetch(ctx context.Context) (idBlock, error) {
	b.calls.Add(1)
	if b.gate != nil {
		select {
		case <-b.gate:
		case <-ctx.Done():
			return idBlock{}, ctx.Err()
		}
	}
	if b.fail.Load() {
		return idBlock{}, errors.New("controller unavailable")
	}
	start := b.next.Add(b.size) - b.size
	return idBlock{start: start, end: start + b.size}, nil
}

// goSpawner runs fetches on goroutines the test waits for.
type goSpawner struct {
	wg     sync.WaitGroup
	ctx    context.Context
	closed atomic.Bool
}

func (g *goSpawner) spawn(f func(context.Context)) bool {
	if g.closed.Load() {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f(g.ctx)
	}()
	return true
}

func newSpawner(t *testing.T) *goSpawner {
	ctx, cancel := context.WithCancel(context.Background())
	g := &goSpawner{ctx: ctx}
	t.Cleanup(func() { cancel(); g.wg.Wait() })
	return g
}

func TestProducerIDsUniqueUnderConcurrency(t *testing.T) {
	src := &blockSource{size: 10}
	sp := newSpawner(t)
	var p producerIDs
	const workers, each = 8, 50
	ids := make(chan int64, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
				id, err := p.take(ctx, src.fetch, sp.spawn)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				ids <- id
			}
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("id %d handed out twice", id)
		}
		seen[id] = true
	}
	if len(seen) != workers*each {
		t.Fatalf("%d ids, want %d", len(seen), workers*each)
	}
	// Blocks are used in order and none is skipped: at the end at most the
	// rest of the current block and one prefetched block are unused.
	if fetched := int64(src.calls.Load()) * src.size; fetched > int64(workers*each)+2*src.size {
		t.Fatalf("%d blocks fetched for %d ids", src.calls.Load(), workers*each)
	}
}

func TestProducerIDsPrefetchAtNinetyPercent(t *testing.T) {
	src := &blockSource{size: 10, gate: make(chan struct{})}
	sp := newSpawner(t)
	var p producerIDs
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()

	// The first take waits for the first block.
	got := make(chan int64, 1)
	go func() {
		id, err := p.take(ctx, src.fetch, sp.spawn)
		if err != nil {
			t.Error(err)
		}
		got <- id
	}()
	src.gate <- struct{}{}
	if id := <-got; id != 0 {
		t.Fatalf("first id %d", id)
	}
	for want := int64(1); want < 8; want++ {
		id, err := p.take(ctx, src.fetch, sp.spawn)
		if err != nil || id != want {
			t.Fatalf("take = %d, %v; want %d", id, err, want)
		}
		if src.calls.Load() != 1 {
			t.Fatalf("a fetch started after %d of 10 ids", want+1)
		}
	}
	// The ninth id (90% used) starts the next fetch.
	if id, err := p.take(ctx, src.fetch, sp.spawn); err != nil || id != 8 {
		t.Fatalf("take = %d, %v", id, err)
	}
	waitFor(t, "the prefetch to start", func() bool { return src.calls.Load() == 2 })
	src.gate <- struct{}{}
	waitFor(t, "the prefetched block", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.queued != nil
	})
	for want := int64(9); want < 12; want++ {
		if id, err := p.take(ctx, src.fetch, sp.spawn); err != nil || id != want {
			t.Fatalf("take = %d, %v; want %d", id, err, want)
		}
	}
}

func TestProducerIDsFailureAndShutdown(t *testing.T) {
	src := &blockSource{size: 5}
	src.fail.Store(true)
	sp := newSpawner(t)
	var p producerIDs
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if _, err := p.take(ctx, src.fetch, sp.spawn); err == nil || err.Error() != "controller unavailable" {
		t.Fatalf("take with a failing controller: %v", err)
	}
	src.fail.Store(false)
	if id, err := p.take(ctx, src.fetch, sp.spawn); err != nil || id != 0 {
		t.Fatalf("take after recovery = %d, %v", id, err)
	}

	var q producerIDs
	sp.closed.Store(true)
	if _, err := q.take(ctx, src.fetch, sp.spawn); !errors.Is(err, errNoProducerIDs) {
		t.Fatalf("take while shutting down: %v", err)
	}

	// A caller whose context ends stops waiting; the fetch goes on.
	gated := &blockSource{size: 5, gate: make(chan struct{})}
	sp2 := newSpawner(t)
	var r producerIDs
	short, cancelShort := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancelShort()
	if _, err := r.take(short, gated.fetch, sp2.spawn); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("take past its deadline: %v", err)
	}
	close(gated.gate)
}

func TestInitProducerID(t *testing.T) {
	img := clusterImage(t, 9001)
	var allocs atomic.Int32
	fa := &adminCtrl{allocate: func(brokerID int32, epoch int64) *kmsg.AllocateProducerIDsResponse {
		resp := kmsg.NewPtrAllocateProducerIDsResponse()
		if brokerID != 1 || epoch != 1 {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return resp
		}
		n := allocs.Add(1)
		resp.ProducerIDStart, resp.ProducerIDLen = int64(n-1)*1000+5000, 1000
		return resp
	}}
	s := adminServer(t, img, fa, nil)
	req := func(v int16, txn *string, id int64, epoch int16) *kmsg.InitProducerIDRequest {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch = v, txn, id, epoch
		return r
	}
	next := int64(5000)
	for v := int16(0); v <= 5; v++ {
		resp := call[*kmsg.InitProducerIDResponse](t, s, req(v, nil, -1, -1))
		if resp.ErrorCode != 0 || resp.ProducerID != next || resp.ProducerEpoch != 0 {
			t.Fatalf("v%d: %d/%d code %d, want %d/0", v, resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode, next)
		}
		next++
		if v >= 3 {
			// KIP-360 recovery without a transactional id: a fresh id, as
			// Kafka answers.
			resp := call[*kmsg.InitProducerIDResponse](t, s, req(v, nil, 5000, 3))
			if resp.ErrorCode != 0 || resp.ProducerID != next || resp.ProducerEpoch != 0 {
				t.Fatalf("v%d recovery: %d/%d code %d", v, resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode)
			}
			next++
			if resp := call[*kmsg.InitProducerIDResponse](t, s, req(v, nil, 5000, -1)); resp.ErrorCode != kerr.InvalidRequest.Code || resp.ProducerID != -1 {
				t.Fatalf("v%d id without epoch: code %d", v, resp.ErrorCode)
			}
		}
		// No transaction coordinator on this server: retriable.
		if resp := call[*kmsg.InitProducerIDResponse](t, s, req(v, strp("txn-1"), -1, -1)); resp.ErrorCode != kerr.CoordinatorNotAvailable.Code || resp.ProducerID != -1 {
			t.Fatalf("v%d transactional: code %d id %d", v, resp.ErrorCode, resp.ProducerID)
		}
		if resp := call[*kmsg.InitProducerIDResponse](t, s, req(v, strp(""), -1, -1)); resp.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("v%d empty transactional id: code %d", v, resp.ErrorCode)
		}
	}

	// A broker that is not registered, or has no controller, answers a
	// retriable code.
	unregistered := adminServer(t, metadata.NewImage(), fa, nil)
	noAdmin := adminServer(t, img, nil, nil)
	for name, srv := range map[string]*Server{"unregistered": unregistered, "no controller": noAdmin} {
		if resp := call[*kmsg.InitProducerIDResponse](t, srv, req(4, nil, -1, -1)); resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code || resp.ProducerID != -1 {
			t.Errorf("%s: code %d id %d", name, resp.ErrorCode, resp.ProducerID)
		}
	}
}
