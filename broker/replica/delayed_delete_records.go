package replica

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Deletion is one partition of a DeleteRecords the leader has applied to
// its own log, waiting for its replicas (Kafka's DelayedDeleteRecords).
type Deletion struct {
	p *Partition
	// Required is the offset the records were deleted before.
	Required int64
	// LowWatermark is the partition's low watermark: when the deletion
	// was made, then as WaitDeletions last saw it.
	LowWatermark int64
}

// check reports whether the deletion is decided, and how: done once the
// low watermark has reached Required, NOT_LEADER_OR_FOLLOWER once this
// broker no longer leads (as Kafka, which looks for a local leader log and
// not at the epoch).
func (d *Deletion) check() (bool, error) {
	p := d.p
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if p.role != RoleLeader {
		return true, fmt.Errorf("%w: %s lost leadership while waiting for its replicas to delete records", kerr.NotLeaderForPartition, p)
	}
	low := p.lowWatermarkLocked()
	if low >= d.Required {
		d.LowWatermark = low
		return true, nil
	}
	return false, nil
}

// WaitDeletions waits until every deletion's low watermark has passed its
// offset, or timeout (the request's timeout_ms) passes, and returns one
// error per entry (nil entries are skipped): nil when done (LowWatermark
// then holds the low watermark that passed), NOT_LEADER_OR_FOLLOWER when
// leadership moved, REQUEST_TIMED_OUT when the time is up or ctx ends
// (LowWatermark then keeps the value it had when the deletion was made,
// as Kafka answers).
//
// Like WaitAcks it sleeps on the partitions' watcher lists (woken when a
// follower's fetch reports a new log start offset, when the replicas or
// the role change) and never polls. While it waits, a follower's fetch that
// reports a log start below the leader's is answered at once instead of
// parking, so the deletion takes two fetch round trips, not two fetch
// waits.
func WaitDeletions(ctx context.Context, timeout time.Duration, dels []*Deletion) []error {
	errs := make([]error, len(dels))
	done := make([]bool, len(dels))
	check := func() int {
		open := 0
		for i, d := range dels {
			if d == nil || done[i] {
				continue
			}
			if done[i], errs[i] = d.check(); !done[i] {
				open++
			}
		}
		return open
	}
	if check() == 0 {
		return errs
	}
	w := newWaiter()
	seen := map[*Partition]bool{}
	for _, d := range dels {
		if d != nil && !seen[d.p] {
			seen[d.p] = true
			d.p.lowWatch.add(w)
		}
	}
	defer func() {
		for p := range seen {
			p.lowWatch.remove(w)
		}
	}()
	// Followers parked in a delayed fetch look again now that a deletion
	// waits for them, and answer at once with the leader's log start.
	for p := range seen {
		p.dataWatch.wakeAll()
	}
	timer := time.NewTimer(max(timeout, 0))
	defer timer.Stop()
	for check() > 0 {
		var why error
		select {
		case <-w.ch:
			continue
		case <-timer.C:
			why = fmt.Errorf("%w: replicas did not delete the records within %v", kerr.RequestTimedOut, timeout)
		case <-ctx.Done():
			why = fmt.Errorf("%w: %w", kerr.RequestTimedOut, ctx.Err())
		}
		for i, d := range dels {
			if d == nil || done[i] {
				continue
			}
			// One last look: a fetch may have come in as time ran out.
			if ok, err := d.check(); ok {
				errs[i] = err
			} else {
				errs[i] = why
			}
		}
		return errs
	}
	return errs
}
