package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// LogOptions are what the caller (the Manager) knows about a log before
// opening it: the per-log-dir checkpoints and whether the last stop was
// clean.
type LogOptions struct {
	// CleanShutdown: the log dir had a clean-shutdown marker, so segments
	// are trusted (indexes are still sanity-checked). Otherwise every
	// segment from the recovery point on is rescanned.
	CleanShutdown bool
	// RecoveryPoint from recovery-point-offset-checkpoint: offsets below
	// it were fsynced. 0 rescans everything after an unclean stop.
	RecoveryPoint int64
	// LogStartOffset from log-start-offset-checkpoint.
	LogStartOffset int64
	// HighWatermark from replication-offset-checkpoint.
	HighWatermark int64
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// ProducerIDExpirationMs is producer.id.expiration.ms;
	// DefaultProducerIDExpirationMs if zero.
	ProducerIDExpirationMs int64
	// CleanerCheckpoint from cleaner-offset-checkpoint: the log below it
	// was compacted, so recovery accepts gaps between batches there.
	CleanerCheckpoint int64
	// FollowerDropBehind, when positive, makes AppendAsFollower hand the
	// pages it wrote back to the kernel in steps of this many bytes (see
	// Log.dropBehindLocked); leader appends keep theirs cached for
	// followers and consumers. 0 keeps everything cached, as Kafka does.
	FollowerDropBehind int64
	// OnFlush, when set, is told how long each flush that fsynced took
	// (Sync, FlushRolled; Kafka's LogFlushStats LogFlushRateAndTimeMs), so
	// a caller can keep a latency histogram without this package knowing
	// a metrics library. It runs on the flushing goroutine and must be
	// quick.
	OnFlush func(time.Duration)
	// activity, if set, counts the log's appends (the Manager's, which
	// its cleaner's throttle watches).
	activity *atomic.Int64
	// SyncData, when set, is how durable mode fsyncs a segment's data
	// (nil: the file's Sync). An instrumented one lets a test order
	// fsyncs against acknowledgements, or fail them.
	SyncData func(*os.File) error
	// flusher, if set, is the log dir's group commit for durable mode
	// (the Manager's); without one a durable append fsyncs inline.
	flusher *flusher
	// New, if set, is written into a log this call creates (see NewLog).
	New *NewLog
	// onIOError, if set, is told of every I/O error the log meets on its
	// files (the Manager's, which takes the log dir offline).
	onIOError func(error)
}

