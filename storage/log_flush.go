package storage

import (
	"fmt"
	"math"
	"time"
)

// maybeFlush applies flush.messages after an append.
func (l *Log) maybeFlush(cfg *Config) error {
	if l.unflushed.Load() >= cfg.FlushMessages {
		return l.Sync()
	}
	return nil
}

// FlushIfDue fsyncs if flush.ms has passed since the last flush and there
// is unflushed data; the manager's scheduler calls it.
func (l *Log) FlushIfDue(now time.Time) error {
	cfg := l.cfg.Load()
	if l.unflushed.Load() == 0 || cfg.FlushMs == math.MaxInt64 {
		return nil
	}
	if now.UnixMilli()-l.lastFlush.Load() < cfg.FlushMs {
		return nil
	}
	return l.Sync()
}

// Sync fsyncs everything appended so far and advances the recovery point.
// Concurrent callers share one fsync (group commit): a caller that waited
// for another's fsync finds its data already covered and returns.
func (l *Log) Sync() error {
	target := l.leo.Load()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.shut {
		return ErrClosed
	}
	if l.recoveryPoint.Load() >= target && l.unflushed.Load() == 0 {
		return nil
	}
	l.segMu.RLock()
	end := l.leo.Load()
	pending := l.unflushed.Load()
	rp := l.recoveryPoint.Load()
	var segs []*segment
	for i := l.segmentFor(rp); i < len(l.segments); i++ {
		segs = append(segs, l.segments[i])
	}
	l.segMu.RUnlock()
	if err := l.fsync(segs); err != nil {
		return err
	}
	if end > rp {
		l.recoveryPoint.Store(end)
	}
	l.unflushed.Add(-pending)
	l.lastFlush.Store(l.now().UnixMilli())
	return nil
}

// FlushRolled fsyncs the segments below the active one that are not yet
// known durable and moves the recovery point to the active segment's base,
// as Kafka flushes a segment in the background once it rolls: the
// recovery point keeps up with the log without flush.ms, so recovery after
// a crash rescans only the active segment. The Manager calls it on each
// tick; it costs nothing when no segment rolled since the last call.
func (l *Log) FlushRolled() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.shut {
		return ErrClosed
	}
	rp := l.recoveryPoint.Load()
	l.segMu.RLock()
	target := l.segments[len(l.segments)-1].baseOffset
	var segs []*segment
	if target > rp {
		for i := l.segmentFor(rp); i < len(l.segments)-1; i++ {
			segs = append(segs, l.segments[i])
		}
	}
	l.segMu.RUnlock()
	if target <= rp {
		return nil
	}
	if err := l.fsync(segs); err != nil {
		return err
	}
	l.recoveryPoint.Store(target)
	return nil
}

// fsync syncs segs and, once after a file was created or removed, the
// directory, and reports the time taken to onFlush. flushMu is held.
func (l *Log) fsync(segs []*segment) error {
	start := time.Now()
	for _, s := range segs {
		if err := s.sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", s.logPath(), err)
		}
	}
	if !l.dirSynced.Swap(true) {
		if err := fsyncDir(l.dir); err != nil {
			l.dirSynced.Store(false)
			return err
		}
	}
	if l.onFlush != nil {
		l.onFlush(time.Since(start))
	}
	return nil
}
