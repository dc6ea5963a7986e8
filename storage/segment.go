package storage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// File name suffixes, as Kafka names them.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted"
	cleanedSuffix   = ".cleaned"
	swapSuffix      = ".swap"
	tmpSuffix       = ".tmp"
)

// randomJitter draws a segment's roll jitter: uniform in
// [0, min(segment.jitter.ms, segment.ms)), 0 without jitter.
func randomJitter(cfg *Config) int64 {
	if n := min(cfg.SegmentJitterMs, cfg.SegmentMs); n > 0 {
		return rand.Int64N(n)
	}
	return 0
}

// segmentName is a base offset as Kafka names segment files: 20 digits.
func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// segment is one .log file of record batches with its offset and time
// indexes, all named by the base offset. Only the log's writer (holding
// Log.mu) calls the mutating methods; size is published with an atomic
// store after each write completes, and readers never look past it.
type segment struct {
	dir        string
	baseOffset int64
	f          *os.File
	offIdx     *offsetIndex
	timeIdx    *timeIndex
	// txnIdx is the aborted-transaction index (txn_index.go); txnIdxErr
	// says why an existing one was found corrupt and emptied at open.
	txnIdx    *txnIndex
	txnIdxErr error

	size atomic.Int64 // bytes of whole batches, published after the write

	// Writer state, guarded by Log.mu. maxTs and maxTsOffset are also read
	// by readers under Log.segMu (the writer updates them under
	// segMu.Lock).
	nextOffset      int64 // offset after the last batch; baseOffset if empty
	bytesSinceIndex int64
	maxTs           int64 // largest batch max timestamp, NoTimestamp if none
	maxTsOffset     int64
	firstTs         int64     // first batch's max timestamp, NoTimestamp if unknown
	created         int64     // unix ms the segment was created (or the file's mtime)
	deleteAt        time.Time // when a removed segment's files may be deleted
	// Drop-behind marks (Log.dropBehindLocked): advised is the size at
	// the last advice, dropFrom the size at the one before (where the
	// bytes still cached begin).
	advised, dropFrom int64
	// rollJitter is this segment's share of segment.jitter.ms, drawn at
	// random when the segment is created or opened, as Kafka draws it, so
	// segments of many partitions created together do not all roll at
	// once.
	rollJitter int64
	// suffix follows the file names of a segment the cleaner is building
	// (.cleaned, then .swap); empty for a segment of the log.
	suffix string
}

func (s *segment) logPath() string {
	return filepath.Join(s.dir, segmentName(s.baseOffset)+logSuffix+s.suffix)
}
func (s *segment) indexPath() string {
	return filepath.Join(s.dir, segmentName(s.baseOffset)+indexSuffix+s.suffix)
}
func (s *segment) timeIndexPath() string {
	return filepath.Join(s.dir, segmentName(s.baseOffset)+timeIndexSuffix+s.suffix)
}
func (s *segment) txnIndexPath() string {
	return filepath.Join(s.dir, segmentName(s.baseOffset)+txnIndexSuffix+s.suffix)
}

// createSegment makes a new empty active segment at base, replacing any
// stale files of that name, with preallocated indexes.
func createSegment(dir string, base int64, cfg *Config, now time.Time) (*segment, error) {
	return createSegmentAs(dir, base, "", cfg, now)
}

