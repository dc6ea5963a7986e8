package storage

import (
	"errors"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Log is one partition's log: a directory of segments, its offsets (log
// start, log end, high watermark, recovery point), its leader-epoch cache
// and its idempotent producers' state.
//
// Concurrency: one writer at a time (Append, AppendMarker,
// AppendAsFollower, Truncate, ResetTo, DeleteRecords, ApplyRetention, Roll,
// UpdateConfig, ExpireProducers, Close take mu), any number of concurrent
// readers (Read, the offset getters, the lookups). A write becomes visible to readers
// only once its bytes are in the file: the segment size and log end offset
// are published together under segMu after the write. Sync may run beside
// the writer (group commit). See doc.go for the lock order.
type Log struct {
	dir       string
	tp        TopicPartition
	now       func() time.Time
	epochs    *LeaderEpochCache
	cfg       atomic.Pointer[Config]
	dirSynced atomic.Bool // false after a segment file was created or removed

	activity *atomic.Int64 // counts appends, if set (LogOptions.activity)

	mu         sync.Mutex // the writer
	closed     bool
	pending    []*segment // removed segments awaiting file deletion
	scratch    []byte     // reused by recovery
	nextOffset int64      // writer's view of the log end offset
	// producers is the idempotent-producer table as of nextOffset.
	producers producerStates
	// txnMarkers counts, per producer id, the markers appended as leader
	// (the verification guard of AppendOptions.TxnGuard); guarded by mu.
	txnMarkers    map[int64]uint64
	producerTTLMs int64 // producer.id.expiration.ms
	// followerDropBehind is LogOptions.FollowerDropBehind (0: off).
	followerDropBehind int64
	// Transactions (lso.go): ended transactions whose marker the HW has
	// not passed, and the first offset of the oldest open or unreplicated
	// one (noUnstable if none), published for LastStableOffset.
	unreplicated  []CompletedTxn
	firstUnstable atomic.Int64
	// txnReplayFrom: at open, a segment at this base had a corrupt
	// .txnindex, so the producer replay must start at or below it.
	txnReplayFrom int64

	onFlush   func(time.Duration) // LogOptions.OnFlush; nil: not reported
	flushMu   sync.Mutex          // serialises fsyncs (group commit)
	shut      bool                // files closed; guarded by flushMu
	unflushed atomic.Int64
	lastFlush atomic.Int64 // unix ms

	// Durable mode (flush.messages=1, log_flush.go): durable is the offset
	// below which the log's data is known fsynced (at least the recovery
	// point; the flusher moves it without syncing indexes, so without
	// moving the recovery point). flusher is the log dir's group commit
	// (nil for a log opened alone: durable appends then fsync inline);
	// queued is guarded by flusher.mu. flushErr, guarded by flushMu, is
	// the first failed data fsync: durable never moves again (after a
	// failed fsync Linux may have dropped the dirty pages, so a later
	// fsync that succeeds proves nothing). syncSegs is Sync's and
	// syncDurable's reused list of segments; guarded by flushMu.
	durable   atomic.Int64
	syncData  func(*os.File) error // LogOptions.SyncData
	flusher   *flusher
	onIOError func(error) // LogOptions.onIOError
	queued    bool
	flushErr  error
	syncSegs  []*segment
	onDurable atomic.Pointer[func()]

	segMu    sync.RWMutex
	segments []*segment // sorted by base offset; the last is active

	leo           atomic.Int64
	logStart      atomic.Int64
	hw            atomic.Int64
	recoveryPoint atomic.Int64

	// The cleaner's state (cleaner.go): firstDirty is the cleaner
	// checkpoint (below it the log is compacted); tombstoneHorizon the
	// earliest delete horizon of the tombstones the last clean kept (0
	// until a clean ran: unknown, so due); truncations counts Truncate and
	// ResetTo calls, so a clean running beside one gives up.
	firstDirty       atomic.Int64
	tombstoneHorizon atomic.Int64
	truncations      atomic.Int64
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// TopicPartition is the partition this log holds (from its directory name).
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Config returns the log's current config.
func (l *Log) Config() Config { return *l.cfg.Load() }

// LogEndOffset is the offset the next batch will get.
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// LogStartOffset is the first offset a reader may read.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// HighWatermark is the last value set by SetHighWatermark, clamped to
// [LogStartOffset, LogEndOffset].
func (l *Log) HighWatermark() int64 { return l.hw.Load() }

// RecoveryPoint is the offset below which everything is known fsynced.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// LeaderEpochs is the partition's leader-epoch cache.
func (l *Log) LeaderEpochs() *LeaderEpochCache { return l.epochs }

// EndOffsetForEpoch answers OffsetForLeaderEpoch.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return l.epochs.EndOffsetFor(epoch, l.leo.Load())
}

// SetHighWatermark stores the high watermark decided by replication,
// clamped to [LogStartOffset, LogEndOffset]; it returns the stored value.
func (l *Log) SetHighWatermark(hw int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.setHWLocked(hw)
}

func (l *Log) setHWLocked(hw int64) int64 {
	hw = min(max(hw, l.logStart.Load()), l.nextOffset)
	l.hw.Store(hw)
	l.onHWLocked()
	return hw
}

// Size is the total bytes of the log's segments.
func (l *Log) Size() int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	var n int64
	for _, s := range l.segments {
		n += s.size.Load()
	}
	return n
}

