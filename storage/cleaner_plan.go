package storage

import "math"

// segmentStat is what planning a clean needs of one segment.
type segmentStat struct {
	Base, Next int64 // base offset, offset after its last batch
	Bytes      int64
	FirstTs    int64 // first batch's max timestamp, NoTimestamp if none
	MaxTs      int64 // largest timestamp (or the file's time), NoTimestamp if none
}

// cleanInput is a log's state as planning sees it.
type cleanInput struct {
	Segments []segmentStat // in offset order; the last is the active one
	LogStart int64
	// FirstDirty is the cleaner checkpoint: below it the log was cleaned.
	FirstDirty int64
	// StableEnd bounds what may be cleaned: the last stable offset (at
	// most the high watermark; an open transaction's records are not
	// decided) and the recovery point (a clean must never derive durable
	// data from data that is not).
	StableEnd int64
	// TombstoneHorizon is the earliest delete horizon of the tombstones
	// the last clean kept (math.MaxInt64: none known).
	TombstoneHorizon int64
	Config           Config
}

// cleanPlan is what one clean of a log covers: segments [0, End) are
// rewritten, and the key map is built over [FirstDirty, End).
type cleanPlan struct {
	FirstDirty, End        int64
	endSeg                 int // index of the first segment not cleaned
	dirtySeg               int // index of the first dirty segment
	CleanBytes, DirtyBytes int64
	Ratio                  float64
	// Eligible: the log should be cleaned now (its dirty ratio exceeds
	// min.cleanable.dirty.ratio, or max.compaction.lag.ms has passed for
	// its oldest dirty record, or a kept tombstone's horizon has passed).
	Eligible bool
}

// planClean applies Kafka's rules for what of a log is cleanable at nowMs:
// whole segments from the first dirty one up to, not including, the
// active segment, the first segment reaching past StableEnd, and the first
// segment holding a record younger than min.compaction.lag.ms.
func planClean(in cleanInput, nowMs int64) cleanPlan {
	segs := in.Segments
	cfg := in.Config
	var p cleanPlan
	if !cfg.CleanupPolicy.Compacts() || len(segs) < 2 {
		return p
	}
	first := max(in.FirstDirty, in.LogStart)
	d := 0
	for d < len(segs)-1 && segs[d].Next <= first {
		d++
	}
	// A checkpoint inside a segment (left by a truncation) makes the
	// whole segment dirty.
	u := d
	for ; u < len(segs)-1; u++ {
		s := segs[u]
		if s.Next > in.StableEnd {
			break
		}
		if cfg.MinCompactionLagMs > 0 && s.MaxTs >= 0 && nowMs-s.MaxTs < cfg.MinCompactionLagMs {
			break
		}
	}
	p.dirtySeg, p.endSeg = d, u
	p.FirstDirty = segs[d].Base
	p.End = segs[u].Base
	for i, s := range segs[:u] {
		if i < d {
			p.CleanBytes += s.Bytes
		} else {
			p.DirtyBytes += s.Bytes
		}
	}
	if total := p.CleanBytes + p.DirtyBytes; total > 0 {
		p.Ratio = float64(p.DirtyBytes) / float64(total)
	}
	lagPassed := u > d && cfg.MaxCompactionLagMs < math.MaxInt64 && segs[d].FirstTs >= 0 && nowMs-segs[d].FirstTs > cfg.MaxCompactionLagMs
	tombstonesDue := u > 0 && nowMs >= in.TombstoneHorizon
	p.Eligible = p.DirtyBytes > 0 && (p.Ratio > cfg.MinCleanableDirtyRatio || lagPassed) || tombstonesDue
	return p
}

// dirtiest returns the index of the eligible plan with the highest dirty
// ratio (the first on ties), or -1, as Kafka's cleaner picks its next log.
func dirtiest(plans []cleanPlan) int {
	best := -1
	for i, p := range plans {
		if p.Eligible && (best < 0 || p.Ratio > plans[best].Ratio) {
			best = i
		}
	}
	return best
}
