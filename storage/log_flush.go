package storage

import (
	"fmt"
	"math"
	"time"
)

// Durable reports whether cfg asks for durable mode: flush.messages=1,
// every record fsynced before it counts (doc.go, "Durable mode").
func (c *Config) Durable() bool { return c.FlushMessages == 1 }

// maybeFlush applies flush.messages after an append. In durable mode with
// a flusher the log is queued for the dir's next group commit and the
// append returns at once: what waits for the fsync is the acknowledgement
// (DurableEnd, OnDurable, MakeDurable), not the writer.
func (l *Log) maybeFlush(cfg *Config) error {
	if cfg.Durable() && l.flusher != nil {
		l.flusher.enqueue(l)
		return nil
	}
	if l.unflushed.Load() >= cfg.FlushMessages {
		return l.Sync()
	}
	return nil
}

// DurableEnd is the end of what may count toward acknowledgement: in
// durable mode the offset below which the data is fsynced, otherwise the
// log end offset (replication is the durability, as in Kafka).
func (l *Log) DurableEnd() int64 {
	leo := l.leo.Load()
	if !l.cfg.Load().Durable() {
		return leo
	}
	return min(l.durable.Load(), leo)
}

// MakeDurable asks for everything appended so far to become durable and
// returns a channel closed when the flusher's round covering it ends
// (check DurableEnd then: a failed fsync leaves it behind, see
// FlushError). It returns nil when nothing needs waiting for: not in
// durable mode, already durable, or synced inline (a log without a
// flusher). It allocates nothing.
func (l *Log) MakeDurable() <-chan struct{} {
	if !l.cfg.Load().Durable() || l.durable.Load() >= l.leo.Load() {
		return nil
	}
	if l.flusher == nil {
		_ = l.syncDurable()
		return nil
	}
	return l.flusher.enqueue(l)
}

// OnDurable sets fn to be called, on the flusher's goroutine, after each
// group commit that covered this log (its DurableEnd may have moved). The
// replica layer moves the high watermark from it. fn must be quick and
// must not append to a log of the same dir and wait for that.
func (l *Log) OnDurable(fn func()) {
	if fn == nil {
		l.onDurable.Store(nil)
		return
	}
	l.onDurable.Store(&fn)
}

// FlushError is the error of the data fsync that failed on this log, nil
// if none did. After one the log's durable end stays where it was, so in
// durable mode nothing more of it is acknowledged until it is reopened.
func (l *Log) FlushError() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.flushErr
}

// syncDurable is the flusher's fsync of one log: the segment files holding
// data past the durable end (usually just the active one), and the
// directory once after a segment file was created. Indexes are not
// synced and the recovery point does not move: recovery after an unclean
// stop rescans the segment holding the recovery point anyway and rebuilds
// its indexes, and a rolled segment gets its full fsync (FlushRolled).
func (l *Log) syncDurable() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.shut {
		return ErrClosed
	}
	if l.flushErr != nil {
		return l.flushErr
	}
	l.segMu.RLock()
	end := l.leo.Load()
	from := l.durable.Load()
	if from >= end {
		l.segMu.RUnlock()
		return nil
	}
	segs := l.syncSegs[:0]
	for i := l.segmentFor(from); i < len(l.segments); i++ {
		segs = append(segs, l.segments[i])
	}
	l.segMu.RUnlock()
	start := time.Now()
	var err error
	for _, s := range segs {
		if err = l.syncData(s.f); err != nil {
			err = fmt.Errorf("fsync %s: %w", s.logPath(), err)
			break
		}
	}
	if err == nil && !l.dirSynced.Swap(true) {
		if err = fsyncDir(l.dir); err != nil {
			l.dirSynced.Store(false)
		}
	}
	clear(segs)
	l.syncSegs = segs[:0]
	if err != nil {
		l.flushErr = l.ioFailure(err)
		return l.flushErr
	}
	l.advanceDurableLocked(end)
	if l.onFlush != nil {
		l.onFlush(time.Since(start))
	}
	return nil
}

// advanceDurableLocked moves the durable end up to end. flushMu is held.
func (l *Log) advanceDurableLocked(end int64) {
	if l.flushErr == nil && end > l.durable.Load() {
		l.durable.Store(end)
	}
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
	segs := l.syncSegs[:0]
	for i := l.segmentFor(rp); i < len(l.segments); i++ {
		segs = append(segs, l.segments[i])
	}
	l.segMu.RUnlock()
	err := l.fsync(segs)
	clear(segs)
	l.syncSegs = segs[:0]
	if err != nil {
		return l.ioFailure(err)
	}
	if end > rp {
		l.recoveryPoint.Store(end)
	}
	l.advanceDurableLocked(end)
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
	segs := l.syncSegs[:0]
	if target > rp {
		for i := l.segmentFor(rp); i < len(l.segments)-1; i++ {
			segs = append(segs, l.segments[i])
		}
	}
	l.segMu.RUnlock()
	if target <= rp {
		return nil
	}
	err := l.fsync(segs)
	clear(segs)
	l.syncSegs = segs[:0]
	if err != nil {
		return l.ioFailure(err)
	}
	l.recoveryPoint.Store(target)
	l.advanceDurableLocked(target)
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