// fresh reports whether the log's directory has neither partition.metadata
// nor leader epochs: a new one, not one a crash left half made, whose files
// the caller (the replica manager) checks as it does any existing log's.
func (l *Log) fresh() bool {
	if _, err := os.Lstat(filepath.Join(l.dir, PartitionMetadataFile)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	_, ok := l.epochs.Latest()
	return !ok
}

// NewLog is what a log being created gets before the one fsync of its new
// directory makes it durable, so a creation costs that fsync and one per
// file instead of a file-and-directory fsync pair per file on top of it
// (Manager.GetOrCreateWith). It is ignored for a log that exists.
type NewLog struct {
	// TopicID is written as partition.metadata.
	TopicID TopicID
	// LeaderEpoch, when >= 0, starts the leader epoch cache at offset 0:
	// the epoch of a broker that will lead the new log.
	LeaderEpoch int32
}

// Truncation is one cut made by recovery.
type Truncation struct {
	File     string // the segment file
	Position int64  // where it was cut
	Bytes    int64  // bytes removed
	Reason   string // the first problem found there
}

// RecoveryReport says what opening a log found and changed. Storage does not
// log; the caller logs the report.
type RecoveryReport struct {
	Dir string
	// Clean: opened after a clean shutdown, nothing rescanned.
	Clean bool
	// Recovered lists the segment files rescanned and validated.
	Recovered []string
	// Truncations lists each cut at a torn or corrupt batch.
	Truncations []Truncation
	// DeletedSegments lists segment files removed because they followed a
	// truncation, or index files without a segment.
	DeletedSegments []string
	// RebuiltIndexes lists index files found corrupt or missing and rebuilt.
	RebuiltIndexes []string
	// StrayFiles lists .tmp, .cleaned, .deleted and .swap files handled.
	StrayFiles []string
	// Reset is set when the log was emptied because the checkpointed log
	// start offset lay beyond what survived.
	Reset bool
	// LogStartOffset and LogEndOffset after opening.
	LogStartOffset, LogEndOffset int64
	// ProducerSnapshot is the producer snapshot file the idempotence state
	// was loaded from, empty if it was rebuilt from the first segment;
	// ProducerReplayFrom is the offset from which batch headers were then
	// replayed (the log end offset when nothing was).
	ProducerSnapshot   string
	ProducerReplayFrom int64
	// CorruptSnapshots lists producer snapshot files that failed to parse
	// and were deleted (the state came from an earlier one or the log).
	CorruptSnapshots []string
}

// LostData reports whether recovery removed any batches.
func (r *RecoveryReport) LostData() bool { return len(r.Truncations) > 0 || r.Reset }

// ParsePartitionDir splits a partition directory name "<topic>-<partition>".
func ParsePartitionDir(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || name[i+1] == '+' {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// OpenLog opens (creating if needed) the partition log in dir, whose name
// must be "<topic>-<partition>". After an unclean stop it validates every
// batch from the recovery point on, truncates at the first torn or corrupt
// one and rebuilds the indexes; a corrupt or missing index is always
// rebuilt. Errors that leave the log unusable name the file.
func OpenLog(dir string, cfg Config, opts LogOptions) (*Log, *RecoveryReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	tp, ok := ParsePartitionDir(filepath.Base(dir))
	if !ok {
		tp, ok = futureLogOf(filepath.Base(dir)) // a log being moved in (move.go)
	}
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s: directory name is not <topic>-<partition>", ErrCorruptFile, dir)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	if opts.ProducerIDExpirationMs == 0 {
		opts.ProducerIDExpirationMs = DefaultProducerIDExpirationMs
	}
	if opts.ProducerIDExpirationMs < 0 {
		return nil, nil, fmt.Errorf("%w: producer.id.expiration.ms=%d", ErrInvalidConfig, opts.ProducerIDExpirationMs)
	}
	if opts.FollowerDropBehind < 0 {
		return nil, nil, fmt.Errorf("%w: follower drop-behind of %d bytes", ErrInvalidConfig, opts.FollowerDropBehind)
	}
	l := &Log{dir: dir, tp: tp, now: opts.Now, producers: producerStates{}, producerTTLMs: opts.ProducerIDExpirationMs, followerDropBehind: opts.FollowerDropBehind, onFlush: opts.OnFlush, activity: opts.activity, flusher: opts.flusher, onIOError: opts.onIOError, syncData: opts.SyncData, txnReplayFrom: math.MaxInt64}
	if l.syncData == nil {
		l.syncData = func(f *os.File) error { return fsyncFile(f) }
	}
	l.firstUnstable.Store(noUnstable)
	l.cfg.Store(&cfg)
	l.dirSynced.Store(true)
	rep := &RecoveryReport{Dir: dir, Clean: opts.CleanShutdown}
	epochs, err := OpenLeaderEpochCache(filepath.Join(dir, LeaderEpochCheckpointFile))
	if err != nil {
		return nil, nil, err
	}
	l.epochs = epochs
	err = l.load(&cfg, opts, rep)
	if err == nil {
		// After a clean stop Close left a snapshot at the log end. After
		// an unclean one only what lies below the recovery point is known
		// to have been durable, so snapshots above it are passed over and
		// the (just validated) batch headers replayed instead.
		maxSnap := l.nextOffset
		if !opts.CleanShutdown {
			maxSnap = min(maxSnap, opts.RecoveryPoint)
		}
		maxSnap = min(maxSnap, l.txnReplayFrom)
		err = l.rebuildProducersLocked(maxSnap, rep)
	}
	if err != nil {
		for _, s := range l.segments {
			s.close()
		}
		return nil, nil, err
	}
	rep.LogStartOffset, rep.LogEndOffset = l.logStart.Load(), l.leo.Load()
	l.lastFlush.Store(opts.Now().UnixMilli())
	// In durable mode what recovery found past the recovery point (a
	// process kill leaves it in the page cache) counts once it is fsynced.
	l.MakeDurable()
	return l, rep, nil
}

// load builds the segment list and offsets from the directory.
func (l *Log) load(cfg *Config, opts LogOptions, rep *RecoveryReport) error {
	bases, swapped, err := l.cleanDir(rep)
	if err != nil {
		return err
	}
	l.firstDirty.Store(max(opts.CleanerCheckpoint, 0))
	// Segments from the one holding the recovery point are rescanned after
	// an unclean stop; the rest are trusted if their indexes pass checks.
	recoverFrom := len(bases)
	if !opts.CleanShutdown {
		recoverFrom = 0
		for i, base := range bases {
			if base <= opts.RecoveryPoint {
				recoverFrom = i
			}
		}
	}
	for i, base := range bases {
		s, idxErr, err := openSegmentFiles(l.dir, base, cfg, i >= recoverFrom)
		if err != nil {
			return fmt.Errorf("open segment %s: %w", filepath.Join(l.dir, segmentName(base)+logSuffix), err)
		}
		l.segments = append(l.segments, s)
		if s.txnIdxErr != nil {
			// Rebuilt by the producer replay, which must then start at
			// or below this segment.
			rep.RebuiltIndexes = append(rep.RebuiltIndexes, s.txnIndexPath())
			l.txnReplayFrom = min(l.txnReplayFrom, base)
		}
		if idxErr != nil {
			// Mark the indexes untrusted by emptying them; the check below
			// then recovers the segment.
			rep.RebuiltIndexes = append(rep.RebuiltIndexes, s.indexPath())
			_ = s.offIdx.reset()
			_ = s.timeIdx.reset()
			s.nextOffset = -1
		}
	}
	prevNext := int64(-1)
	for i := 0; i < len(l.segments); i++ {
		s := l.segments[i]
		if s.baseOffset < prevNext {
			return fmt.Errorf("%w: %s: base offset %d overlaps the previous segment, which ends at %d", ErrCorruptFile, s.logPath(), s.baseOffset, prevNext)
		}
		needs := i >= recoverFrom || s.nextOffset == -1
		if !needs {
			if err := l.trustSegment(s); err != nil {
				rep.RebuiltIndexes = append(rep.RebuiltIndexes, s.indexPath())
				needs = true
			}
		}
		if needs {
			rep.Recovered = append(rep.Recovered, s.logPath())
			sparseBelow := l.firstDirty.Load()
			if swapped[s.baseOffset] {
				sparseBelow = math.MaxInt64 // written by the cleaner
			}
			cut, reason, err := s.recover(cfg.IndexIntervalBytes, &l.scratch, sparseBelow)
			if err != nil {
				return fmt.Errorf("recover %s: %w", s.logPath(), err)
			}
			if reason != nil {
				rep.Truncations = append(rep.Truncations, Truncation{File: s.logPath(), Position: s.size.Load(), Bytes: cut, Reason: reason.Error()})
				// Nothing after a torn batch can be trusted to follow it.
				for _, later := range l.segments[i+1:] {
					rep.DeletedSegments = append(rep.DeletedSegments, later.logPath())
					later.close()
					for _, p := range []string{later.logPath(), later.indexPath(), later.timeIndexPath(), later.txnIndexPath()} {
						if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
							return err
						}
					}
				}
				l.segments = l.segments[:i+1]
				// The cut may lie below the recovery point (damage to
				// data once fsynced), which stays trusted: make it
				// durable. Rebuilt indexes need no fsync: they are
				// caches, rebuilt again after another unclean stop.
				if err := fsyncFile(s.f); err != nil {
					return fmt.Errorf("fsync %s: %w", s.logPath(), err)
				}
			}
			if i < len(l.segments)-1 {
				if err := s.onInactive(); err != nil {
					return err
				}
			}
		}
		prevNext = s.nextOffset
	}
	created := len(l.segments) == 0
	if created {
		s, err := createSegment(l.dir, max(opts.LogStartOffset, 0), cfg, l.now())
		if err != nil {
			return err
		}
		l.segments = []*segment{s}
	}
	active := l.active()
	if err := active.offIdx.preallocate(); err != nil {
		return err
	}
	if err := active.timeIdx.preallocate(); err != nil {
		return err
	}
	l.nextOffset = active.nextOffset
	l.leo.Store(l.nextOffset)
	start := max(opts.LogStartOffset, l.segments[0].baseOffset)
	if start > l.nextOffset {
		// The checkpointed start lies beyond what survived: the data below
		// it was deleted on purpose, so restart there (as Kafka does).
		rep.Reset = true
		for _, s := range l.segments {
			s.close()
			for _, p := range []string{s.logPath(), s.indexPath(), s.timeIndexPath(), s.txnIndexPath()} {
				_ = os.Remove(p)
			}
		}
		s, err := createSegment(l.dir, start, cfg, l.now())
		if err != nil {
			return err
		}
		l.segments = []*segment{s}
		l.nextOffset = start
		l.leo.Store(start)
		if err := l.epochs.Clear(); err != nil {
			return err
		}
	}
	l.logStart.Store(start)
	l.hw.Store(min(max(opts.HighWatermark, start), l.nextOffset))
	// After a clean shutdown Close fsynced everything. After an unclean
	// stop what was rescanned is valid but maybe not durable: the recovery
	// point stays where it was (as Kafka's LogLoader keeps it), so opening
	// costs no fsync and the first flush, which also fsyncs the directory
	// for segments created before the stop, covers the rest.
	rp := l.nextOffset
	if !opts.CleanShutdown && opts.RecoveryPoint < rp {
		rp = max(opts.RecoveryPoint, 0)
		l.unflushed.Store(l.nextOffset - rp)
		l.dirSynced.Store(false)
	}
	l.recoveryPoint.Store(rp)
	l.durable.Store(rp)
	if err := l.epochs.TruncateFromEnd(l.nextOffset); err != nil {
		return err
	}
	if err := l.epochs.TruncateFromStart(start); err != nil {
		return err
	}
	// Files created, removed or renamed above must stay so after a crash:
	// a removed segment that came back after a cut would be trusted.
	if created && opts.New != nil && l.fresh() {
		if err := writeFileSynced(filepath.Join(l.dir, PartitionMetadataFile), FormatPartitionMetadata(opts.New.TopicID)); err != nil {
			return err
		}
		if opts.New.LeaderEpoch >= 0 {
			if err := l.epochs.assignUnsyncedDir(opts.New.LeaderEpoch, 0); err != nil {
				return err
			}
		}
	}
	if created || rep.Reset || len(rep.DeletedSegments) > 0 || len(rep.StrayFiles) > 0 {
		return fsyncDir(l.dir)
	}
	return nil
}

// trustSegment loads a segment that needs no rescan, after checking its
// indexes are consistent with the file.
func (l *Log) trustSegment(s *segment) error {
	if err := s.offIdx.check(math.MaxInt64, s.size.Load()); err != nil {
		return err
	}
	if err := s.loadTail(); err != nil {
		return err
	}
	if err := s.offIdx.check(s.nextOffset, s.size.Load()); err != nil {
		return err
	}
	return s.timeIdx.check(max(s.nextOffset, s.baseOffset+1))
}

// cleanDir handles stray files as Kafka does and returns the segment base
// offsets present, sorted: *.tmp and *.cleaned are unfinished writes and
// go; *.deleted were already deleted and go; *.swap are finished
// replacements and are renamed into place (their indexes rebuilt), and
// the segments they replace, those whose base offset lies within the swap
// segment's offsets, go (the cleaner's crash safety: a .swap exists only
// once the cleaned segment is whole and durable). swapped holds the base
// offsets of segments that came from a .swap. Index files without a .log
// go.
func (l *Log) cleanDir(rep *RecoveryReport) (bases []int64, swapped map[int64]bool, err error) {
	bases, swapped, err = l.cleanDirFiles(rep)
	if err != nil || len(swapped) == 0 {
		return bases, swapped, err
	}
	kept := bases[:0]
	var next int64 = -1
	for _, base := range bases {
		if swapped[base] {
			if next, err = segmentFileEnd(filepath.Join(l.dir, segmentName(base)+logSuffix), base); err != nil {
				return nil, nil, err
			}
			kept = append(kept, base)
			continue
		}
		if base < next {
			for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
				p := filepath.Join(l.dir, segmentName(base)+suf)
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					return nil, nil, err
				}
			}
			rep.DeletedSegments = append(rep.DeletedSegments, filepath.Join(l.dir, segmentName(base)+logSuffix))
			continue
		}
		kept = append(kept, base)
	}
	return kept, swapped, nil
}

