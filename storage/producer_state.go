package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MaxProducerBatches is how many of a producer's latest batches a partition
// remembers for duplicate detection. An idempotent producer keeps at most
// five requests in flight per partition
// (max.in.flight.requests.per.connection <= 5), so any retry it sends is of
// one of these.
const MaxProducerBatches = 5

// DefaultProducerIDExpirationMs is producer.id.expiration.ms: how long a
// producer's state outlives its last batch (Kafka's default, one day).
const DefaultProducerIDExpirationMs = 86400000

const snapshotSuffix = ".snapshot"

// snapshotVersion is the ProducerSnapshot file version written; version
// 1 (without the unreplicated transactions) is still read.
const snapshotVersion = 2

// ProducerBatch is one batch a producer appended: its sequence range, its
// offsets in the log and its max timestamp.
type ProducerBatch struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	Timestamp               int64
}

// ProducerState is one producer's state in one partition log, what
// DescribeProducers reports.
type ProducerState struct {
	ProducerID int64
	Epoch      int16
	// LastSequence is the last sequence of the newest batch, -1 if the
	// current epoch has written none.
	LastSequence int32
	// LastTimestamp is the max timestamp of the producer's newest batch
	// (or marker); producer.id.expiration.ms counts from it, as in Kafka.
	LastTimestamp int64
	// CoordinatorEpoch is the coordinator epoch of the producer's last
	// transaction marker, CurrentTxnFirstOffset the first offset of its
	// open transaction (-1 when none).
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64
	// Batches are the newest batches of the current epoch, oldest first,
	// at most MaxProducerBatches.
	Batches []ProducerBatch
}

// ProducerSnapshot is a partition log's producer state at an offset, as
// kept in the "<20-digit offset>.snapshot" files beside the segments. The
// state reflects every batch below EndOffset and none at or above it.
// Snapshots are written on segment roll and on Close, atomically (tmp,
// fsync, rename, directory fsync), and deleted with the segments they
// precede. A snapshot that fails to parse is deleted and the state rebuilt
// from an earlier one or from the log.
//
// The format is ours (Kafka's .snapshot keeps only each producer's last
// batch; this one keeps all five, so duplicates of any of them are still
// caught after a restart). Version 2, integers big-endian:
//
//	offset size field
//	     0    2 version                2 (or 1)
//	     2    4 crc                    CRC-32C (Castagnoli) of bytes 6..end
//	     6    8 endOffset              equal to the offset in the file name
//	    14    4 producerCount
//	    18    . producers, by increasing producerId, each:
//	              8 producerId             >= 0
//	              2 producerEpoch          >= 0
//	              4 coordinatorEpoch       >= -1
//	              8 currentTxnFirstOffset  -1 or in [0, endOffset)
//	              8 lastTimestamp
//	              1 batchCount             0..5
//	              . batches, oldest first, each 32 bytes:
//	                  4 firstSequence      >= 0
//	                  4 lastSequence       >= 0
//	                  8 firstOffset        above the previous batch's lastOffset
//	                  8 lastOffset         in [firstOffset, endOffset)
//	                  8 maxTimestamp
//	     .    4 unreplicatedCount      version 2 only
//	     .    . unreplicated transactions, by increasing lastOffset, each 25 bytes:
//	              8 producerId             >= 0
//	              8 firstOffset            >= 0
//	              8 lastOffset             the marker's, in [firstOffset, endOffset)
//	              1 aborted                0 or 1
//
// The file ends there; anything else is corruption. A version 1 file ends
// after the producers and is read as having no unreplicated transactions.
type ProducerSnapshot struct {
	// Version is the file's version (ParseProducerSnapshot); Marshal
	// writes version 2 unless it is 1 and there are no unreplicated
	// transactions.
	Version   int
	EndOffset int64
	Producers []ProducerState
	// UnreplicatedTxns are the transactions ended by markers the high
	// watermark had not passed (see lso.go), oldest marker first.
	UnreplicatedTxns []CompletedTxn
}

