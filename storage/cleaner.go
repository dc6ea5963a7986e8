package storage

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// CleanStats says what one clean of a log did.
type CleanStats struct {
	FirstDirty, End int64 // the dirty range the key map covered
	SegmentsRead    int   // segments of the cleaned range
	SegmentsWritten int   // new segments swapped in
	BytesRead       int64 // dirty bytes read to build the map, and cleaned bytes read
	DirtyBytes      int64 // bytes of the dirty range
	BytesWritten    int64
	BatchesRead     int64
	RecordsRead     int64
	RecordsKept     int64
}

// ErrCleanerBufferTooSmall is returned when the key map cannot hold the
// keys of even one dirty segment (log.cleaner.dedupe.buffer.size).
var ErrCleanerBufferTooSmall = errors.New("log.cleaner.dedupe.buffer.size too small for one segment")

// errCleanAborted: the log changed under the clean (truncated, segments
// deleted, closed); nothing was swapped in and the next round starts over.
var errCleanAborted = errors.New("clean aborted: the log changed")

// cleanerHook, when set (by the crash test), is called at each step of a
// segment swap, so a test can kill the process exactly there.
var cleanerHook func(step string)

func hook(step string) {
	if cleanerHook != nil {
		cleanerHook(step)
	}
}

// cleanerInput reads the log's state for planning. Called with mu held.
func (l *Log) cleanerInputLocked() (cleanInput, []*segment) {
	l.segMu.RLock()
	segs := slices.Clone(l.segments)
	l.segMu.RUnlock()
	stats := make([]segmentStat, len(segs))
	for i, s := range segs {
		stats[i] = segmentStat{Base: s.baseOffset, Next: s.nextOffset, Bytes: s.size.Load(), FirstTs: s.firstTs, MaxTs: s.largestTimestamp()}
	}
	return cleanInput{
		Segments:         stats,
		LogStart:         l.logStart.Load(),
		FirstDirty:       l.firstDirty.Load(),
		StableEnd:        min(l.LastStableOffset(), l.recoveryPoint.Load()),
		TombstoneHorizon: l.tombstoneHorizon.Load(),
		Config:           *l.cfg.Load(),
	}, segs
}

// cleanPlan reports whether the log is due for a clean at now, and its
// dirty ratio (the cleaner picks the dirtiest log first).
func (l *Log) cleanPlan(now time.Time) (cleanPlan, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return cleanPlan{}, ErrClosed
	}
	in, _ := l.cleanerInputLocked()
	// Clean makes the range durable before it plans again.
	in.StableEnd = l.LastStableOffset()
	return planClean(in, now.UnixMilli()), nil
}

// FirstDirtyOffset is the cleaner checkpoint: the log below it has been
// compacted.
func (l *Log) FirstDirtyOffset() int64 { return l.firstDirty.Load() }

// CleanOptions are a clean's resources.
type CleanOptions struct {
	// DedupeBufferBytes bounds the key map (one thread's share of
	// log.cleaner.dedupe.buffer.size); 128 MiB if zero.
	DedupeBufferBytes int64
	// Throttle limits the bytes read and written per second
	// (log.cleaner.io.max.bytes.per.second); nil: no limit.
	Throttle *Throttle
	// Checkpoint, if set, makes the log's cleaner checkpoint durable
	// (the Manager writes cleaner-offset-checkpoint); Clean calls it
	// before it swaps in the first cleaned segment.
	Checkpoint func() error
	// Abort, when closed, makes a clean in progress give up
	// (errCleanAborted, nothing swapped in from then on), so a shutdown
	// does not wait for a long clean.
	Abort <-chan struct{}
	// offsetMap is reused between cleans by a cleaner thread.
	offsetMap *offsetMap
}

