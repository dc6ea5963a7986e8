package storage

import "time"

// RetentionResult says what a retention pass removed.
type RetentionResult struct {
	Segments       int   // segments deleted
	Bytes          int64 // their total size
	LogStartOffset int64 // after the pass
}

// ApplyRetention deletes whole non-active segments that retention.ms or
// retention.bytes no longer allow (only when cleanup.policy includes
// delete: see CleanupPolicy.Deletes), and segments wholly below the log
// start offset (always, as Kafka does: DeleteRecords applies to compacted
// topics too). Only segments that lie wholly below the high watermark go, so
// nothing a consumer may not yet have been able to read is removed. If
// every segment is past retention.ms, the active one is rolled first so it
// can go too (Kafka does the same). The Manager calls it every
// log.retention.check.interval.ms; tests call it directly.
func (l *Log) ApplyRetention(now time.Time) (RetentionResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var res RetentionResult
	if l.closed {
		return res, ErrClosed
	}
	l.reapLocked(now)
	cfg := l.cfg.Load()
	sizeBefore := l.sizeLocked()
	count := func(n int, err error) error {
		res.Segments += n
		return err
	}
	start := l.logStart.Load()
	if err := count(l.deleteSegmentsLocked(func(_, next *segment) bool { return next.baseOffset <= start })); err != nil {
		return res, err
	}
	deletes := cfg.CleanupPolicy.Deletes()
	if deletes && cfg.RetentionMs >= 0 {
		expired := func(s *segment) bool { return now.UnixMilli()-s.largestTimestamp() > cfg.RetentionMs }
		if a := l.active(); len(l.segments) > 0 && a.size.Load() > 0 && l.nextOffset <= l.hw.Load() {
			all := true
			for _, s := range l.segments {
				all = all && expired(s)
			}
			if all {
				if err := l.rollLocked(now, cfg); err != nil {
					return res, err
				}
			}
		}
		if err := count(l.deleteSegmentsLocked(func(s, _ *segment) bool { return expired(s) })); err != nil {
			return res, err
		}
	}
	if deletes && cfg.RetentionBytes >= 0 {
		excess := l.sizeLocked() - cfg.RetentionBytes
		if err := count(l.deleteSegmentsLocked(func(s, _ *segment) bool {
			if excess-s.size.Load() < 0 {
				return false
			}
			excess -= s.size.Load()
			return true
		})); err != nil {
			return res, err
		}
	}
	res.Bytes = sizeBefore - l.sizeLocked()
	res.LogStartOffset = l.logStart.Load()
	return res, nil
}

func (l *Log) sizeLocked() int64 {
	var n int64
	for _, s := range l.segments {
		n += s.size.Load()
	}
	return n
}

// largestTimestamp is what time retention compares: the segment's max
// timestamp, or its file's modification time if it has no timestamps.
// Called by the writer.
func (s *segment) largestTimestamp() int64 {
	if s.maxTs >= 0 {
		return s.maxTs
	}
	if st, err := s.f.Stat(); err == nil {
		return st.ModTime().UnixMilli()
	}
	return s.created
}
