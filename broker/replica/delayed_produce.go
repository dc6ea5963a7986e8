package replica

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// WaitAcks waits for the acks of one acks=all Produce request (nil entries
// are skipped) until each is decided or timeout (the request's timeout_ms)
// passes, and returns one error per entry: nil once the HW passed the batch,
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR had shrunk below
// min.insync.replicas by then, NOT_LEADER_OR_FOLLOWER if leadership moved,
// REQUEST_TIMED_OUT when the time is up, or ctx's error (wrapped as
// REQUEST_TIMED_OUT) when the connection or broker goes away.
//
// It registers one waiter with every partition involved and sleeps until a
// HW move or role change wakes it (the delayed-produce purgatory); it never
// polls.
func WaitAcks(ctx context.Context, timeout time.Duration, acks []*Ack) []error {
	errs := make([]error, len(acks))
	done := make([]bool, len(acks))
	// Most acks are decided at once (RF=1, or followers already caught up):
	// answer those without a waiter, watcher entries or a timer.
	open := 0
	for i, a := range acks {
		if a == nil {
			continue
		}
		if done[i], errs[i] = a.check(); !done[i] {
			open++
		}
	}
	if open == 0 {
		return errs
	}
	delaying(ctx)
	w := newWaiter()
	seen := map[*Partition]bool{}
	for _, a := range acks {
		if a != nil && !seen[a.p] {
			seen[a.p] = true
			a.p.hwWatch.add(w)
		}
	}
	defer func() {
		for p := range seen {
			p.hwWatch.remove(w)
		}
	}()
	timer := time.NewTimer(max(timeout, 0))
	defer timer.Stop()
	for {
		open = 0
		for i, a := range acks {
			if a == nil || done[i] {
				continue
			}
			if done[i], errs[i] = a.check(); !done[i] {
				open++
			}
		}
		if open == 0 {
			return errs
		}
		var why error
		select {
		case <-w.ch:
			continue
		case <-timer.C:
			why = fmt.Errorf("%w: replication did not reach the batch within %v", kerr.RequestTimedOut, timeout)
		case <-ctx.Done():
			why = fmt.Errorf("%w: %w", kerr.RequestTimedOut, ctx.Err())
		}
		for i, a := range acks {
			if a != nil && !done[i] {
				// One last look: the HW may have moved as time ran out.
				if d, err := a.check(); d {
					errs[i] = err
				} else {
					errs[i] = why
				}
			}
		}
		return errs
	}
}

// Wait is WaitAcks for a single ack.
func (a *Ack) Wait(ctx context.Context, timeout time.Duration) error {
	return WaitAcks(ctx, timeout, []*Ack{a})[0]
}
