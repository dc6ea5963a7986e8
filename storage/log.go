package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
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
// Concurrency: one writer at a time (Append, AppendAsFollower, Truncate,
// ResetTo, DeleteRecords, ApplyRetention, Roll, UpdateConfig,
// ExpireProducers, Close take mu), any number of concurrent readers (Read,
// the offset getters, the lookups). A write becomes visible to readers
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

	mu         sync.Mutex // the writer
	closed     bool
	pending    []*segment // removed segments awaiting file deletion
	scratch    []byte     // reused by recovery
	nextOffset int64      // writer's view of the log end offset
	// producers is the idempotent-producer table as of nextOffset.
	producers     producerStates
	producerTTLMs int64 // producer.id.expiration.ms
	// followerDropBehind is LogOptions.FollowerDropBehind (0: off).
	followerDropBehind int64

	flushMu   sync.Mutex // serialises fsyncs (group commit)
	shut      bool       // files closed; guarded by flushMu
	unflushed atomic.Int64
	lastFlush atomic.Int64 // unix ms

	segMu    sync.RWMutex
	segments []*segment // sorted by base offset; the last is active

	leo           atomic.Int64
	logStart      atomic.Int64
	hw            atomic.Int64
	recoveryPoint atomic.Int64
}

// AppendOptions are the leader's inputs to Append.
type AppendOptions struct {
	// LeaderEpoch is written into the batch's partitionLeaderEpoch and
	// recorded in the leader-epoch cache.
	LeaderEpoch int32
}

// AppendResult describes an appended batch (or batches, for a follower).
type AppendResult struct {
	BaseOffset int64
	LastOffset int64
	// LogAppendTime is the broker time written into the batch when the
	// topic uses LogAppendTime, else NoTimestamp (-1), as the Produce
	// response reports it.
	LogAppendTime  int64
	LogStartOffset int64
	RecordCount    int64
	Bytes          int64
	// Duplicate: the batch was a producer's retry of one of its last
	// MaxProducerBatches batches, already in the log. Nothing was
	// appended; BaseOffset and LastOffset are the original batch's (what
	// the Produce response answers, with no error, as Kafka does), and
	// RecordCount and Bytes are zero.
	Duplicate bool
}

// Region is a byte range of a segment file holding whole record batches,
// ready to be copied to a socket. The file stays open while the log is open
// (a segment removed by retention or truncation is deleted only after
// file.delete.delay.ms), but a truncation may shorten it, so a copy can come
// up short; callers treat that like a closed connection.
type Region struct {
	File *os.File
	Pos  int64
	Len  int64
}

// Reader returns a reader over the region (it does not move the file's
// offset, so any number may read concurrently).
func (r Region) Reader() *io.SectionReader { return io.NewSectionReader(r.File, r.Pos, r.Len) }

