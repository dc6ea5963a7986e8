package storage

import (
	"fmt"
	"math"
)

// Truncate removes every batch at or after offset (a follower matching its
// leader). Batches are not split: if offset is inside a batch the whole
// batch goes. Truncating below the log start offset empties the log and
// restarts it at offset. At or past the log end no batch goes, but leader
// epochs that start at the log end (epochs without records) do.
func (l *Log) Truncate(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOffsetOutOfRange, offset)
	}
	if offset >= l.nextOffset {
		// No batch to cut, but an epoch may start at the log end with no
		// record in it: this broker led that epoch and appended nothing
		// before another leader took over, or took the leadership again in
		// a metadata replay. A follower that kept it would send it as
		// LastFetchedEpoch, which its leader never had, and meet the same
		// divergence on every fetch. Kafka's truncateTo drops it too.
		return l.epochs.TruncateFromEnd(l.nextOffset)
	}
	// From here segments change: a clean running beside must give up.
	l.truncations.Add(1)
	if offset < l.logStart.Load() {
		return l.resetLocked(offset)
	}
	l.segMu.RLock()
	var gone []*segment
	keep := l.segments
	for len(keep) > 1 && keep[len(keep)-1].baseOffset > offset {
		gone = append(gone, keep[len(keep)-1])
		keep = keep[:len(keep)-1]
	}
	l.segMu.RUnlock()
	l.removeSegmentsLocked(gone)
	s := l.active()
	l.segMu.Lock()
	_, err := s.truncateTo(offset)
	if err == nil {
		l.nextOffset = s.nextOffset
		l.leo.Store(l.nextOffset)
	}
	l.segMu.Unlock()
	if err != nil {
		return err
	}
	if len(gone) > 0 {
		// The segment became active again: give its indexes room.
		if err := s.offIdx.preallocate(); err != nil {
			return err
		}
		if err := s.timeIdx.preallocate(); err != nil {
			return err
		}
	}
	if l.nextOffset < l.logStart.Load() {
		// The batch holding offset began below the log start offset: with
		// it gone nothing readable is left, so restart at offset.
		return l.resetLocked(offset)
	}
	l.afterTruncateLocked()
	if err := l.epochs.TruncateFromEnd(l.nextOffset); err != nil {
		return err
	}
	return l.rebuildProducersLocked(l.nextOffset, nil)
}

func (l *Log) afterTruncateLocked() {
	if l.firstDirty.Load() > l.nextOffset {
		l.firstDirty.Store(l.nextOffset)
	}
	if l.hw.Load() > l.nextOffset {
		l.hw.Store(l.nextOffset)
	}
	l.flushMu.Lock()
	if l.recoveryPoint.Load() > l.nextOffset {
		l.recoveryPoint.Store(l.nextOffset)
	}
	if l.durable.Load() > l.nextOffset {
		l.durable.Store(l.nextOffset)
	}
	l.flushMu.Unlock()
}

// ResetTo empties the log and restarts it at newStart (log start, log end
// and high watermark all become newStart; the epoch cache is cleared), as a
// follower does when the leader's log starts beyond its end.
func (l *Log) ResetTo(newStart int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if newStart < 0 {
		return fmt.Errorf("%w: reset to %d", ErrOffsetOutOfRange, newStart)
	}
	return l.resetLocked(newStart)
}

func (l *Log) resetLocked(newStart int64) error {
	l.segMu.RLock()
	gone := append([]*segment(nil), l.segments...)
	l.segMu.RUnlock()
	// Renames the old files away before the new segment takes the name.
	l.removeSegmentsLocked(gone)
	s, err := createSegment(l.dir, newStart, l.cfg.Load(), l.now())
	if err != nil {
		return err
	}
	l.segMu.Lock()
	l.segments = []*segment{s}
	l.nextOffset = newStart
	l.leo.Store(newStart)
	l.logStart.Store(newStart)
	l.hw.Store(newStart)
	l.segMu.Unlock()
	l.flushMu.Lock()
	l.recoveryPoint.Store(newStart)
	l.durable.Store(newStart)
	l.flushMu.Unlock()
	l.unflushed.Store(0)
	l.truncations.Add(1)
	l.firstDirty.Store(newStart)
	clear(l.producers)
	l.resetTxnsLocked()
	if err := l.deleteSnapshotsLocked(math.MaxInt64, -1); err != nil {
		return err
	}
	return l.epochs.Clear()
}

// DeleteRecords moves the log start offset up to offset (DeleteRecords
// API); offset may not exceed the high watermark. Segments wholly below the
// new start are removed. It returns the new log start offset.
func (l *Log) DeleteRecords(offset int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if offset < 0 || offset > l.hw.Load() {
		return l.logStart.Load(), fmt.Errorf("%w: delete records before %d, high watermark is %d", ErrOffsetOutOfRange, offset, l.hw.Load())
	}
	if offset <= l.logStart.Load() {
		return l.logStart.Load(), nil
	}
	l.segMu.Lock()
	l.logStart.Store(offset)
	l.segMu.Unlock()
	if err := l.epochs.TruncateFromStart(offset); err != nil {
		return offset, err
	}
	_, err := l.deleteSegmentsLocked(func(s, next *segment) bool { return next.baseOffset <= offset })
	return offset, err
}

// deleteSegmentsLocked removes the oldest non-active segments while pred
// holds (next is the segment after s), never past the last stable offset
// (the high watermark without open transactions), and moves the log start
// offset to the first remaining segment if it was below. It returns the
// segments removed.
func (l *Log) deleteSegmentsLocked(pred func(s, next *segment) bool) (int, error) {
	l.segMu.RLock()
	var gone []*segment
	// Not past the last stable offset either: a segment holding an open
	// transaction's records stays, so the LSO never points into a deleted
	// segment.
	lso := l.LastStableOffset()
	for i := 0; i+1 < len(l.segments); i++ {
		s, next := l.segments[i], l.segments[i+1]
		if next.baseOffset > lso || !pred(s, next) {
			break
		}
		gone = append(gone, s)
	}
	l.segMu.RUnlock()
	if len(gone) == 0 {
		return 0, nil
	}
	l.removeSegmentsLocked(gone)
	first := l.segments[0].baseOffset
	// The producer table keeps producers whose batches went (Kafka does
	// too, since KIP-360; they leave by expiry), but the snapshots taken
	// before the first segment can no longer be replayed from.
	if err := l.deleteSnapshotsLocked(first, math.MaxInt64); err != nil {
		return len(gone), err
	}
	if first > l.logStart.Load() {
		l.segMu.Lock()
		l.logStart.Store(first)
		l.segMu.Unlock()
		if err := l.epochs.TruncateFromStart(first); err != nil {
			return len(gone), err
		}
	}
	return len(gone), nil
}
