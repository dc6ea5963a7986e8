package replica

import (
	"context"
	"math"
	"time"

	"github.com/raftka/raftka/storage"
)

// FetchPartition is one partition of a Fetch request.
type FetchPartition struct {
	Topic              string
	Partition          int32
	Offset             int64
	MaxBytes           int // the partition's max bytes
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
	// KnownHighWatermark is the HW a follower reports (KIP-1166, Fetch's
	// tagged HighWatermark): the fetch completes at once when the leader's
	// HW is above it, so followers learn the HW without waiting for data.
	// -1 or math.MaxInt64 turns this off.
	KnownHighWatermark int64
	// LogStartOffset is a follower's own log start offset (Fetch v5+;
	// -1 unknown), which the leader's low watermark counts.
	LogStartOffset int64
}

// FetchRequest is a Fetch after the handler resolved its session: every
// partition it asks for, in the order answers are wanted.
type FetchRequest struct {
	// ReplicaID is the fetching follower's broker id, -1 for consumers.
	ReplicaID int32
	MaxWait   time.Duration
	MinBytes  int
	// MaxBytes bounds the whole answer (<= 0: no bound). As in Kafka the
	// first batch returned is always whole, even if larger.
	MaxBytes  int
	Isolation int8
	Parts     []FetchPartition
}

// fetchBeforeWatch, when set (tests only), runs in Fetch between the first
// read and the waiter's registration: the window a lost wake-up lives in.
var fetchBeforeWatch func()

// Fetch reads every partition of req (results in the same order) and, when
// fewer than MinBytes are available and nothing needs an immediate answer
// (an error, a divergence, a HW a follower lacks), waits up to MaxWait for
// appends or HW moves on those partitions to make enough available: the
// delayed-fetch purgatory. Woken, it reads again; it never polls.
//
// A follower's fetch of a partition under the leader throttle (throttle.go)
// is answered without records while the leader quota is used up, and the
// records it is answered count against the quota.
func (m *Manager) Fetch(ctx context.Context, req FetchRequest) []ReadResult {
	parts := make([]*Partition, len(req.Parts))
	lookupErrs := make([]error, len(req.Parts))
	for i, fp := range req.Parts {
		parts[i], lookupErrs[i] = m.Partition(fp.Topic, fp.Partition)
	}
	var throttled []bool
	if req.ReplicaID >= 0 && !m.leaderQuota.off() {
		img := m.img.Load()
		throttled = make([]bool, len(parts))
		for i, p := range parts {
			throttled[i] = p != nil && m.leaderThrottled(img, p, req.ReplicaID)
		}
	}
	results := m.fetch(ctx, req, parts, lookupErrs, throttled)
	if throttled != nil {
		var n int64
		for i, r := range results {
			if throttled[i] {
				n += r.Region.Len
			}
		}
		if n > 0 {
			m.leaderQuota.record(int(n), m.now())
		}
	}
	return results
}

func (m *Manager) fetch(ctx context.Context, req FetchRequest, parts []*Partition, lookupErrs []error, throttled []bool) []ReadResult {
	results := make([]ReadResult, len(req.Parts))
	read := func() (bytes int64, urgent bool) {
		budget := int64(req.MaxBytes)
		if budget <= 0 {
			budget = math.MaxInt64
		}
		for i, fp := range req.Parts {
			p := parts[i]
			if p == nil {
				results[i] = ReadResult{HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1, Err: lookupErrs[i]}
				urgent = true
				continue
			}
			maxBytes := min(int64(fp.MaxBytes), budget)
			limited := false
			if throttled != nil && throttled[i] {
				// Ask for no more than the quota has left, so one answer
				// does not overshoot it by a whole partition's maximum.
				if a := m.leaderQuota.allowance(m.now()); a < float64(maxBytes) {
					maxBytes, limited = int64(a), true
				}
			}
			r := p.Read(ReadRequest{
				Offset: fp.Offset, MaxBytes: int(maxBytes), Isolation: req.Isolation,
				ReplicaID: req.ReplicaID, CurrentLeaderEpoch: fp.CurrentLeaderEpoch, LastFetchedEpoch: fp.LastFetchedEpoch,
				LogStartOffset: fp.LogStartOffset,
			})
			if budget <= 0 {
				// The response is full: answer the offsets, not the data.
				r.Region = storage.Region{}
			}
			if limited && maxBytes <= 0 {
				// Kafka's shouldLeaderThrottle: the offsets, no records.
				r.Region = storage.Region{}
			}
			if r.Err != nil || r.Diverging != nil {
				urgent = true
			}
			if req.ReplicaID >= 0 && fp.KnownHighWatermark >= 0 && fp.KnownHighWatermark != math.MaxInt64 && r.HighWatermark > fp.KnownHighWatermark {
				urgent = true
			}
			// A follower whose log starts before the leader's while a
			// DeleteRecords waits for it learns the new start now rather
			// than at the end of its wait. Only then: a follower that
			// cannot move its start yet must not spin.
			if req.ReplicaID >= 0 && fp.LogStartOffset >= 0 && r.LogStartOffset > fp.LogStartOffset && p.lowWatch.len() > 0 {
				urgent = true
			}
			bytes += r.Region.Len
			budget -= r.Region.Len
			results[i] = r
		}
		return bytes, urgent
	}
	bytes, urgent := read()
	if req.MaxWait <= 0 || urgent || bytes >= int64(max(req.MinBytes, 1)) {
		return results
	}
	if fetchBeforeWatch != nil {
		fetchBeforeWatch()
	}
	delaying(ctx)
	w := newWaiter()
	seen := map[*Partition]bool{}
	for _, p := range parts {
		if p != nil && !seen[p] {
			seen[p] = true
			p.dataWatch.add(w)
		}
	}
	defer func() {
		for p := range seen {
			p.dataWatch.remove(w)
		}
	}()
	// Look again now that the waiter is registered: an append between the
	// first read and the registration woke nobody, and the fetch would
	// otherwise sleep until the next append or MaxWait (a follower's whole
	// replica.fetch.wait.max.ms while an acks=all producer waits on it).
	if bytes, urgent = read(); urgent || bytes >= int64(max(req.MinBytes, 1)) {
		return results
	}
	timer := time.NewTimer(req.MaxWait)
	defer timer.Stop()
	for {
		select {
		case <-w.ch:
			if bytes, urgent = read(); urgent || bytes >= int64(max(req.MinBytes, 1)) {
				return results
			}
		case <-timer.C:
			read()
			return results
		case <-ctx.Done():
			return results
		}
	}
}