const (
	snapshotHeaderSize = 18
	snapshotEntrySize  = 31 // a producer without batches
	snapshotBatchSize  = 32
	snapshotCRCStart   = 6
	snapshotTxnSize    = 25
)

// Marshal renders the file. Producers are written sorted by id whatever
// their order in s.
func (s ProducerSnapshot) Marshal() []byte {
	ps := slices.Clone(s.Producers)
	sort.Slice(ps, func(i, j int) bool { return ps[i].ProducerID < ps[j].ProducerID })
	n := snapshotHeaderSize
	for _, p := range ps {
		n += snapshotEntrySize + snapshotBatchSize*len(p.Batches)
	}
	version := snapshotVersion
	if s.Version == 1 && len(s.UnreplicatedTxns) == 0 {
		version = 1
	} else {
		n += 4 + snapshotTxnSize*len(s.UnreplicatedTxns)
	}
	buf := make([]byte, snapshotHeaderSize, n)
	binary.BigEndian.PutUint16(buf[0:], uint16(version))
	binary.BigEndian.PutUint64(buf[6:], uint64(s.EndOffset))
	binary.BigEndian.PutUint32(buf[14:], uint32(len(ps)))
	for _, p := range ps {
		buf = binary.BigEndian.AppendUint64(buf, uint64(p.ProducerID))
		buf = binary.BigEndian.AppendUint16(buf, uint16(p.Epoch))
		buf = binary.BigEndian.AppendUint32(buf, uint32(p.CoordinatorEpoch))
		buf = binary.BigEndian.AppendUint64(buf, uint64(p.CurrentTxnFirstOffset))
		buf = binary.BigEndian.AppendUint64(buf, uint64(p.LastTimestamp))
		buf = append(buf, byte(len(p.Batches)))
		for _, b := range p.Batches {
			buf = binary.BigEndian.AppendUint32(buf, uint32(b.FirstSeq))
			buf = binary.BigEndian.AppendUint32(buf, uint32(b.LastSeq))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.FirstOffset))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.LastOffset))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.Timestamp))
		}
	}
	if version >= 2 {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s.UnreplicatedTxns)))
		for _, c := range s.UnreplicatedTxns {
			buf = binary.BigEndian.AppendUint64(buf, uint64(c.ProducerID))
			buf = binary.BigEndian.AppendUint64(buf, uint64(c.FirstOffset))
			buf = binary.BigEndian.AppendUint64(buf, uint64(c.LastOffset))
			aborted := byte(0)
			if c.Aborted {
				aborted = 1
			}
			buf = append(buf, aborted)
		}
	}
	binary.BigEndian.PutUint32(buf[2:], crc32.Checksum(buf[snapshotCRCStart:], castagnoli))
	return buf
}