// segmentFileEnd returns the offset after the last whole batch of the
// segment file at path (base if it has none), reading headers only.
func segmentFileEnd(path string, base int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	s := &segment{f: f}
	next := base
	var hdr [BatchHeaderSize]byte
	for pos := int64(0); pos < st.Size(); {
		n, err := s.batchHeader(&hdr, pos, st.Size())
		if err != nil {
			break // a torn tail: recovery cuts it
		}
		next = max(next, Batch(hdr[:]).NextOffset())
		pos += n
	}
	return next, nil
}

func (l *Log) cleanDirFiles(rep *RecoveryReport) ([]int64, map[int64]bool, error) {
	swapped := map[int64]bool{}
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, nil, err
	}
	names := map[string]bool{}
	for _, e := range ents {
		if !e.IsDir() {
			names[e.Name()] = true
		}
	}
	for name := range names {
		p := filepath.Join(l.dir, name)
		switch {
		case strings.HasSuffix(name, tmpSuffix), strings.HasSuffix(name, cleanedSuffix), strings.HasSuffix(name, deletedSuffix):
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, nil, err
			}
			rep.StrayFiles = append(rep.StrayFiles, p)
			delete(names, name)
		case strings.HasSuffix(name, swapSuffix):
			target := strings.TrimSuffix(name, swapSuffix)
			if err := os.Rename(p, filepath.Join(l.dir, target)); err != nil {
				return nil, nil, err
			}
			rep.StrayFiles = append(rep.StrayFiles, p)
			delete(names, name)
			names[target] = true
			if base, ok := strings.CutSuffix(target, logSuffix); ok {
				if off, err := strconv.ParseInt(base, 10, 64); err == nil {
					swapped[off] = true
				}
				for _, suf := range []string{indexSuffix, timeIndexSuffix} {
					_ = os.Remove(filepath.Join(l.dir, base+suf))
					delete(names, base+suf)
				}
			}
		}
	}
	var bases []int64
	for name := range names {
		stem, ext, ok := strings.Cut(name, ".")
		if !ok || len(stem) != 20 || strings.Trim(stem, "0123456789") != "" {
			continue
		}
		base, err := strconv.ParseInt(stem, 10, 64)
		if err != nil {
			continue
		}
		switch "." + ext {
		case logSuffix:
			bases = append(bases, base)
		case indexSuffix, timeIndexSuffix, txnIndexSuffix:
			if !names[stem+logSuffix] {
				p := filepath.Join(l.dir, name)
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					return nil, nil, err
				}
				rep.DeletedSegments = append(rep.DeletedSegments, p)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, swapped, nil
}