// createSegmentAs is createSegment with suffix after each file name.
func createSegmentAs(dir string, base int64, suffix string, cfg *Config, now time.Time) (*segment, error) {
	s := &segment{dir: dir, baseOffset: base, nextOffset: base, maxTs: NoTimestamp, maxTsOffset: base, firstTs: NoTimestamp, created: now.UnixMilli(), suffix: suffix, rollJitter: randomJitter(cfg)}
	for _, p := range []string{s.indexPath(), s.timeIndexPath(), s.txnIndexPath()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	s.txnIdx = &txnIndex{path: s.txnIndexPath(), last: -1}
	f, err := os.OpenFile(s.logPath(), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	s.f = f
	if err := s.openIndexes(cfg, true); err != nil {
		f.Close()
		return nil, err
	}
	if err := s.offIdx.preallocate(); err != nil {
		s.close()
		return nil, err
	}
	if err := s.timeIdx.preallocate(); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// openSegmentFiles opens an existing segment's .log and its indexes (which
// may be reported corrupt: idxErr is then non-nil and the caller rebuilds).
// With rescan the caller is about to rebuild the indexes by recover, so
// they are emptied rather than read.
func openSegmentFiles(dir string, base int64, cfg *Config, rescan bool) (s *segment, idxErr error, err error) {
	s = &segment{dir: dir, baseOffset: base, nextOffset: base, maxTs: NoTimestamp, maxTsOffset: base, firstTs: NoTimestamp, rollJitter: randomJitter(cfg)}
	f, err := os.OpenFile(s.logPath(), os.O_RDWR, 0o644)
	if err != nil {
		return nil, nil, err
	}
	s.f = f
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if st.Size() > math.MaxUint32 {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s: %d bytes, larger than a segment can be", ErrCorruptFile, s.logPath(), st.Size())
	}
	s.size.Store(st.Size())
	s.created = st.ModTime().UnixMilli()
	for _, p := range []string{s.indexPath(), s.timeIndexPath()} {
		if rescan {
			break // emptied and rebuilt whatever is there
		}
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			idxErr = errors.Join(idxErr, fmt.Errorf("%s: missing", p))
		}
	}
	idxErr = errors.Join(idxErr, s.openIndexes(cfg, rescan))
	if s.offIdx == nil || s.timeIdx == nil {
		s.close()
		return nil, nil, idxErr
	}
	if s.txnIdx, s.txnIdxErr, err = openTxnIndex(s.txnIndexPath(), base); err != nil {
		s.close()
		return nil, nil, err
	}
	return s, idxErr, nil
}

func (s *segment) openIndexes(cfg *Config, discard bool) error {
	var err1, err2 error
	s.offIdx, err1 = openOffsetIndex(s.indexPath(), s.baseOffset, int(cfg.SegmentIndexBytes), discard)
	s.timeIdx, err2 = openTimeIndex(s.timeIndexPath(), s.baseOffset, int(cfg.SegmentIndexBytes), discard)
	return errors.Join(err1, err2)
}

// batchHeader reads the fixed header of the batch at pos into hdr and
// returns the batch size. io.ErrUnexpectedEOF means a torn tail.
func (s *segment) batchHeader(hdr *[BatchHeaderSize]byte, pos, end int64) (int64, error) {
	if end-pos < BatchHeaderSize {
		return 0, io.ErrUnexpectedEOF
	}
	if _, err := s.f.ReadAt(hdr[:], pos); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, err
	}
	n, err := BatchSize(hdr[:])
	if err != nil {
		return 0, err
	}
	if pos+int64(n) > end {
		return 0, io.ErrUnexpectedEOF
	}
	return int64(n), nil
}

// translate finds the batch holding target (the first whose last offset is
// >= target) at or after the index entry for target, scanning headers up to
// end. It returns the batch position, or end if no batch qualifies.
func (s *segment) translate(target, end int64) (pos int64, base int64, err error) {
	_, pos = s.offIdx.lookup(target)
	var hdr [BatchHeaderSize]byte
	for pos < end {
		n, err := s.batchHeader(&hdr, pos, end)
		if err != nil {
			return 0, 0, fmt.Errorf("%s at position %d: %w", s.logPath(), pos, err)
		}
		b := Batch(hdr[:])
		if b.LastOffset() >= target {
			return pos, b.BaseOffset(), nil
		}
		pos += n
	}
	return end, 0, nil
}

// boundaryAtOrBefore returns the end of the last whole batch that ends at or
// before limit, scanning from the index entry at or before limit; min is the
// smallest acceptable answer (the end of the first batch of a read).
func (s *segment) boundaryAtOrBefore(limit, from int64) (int64, error) {
	_, pos := s.offIdx.lookupPosition(limit)
	pos = max(pos, from)
	var hdr [BatchHeaderSize]byte
	for {
		n, err := s.batchHeader(&hdr, pos, limit)
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return pos, nil
			}
			return 0, fmt.Errorf("%s at position %d: %w", s.logPath(), pos, err)
		}
		pos += n
	}
}