// Clean compacts the log if it is due at now (see planClean): it builds
// the map from each key to its last offset over the dirty segments, then
// rewrites every segment below the end of that range keeping, per key, the
// record the map names (and later ones), with offsets unchanged. Segments
// are grouped into new ones of at most segment.bytes. Each new segment is
// written as .cleaned, renamed .swap, the old ones renamed .deleted, and
// the .swap renamed into place; OpenLog finishes or discards a swap a
// crash interrupted (see cleanDir). ok is false if the log was not due.
//
// Clean runs beside appends and readers: it holds the writer lock only to
// read the log's state and to swap each group, and gives up
// (errCleanAborted, nothing changed) if the log was truncated or lost
// segments meanwhile.
func (l *Log) Clean(now time.Time, opts CleanOptions) (CleanStats, bool, error) {
	var st CleanStats
	cfg := l.cfg.Load()
	if !cfg.CleanupPolicy.Compacts() {
		return st, false, nil
	}
	// What a clean derives from must be durable first: a record dropped
	// for a newer one must not outlive that newer one in a crash.
	if err := l.syncBelowActive(); err != nil {
		return st, false, err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return st, false, ErrClosed
	}
	in, segs := l.cleanerInputLocked()
	gen := l.truncations.Load()
	lastOf := l.producers.lastOffsets()
	l.mu.Unlock()
	plan := planClean(in, now.UnixMilli())
	if !plan.Eligible {
		return st, false, nil
	}
	m := opts.offsetMap
	if m == nil {
		size := opts.DedupeBufferBytes
		if size <= 0 {
			size = 128 << 20
		}
		m = newOffsetMap(size)
	}
	m.clear(plan.FirstDirty)
	cio := &cleanIO{th: opts.Throttle, abort: opts.Abort, st: &st}
	// Records of aborted transactions never enter the map: a key's
	// latest value is its latest committed one.
	aborted, err := l.AbortedTransactions(plan.FirstDirty, plan.End)
	if err != nil {
		return st, false, l.abortedIf(gen, err)
	}
	end, err := l.buildOffsetMap(m, segs, plan, newCleanTxns(aborted), cio)
	if err != nil {
		return st, false, l.abortedIf(gen, err)
	}
	st.FirstDirty, st.End = plan.FirstDirty, segs[end].baseOffset
	// The checkpoint moves before any segment is swapped in: recovery
	// accepts gaps only below it, and a cleaned segment has them. Should
	// the clean not finish, the range counts as clean all the same, which
	// costs deduplication within it, never a record (a record only goes
	// for a newer one of its key).
	l.mu.Lock()
	if l.closed || l.truncations.Load() != gen {
		l.mu.Unlock()
		return st, false, errCleanAborted
	}
	if st.End > l.firstDirty.Load() {
		l.firstDirty.Store(st.End)
	}
	l.mu.Unlock()
	if opts.Checkpoint != nil {
		if err := opts.Checkpoint(); err != nil {
			return st, false, err
		}
	}
	// One pass over the whole cleaned range follows its transactions, so
	// a marker goes only once no batch of its transaction is left before
	// it anywhere in the log (the range starts at the log start). Read
	// before the first swap, which drops entries.
	if aborted, err = l.AbortedTransactions(segs[0].baseOffset, st.End); err != nil {
		return st, true, l.abortedIf(gen, err)
	}
	f := &batchFilter{m: m, nowMs: now.UnixMilli(), deleteRetentionMs: in.Config.DeleteRetentionMs, lastOfProducer: lastOf,
		txns: newCleanTxns(aborted), horizon: math.MaxInt64}
	for _, g := range groupSegments(segs[:end], &in.Config) {
		if err := l.cleanGroup(g, f, gen, now, cio); err != nil {
			return st, true, l.abortedIf(gen, err)
		}
	}
	st.BatchesRead, st.RecordsRead, st.RecordsKept = f.stats.BatchesRead, f.stats.RecordsRead, f.stats.RecordsKept
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.truncations.Load() != gen {
		return st, true, errCleanAborted
	}
	l.tombstoneHorizon.Store(f.horizon)
	return st, true, nil
}

// abortedIf turns an error met while the log changed under the clean
// (files cut or removed) into errCleanAborted.
func (l *Log) abortedIf(gen int64, err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.truncations.Load() != gen {
		return errCleanAborted
	}
	return err
}

// syncBelowActive fsyncs the log if its recovery point is below the
// active segment.
func (l *Log) syncBelowActive() error {
	l.segMu.RLock()
	base := l.segments[len(l.segments)-1].baseOffset
	l.segMu.RUnlock()
	if l.recoveryPoint.Load() >= base {
		return nil
	}
	return l.Sync()
}

