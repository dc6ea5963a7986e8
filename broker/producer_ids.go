package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// producerIDs hands out this broker's producer ids. Ids come in blocks that
// the active controller allocates to this broker through the Raft FSM
// (AllocateProducerIds, KIP-730), so no two brokers, and no two
// incarnations of one broker, ever hand out the same id; ids are used in
// order within a block, and a block is never reused.
//
// Once 90% of the current block is used, the next block is fetched in the
// background, so a steady stream of InitProducerId requests never waits
// for the controller; only a burst that drains a block before its
// successor arrives waits, for at most the caller's context.
//
// Concurrency: every method may be called from any goroutine. mu guards
// the fields; it is never held across the controller call, which runs on a
// goroutine of its own (one at a time: fetching is non-nil while it runs).
// The zero value is ready to use.
type producerIDs struct {
	mu       sync.Mutex
	next     int64 // next id of the current block
	end      int64 // one past the current block's last id
	size     int64 // length of the current block
	queued   *idBlock
	fetching chan struct{} // closed when the running fetch ends
	lastErr  error         // why the last fetch failed
}

type idBlock struct{ start, end int64 }

// prefetchAt is the share of a block used before its successor is fetched.
const prefetchAt = 0.9

// blockFetcher asks the controller for one block.
type blockFetcher func(ctx context.Context) (idBlock, error)

// spawner runs f on a goroutine that the owner waits for at shutdown; f's
// context ends at shutdown. It returns false (and does not run f) when the
// owner is shutting down.
type spawner func(f func(ctx context.Context)) bool

// errNoProducerIDs means no block was available in time.
var errNoProducerIDs = errors.New("broker: no producer id block available yet")

// take returns the next producer id, fetching a block first when none is
// left, for at most ctx's life. spawn must run its func on another
// goroutine (it is called with p.mu held).
func (p *producerIDs) take(ctx context.Context, fetch blockFetcher, spawn spawner) (int64, error) {
	for round := 0; ; round++ {
		p.mu.Lock()
		if p.next >= p.end && p.queued != nil {
			p.next, p.end, p.size = p.queued.start, p.queued.end, p.queued.end-p.queued.start
			p.queued = nil
		}
		if p.next < p.end {
			id := p.next
			p.next++
			if p.queued == nil && p.fetching == nil && float64(p.size-(p.end-p.next)) >= prefetchAt*float64(p.size) {
				p.startFetch(fetch, spawn)
			}
			p.mu.Unlock()
			return id, nil
		}
		// A fetch this caller waited for failed: report it rather than
		// retry in a loop; the client retries the request.
		if round > 0 && p.lastErr != nil && p.fetching == nil {
			err := p.lastErr
			p.mu.Unlock()
			return 0, err
		}
		// Otherwise wait for the next block. Each round waits on a fetch
		// (never spins), a failed one ends the loop above, and ctx bounds
		// the whole wait: a burst of callers that drains every new block
		// before this one's turn only delays it. (A fixed round limit here
		// failed callers in such bursts while time was left.)
		if p.fetching == nil && !p.startFetch(fetch, spawn) {
			p.mu.Unlock()
			return 0, fmt.Errorf("%w: broker shutting down", errNoProducerIDs)
		}
		wait := p.fetching
		p.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: %w", errNoProducerIDs, ctx.Err())
		}
	}
}

// startFetch starts fetching the next block. p.mu must be held.
func (p *producerIDs) startFetch(fetch blockFetcher, spawn spawner) bool {
	done := make(chan struct{})
	p.fetching = done
	ok := spawn(func(ctx context.Context) {
		b, err := fetch(ctx)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.lastErr = err
		switch {
		case err != nil:
		case b.end <= b.start || b.start < 0:
			p.lastErr = fmt.Errorf("broker: controller allocated an empty producer id block [%d, %d)", b.start, b.end)
		case p.next >= p.end:
			p.next, p.end, p.size = b.start, b.end, b.end-b.start
		default:
			p.queued = &b
		}
		p.fetching = nil
		close(done)
	})
	if !ok {
		p.fetching = nil
		close(done)
	}
	return ok
}

// producerIDWait bounds how long an InitProducerId waits for a block.
// Kafka does not wait at all (it answers COORDINATOR_LOAD_IN_PROGRESS while
// its block is on the way); a short wait saves the first producer after a
// start a round trip, and the retriable answer still comes if the
// controller is slow.
const producerIDWait = 5 * time.Second

// NextProducerID returns a fresh producer id from this broker's block
// (the transaction coordinator's source of ids, as Kafka's coordinator
// shares its broker's ProducerIdManager).
func (s *Server) NextProducerID(ctx context.Context) (int64, error) { return s.nextProducerID(ctx) }

// nextProducerID returns a fresh producer id for this broker.
func (s *Server) nextProducerID(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, producerIDWait)
	defer cancel()
	return s.producerIDs.take(ctx, s.fetchProducerIDBlock, s.spawn)
}

// fetchProducerIDBlock asks the controller for a block in this broker's
// current registration (broker epoch from the image: the controller
// refuses a stale one).
func (s *Server) fetchProducerIDBlock(ctx context.Context) (idBlock, error) {
	if s.deps.Admin == nil || s.deps.Metadata == nil {
		return idBlock{}, fmt.Errorf("%w: no controller reachable from this broker", errNoProducerIDs)
	}
	img, _ := s.deps.Metadata.Current()
	b, ok := img.Broker(s.nodeID)
	if !ok {
		return idBlock{}, fmt.Errorf("%w: broker %d not registered yet", errNoProducerIDs, s.nodeID)
	}
	ctx, cancel := context.WithTimeout(ctx, defaultForwardTimeout)
	defer cancel()
	resp, err := s.deps.Admin.AllocateProducerIDs(ctx, s.nodeID, b.Epoch)
	if err != nil {
		s.log.Warn().Err(err).Msg("allocating a producer id block")
		return idBlock{}, fmt.Errorf("%w: %w", errNoProducerIDs, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		s.log.Warn().Err(err).Int64("broker_epoch", b.Epoch).Msg("controller refused a producer id block")
		return idBlock{}, fmt.Errorf("%w: %w", errNoProducerIDs, err)
	}
	return idBlock{start: resp.ProducerIDStart, end: resp.ProducerIDStart + int64(resp.ProducerIDLen)}, nil
}

// spawn runs f on a goroutine Close waits for; f's context ends at Close.
func (s *Server) spawn(f func(ctx context.Context)) bool {
	if !s.track() {
		return false
	}
	go func() {
		defer s.wg.Done()
		f(s.ctx)
	}()
	return true
}