// append writes batch at the end of the segment and updates the indexes.
// It does not publish: the caller then calls noteBatch and adds to size
// under Log.segMu, where readers look.
func (s *segment) append(b Batch, info BatchInfo, indexInterval int64) error {
	pos := s.size.Load()
	if s.bytesSinceIndex > indexInterval {
		if err := s.offIdx.add(b.LastOffset(), pos); err != nil {
			return err
		}
		if s.maxTs >= 0 {
			if err := s.timeIdx.maybeAdd(s.maxTs, s.maxTsOffset); err != nil {
				return err
			}
		}
		s.bytesSinceIndex = 0
	}
	if _, err := s.f.WriteAt(b, pos); err != nil {
		return err
	}
	return nil
}

// noteBatch updates the writer's view after a batch is in the file.
func (s *segment) noteBatch(b Batch, info BatchInfo) {
	ts := batchMaxTimestamp(b, info)
	if s.nextOffset == s.baseOffset {
		s.firstTs = ts
	}
	if ts > s.maxTs {
		s.maxTs = ts
		s.maxTsOffset = b.BaseOffset() + int64(info.MaxTimestampDelta)
	}
	s.nextOffset = b.NextOffset()
	s.bytesSinceIndex += int64(len(b))
}

// batchMaxTimestamp is the timestamp the time index uses for a batch.
func batchMaxTimestamp(b Batch, info BatchInfo) int64 {
	if b.LogAppendTime() {
		return b.MaxTimestamp()
	}
	return info.MaxTimestamp
}

// recover validates every batch from the start of the segment, rebuilds
// both indexes and truncates the file at the first torn or invalid batch.
// It returns the bytes removed and why. scratch is reused between calls.
//
// Offsets only increase, so a batch starting before the last one ended has
// a damaged base offset, which the CRC does not cover. A gap is damage too
// unless the batch lies below sparseBelow: the cleaner removes whole
// batches below its checkpoint, and a follower copies a compacted leader's
// gaps (see Log.AppendAsFollower).
func (s *segment) recover(indexInterval int64, scratch *[]byte, sparseBelow int64) (truncated int64, reason error, err error) {
	if err := s.offIdx.reset(); err != nil {
		return 0, nil, err
	}
	if err := s.timeIdx.reset(); err != nil {
		return 0, nil, err
	}
	s.nextOffset, s.bytesSinceIndex, s.maxTs, s.maxTsOffset, s.firstTs = s.baseOffset, 0, NoTimestamp, s.baseOffset, NoTimestamp
	end := s.size.Load()
	// Sized to the segment when it is small: a node restarting with
	// thousands of nearly empty partitions should not allocate and zero
	// a MiB for each.
	r := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, end), int(min(max(end, 4096), 1<<20)))
	var pos int64
	for pos < end {
		b, err := readBatch(r, end-pos, scratch)
		var info BatchInfo
		if err == nil {
			info, err = b.ValidateStored()
		}
		if err == nil && (b.BaseOffset() < s.nextOffset || b.BaseOffset() > s.nextOffset && b.NextOffset() > sparseBelow || b.LastOffset()-s.baseOffset > math.MaxUint32) {
			err = fmt.Errorf("%w: offsets %d..%d do not follow %d in segment %d", ErrCorruptBatch, b.BaseOffset(), b.LastOffset(), s.nextOffset, s.baseOffset)
		}
		if err != nil {
			reason = fmt.Errorf("%s at position %d: %w", s.logPath(), pos, err)
			break
		}
		// A segment written with a larger segment.index.bytes may not fit
		// the index now; the tail then stays unindexed (lookups scan
		// further) rather than failing the open.
		if s.bytesSinceIndex > indexInterval && !s.offIdx.full() {
			if err := s.offIdx.add(b.LastOffset(), pos); err != nil {
				return 0, nil, err
			}
			if s.maxTs >= 0 {
				if err := s.timeIdx.maybeAdd(s.maxTs, s.maxTsOffset); err != nil {
					return 0, nil, err
				}
			}
			s.bytesSinceIndex = 0
		}
		s.noteBatch(b, info)
		pos += int64(len(b))
	}
	if pos < end {
		if err := s.f.Truncate(pos); err != nil {
			return 0, nil, err
		}
		s.size.Store(pos)
	}
	return end - pos, reason, nil
}

