package storage

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// AppendOptions are the leader's inputs to Append.
type AppendOptions struct {
	// LeaderEpoch is written into the batch's partitionLeaderEpoch and
	// recorded in the leader-epoch cache.
	LeaderEpoch int32
	// TxnGuard, with Guarded, is what TxnGuard answered for the batch's
	// producer before its transaction was verified with the coordinator:
	// a marker for that producer appended since refuses a transactional
	// batch (ErrTxnVerificationLost), so a batch verified for a
	// transaction that ended meanwhile cannot open one the coordinator
	// does not know (Kafka's verification guard).
	TxnGuard uint64
	Guarded  bool
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

// Append validates one v2 record batch as a leader receives it from a
// producer, assigns its offsets (writing the base offset and partition
// leader epoch in place) and appends it. The slice is modified in place and
// must not be reused by the caller until Append returns. When the topic's
// compression.type names a codec other than the batch's, the batch stored
// is the same records recompressed with that codec (see
// recompressProduced), and the caller's slice is left as sent.
func (l *Log) Append(batch []byte, opts AppendOptions) (AppendResult, error) {
	cfg := l.cfg.Load()
	res := AppendResult{LogAppendTime: NoTimestamp}
	if int64(len(batch)) > cfg.MaxMessageBytes {
		return res, fmt.Errorf("%w: %d bytes, max.message.bytes is %d", ErrRecordTooLarge, len(batch), cfg.MaxMessageBytes)
	}
	b := Batch(batch)
	rules := ProduceRules{TopicPartition: l.tp, Compacted: cfg.CleanupPolicy.Compacts(),
		MaxDecompressedBytes: DecompressLimit(cfg.MaxMessageBytes)}
	recode := needsRecompression(b, cfg)
	if recode {
		plain := getRecodeBuf()
		defer putRecodeBuf(plain)
		rules.plain = plain
	}
	info, err := b.ValidateProduce(rules)
	if err != nil {
		return res, err
	}
	if recode {
		out := getRecodeBuf()
		defer putRecodeBuf(out)
		if b, err = recompressProduced(out, b, *rules.plain, cfg); err != nil {
			return res, err
		}
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
	if opts.Guarded && b.Transactional() && l.txnMarkers[b.ProducerID()] != opts.TxnGuard {
		l.mu.Unlock()
		return res, fmt.Errorf("%w: producer %d had a marker after its transaction was verified", ErrTxnVerificationLost, b.ProducerID())
	}
	base := l.nextOffset
	b.SetBaseOffset(base)
	b.SetPartitionLeaderEpoch(opts.LeaderEpoch)
	if cfg.MessageTimestampType == LogAppendTime {
		b.SetLogAppendTime(now)
		info.MaxTimestamp, info.MaxTimestampDelta = now, 0
		res.LogAppendTime = now
	} else {
		b.setCreateTime(info.MaxTimestamp)
	}
	err = l.ioFailure(l.appendLocked(b, info, cfg))
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
// carry their offsets and epochs. Each batch must start at or after the log
// end offset and after the previous one: overlaps are refused
// (ErrUnexpectedOffset) and nothing is written. Gaps are accepted, as
// Kafka's followers accept them: a leader's compacted segments have them
// where the cleaner removed whole batches. A gap moves the cleaner
// checkpoint past the batch, so recovery accepts it (the leader has already
// compacted that range; this log's cleaner still dedupes it against later
// keys).
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
	// A fetch answer holds a few batches per partition: room for them on
	// the stack keeps a follower's append allocation-free
	// (TestAllocsFollowerAppendPath).
	var room [8]item
	items := room[:0]
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
		if b.BaseOffset() < next {
			l.mu.Unlock()
			return res, fmt.Errorf("%w: batch at offset %d, expected %d", ErrUnexpectedOffset, b.BaseOffset(), next)
		}
		next = b.NextOffset()
		items = append(items, item{b, info})
		pos += n
	}
	var err error
	for _, it := range items {
		gap := it.b.BaseOffset() > l.nextOffset
		if err = l.ioFailure(l.appendLocked(it.b, it.info, cfg)); err != nil {
			break
		}
		if gap && l.firstDirty.Load() < it.b.NextOffset() {
			// The leader compacted this range: recovery must accept its
			// gaps, which it does below the cleaner checkpoint.
			l.firstDirty.Store(it.b.NextOffset())
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
	err := s.append(b, info, cfg.IndexIntervalBytes)
	if err == nil {
		// Before publishing: a Sync that covers the batch must cover its
		// .txnindex entry too. It fails only before changing any state.
		err = l.applyBatchLocked(b, s)
	}
	if err != nil {
		// The bytes may be partly written: cut them so the file ends at
		// the last published batch.
		_ = s.f.Truncate(s.size.Load())
		return err
	}
	if l.activity != nil {
		l.activity.Add(1)
	}
	l.segMu.Lock()
	s.noteBatch(b, info)
	l.nextOffset = s.nextOffset
	s.size.Add(int64(len(b)))
	l.leo.Store(l.nextOffset)
	l.segMu.Unlock()
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
	case size > 0 && timeWaited(s, b, info, now) > cfg.SegmentMs-s.rollJitter:
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

// needsRecompression says whether the topic's compression.type asks for
// a codec other than the one b was produced with. A batch already in that
// codec, or any batch under compression.type=producer, is stored as sent.
func needsRecompression(b Batch, cfg *Config) bool {
	return cfg.CompressionType != CompressionProducer && len(b) >= BatchHeaderSize &&
		b.Compression() != cfg.CompressionType
}

// recompressProduced rebuilds the validated produced batch b with the
// topic's codec and level into *out, as Kafka's LogValidator does: the
// records are the same bytes (their offset and timestamp deltas do not
// depend on the codec), so only the records section is recompressed and
// the header's length, codec and CRC rewritten; offsets, timestamps and
// producer fields stay. plain is the records decompressed by the
// validator's walk (unused when b is uncompressed). Like Kafka, a batch
// that recompresses to more than max.message.bytes is refused.
func recompressProduced(out *[]byte, b Batch, plain []byte, cfg *Config) (Batch, error) {
	records := plain
	if b.Compression() == CompressionNone {
		records = b[BatchHeaderSize:]
	}
	target := cfg.CompressionType
	// Snappy is written in snappy-java's framing, as Kafka's broker writes
	// it; every client family reads it.
	dst, err := encodeBatch((*out)[:0], b, target, records, true, cfg.compressionLevel(target))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptBatch, err)
	}
	*out = dst
	nb := Batch(dst)
	if int64(len(nb)) > cfg.MaxMessageBytes {
		return nil, fmt.Errorf("%w: %d bytes recompressed with %s, max.message.bytes is %d", ErrRecordTooLarge, len(nb), target, cfg.MaxMessageBytes)
	}
	nb.updateCRC()
	return nb, nil
}

// recodeBufs hold the decompressed records and the rebuilt batch of a
// recompressing Append; buffers grown past maxPooledRecodeBuf are dropped
// rather than kept for the next batch.
var recodeBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledRecodeBuf = 4 << 20

func getRecodeBuf() *[]byte { return recodeBufs.Get().(*[]byte) }

func putRecodeBuf(p *[]byte) {
	if cap(*p) > maxPooledRecodeBuf {
		*p = nil
	}
	*p = (*p)[:0]
	recodeBufs.Put(p)
}