// ParseProducerSnapshot parses a snapshot file and checks every field
// against the format above; any violation is ErrCorruptFile. What parses
// is exactly what Marshal writes back.
func ParseProducerSnapshot(data []byte) (ProducerSnapshot, error) {
	var s ProducerSnapshot
	bad := func(format string, args ...any) (ProducerSnapshot, error) {
		return ProducerSnapshot{}, fmt.Errorf("%w: producer snapshot: %s", ErrCorruptFile, fmt.Sprintf(format, args...))
	}
	if len(data) < snapshotHeaderSize {
		return bad("%d bytes, shorter than the %d-byte header", len(data), snapshotHeaderSize)
	}
	v := binary.BigEndian.Uint16(data[0:])
	if v != 1 && v != 2 {
		return bad("version %d, only 1 and 2 are known", v)
	}
	s.Version = int(v)
	if got, want := crc32.Checksum(data[snapshotCRCStart:], castagnoli), binary.BigEndian.Uint32(data[2:]); got != want {
		return bad("crc %#08x, computed %#08x", want, got)
	}
	s.EndOffset = int64(binary.BigEndian.Uint64(data[6:]))
	if s.EndOffset < 0 {
		return bad("end offset %d", s.EndOffset)
	}
	count := binary.BigEndian.Uint32(data[14:])
	rest := data[snapshotHeaderSize:]
	if uint64(count) > uint64(len(rest)/snapshotEntrySize) {
		return bad("%d producers cannot fit in %d bytes", count, len(rest))
	}
	s.Producers = make([]ProducerState, 0, count)
	for i := uint32(0); i < count; i++ {
		if len(rest) < snapshotEntrySize {
			return bad("producer %d: truncated", i)
		}
		p := ProducerState{
			ProducerID:            int64(binary.BigEndian.Uint64(rest[0:])),
			Epoch:                 int16(binary.BigEndian.Uint16(rest[8:])),
			CoordinatorEpoch:      int32(binary.BigEndian.Uint32(rest[10:])),
			CurrentTxnFirstOffset: int64(binary.BigEndian.Uint64(rest[14:])),
			LastTimestamp:         int64(binary.BigEndian.Uint64(rest[22:])),
			LastSequence:          -1,
		}
		nb := int(rest[30])
		rest = rest[snapshotEntrySize:]
		switch {
		case p.ProducerID < 0 || p.Epoch < 0 || p.CoordinatorEpoch < -1:
			return bad("producer %d: id %d, epoch %d, coordinator epoch %d", i, p.ProducerID, p.Epoch, p.CoordinatorEpoch)
		case i > 0 && p.ProducerID <= s.Producers[i-1].ProducerID:
			return bad("producer %d: id %d does not follow %d", i, p.ProducerID, s.Producers[i-1].ProducerID)
		case p.CurrentTxnFirstOffset < -1 || p.CurrentTxnFirstOffset >= s.EndOffset:
			return bad("producer %d: transaction first offset %d outside the snapshot's range", p.ProducerID, p.CurrentTxnFirstOffset)
		case nb > MaxProducerBatches:
			return bad("producer %d: %d batches, at most %d are kept", p.ProducerID, nb, MaxProducerBatches)
		case len(rest) < nb*snapshotBatchSize:
			return bad("producer %d: truncated batches", p.ProducerID)
		}
		if nb > 0 {
			p.Batches = make([]ProducerBatch, nb)
		}
		for k := range p.Batches {
			b := ProducerBatch{
				FirstSeq:    int32(binary.BigEndian.Uint32(rest[0:])),
				LastSeq:     int32(binary.BigEndian.Uint32(rest[4:])),
				FirstOffset: int64(binary.BigEndian.Uint64(rest[8:])),
				LastOffset:  int64(binary.BigEndian.Uint64(rest[16:])),
				Timestamp:   int64(binary.BigEndian.Uint64(rest[24:])),
			}
			rest = rest[snapshotBatchSize:]
			prevLast := int64(-1)
			if k > 0 {
				prevLast = p.Batches[k-1].LastOffset
			}
			if b.FirstSeq < 0 || b.LastSeq < 0 || b.FirstOffset <= prevLast || b.LastOffset < b.FirstOffset || b.LastOffset >= s.EndOffset {
				return bad("producer %d: batch %d (sequences %d..%d, offsets %d..%d) is impossible", p.ProducerID, k, b.FirstSeq, b.LastSeq, b.FirstOffset, b.LastOffset)
			}
			p.Batches[k] = b
			p.LastSequence = b.LastSeq
		}
		s.Producers = append(s.Producers, p)
	}
	if v >= 2 {
		if len(rest) < 4 {
			return bad("truncated unreplicated transaction count")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n)*snapshotTxnSize != uint64(len(rest)) {
			return bad("%d unreplicated transactions in %d bytes", n, len(rest))
		}
		if n > 0 {
			s.UnreplicatedTxns = make([]CompletedTxn, n)
		}
		prev := int64(-1)
		for i := range s.UnreplicatedTxns {
			c := CompletedTxn{
				ProducerID:  int64(binary.BigEndian.Uint64(rest[0:])),
				FirstOffset: int64(binary.BigEndian.Uint64(rest[8:])),
				LastOffset:  int64(binary.BigEndian.Uint64(rest[16:])),
				Aborted:     rest[24] == 1,
			}
			if c.ProducerID < 0 || c.FirstOffset < 0 || c.LastOffset < c.FirstOffset || c.LastOffset <= prev || c.LastOffset >= s.EndOffset || rest[24] > 1 {
				return bad("unreplicated transaction %d (producer %d, offsets %d..%d) is impossible", i, c.ProducerID, c.FirstOffset, c.LastOffset)
			}
			s.UnreplicatedTxns[i] = c
			prev = c.LastOffset
			rest = rest[snapshotTxnSize:]
		}
	}
	if len(rest) != 0 {
		return bad("%d bytes after the last entry", len(rest))
	}
	return s, nil
}