// Bytes reads the region into memory.
func (r Region) Bytes() ([]byte, error) {
	if r.Len == 0 {
		return nil, nil
	}
	buf := make([]byte, r.Len)
	_, err := io.ReadFull(r.Reader(), buf)
	return buf, err
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

// Append validates one v2 record batch as a leader receives it from a
// producer, assigns its offsets (writing the base offset and partition
// leader epoch in place) and appends it. The slice is modified in place and
// must not be reused by the caller until Append returns.
func (l *Log) Append(batch []byte, opts AppendOptions) (AppendResult, error) {
	cfg := l.cfg.Load()
	res := AppendResult{LogAppendTime: NoTimestamp}
	if int64(len(batch)) > cfg.MaxMessageBytes {
		return res, fmt.Errorf("%w: %d bytes, max.message.bytes is %d", ErrRecordTooLarge, len(batch), cfg.MaxMessageBytes)
	}
	b := Batch(batch)
	info, err := b.Validate()
	if err != nil {
		return res, err
	}
	if opts.LeaderEpoch < 0 {
		return res, fmt.Errorf("%w: leader epoch %d", ErrInvalidRecord, opts.LeaderEpoch)
	}
	now := l.now().UnixMilli()
	if cfg.MessageTimestampType == CreateTime {
		if err := checkTimestamps(cfg, info, now); err != nil {
			return res, err
		}
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return res, ErrClosed
	}
	// The producer checks come before anything is assigned, so a refused
	// or duplicate batch leaves the log and the slice as they were.
	if dup, isDup, err := l.checkProducerLocked(b); err != nil || isDup {
		if isDup {
			res.BaseOffset, res.LastOffset, res.Duplicate = dup.FirstOffset, dup.LastOffset, true
			if cfg.MessageTimestampType == LogAppendTime {
				res.LogAppendTime = dup.Timestamp
			}
			res.LogStartOffset = l.logStart.Load()
		}
		l.mu.Unlock()
		return res, err
	}
	base := l.nextOffset
	b.SetBaseOffset(base)
	b.SetPartitionLeaderEpoch(opts.LeaderEpoch)
	if cfg.MessageTimestampType == LogAppendTime {
		b.SetLogAppendTime(now)
		info.MaxTimestamp, info.MaxTimestampDelta = now, 0
		res.LogAppendTime = now
	} else if b.Compression() == CompressionNone {
		b.setCreateTime(info.MaxTimestamp)
	} else {
		b.setCreateTime(b.MaxTimestamp())
	}
	err = l.appendLocked(b, info, cfg)
	res.BaseOffset, res.LastOffset = base, b.LastOffset()
	res.LogStartOffset = l.logStart.Load()
	res.RecordCount, res.Bytes = int64(b.RecordCount()), int64(len(b))
	l.mu.Unlock()
	if err != nil {
		return res, err
	}
	return res, l.maybeFlush(cfg)
}

func checkTimestamps(cfg *Config, info BatchInfo, now int64) error {
	if cfg.MessageTimestampBeforeMaxMs < math.MaxInt64 && info.MinTimestamp < now-cfg.MessageTimestampBeforeMaxMs {
		return fmt.Errorf("%w: timestamp %d is more than %d ms before the broker time %d", ErrInvalidTimestamp, info.MinTimestamp, cfg.MessageTimestampBeforeMaxMs, now)
	}
	if cfg.MessageTimestampAfterMaxMs < math.MaxInt64 && info.MaxTimestamp > now+cfg.MessageTimestampAfterMaxMs {
		return fmt.Errorf("%w: timestamp %d is more than %d ms after the broker time %d", ErrInvalidTimestamp, info.MaxTimestamp, cfg.MessageTimestampAfterMaxMs, now)
	}
	return nil
}

// AppendAsFollower appends batches fetched from the leader, which already
// carry their offsets and epochs. The first batch must start at the log end
// offset and each next batch right after the previous one: gaps and
// overlaps are refused (ErrUnexpectedOffset) and nothing is written.
func (l *Log) AppendAsFollower(records []byte) (AppendResult, error) {
	cfg := l.cfg.Load()
	res := AppendResult{LogAppendTime: NoTimestamp}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return res, ErrClosed
	}
	next := l.nextOffset
	res.BaseOffset, res.LastOffset = next, next-1
	// Validate everything first so a bad batch in the middle appends nothing.
	type item struct {
		b    Batch
		info BatchInfo
	}
	var items []item
	for pos := 0; pos < len(records); {
		n, err := BatchSize(records[pos:])
		if err != nil || pos+n > len(records) {
			l.mu.Unlock()
			return res, fmt.Errorf("%w: truncated batch at byte %d", ErrCorruptBatch, pos)
		}
		b := Batch(records[pos : pos+n])
		info, err := b.ValidateStored()
		if err != nil {
			l.mu.Unlock()
			return res, fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		if b.BaseOffset() != next {
			l.mu.Unlock()
			return res, fmt.Errorf("%w: batch at offset %d, expected %d", ErrUnexpectedOffset, b.BaseOffset(), next)
		}
		next = b.NextOffset()
		items = append(items, item{b, info})
		pos += n
	}
	var err error
	for _, it := range items {
		if err = l.appendLocked(it.b, it.info, cfg); err != nil {
			break
		}
		res.LastOffset = it.b.LastOffset()
		res.RecordCount += int64(it.b.RecordCount())
		res.Bytes += int64(len(it.b))
	}
	l.dropBehindLocked()
	res.LogStartOffset = l.logStart.Load()
	l.mu.Unlock()
	if err != nil {
		return res, err
	}
	return res, l.maybeFlush(cfg)
}

// appendLocked rolls if needed, writes the batch, records its epoch and
// publishes the new end. Called with mu held.
func (l *Log) appendLocked(b Batch, info BatchInfo, cfg *Config) error {
	now := l.now()
	l.reapLocked(now)
	if err := l.maybeRollLocked(b, info, cfg, now); err != nil {
		return err
	}
	if e := b.PartitionLeaderEpoch(); e >= 0 {
		if latest, ok := l.epochs.Latest(); !ok || e > latest.Epoch {
			if err := l.epochs.Assign(e, b.BaseOffset()); err != nil {
				return err
			}
		}
	}
	s := l.active()
	if err := s.append(b, info, cfg.IndexIntervalBytes); err != nil {
		// The bytes may be partly written: cut them so the file ends at
		// the last published batch.
		_ = s.f.Truncate(s.size.Load())
		return err
	}
	l.segMu.Lock()
	s.noteBatch(b, info)
	l.nextOffset = s.nextOffset
	s.size.Add(int64(len(b)))
	l.leo.Store(l.nextOffset)
	l.segMu.Unlock()
	l.producers.apply(b)
	l.unflushed.Add(int64(b.RecordCount()))
	return nil
}

// dropBehindLocked keeps a follower's copy out of the page cache: each
// time the active segment has grown followerDropBehind bytes since the
// last advice, it advises the kernel over what that advice and this one
// cover. The new bytes are dirty, so for them the advice only starts
// writeback; the bytes the last advice was new for have been written back
// since and go. At most two steps of a segment stay cached (more when the
// disk is slower than the appends; those pages stay, which costs memory,
// not data). Why a follower's copy may leave the cache: doc.go, "Page
// cache". Called with mu held.
func (l *Log) dropBehindLocked() {
	step := l.followerDropBehind
	if step <= 0 {
		return
	}
	s := l.active()
	end := s.size.Load()
	// A truncation may have cut below the marks.
	s.advised, s.dropFrom = min(s.advised, end), min(s.dropFrom, end)
	if end-s.advised < step {
		return
	}
	dropCache(s.f, s.dropFrom, end-s.dropFrom)
	s.dropFrom, s.advised = s.advised, end
}

func (l *Log) maybeRollLocked(b Batch, info BatchInfo, cfg *Config, now time.Time) error {
	s := l.active()
	size := s.size.Load()
	switch {
	case b.LastOffset()-s.baseOffset > math.MaxUint32:
	case s.offIdx.full() || s.timeIdx.full():
	case size > 0 && size+int64(len(b)) > cfg.SegmentBytes:
	case size > 0 && timeWaited(s, b, info, now) > cfg.SegmentMs-cfg.SegmentJitterMs:
	default:
		return nil
	}
	return l.rollLocked(now, cfg)
}

// timeWaited is how long the active segment has been filling, for
// segment.ms: measured in record time from its first batch when batches
// carry timestamps (as Kafka does, so replaying old data does not roll
// every batch), else in wall time since the segment was created.
func timeWaited(s *segment, b Batch, info BatchInfo, now time.Time) int64 {
	if ts := batchMaxTimestamp(b, info); s.firstTs >= 0 && ts >= 0 {
		return ts - s.firstTs
	}
	return now.UnixMilli() - s.created
}

// Roll starts a new active segment at the log end offset (no-op if the
// active segment is empty).
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.active().size.Load() == 0 {
		return nil
	}
	return l.rollLocked(l.now(), l.cfg.Load())
}