// readBatch reads one whole batch from r (remaining bytes left in the
// segment) into *scratch, growing it as needed.
func readBatch(r *bufio.Reader, remaining int64, scratch *[]byte) (Batch, error) {
	hdr, err := r.Peek(batchOverhead)
	if err != nil {
		return nil, fmt.Errorf("%w: torn batch header", ErrCorruptBatch)
	}
	n, err := BatchSize(hdr)
	if err != nil {
		return nil, err
	}
	if int64(n) > remaining {
		return nil, fmt.Errorf("%w: batch of %d bytes but %d left in the file", ErrCorruptBatch, n, remaining)
	}
	if cap(*scratch) < n {
		*scratch = make([]byte, n)
	}
	buf := (*scratch)[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("%w: torn batch: %v", ErrCorruptBatch, err)
	}
	return Batch(buf), nil
}

// loadTail sets the writer state of a trusted segment (clean shutdown or
// below the recovery point): the next offset comes from scanning headers
// after the last offset index entry, the max timestamp from the time index
// (whose final entry was written when the segment stopped being active) and
// the scanned tail.
func (s *segment) loadTail() error {
	end := s.size.Load()
	var pos int64
	if off, p, ok := s.offIdx.last(); ok {
		pos = p
		s.nextOffset = off // refined by the scan below
	}
	if ts, off, ok := s.timeIdx.last(); ok {
		s.maxTs, s.maxTsOffset = ts, off
	}
	var hdr [BatchHeaderSize]byte
	s.firstTs = NoTimestamp
	if end > 0 {
		if _, err := s.batchHeader(&hdr, 0, end); err != nil {
			return fmt.Errorf("%w: %s at position 0: %v", ErrCorruptBatch, s.logPath(), err)
		}
		s.firstTs = Batch(hdr[:]).MaxTimestamp()
	}
	for pos < end {
		n, err := s.batchHeader(&hdr, pos, end)
		if err != nil {
			return fmt.Errorf("%w: %s at position %d: %v", ErrCorruptBatch, s.logPath(), pos, err)
		}
		b := Batch(hdr[:])
		if ts := b.MaxTimestamp(); ts > s.maxTs {
			s.maxTs, s.maxTsOffset = ts, b.LastOffset()
		}
		s.nextOffset = b.NextOffset()
		s.bytesSinceIndex += n
		pos += n
	}
	return nil
}

// truncateTo removes every batch whose last offset is >= offset, returning
// the bytes removed. Batches are never split: if offset falls inside one,
// the whole batch goes and the segment ends at its base offset.
func (s *segment) truncateTo(offset int64) (int64, error) {
	end := s.size.Load()
	pos, base, err := s.translate(offset, end)
	if err != nil {
		return 0, err
	}
	if pos >= end {
		return 0, nil
	}
	// Index entries from the removed batch on go too; base is where the
	// removed batch starts, which may be below offset.
	if err := s.offIdx.truncateTo(base); err != nil {
		return 0, err
	}
	if err := s.timeIdx.truncateTo(base); err != nil {
		return 0, err
	}
	if err := s.txnIdx.truncateFrom(base); err != nil {
		return 0, err
	}
	if err := s.f.Truncate(pos); err != nil {
		return 0, err
	}
	s.size.Store(pos)
	// Recompute the writer state from what is left.
	s.nextOffset, s.bytesSinceIndex, s.maxTs, s.maxTsOffset = s.baseOffset, 0, NoTimestamp, s.baseOffset
	if err := s.loadTail(); err != nil {
		return 0, err
	}
	if pos == 0 {
		s.nextOffset = s.baseOffset
	}
	return end - pos, nil
}

