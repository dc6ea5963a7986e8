package replica

import (
	"math"
	"sync"
	"time"

	"github.com/raftka/raftka/metadata"
)

// Replication throttle, follower side (KIP-73): a broker's fetchers copy
// at most follower.replication.throttled.rate bytes per second, together,
// for the partitions whose topic lists this broker's replica in
// follower.replication.throttled.replicas, and only while that replica is
// out of the ISR; an in-sync replica is never held back, as Kafka's
// ReplicaFetcherThread.shouldFollowerThrottle. A throttled partition whose
// quota is used up is left out of the next Fetch, not delayed inside it.
//
// Leader side: a leader answers follower fetches of the partitions whose
// topic lists this broker's replica (partition:leader) in
// leader.replication.throttled.replicas, for followers out of the ISR,
// from one leader.replication.throttled.rate bucket; while it is used up
// those partitions are answered with their offsets and no records, as
// Kafka's ReplicaManager does (shouldLeaderThrottle). kafka-reassign-
// partitions.sh's --throttle sets both sides.

// rateQuota is a token bucket: it refills at bound bytes per second up to
// one second's worth, and a copy takes its bytes (going into debt for a
// response larger than what was left). Kafka measures a sampled rate over
// replication.quota.window.num (11) one-second windows instead, which lets
// about ten seconds' worth through at once whenever the old windows
// expire; a move of a few times that much then runs well above the
// throttle. The bucket holds every second to the rate, so
// replication.quota.window.* stay unapplied (warned about).
type rateQuota struct {
	mu     sync.Mutex
	bound  float64 // bytes per second; +Inf when off
	tokens float64
	last   time.Time
}

func newRateQuota() *rateQuota { return &rateQuota{bound: math.Inf(1)} }

// set changes the bound; 0 stops every throttled replica, Kafka's
// Long.MAX_VALUE default is no throttle.
func (q *rateQuota) set(bytesPerSecond int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if bytesPerSecond == math.MaxInt64 {
		q.bound = math.Inf(1)
		return
	}
	if math.IsInf(q.bound, 1) {
		q.tokens, q.last = float64(bytesPerSecond), time.Time{}
	}
	q.bound = float64(bytesPerSecond)
	q.tokens = min(q.tokens, q.bound)
}

// refillLocked adds what the time since the last call earned.
func (q *rateQuota) refillLocked(now time.Time) {
	if !q.last.IsZero() && now.After(q.last) {
		q.tokens = min(q.tokens+q.bound*now.Sub(q.last).Seconds(), q.bound)
	}
	if q.last.IsZero() || now.After(q.last) {
		q.last = now
	}
}

func (q *rateQuota) record(n int, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if math.IsInf(q.bound, 1) {
		return
	}
	q.refillLocked(now)
	q.tokens -= float64(n)
}

// allowance is how many bytes may be copied at now (+Inf without a
// bound): a throttled partition asks for no more, so one response cannot
// overshoot by a whole partition's maximum.
func (q *rateQuota) allowance(now time.Time) float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if math.IsInf(q.bound, 1) {
		return math.Inf(1)
	}
	q.refillLocked(now)
	return max(q.tokens, 0)
}

// off reports whether the quota has no bound.
func (q *rateQuota) off() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return math.IsInf(q.bound, 1)
}

// exceeded reports whether nothing may be copied now.
func (q *rateQuota) exceeded(now time.Time) bool { return q.allowance(now) <= 0 }

// SetFollowerThrottle sets follower.replication.throttled.rate (bytes per
// second); math.MaxInt64 is none.
func (m *Manager) SetFollowerThrottle(bytesPerSecond int64) { m.followerQuota.set(bytesPerSecond) }

// FollowerThrottle is the follower.replication.throttled.rate in force.
func (m *Manager) FollowerThrottle() int64 { return m.followerQuota.rate() }

// SetLeaderThrottle sets leader.replication.throttled.rate (bytes per
// second); math.MaxInt64 is none.
func (m *Manager) SetLeaderThrottle(bytesPerSecond int64) { m.leaderQuota.set(bytesPerSecond) }

// LeaderThrottle is the leader.replication.throttled.rate in force.
func (m *Manager) LeaderThrottle() int64 { return m.leaderQuota.rate() }

// leaderThrottled reports whether follower's fetches of p, led here, count
// against the leader quota: its topic lists this broker's replica in
// leader.replication.throttled.replicas, and the follower is out of the
// ISR (Kafka's shouldLeaderThrottle).
func (m *Manager) leaderThrottled(img *metadata.Image, p *Partition, follower int32) bool {
	if img == nil {
		return false
	}
	t, ok := img.Topic(p.topic)
	if !ok {
		return false
	}
	v := t.Configs["leader.replication.throttled.replicas"]
	if v == "" || !metadata.ThrottledReplicas(v, p.index, m.cfg.BrokerID) {
		return false
	}
	return !p.State().inISR(follower)
}

func (q *rateQuota) rate() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if math.IsInf(q.bound, 1) {
		return math.MaxInt64
	}
	return int64(q.bound)
}

// followerThrottled reports whether p's fetches count against the
// follower quota: its topic lists this broker's replica, and the replica
// is out of the ISR.
func (m *Manager) followerThrottled(img *metadata.Image, p *Partition) bool {
	t, ok := img.Topic(p.topic)
	if !ok {
		return false
	}
	v := t.Configs["follower.replication.throttled.replicas"]
	if v == "" || !metadata.ThrottledReplicas(v, p.index, m.cfg.BrokerID) {
		return false
	}
	return !p.State().inISR(m.cfg.BrokerID)
}

func (s PartitionState) inISR(id int32) bool {
	for _, r := range s.ISR {
		if r == id {
			return true
		}
	}
	return false
}