func (l *Log) rollLocked(now time.Time, cfg *Config) error {
	old := l.active()
	if old.size.Load() == 0 && old.baseOffset == l.nextOffset {
		return nil
	}
	if err := old.onInactive(); err != nil {
		return err
	}
	// The new segment's snapshot lets a restart or truncation replay from
	// here rather than from the log start.
	if err := l.writeProducerSnapshotLocked(); err != nil {
		return err
	}
	s, err := createSegment(l.dir, l.nextOffset, cfg, now)
	if err != nil {
		return err
	}
	l.segMu.Lock()
	l.segments = append(l.segments, s)
	l.segMu.Unlock()
	l.dirSynced.Store(false)
	return nil
}

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

// Read returns a region of whole batches starting with the batch holding
// offset, at most maxBytes long unless the first batch alone is larger (it
// is always returned whole, so consumers make progress). Reads stop at the
// log end offset. offset == LogEndOffset returns an empty region; an offset
// outside [LogStartOffset, LogEndOffset] is ErrOffsetOutOfRange.
func (l *Log) Read(offset int64, maxBytes int) (Region, error) {
	return l.ReadUpTo(offset, maxBytes, math.MaxInt64)
}

// ReadUpTo is Read that also stops before the first batch whose last
// offset is >= maxOffset (consumers read up to the high watermark).
func (l *Log) ReadUpTo(offset int64, maxBytes int, maxOffset int64) (Region, error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	leo, start := l.leo.Load(), l.logStart.Load()
	if offset < start || offset > leo {
		return Region{}, fmt.Errorf("%w: offset %d, log covers [%d, %d)", ErrOffsetOutOfRange, offset, start, leo)
	}
	limit := min(maxOffset, leo)
	if offset >= limit || len(l.segments) == 0 {
		return Region{}, nil
	}
	for i := l.segmentFor(offset); i < len(l.segments); i++ {
		s := l.segments[i]
		end := s.size.Load()
		pos, _, err := s.translate(offset, end)
		if err != nil {
			return Region{}, err
		}
		if pos >= end {
			continue
		}
		maxPos := end
		if limit < leo {
			if maxPos, _, err = s.translate(limit, end); err != nil {
				return Region{}, err
			}
		}
		if pos >= maxPos {
			return Region{}, nil
		}
		var hdr [BatchHeaderSize]byte
		n, err := s.batchHeader(&hdr, pos, end)
		if err != nil {
			return Region{}, fmt.Errorf("%s at position %d: %w", s.logPath(), pos, err)
		}
		stop := pos + n
		if want := pos + int64(max(maxBytes, 0)); want > stop && stop < maxPos {
			b, err := s.boundaryAtOrBefore(min(want, maxPos), stop)
			if err != nil {
				return Region{}, err
			}
			stop = max(stop, b)
		}
		return Region{File: s.f, Pos: pos, Len: stop - pos}, nil
	}
	return Region{}, nil
}

