package replica

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartitionClient is what the leader needs from the active controller:
// Kafka's AlterPartition (v3 here: topic ids and ISR members with broker
// epochs). raftfsm's ControllerClient satisfies it.
type AlterPartitionClient interface {
	AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)
}

// followerState is what the leader knows of one follower, learnt from its
// fetches.
type followerState struct {
	// leo is the follower's log end offset (its last fetch offset), -1 until
	// it has fetched in this leader epoch.
	leo int64
	// lastCaughtUp is the last time the follower was known to have every
	// record the leader had (Kafka's lastCaughtUpTimeMs).
	lastCaughtUp time.Time
	// lastFetchLeaderLEO and lastFetchTime are the leader's LEO and the time
	// at the previous fetch: a fetch reaching the former proves the follower
	// was caught up at the latter.
	lastFetchLeaderLEO int64
	lastFetchTime      time.Time
	// logStart is the log start offset the follower reported in its last
	// fetch, -1 until it has fetched in this leader epoch (Kafka's
	// Replica.logStartOffset): the low watermark DeleteRecords waits for.
	logStart int64
}

// updateFetch records a fetch at fetchOffset when the leader's LEO was
// leaderLEO (Kafka's Replica.updateFetchState).
func (f *followerState) updateFetch(fetchOffset, leaderLEO int64, now time.Time) {
	switch {
	case fetchOffset >= leaderLEO:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, now)
	case fetchOffset >= f.lastFetchLeaderLEO:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, f.lastFetchTime)
	}
	f.leo = fetchOffset
	f.lastFetchLeaderLEO = leaderLEO
	f.lastFetchTime = now
}