// producerEntry is the writer's copy of one producer's state; batches is
// a fixed array so an append from a known producer allocates nothing.
type producerEntry struct {
	epoch            int16
	coordinatorEpoch int32
	txnFirstOffset   int64
	lastTimestamp    int64
	n                int // batches held, oldest first
	batches          [MaxProducerBatches]ProducerBatch
}

func (e *producerEntry) lastSeq() int32 {
	if e.n == 0 {
		return -1
	}
	return e.batches[e.n-1].LastSeq
}

func (e *producerEntry) state(id int64) ProducerState {
	p := ProducerState{
		ProducerID:            id,
		Epoch:                 e.epoch,
		LastSequence:          e.lastSeq(),
		LastTimestamp:         e.lastTimestamp,
		CoordinatorEpoch:      e.coordinatorEpoch,
		CurrentTxnFirstOffset: e.txnFirstOffset,
	}
	if e.n > 0 {
		p.Batches = slices.Clone(e.batches[:e.n])
	}
	return p
}

func entryFromState(p ProducerState) *producerEntry {
	e := &producerEntry{epoch: p.Epoch, coordinatorEpoch: p.CoordinatorEpoch, txnFirstOffset: p.CurrentTxnFirstOffset, lastTimestamp: p.LastTimestamp}
	e.n = copy(e.batches[:], p.Batches)
	return e
}

// producerStates is a partition's producer table: the pure sequence and
// epoch rules, with no I/O. The log's writer owns it (under Log.mu).
type producerStates map[int64]*producerEntry

// inSequence: next follows last, wrapping from MaxInt32 to 0.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || next == 0 && last == math.MaxInt32
}

// check applies Kafka's rules for a batch a producer sends (to a leader)
// with producer id pid >= 0. It returns the cached batch if this one is a
// retry of it (same epoch and sequence range as one of the last
// MaxProducerBatches), else an error if the batch may not be appended.
// An unknown producer may start at any sequence: since KIP-360 Kafka
// accepts it, because the state may have gone with retention or expiry
// while the producer lived on.
func (ps producerStates) check(pid int64, epoch int16, firstSeq, lastSeq int32) (dup ProducerBatch, isDup bool, err error) {
	e := ps[pid]
	if e == nil {
		return dup, false, nil
	}
	if epoch == e.epoch {
		for _, b := range e.batches[:e.n] {
			if b.FirstSeq == firstSeq && b.LastSeq == lastSeq {
				return b, true, nil
			}
		}
	}
	switch {
	case epoch < e.epoch:
		return dup, false, fmt.Errorf("%w: producer %d epoch %d is older than the partition's %d", ErrInvalidProducerEpoch, pid, epoch, e.epoch)
	case epoch > e.epoch:
		if firstSeq != 0 {
			return dup, false, fmt.Errorf("%w: producer %d starts epoch %d at sequence %d, not 0", ErrOutOfOrderSequence, pid, epoch, firstSeq)
		}
	case !inSequence(e.lastSeq(), firstSeq):
		return dup, false, fmt.Errorf("%w: producer %d epoch %d sent sequence %d after %d", ErrOutOfOrderSequence, pid, epoch, firstSeq, e.lastSeq())
	}
	return dup, false, nil
}