// TimestampAndOffset is a record found by its timestamp: its own timestamp
// and offset, and the partition leader epoch of its batch (what Kafka's
// ListOffsets answers for a search by time).
type TimestampAndOffset struct {
	Timestamp   int64
	Offset      int64
	LeaderEpoch int32
}

// FindByTimestamp returns the first record, in offset order, with a
// timestamp >= ts and an offset at or after the log start offset
// (ListOffsets by time); ok is false if there is none. Compressed batches
// that may hold it are decompressed (see segment.findTimestamp), so the
// answer is exact as in Kafka.
func (l *Log) FindByTimestamp(ts int64) (found TimestampAndOffset, ok bool, err error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	start := l.logStart.Load()
	for _, s := range l.segments {
		if s.maxTs < ts {
			continue
		}
		found, ok, err := s.findTimestamp(ts, start, s.size.Load())
		if err != nil || ok {
			return found, ok, err
		}
	}
	return TimestampAndOffset{}, false, nil
}

// FindOffsetByTimestamp is FindByTimestamp's offset alone.
func (l *Log) FindOffsetByTimestamp(ts int64) (offset int64, ok bool, err error) {
	found, ok, err := l.FindByTimestamp(ts)
	return found.Offset, ok, err
}

// MaxTimestamp returns the largest timestamp in the log and the offset of
// the record carrying it (ListOffsets MAX_TIMESTAMP, KIP-734); ok is false
// for a log without timestamps.
func (l *Log) MaxTimestamp() (ts, offset int64, ok bool) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	ts = NoTimestamp
	for _, s := range l.segments {
		if s.maxTs > ts && s.maxTsOffset >= l.logStart.Load() {
			ts, offset = s.maxTs, s.maxTsOffset
		}
	}
	return ts, offset, ts >= 0
}

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
	if l.hw.Load() > l.nextOffset {
		l.hw.Store(l.nextOffset)
	}
	l.flushMu.Lock()
	if l.recoveryPoint.Load() > l.nextOffset {
		l.recoveryPoint.Store(l.nextOffset)
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
	l.flushMu.Unlock()
	l.unflushed.Store(0)
	clear(l.producers)
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
// holds (next is the segment after s), never past the high watermark, and
// moves the log start offset to the first remaining segment if it was
// below. It returns the segments removed.
func (l *Log) deleteSegmentsLocked(pred func(s, next *segment) bool) (int, error) {
	l.segMu.RLock()
	var gone []*segment
	hw := l.hw.Load()
	for i := 0; i+1 < len(l.segments); i++ {
		s, next := l.segments[i], l.segments[i+1]
		if next.baseOffset > hw || !pred(s, next) {
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
	if end > rp {
		l.recoveryPoint.Store(end)
	}
	l.unflushed.Add(-pending)
	l.lastFlush.Store(l.now().UnixMilli())
	return nil
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
