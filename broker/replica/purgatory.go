package replica

import (
	"context"
	"sync"
)

// A waiter is one delayed operation (a produce waiting for the HW, a fetch
// waiting for bytes) registered with the watcher lists of the partitions it
// waits on. Wakes coalesce in its one-slot channel: the operation re-checks
// its condition after each wake, so a wake is never lost and never queued
// twice. This is Kafka's DelayedOperationPurgatory reduced to what Go
// channels make easy: the waiting goroutine owns its operation, a timer
// bounds it, and events (appends, HW moves, role changes) wake it instead of
// a poll.
type waiter struct {
	ch chan struct{}
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// watchers is one partition's list of waiters for one kind of event.
type watchers struct {
	mu  sync.Mutex
	set map[*waiter]struct{}
}

func (ws *watchers) add(w *waiter) {
	ws.mu.Lock()
	if ws.set == nil {
		ws.set = map[*waiter]struct{}{}
	}
	ws.set[w] = struct{}{}
	ws.mu.Unlock()
}

func (ws *watchers) remove(w *waiter) {
	ws.mu.Lock()
	delete(ws.set, w)
	ws.mu.Unlock()
}

// wakeAll wakes every registered waiter. It never blocks.
func (ws *watchers) wakeAll() {
	ws.mu.Lock()
	for w := range ws.set {
		w.wake()
	}
	ws.mu.Unlock()
}

func (ws *watchers) len() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.set)
}

// delayHookKey carries a request's delay hook through its context.
type delayHookKey struct{}

// WithDelayHook returns ctx carrying fn, which Fetch and WaitAcks call once
// when their operation goes into the delayed-fetch or delayed-produce
// purgatory, before it waits: the
// broker ends the request's local time there (Kafka's LocalTimeMs, then
// RemoteTimeMs). An operation decided at once never calls it.
func WithDelayHook(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, delayHookKey{}, fn)
}

// delaying runs ctx's delay hook, if any.
func delaying(ctx context.Context) {
	if fn, ok := ctx.Value(delayHookKey{}).(func()); ok {
		fn()
	}
}