// apply records a batch that is in the log: a leader's validated append, a
// follower's replicated one, or one replayed at open or after truncation.
// It never refuses: the log is the truth (a replica applies what its
// leader wrote even with an older epoch, as Kafka's followers do). Only the
// header is read, so replay never decompresses.
//
// A transaction marker (given whole: a control batch's header alone is
// not enough, see Log.replayProducersLocked) ends the producer's open
// transaction, if any, which it returns; other control batches end
// nothing.
func (ps producerStates) apply(b Batch) (ended CompletedTxn, ok bool) {
	pid := b.ProducerID()
	if pid < 0 {
		return ended, false
	}
	e := ps[pid]
	if e == nil {
		e = &producerEntry{epoch: -1, coordinatorEpoch: -1, txnFirstOffset: -1}
		ps[pid] = e
	}
	if epoch := b.ProducerEpoch(); epoch != e.epoch {
		e.epoch, e.n = epoch, 0
	}
	e.lastTimestamp = b.MaxTimestamp()
	if b.Control() {
		// The log is the truth: a marker that does not parse (which
		// Append never writes) is stored, and ends nothing.
		m, isMarker, _ := b.TxnMarker()
		if !isMarker {
			return ended, false
		}
		if e.txnFirstOffset >= 0 {
			ended = CompletedTxn{ProducerID: pid, FirstOffset: e.txnFirstOffset, LastOffset: b.LastOffset(), Aborted: m.Type == ControlAbort}
			ok = true
		}
		e.txnFirstOffset = -1
		e.coordinatorEpoch = m.CoordinatorEpoch
		return ended, ok
	}
	if e.n == MaxProducerBatches {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = ProducerBatch{
		FirstSeq:    b.BaseSequence(),
		LastSeq:     b.LastSequence(),
		FirstOffset: b.BaseOffset(),
		LastOffset:  b.LastOffset(),
		Timestamp:   b.MaxTimestamp(),
	}
	e.n++
	if b.Transactional() && e.txnFirstOffset < 0 {
		e.txnFirstOffset = b.BaseOffset()
	}
	return ended, false
}

// producerLast is what the cleaner keeps of a producer: the batch ending
// at lastData (-1: it has no data batch in its current epoch, and its
// markers of epoch stay).
type producerLast struct {
	lastData int64
	epoch    int16
}

// lastOffsets maps each producer to the last offset of its last data
// batch and its epoch, which the cleaner keeps.
func (ps producerStates) lastOffsets() map[int64]producerLast {
	out := make(map[int64]producerLast, len(ps))
	for pid, e := range ps {
		p := producerLast{lastData: -1, epoch: e.epoch}
		if e.n > 0 {
			p.lastData = e.batches[e.n-1].LastOffset
		}
		out[pid] = p
	}
	return out
}

// expire removes producers idle for at least ttlMs (by their last batch's
// timestamp) with no open transaction, as Kafka's
// producer.id.expiration.ms does, and returns how many went.
func (ps producerStates) expire(nowMs, ttlMs int64) int {
	n := 0
	for id, e := range ps {
		if e.txnFirstOffset < 0 && nowMs-e.lastTimestamp >= ttlMs {
			delete(ps, id)
			n++
		}
	}
	return n
}

func (ps producerStates) snapshot(end int64) ProducerSnapshot {
	s := ProducerSnapshot{EndOffset: end, Producers: make([]ProducerState, 0, len(ps))}
	for id, e := range ps {
		s.Producers = append(s.Producers, e.state(id))
	}
	sort.Slice(s.Producers, func(i, j int) bool { return s.Producers[i].ProducerID < s.Producers[j].ProducerID })
	return s
}

// snapshotPath names the snapshot file for offset, as segments are named.
func snapshotPath(dir string, offset int64) string {
	return filepath.Join(dir, segmentName(offset)+snapshotSuffix)
}

// snapshotOffsets lists the offsets of the snapshot files in dir, sorted.
func snapshotOffsets(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name(), snapshotSuffix)
		if !ok || e.IsDir() || len(stem) != 20 || strings.Trim(stem, "0123456789") != "" {
			continue
		}
		if off, err := strconv.ParseInt(stem, 10, 64); err == nil {
			out = append(out, off)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Producers returns the state of every producer the partition knows,
// sorted by producer id (DescribeProducers). Safe to call from any
// goroutine; it waits for the writer.
func (l *Log) Producers() []ProducerState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.producers.snapshot(l.nextOffset).Producers
}

// InTransaction reports whether the producer has an open transaction in
// this partition at epoch: the leader then needs no verification of its
// next transactional batch with the coordinator (KIP-890), as Kafka skips
// it for a producer whose currentTxnFirstOffset is set. Safe to call from
// any goroutine.
func (l *Log) InTransaction(producerID int64, epoch int16) bool {
	ok, _ := l.TxnGuard(producerID, epoch)
	return ok
}

// TxnGuard reports whether the producer has a transaction open at epoch
// in this log (InTransaction) and, for AppendOptions.TxnGuard, how many
// markers this log has appended as leader for the producer so far.
func (l *Log) TxnGuard(producerID int64, epoch int16) (open bool, guard uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.producers[producerID]
	return e != nil && e.epoch == epoch && e.txnFirstOffset >= 0, l.txnMarkers[producerID]
}

// ExpireProducers drops producers whose last batch is
// producer.id.expiration.ms or more older than now and that have no open
// transaction; it returns how many went. The Manager's Tick calls it every
// producer.id.expiration.check.interval.ms.
func (l *Log) ExpireProducers(now time.Time) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	n := l.producers.expire(now.UnixMilli(), l.producerTTLMs)
	for pid := range l.txnMarkers {
		if l.producers[pid] == nil {
			delete(l.txnMarkers, pid) // no transaction of it can be open or verified
		}
	}
	return n, nil
}