// NumSegments is the number of segments, the active one included.
func (l *Log) NumSegments() int {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return len(l.segments)
}

// UpdateConfig replaces the topic config; it applies from the next append
// (segment sizes, retention, flush policy). Index sizes apply to segments
// created afterwards.
func (l *Log) UpdateConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg.Store(&cfg)
	return nil
}

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// removeSegmentsLocked takes segments out of the list and schedules their
// files for deletion after file.delete.delay.ms.
func (l *Log) removeSegmentsLocked(gone []*segment) {
	if len(gone) == 0 {
		return
	}
	drop := make(map[*segment]bool, len(gone))
	for _, s := range gone {
		drop[s] = true
	}
	l.segMu.Lock()
	kept := l.segments[:0:0]
	for _, s := range l.segments {
		if !drop[s] {
			kept = append(kept, s)
		}
	}
	l.segments = kept
	l.segMu.Unlock()
	at := l.now().Add(time.Duration(l.cfg.Load().FileDeleteDelayMs) * time.Millisecond)
	for _, s := range gone {
		_ = s.markDeleted() // a failed rename leaves a file recovery cleans up
		s.deleteAt = at
		l.pending = append(l.pending, s)
	}
	l.dirSynced.Store(false)
}

// reapLocked deletes removed segments whose delay has passed. It takes
// flushMu so a concurrent Sync never sees a file closed under it.
func (l *Log) reapLocked(now time.Time) {
	if len(l.pending) == 0 || now.Before(l.pending[0].deleteAt) {
		return
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	kept := l.pending[:0]
	for _, s := range l.pending {
		if now.Before(s.deleteAt) {
			kept = append(kept, s)
			continue
		}
		_ = s.removeFiles()
	}
	l.pending = kept
}

// segmentFor returns the index of the segment that would hold offset (the
// last with base <= offset, or 0). Called with segMu held.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].baseOffset > offset })
	return max(i-1, 0)
}

// closeDiscard closes a log whose directory is about to be removed
// (Manager.Delete). Unlike Close it fsyncs nothing and writes no producer
// snapshot: nothing in the directory is read again, and those fsyncs were
// most of what deleting an empty partition cost (a data, two index and a
// snapshot fsync, each with its directory).
func (l *Log) closeDiscard() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.shut = true
	var errs []error
	for _, s := range l.pending {
		errs = append(errs, s.close())
	}
	l.pending = nil
	l.segMu.Lock()
	for _, s := range l.segments {
		errs = append(errs, s.close())
	}
	l.segMu.Unlock()
	return errors.Join(errs...)
}

// Close flushes, trims the active segment's indexes and closes every file.
// The log cannot be used afterwards.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	// Sync may run under mu (lock order mu, flushMu, segMu); closed is set
	// first so no append slips in between the flush and the close.
	l.closed = true
	var errs []error
	if len(l.segments) > 0 {
		errs = append(errs, l.active().onInactive())
	}
	errs = append(errs, l.Sync())
	if len(l.segments) > 0 {
		// Lets the next open skip replaying batch headers.
		errs = append(errs, l.writeProducerSnapshotLocked())
	}
	l.flushMu.Lock()
	if len(l.segments) > 0 {
		// The trimmed index sizes must be durable before a clean-shutdown
		// marker says the indexes can be trusted.
		errs = append(errs, l.active().sync())
	}
	l.shut = true
	for _, s := range l.pending {
		errs = append(errs, s.removeFiles())
	}
	l.pending = nil
	l.segMu.Lock()
	for _, s := range l.segments {
		errs = append(errs, s.close())
	}
	l.segMu.Unlock()
	l.flushMu.Unlock()
	return errors.Join(errs...)
}
