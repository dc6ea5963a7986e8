package raftfsm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/raftka/raftka/metadata"
)

// ErrClosed is returned by waits and subscriptions once the node has shut
// down.
var ErrClosed = errors.New("raftfsm: node closed")

// Event is one published change: the image after a committed Raft entry, the
// delta from the previous image, and the entry's Raft index. Reset marks an
// image that replaced the previous one wholesale (the first event of a
// subscription, and a snapshot restore); a subscriber rebuilds its state from
// Image and ignores Delta then.
type Event struct {
	Image *metadata.Image
	Delta *metadata.Delta
	Index uint64
	Reset bool
}

type published struct {
	img   *metadata.Image
	index uint64
}

// Publisher hands the FSM's images to readers. Only the FSM goroutine
// publishes; Current, WaitForIndex and Subscribe may be called from any
// goroutine.
//
// It keeps two images. Latest is the FSM's newest, which the controller
// decides on and subscriptions are fed from. Current is the one the node
// serves: the same as Latest until Hold is called, from then on the one the
// holder last handed to Serve. A broker holds it for its replica manager, so
// no Metadata answer names this broker leader of a partition before the
// partition layer leads it (issue 18, P3).
type Publisher struct {
	cur    atomic.Pointer[published] // Latest
	served atomic.Pointer[published] // Current

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every publish
	subs    map[*Subscription]struct{}
	closed  bool
	held    bool // Current moves only by Serve
}

func newPublisher() *Publisher {
	p := &Publisher{changed: make(chan struct{}), subs: make(map[*Subscription]struct{})}
	first := &published{img: metadata.NewImage()}
	p.cur.Store(first)
	p.served.Store(first)
	return p
}

// Current returns the served image and the Raft index of the entry that
// produced it (0 before the first entry): Latest, or while held what the
// holder last served.
func (p *Publisher) Current() (*metadata.Image, uint64) {
	c := p.served.Load()
	return c.img, c.index
}

// Latest returns the FSM's newest image and its Raft index, served or not.
func (p *Publisher) Latest() (*metadata.Image, uint64) {
	c := p.cur.Load()
	return c.img, c.index
}

// Hold makes Current move only by Serve from now on; it stays at the image
// it has now until the first Serve. Call it before Subscribe, and Serve
// every event the subscription gives once it has been applied.
func (p *Publisher) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
}

// Serve makes img, the image of Raft entry index, the served one (Current),
// and wakes WaitForIndex. An index older than the served one is ignored.
func (p *Publisher) Serve(img *metadata.Image, index uint64) {
	if img == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if index < p.served.Load().index {
		return
	}
	p.served.Store(&published{img: img, index: index})
	close(p.changed)
	p.changed = make(chan struct{})
}

// WaitForIndex blocks until the served image (Current) has applied the Raft
// entry at index (or a later one), so a caller that got index back from a
// controller RPC reads its own write, partition layer included.
func (p *Publisher) WaitForIndex(ctx context.Context, index uint64) error {
	for {
		p.mu.Lock()
		ch, closed := p.changed, p.closed
		p.mu.Unlock()
		if p.served.Load().index >= index {
			return nil
		}
		if closed {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Subscribe returns a subscription whose first event is a Reset with the
// current image, followed by every later publish in order. Events queue
// without bound, so a subscriber must keep reading or Close.
func (p *Publisher) Subscribe() *Subscription {
	s := &Subscription{p: p, notify: make(chan struct{}, 1)}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.cur.Load()
	s.q = append(s.q, Event{Image: c.img, Index: c.index, Reset: true})
	s.signal()
	if p.closed {
		s.closed = true
		return s
	}
	p.subs[s] = struct{}{}
	return s
}

func (p *Publisher) publish(ev Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &published{img: ev.Image, index: ev.Index}
	p.cur.Store(c)
	if !p.held {
		p.served.Store(c)
	}
	close(p.changed)
	p.changed = make(chan struct{})
	for s := range p.subs {
		s.push(ev)
	}
}

func (p *Publisher) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	close(p.changed)
	p.changed = make(chan struct{})
	for s := range p.subs {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.signal()
	}
	p.subs = nil
}

// Subscription is an ordered feed of published events. Next is for one
// reading goroutine; Close may be called from any.
type Subscription struct {
	p      *Publisher
	notify chan struct{}

	mu     sync.Mutex
	q      []Event
	closed bool
}

func (s *Subscription) push(ev Event) {
	s.mu.Lock()
	s.q = append(s.q, ev)
	s.mu.Unlock()
	s.signal()
}

func (s *Subscription) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Next returns the next event in commit order. It returns ErrClosed once the
// subscription or the node is closed and the queue is drained.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		if len(s.q) > 0 {
			ev := s.q[0]
			s.q[0] = Event{}
			s.q = s.q[1:]
			s.mu.Unlock()
			return ev, nil
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return Event{}, ErrClosed
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// NextLatest is Next for a subscriber that needs only the newest image: it
// waits for an event, then takes every event queued behind it and returns
// the last. Deltas cannot be joined, so when it took more than one the
// event comes back as a Reset (Delta nil): rebuild from Image. A node that
// replays the metadata of the time it was away publishes a burst of old
// images; a subscriber acting on each (the replica manager taking and
// giving up leaderships long over) would only do harm.
func (s *Subscription) NextLatest(ctx context.Context) (Event, error) {
	ev, err := s.Next(ctx)
	if err != nil {
		return ev, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.q); n > 0 {
		ev = s.q[n-1]
		clear(s.q)
		s.q = s.q[:0]
		ev.Reset, ev.Delta = true, nil
	}
	return ev, nil
}

// Close stops the subscription; queued events are dropped.
func (s *Subscription) Close() {
	s.p.mu.Lock()
	delete(s.p.subs, s)
	s.p.mu.Unlock()
	s.mu.Lock()
	s.closed = true
	s.q = nil
	s.mu.Unlock()
	s.signal()
}