// buildOffsetMap puts every key of the dirty segments into m and returns
// the index of the first segment the clean does not rewrite: the plan's
// end, or the first segment whose keys did not all fit. Keys of that
// segment already put stay: they name records that exist, above the
// cleaned range, so dropping older records for them loses nothing.
func (l *Log) buildOffsetMap(m *offsetMap, segs []*segment, plan cleanPlan, txns *cleanTxns, cio *cleanIO) (int, error) {
	var scratch []byte
	for i := plan.dirtySeg; i < plan.endSeg; i++ {
		s := segs[i]
		full := false
		err := cio.scan(s, &scratch, func(b Batch) error {
			// Markers carry no keys.
			if b.Control() {
				txns.onControl(b)
				return nil
			}
			if txns.onData(b) {
				return nil
			}
			data, err := decompressRecords(b.Compression(), b[BatchHeaderSize:])
			if err != nil {
				return err
			}
			// Only keys and offsets matter here; the rewrite that follows
			// walks (and checks) every field of every record it keeps.
			base := b.BaseOffset()
			return b.walkKeys(data, func(key []byte, offDelta int64) bool {
				if key != nil && !m.put(key, base+offDelta) {
					full = true
				}
				return !full
			})
		}, func() bool { return full })
		if err != nil {
			return 0, err
		}
		cio.st.DirtyBytes += s.size.Load()
		if full {
			if i == plan.dirtySeg {
				return 0, fmt.Errorf("%w: %s", ErrCleanerBufferTooSmall, s.logPath())
			}
			return i, nil
		}
	}
	return plan.endSeg, nil
}

// cleanIO is a clean's reading and writing: throttled, counted, and
// stopped when abort closes.
type cleanIO struct {
	th    *Throttle
	abort <-chan struct{}
	st    *CleanStats
}

func (cio *cleanIO) aborted() bool {
	select {
	case <-cio.abort:
		return true
	default:
		return false
	}
}

// cleanReadSize is how much of a segment the cleaner reads at a time: few
// system calls per MiB, and batches are used where they were read rather
// than copied out one by one.
const cleanReadSize = 1 << 20

// scan calls fn with each batch of s in order, until stop says so. The
// batch is valid only until fn returns.
func (cio *cleanIO) scan(s *segment, scratch *[]byte, fn func(Batch) error, stop func() bool) error {
	end := s.size.Load()
	if cap(*scratch) < cleanReadSize {
		*scratch = make([]byte, cleanReadSize)
	}
	buf := (*scratch)[:0] // the bytes read and not yet used, from file position pos
	for pos := int64(0); pos < end && !stop(); {
		if cio.aborted() {
			return errCleanAborted
		}
		n := 0
		if len(buf) >= batchOverhead {
			var err error
			if n, err = BatchSize(buf); err != nil {
				return fmt.Errorf("%s at position %d: %w", s.logPath(), pos, err)
			}
			if int64(n) > end-pos {
				return fmt.Errorf("%s at position %d: %w: batch of %d bytes but %d left in the file", s.logPath(), pos, ErrCorruptBatch, n, end-pos)
			}
		}
		if n == 0 || len(buf) < n {
			// Move what is left to the front (growing the buffer for a
			// batch larger than it) and read on.
			want := max(n, batchOverhead)
			if cap(*scratch) < want {
				*scratch = make([]byte, want)
			}
			buf = (*scratch)[:copy((*scratch)[:cap(*scratch)], buf)]
			at := pos + int64(len(buf))
			room := (*scratch)[len(buf):min(int64(cap(*scratch)), int64(len(buf))+end-at)]
			if len(room) == 0 {
				return fmt.Errorf("%s at position %d: %w: torn batch", s.logPath(), pos, ErrCorruptBatch)
			}
			r, err := s.f.ReadAt(room, at)
			if r < len(room) {
				return fmt.Errorf("%s at position %d: %w: torn batch: %v", s.logPath(), pos, ErrCorruptBatch, err)
			}
			buf = buf[:len(buf)+r]
			continue
		}
		b := Batch(buf[:n:n])
		buf = buf[n:]
		cio.th.wait(int64(len(b)))
		cio.st.BytesRead += int64(len(b))
		if err := fn(b); err != nil {
			return fmt.Errorf("%s at position %d: %w", s.logPath(), pos, err)
		}
		pos += int64(len(b))
	}
	return nil
}

// groupSegments splits the cleaned range into runs that each fit one new
// segment: at most segment.bytes (the old sizes bound the new), offsets
// within a segment's 32-bit relative range, and index entries within
// segment.index.bytes.
func groupSegments(segs []*segment, cfg *Config) [][]*segment {
	var groups [][]*segment
	maxEntries := cfg.SegmentIndexBytes / timeEntrySize
	for i := 0; i < len(segs); {
		j, size := i+1, segs[i].size.Load()
		for j < len(segs) {
			next := size + segs[j].size.Load()
			entries := next/max(cfg.IndexIntervalBytes, 1) + 1
			if next > cfg.SegmentBytes || segs[j].nextOffset-1-segs[i].baseOffset > math.MaxUint32 || entries > maxEntries {
				break
			}
			size = next
			j++
		}
		groups = append(groups, segs[i:j])
		i = j
	}
	return groups
}