// findTimestamp returns the first record whose timestamp is >= ts and
// whose offset is >= minOffset (the log start offset), scanning batches up
// to end; ok is false if there is none. CreateTime batches whose max
// timestamp reaches ts are walked record by record, as Kafka's
// FileRecords.searchForTimestamp does; compressed ones are decompressed
// for it (this lookup is the only storage path that does). Every record of
// a LogAppendTime batch carries the batch's max timestamp.
func (s *segment) findTimestamp(ts, minOffset, end int64) (TimestampAndOffset, bool, error) {
	start := max(s.timeIdx.lookupBefore(ts), minOffset)
	pos, _, err := s.translate(start, end)
	if err != nil {
		return TimestampAndOffset{}, false, err
	}
	var hdr [BatchHeaderSize]byte
	var buf []byte
	for pos < end {
		n, err := s.batchHeader(&hdr, pos, end)
		if err != nil {
			return TimestampAndOffset{}, false, fmt.Errorf("%s at position %d: %w", s.logPath(), pos, err)
		}
		b := Batch(hdr[:])
		if b.MaxTimestamp() >= ts && b.LastOffset() >= minOffset && b.RecordCount() > 0 {
			found := TimestampAndOffset{Offset: max(b.BaseOffset(), minOffset), Timestamp: b.MaxTimestamp(), LeaderEpoch: b.PartitionLeaderEpoch()}
			if b.LogAppendTime() {
				return found, true, nil
			}
			if cap(buf) < int(n) {
				buf = make([]byte, n)
			}
			buf = buf[:n]
			if _, err := s.f.ReadAt(buf, pos); err != nil {
				return TimestampAndOffset{}, false, fmt.Errorf("%s at position %d: %w", s.logPath(), pos, err)
			}
			if b.Compression() == CompressionNone {
				if off, rts, ok := Batch(buf).firstRecordFrom(ts, minOffset); ok {
					found.Offset, found.Timestamp = off, rts
					return found, true, nil
				}
			} else {
				ok := false
				err := Batch(buf).Records(func(r Record) bool {
					if r.Timestamp >= ts && r.Offset >= minOffset {
						found.Offset, found.Timestamp, ok = r.Offset, r.Timestamp, true
					}
					return !ok
				})
				if err != nil {
					return TimestampAndOffset{}, false, fmt.Errorf("%s at position %d: %w", s.logPath(), pos, err)
				}
				if ok {
					return found, true, nil
				}
			}
		}
		pos += n
	}
	return TimestampAndOffset{}, false, nil
}

// onInactive is called when the segment stops being active: record its
// max timestamp in the time index and trim both index files.
func (s *segment) onInactive() error {
	if s.maxTs >= 0 {
		if err := s.timeIdx.maybeAdd(s.maxTs, s.maxTsOffset); err != nil {
			return err
		}
	}
	if err := s.offIdx.trim(); err != nil {
		return err
	}
	return s.timeIdx.trim()
}

func (s *segment) sync() error {
	if err := fsyncFile(s.f); err != nil {
		return err
	}
	if err := s.offIdx.sync(); err != nil {
		return err
	}
	if err := s.txnIdx.sync(); err != nil {
		return err
	}
	return s.timeIdx.sync()
}

func (s *segment) close() error {
	var errs []error
	if s.f != nil {
		errs = append(errs, s.f.Close())
	}
	if s.offIdx != nil {
		errs = append(errs, s.offIdx.close())
	}
	if s.timeIdx != nil {
		errs = append(errs, s.timeIdx.close())
	}
	if s.txnIdx != nil {
		errs = append(errs, s.txnIdx.close())
	}
	return errors.Join(errs...)
}

// renameSuffix moves the segment's files (the .txnindex too, if it has
// one) from their current suffix to suffix.
func (s *segment) renameSuffix(suffix string) error {
	old := s.logPath()
	s.suffix = suffix
	if err := os.Rename(old, s.logPath()); err != nil {
		return err
	}
	return errors.Join(s.offIdx.rename(s.indexPath()), s.timeIdx.rename(s.timeIndexPath()), s.txnIdx.rename(s.txnIndexPath()))
}

// removeAs closes the segment and removes its files (a cleaned segment
// that is not swapped in).
func (s *segment) removeAs() error {
	errs := []error{s.close()}
	for _, p := range []string{s.logPath(), s.indexPath(), s.timeIndexPath(), s.txnIndexPath()} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// markDeleted renames the segment's files with the .deleted suffix; they
// stay open so readers holding a region can finish, and are removed later.
func (s *segment) markDeleted() error {
	var errs []error
	if err := os.Rename(s.logPath(), s.logPath()+deletedSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	errs = append(errs, s.offIdx.rename(s.indexPath()+deletedSuffix), s.timeIdx.rename(s.timeIndexPath()+deletedSuffix),
		s.txnIdx.rename(s.txnIndexPath()+deletedSuffix))
	return errors.Join(errs...)
}

// removeFiles closes and deletes a segment marked deleted.
func (s *segment) removeFiles() error {
	errs := []error{s.close()}
	for _, p := range []string{s.logPath() + deletedSuffix, s.indexPath() + deletedSuffix, s.timeIndexPath() + deletedSuffix, s.txnIndexPath() + deletedSuffix} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