// checkProducerLocked validates a leader's batch against the producer
// state before offsets are assigned; see producerStates.check.
func (l *Log) checkProducerLocked(b Batch) (ProducerBatch, bool, error) {
	pid := b.ProducerID()
	if pid < 0 {
		return ProducerBatch{}, false, nil
	}
	return l.producers.check(pid, b.ProducerEpoch(), b.BaseSequence(), b.LastSequence())
}

// writeProducerSnapshotLocked writes the state as of the log end offset.
func (l *Log) writeProducerSnapshotLocked() error {
	s := l.producers.snapshot(l.nextOffset)
	s.UnreplicatedTxns = l.unreplicated
	data := s.Marshal()
	if err := WriteFileAtomic(snapshotPath(l.dir, l.nextOffset), data); err != nil {
		return fmt.Errorf("write producer snapshot: %w", err)
	}
	return nil
}

// deleteSnapshotsLocked removes snapshot files whose offset is below lo or
// above hi. A removal past the end is made durable: a stale snapshot that
// came back after a crash would describe batches no longer in the log.
func (l *Log) deleteSnapshotsLocked(lo, hi int64) error {
	offs, err := snapshotOffsets(l.dir)
	if err != nil {
		return err
	}
	var errs []error
	pastEnd := false
	for _, off := range offs {
		if off >= lo && off <= hi {
			continue
		}
		if err := os.Remove(snapshotPath(l.dir, off)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		pastEnd = pastEnd || off > hi
	}
	if pastEnd {
		errs = append(errs, fsyncDir(l.dir))
	}
	return errors.Join(errs...)
}

// rebuildProducersLocked rebuilds the producer table from the newest
// readable snapshot at or below maxSnap (deleting corrupt ones) and the
// batch headers after it, up to the log end offset. Snapshots outside
// [first segment base, log end offset] are deleted first: below, their
// batches are gone and could not be replayed; above, they describe
// batches no longer in the log. rep may be nil.
func (l *Log) rebuildProducersLocked(maxSnap int64, rep *RecoveryReport) error {
	first := l.segments[0].baseOffset
	if err := l.deleteSnapshotsLocked(first, l.nextOffset); err != nil {
		return err
	}
	offs, err := snapshotOffsets(l.dir)
	if err != nil {
		return err
	}
	clear(l.producers)
	l.resetTxnsLocked()
	from := first
	for i := len(offs) - 1; i >= 0; i-- {
		off := offs[i]
		if off > maxSnap {
			continue
		}
		p := snapshotPath(l.dir, off)
		data, err := os.ReadFile(p)
		var s ProducerSnapshot
		if err == nil {
			s, err = ParseProducerSnapshot(data)
		}
		if err == nil && s.EndOffset != off {
			err = fmt.Errorf("%w: producer snapshot for offset %d names %d", ErrCorruptFile, off, s.EndOffset)
		}
		if err != nil {
			if rep != nil {
				rep.CorruptSnapshots = append(rep.CorruptSnapshots, p)
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			continue
		}
		for _, ps := range s.Producers {
			l.producers[ps.ProducerID] = entryFromState(ps)
		}
		l.unreplicated = slices.Clone(s.UnreplicatedTxns)
		from = off
		if rep != nil {
			rep.ProducerSnapshot = p
		}
		break
	}
	if rep != nil {
		rep.ProducerReplayFrom = from
	}
	// The replay writes the aborted-transaction entries of the markers it
	// meets again; those below from are trusted (durable below the
	// recovery point, which bounds the snapshot chosen).
	if err := l.truncateTxnIndexesLocked(from); err != nil {
		return err
	}
	if err := l.replayProducersLocked(from); err != nil {
		return err
	}
	l.producers.expire(l.now().UnixMilli(), l.producerTTLMs)
	l.refreshFirstUnstableLocked()
	return nil
}

// replayProducersLocked applies the headers of every batch from offset
// from to the log end offset, and the whole of every control batch (a
// marker's type is in its record).
func (l *Log) replayProducersLocked(from int64) error {
	if from >= l.nextOffset {
		return nil
	}
	// Not l.scratch: replays are rare and a log should not keep the
	// window for its lifetime (a broker holds thousands of logs).
	buf := make([]byte, headerWindow)
	for i := l.segmentFor(from); i < len(l.segments); i++ {
		s := l.segments[i]
		end := s.size.Load()
		var pos int64
		if s.baseOffset < from {
			var err error
			if pos, _, err = s.translate(from, end); err != nil {
				return err
			}
		}
		var applyErr error
		at := pos
		if err := s.forEachHeader(pos, end, buf, func(b Batch) {
			n, _ := BatchSize(b) // checked by forEachHeader
			batchPos := at
			at += int64(n)
			if b.BaseOffset() < from || applyErr != nil {
				return
			}
			if b.Control() {
				whole := make(Batch, n)
				if _, err := s.f.ReadAt(whole, batchPos); err != nil {
					applyErr = fmt.Errorf("%s at position %d: %w", s.logPath(), batchPos, err)
					return
				}
				b = whole
			}
			applyErr = l.applyBatchLocked(b, s)
		}); err != nil {
			return err
		}
		if applyErr != nil {
			return applyErr
		}
	}
	return nil
}

// headerWindow is how much of a segment forEachHeader reads at a time:
// many small batches' headers per read, one read per large batch.
const headerWindow = 64 << 10

// forEachHeader calls fn with the header of every batch from pos to end,
// reading the file in windows of len(buf) (at least BatchHeaderSize) and
// never the records of a batch larger than the window. The Batch passed
// to fn holds only the header and is valid only during the call.
func (s *segment) forEachHeader(pos, end int64, buf []byte, fn func(Batch)) error {
	win := buf[:0]
	winPos := int64(0)
	for pos < end {
		if pos < winPos || pos+BatchHeaderSize > winPos+int64(len(win)) {
			n := min(int64(len(buf)), end-pos)
			if n < BatchHeaderSize {
				return fmt.Errorf("%w: %s at position %d: torn batch header", ErrCorruptFile, s.logPath(), pos)
			}
			win = buf[:n]
			if _, err := s.f.ReadAt(win, pos); err != nil {
				return fmt.Errorf("%s at position %d: %w", s.logPath(), pos, err)
			}
			winPos = pos
		}
		hdr := Batch(win[pos-winPos : pos-winPos+BatchHeaderSize])
		n, err := BatchSize(hdr)
		if err != nil || pos+int64(n) > end {
			return fmt.Errorf("%w: %s at position %d: bad batch length", ErrCorruptFile, s.logPath(), pos)
		}
		fn(hdr)
		pos += int64(n)
	}
	return nil
}