// caughtUp reports whether the follower counts as in sync: it has the
// leader's LEO, or it had everything less than lag ago.
func (f *followerState) caughtUp(leaderLEO int64, now time.Time, lag time.Duration) bool {
	return f.leo == leaderLEO || now.Sub(f.lastCaughtUp) <= lag
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// isrChange is an AlterPartition in flight (or answered and waiting for the
// image that applies it).
type isrChange struct {
	seq            uint64
	newISR         []int32
	partitionEpoch int32 // the partition epoch the request was built from
	// answered: the controller accepted it (or fenced it, or answered that
	// this broker does not lead); the change is cleared by the first image
	// with a newer partition epoch.
	answered bool
	// shrink: the change drops members (an expiry), else it adds one.
	shrink bool
}

// leaderCore is the pure replication state of a partition this broker leads:
// inputs are follower fetches, the time and image updates; outputs are the
// high watermark and ISR change decisions. It does no I/O and takes no locks
// (Partition.mu guards it).
type leaderCore struct {
	self             int32
	replicas         []int32
	isr              []int32 // as committed in the image
	partitionEpoch   int32
	epochStartOffset int64 // the LEO when this leader epoch began
	followers        map[int32]*followerState
	pending          *isrChange
	retryAt          time.Time // no new ISR change before this (after a failure)
}

func newLeaderCore(self int32, replicas, isr []int32, partitionEpoch int32, leo int64, now time.Time) *leaderCore {
	c := &leaderCore{self: self, partitionEpoch: partitionEpoch, epochStartOffset: leo, followers: map[int32]*followerState{}}
	c.setReplicas(replicas, isr, now)
	return c
}

// setReplicas installs replicas and the committed ISR from the image. ISR
// members start as caught up now (so a new leader gives them a full lag
// period, as Kafka does); others start never caught up.
func (c *leaderCore) setReplicas(replicas, isr []int32, now time.Time) {
	c.replicas, c.isr = slices.Clone(replicas), slices.Clone(isr)
	for _, r := range replicas {
		if r == c.self {
			continue
		}
		if _, ok := c.followers[r]; !ok {
			f := &followerState{leo: -1, lastFetchLeaderLEO: -1, logStart: -1}
			if slices.Contains(isr, r) {
				f.lastCaughtUp = now
			}
			c.followers[r] = f
		}
	}
	for id := range c.followers {
		if !slices.Contains(replicas, id) {
			delete(c.followers, id)
		}
	}
}

// applyImage takes a new committed ISR and partition epoch (same leader
// epoch). A pending change built from an older partition epoch is settled:
// whatever the image now says is the truth.
func (c *leaderCore) applyImage(replicas, isr []int32, partitionEpoch int32, now time.Time) {
	c.setReplicas(replicas, isr, now)
	if partitionEpoch > c.partitionEpoch && c.pending != nil && c.pending.partitionEpoch < partitionEpoch {
		c.pending = nil
	}
	c.partitionEpoch = partitionEpoch
}

// maximalISR is the committed ISR plus members of a pending change: the HW
// waits for all of them, so neither an expansion nor a shrink in flight can
// let the HW pass a record some ISR member of either view lacks (KIP-497).
func (c *leaderCore) maximalISR() []int32 {
	if c.pending == nil {
		return c.isr
	}
	out := slices.Clone(c.isr)
	for _, r := range c.pending.newISR {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// highWatermark is the smallest LEO over the maximal ISR, the leader's own
// being leaderLEO; a member that has not fetched yet holds it at -1.
func (c *leaderCore) highWatermark(leaderLEO int64) int64 {
	hw := leaderLEO
	for _, r := range c.maximalISR() {
		if r == c.self {
			continue
		}
		f, ok := c.followers[r]
		if !ok {
			continue
		}
		hw = min(hw, f.leo)
	}
	return hw
}

// followerFetch records a follower's fetch at fetchOffset, with the log
// start offset it reported; it returns false for a broker that is not a
// replica, and whether the follower's log start offset moved.
func (c *leaderCore) followerFetch(id int32, fetchOffset, logStart, leaderLEO int64, now time.Time) (ok, startMoved bool) {
	f, ok := c.followers[id]
	if !ok {
		return false, false
	}
	f.updateFetch(fetchOffset, leaderLEO, now)
	startMoved = logStart != f.logStart
	f.logStart = logStart
	return true, startMoved
}

// lowWatermark is the smallest log start offset over the leader
// (leaderStart) and every other replica on a live broker, as the followers
// last reported it (Kafka's Partition.lowWatermarkIfLeader): the offset
// below which no replica holds records any more. A replica on a live
// broker that has not fetched in this leader epoch holds it at -1; one on
// a broker that is gone (fenced) does not count, as in Kafka.
func (c *leaderCore) lowWatermark(leaderStart int64, alive func(int32) bool) int64 {
	low := leaderStart
	for _, r := range c.replicas {
		f, ok := c.followers[r]
		if r == c.self || !ok || !alive(r) {
			continue
		}
		low = min(low, f.logStart)
	}
	return low
}

// canChange reports whether a new ISR change may be sent now.
func (c *leaderCore) canChange(now time.Time) bool {
	return c.pending == nil && !now.Before(c.retryAt)
}

// shrinkISR returns the ISR without the followers that are out of sync
// (not caught up within lag), or nil when none is or a change is pending.
func (c *leaderCore) shrinkISR(leaderLEO int64, now time.Time, lag time.Duration) []int32 {
	if !c.canChange(now) {
		return nil
	}
	var out []int32
	dropped := false
	for _, r := range c.isr {
		if f, ok := c.followers[r]; ok && r != c.self && !f.caughtUp(leaderLEO, now, lag) {
			dropped = true
			continue
		}
		out = append(out, r)
	}
	if !dropped || !slices.Contains(out, c.self) {
		return nil
	}
	return out
}

// expandISR returns the ISR with follower id added when it may join: it is
// a replica outside the ISR, it has reached the HW and the start of this
// leader epoch (so it holds every record of the current epoch that is
// committed), and eligible (usable in the image) says yes. nil otherwise.
func (c *leaderCore) expandISR(id int32, hw int64, now time.Time, eligible bool) []int32 {
	f, ok := c.followers[id]
	if !ok || !eligible || !c.canChange(now) || slices.Contains(c.isr, id) {
		return nil
	}
	if f.leo < hw || f.leo < c.epochStartOffset {
		return nil
	}
	return append(slices.Clone(c.isr), id)
}

// begin records a change as pending.
func (c *leaderCore) begin(seq uint64, newISR []int32) *isrChange {
	c.pending = &isrChange{seq: seq, newISR: newISR, partitionEpoch: c.partitionEpoch}
	return c.pending
}

// answer applies the controller's answer to the pending change seq. code is
// the partition's error code (or a request-level one); answerEpoch the
// partition epoch the controller reports on success.
func (c *leaderCore) answer(seq uint64, code int16, answerEpoch int32, now time.Time, backoff time.Duration) {
	if c.pending == nil || c.pending.seq != seq {
		return // settled already by an image
	}
	switch code {
	case 0:
		if answerEpoch <= c.partitionEpoch {
			c.pending = nil // the image got here first
			return
		}
		c.pending.answered = true
	case kerr.InvalidUpdateVersion.Code, kerr.FencedLeaderEpoch.Code, kerr.InvalidRequest.Code:
		// Our view is stale; the image that fixes it is on its way and
		// clears the change (applyImage) unless it already came.
		// INVALID_REQUEST is the controller's answer to a sender that
		// does not lead the partition (as Kafka's): the image that moved
		// leadership away makes this broker a follower; resending the
		// same change before it would get the same answer.
		c.pending.answered = true
	default:
		c.pending = nil
		c.retryAt = now.Add(backoff)
	}
}