// cleanGroup writes the cleaned form of a group of segments and swaps it
// in, unless nothing in it changes.
func (l *Log) cleanGroup(g []*segment, f *batchFilter, gen int64, now time.Time, cio *cleanIO) error {
	cfg := l.cfg.Load()
	st := cio.st
	st.SegmentsRead += len(g)
	ns, err := createSegmentAs(l.dir, g[0].baseOffset, cleanedSuffix, cfg, now)
	if err != nil {
		return err
	}
	ns.created = g[0].created
	changed := false
	var scratch []byte
	f.txns.index = f.txns.index[:0]
	for _, s := range g {
		err := cio.scan(s, &scratch, func(b Batch) error {
			nb, err := f.filter(b)
			if err != nil {
				return err
			}
			if nb == nil || &nb[0] != &b[0] {
				changed = true
			}
			if nb == nil {
				return nil
			}
			var info BatchInfo
			if f.infoOK {
				info, err = nb.validate(fromCleaner, nil)
				if err == nil && f.walked {
					info = f.info
				}
			} else {
				info, err = nb.ValidateStored()
			}
			if err != nil {
				return fmt.Errorf("cleaned batch at %d: %w", nb.BaseOffset(), err)
			}
			if ns.offIdx.full() || ns.timeIdx.full() {
				return fmt.Errorf("%w: cleaned segment %s outgrew its indexes", ErrCorruptFile, ns.logPath())
			}
			if err := ns.append(nb, info, cfg.IndexIntervalBytes); err != nil {
				return err
			}
			ns.noteBatch(nb, info)
			ns.size.Add(int64(len(nb)))
			cio.th.wait(int64(len(nb)))
			hook("writing")
			return nil
		}, func() bool { return false })
		if err != nil {
			return errors.Join(err, ns.removeAs())
		}
	}
	if !changed {
		return ns.removeAs()
	}
	// The entries of the ABORT markers kept whose transactions had
	// records here (see cleanTxns), in marker order.
	for _, a := range f.txns.index {
		if err := ns.txnIdx.append(a); err != nil {
			return errors.Join(err, ns.removeAs())
		}
	}
	if err := ns.onInactive(); err != nil {
		return errors.Join(err, ns.removeAs())
	}
	if err := ns.sync(); err != nil {
		return errors.Join(err, ns.removeAs())
	}
	hook("cleaned")
	if err := l.swapIn(g, ns, gen); err != nil {
		return err
	}
	st.SegmentsWritten++
	st.BytesWritten += ns.size.Load()
	return nil
}

// swapIn replaces the group g by ns, as Kafka's replaceSegments does:
// ns's files are renamed .cleaned -> .swap (from then a crash completes
// the swap), the old files .deleted, and the .swap files into place.
func (l *Log) swapIn(g []*segment, ns *segment, gen int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := -1
	if !l.closed && l.truncations.Load() == gen {
		l.segMu.RLock()
		at = slices.Index(l.segments, g[0])
		if at < 0 || at+len(g) >= len(l.segments) || !slices.Equal(l.segments[at:at+len(g)], g) {
			at = -1
		}
		l.segMu.RUnlock()
	}
	if at < 0 {
		return errors.Join(errCleanAborted, ns.removeAs())
	}
	if err := ns.renameSuffix(swapSuffix); err != nil {
		return errors.Join(err, ns.removeAs())
	}
	if err := fsyncDir(l.dir); err != nil {
		// The .swap files may or may not be durable: leave them for
		// recovery rather than guess (either way the log reads the
		// same), but do not use them.
		return errors.Join(err, ns.close())
	}
	hook("swap")
	delAt := l.now().Add(time.Duration(l.cfg.Load().FileDeleteDelayMs) * time.Millisecond)
	for _, s := range g {
		_ = s.markDeleted() // a failed rename leaves a file recovery cleans up
		s.deleteAt = delAt
		l.pending = append(l.pending, s)
	}
	hook("deleted")
	if err := ns.renameSuffix(""); err != nil {
		return err
	}
	l.segMu.Lock()
	// A new slice: a reader may still hold the old one.
	l.segments = slices.Concat(l.segments[:at], []*segment{ns}, l.segments[at+len(g):])
	l.segMu.Unlock()
	l.dirSynced.Store(false)
	if err := fsyncDir(l.dir); err != nil {
		return err
	}
	l.dirSynced.Store(true)
	hook("swapped")
	return nil
}
