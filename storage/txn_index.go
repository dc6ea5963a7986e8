package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

const txnIndexSuffix = ".txnindex"

// AbortedTxnSize is the size of one .txnindex entry.
const AbortedTxnSize = 34

// abortedTxnVersion is the only entry version Kafka writes or reads.
const abortedTxnVersion = 0

// AbortedTxn is one aborted transaction as the aborted-transaction index
// keeps it (Kafka's AbortedTxn): the producer, the offset of its first
// record in this partition, the offset of its ABORT marker, and the last
// stable offset the partition had once the transaction ended (ignoring
// the high watermark: the first offset of the oldest transaction still
// open, or the marker's offset + 1 if none was). A reader collecting the
// transactions that overlap a range stops at the first entry whose
// LastStableOffset reaches the range's end: every transaction begun before
// it has ended by then.
//
// The .txnindex file beside a segment holds the entries of the ABORT
// markers in that segment, in offset order, each 34 bytes, big-endian:
//
//	offset size field
//	     0    2 version           0
//	     2    8 producerId        >= 0
//	    10    8 firstOffset       >= 0
//	    18    8 lastOffset        >= firstOffset, increasing from entry to entry
//	    26    8 lastStableOffset  >= 0
//
// As in Kafka the file exists only once the segment holds an ABORT marker.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// AppendTo appends the entry's 34 bytes to buf.
func (a AbortedTxn) AppendTo(buf []byte) []byte {
	buf = binary.BigEndian.AppendUint16(buf, abortedTxnVersion)
	buf = binary.BigEndian.AppendUint64(buf, uint64(a.ProducerID))
	buf = binary.BigEndian.AppendUint64(buf, uint64(a.FirstOffset))
	buf = binary.BigEndian.AppendUint64(buf, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(buf, uint64(a.LastStableOffset))
}

// parseAbortedTxn reads one entry; prevLast is the previous entry's
// lastOffset (-1 for the first).
func parseAbortedTxn(e []byte, prevLast int64) (AbortedTxn, error) {
	if v := binary.BigEndian.Uint16(e); v != abortedTxnVersion {
		return AbortedTxn{}, fmt.Errorf("version %d, only %d is known", v, abortedTxnVersion)
	}
	a := AbortedTxn{
		ProducerID:       int64(binary.BigEndian.Uint64(e[2:])),
		FirstOffset:      int64(binary.BigEndian.Uint64(e[10:])),
		LastOffset:       int64(binary.BigEndian.Uint64(e[18:])),
		LastStableOffset: int64(binary.BigEndian.Uint64(e[26:])),
	}
	if a.ProducerID < 0 || a.FirstOffset < 0 || a.LastOffset < a.FirstOffset || a.LastOffset <= prevLast || a.LastStableOffset < 0 {
		return AbortedTxn{}, fmt.Errorf("producer %d, offsets %d..%d, last stable offset %d after an entry ending at %d is impossible",
			a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset, prevLast)
	}
	return a, nil
}

// ParseTxnIndex parses a whole .txnindex file; any violation of the format
// above is ErrCorruptFile naming the entry. What parses is exactly what
// AppendTo writes back.
func ParseTxnIndex(data []byte) ([]AbortedTxn, error) {
	if len(data)%AbortedTxnSize != 0 {
		return nil, fmt.Errorf("%w: transaction index: %d bytes, not a whole number of %d-byte entries", ErrCorruptFile, len(data), AbortedTxnSize)
	}
	out := make([]AbortedTxn, 0, len(data)/AbortedTxnSize)
	prev := int64(-1)
	for pos := 0; pos < len(data); pos += AbortedTxnSize {
		a, err := parseAbortedTxn(data[pos:pos+AbortedTxnSize], prev)
		if err != nil {
			return nil, fmt.Errorf("%w: transaction index entry at position %d: %v", ErrCorruptFile, pos, err)
		}
		out = append(out, a)
		prev = a.LastOffset
	}
	return out, nil
}

// txnIndex is one segment's .txnindex. Entries are appended by the log's
// writer (under Log.mu) and published by n; readers (under Log.segMu
// shared) read the first n entries from the file. Removing entries
// (truncation) happens under Log.segMu exclusive.
type txnIndex struct {
	path string
	f    *os.File // nil while the segment holds no ABORT marker
	n    atomic.Int64
	last int64 // lastOffset of the newest entry, -1 if none; writer's
}

// openTxnIndex opens the segment's .txnindex if there is one. A file that
// does not parse, or holds a marker outside [base, ...), is emptied and
// reported in corrupt: its entries are rebuilt by replaying the segment.
func openTxnIndex(path string, base int64) (x *txnIndex, corrupt error, err error) {
	x = &txnIndex{path: path, last: -1}
	f, err := os.OpenFile(path, os.O_RDWR, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		return x, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	x.f = f
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<62))
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	entries, perr := ParseTxnIndex(data)
	if perr == nil && len(entries) > 0 && entries[0].LastOffset < base {
		perr = fmt.Errorf("%w: transaction index entry for a marker at %d, below the segment's base %d", ErrCorruptFile, entries[0].LastOffset, base)
	}
	if perr != nil {
		if err := x.truncateEntries(0); err != nil {
			f.Close()
			return nil, nil, err
		}
		return x, fmt.Errorf("%s: %w", path, perr), nil
	}
	x.n.Store(int64(len(entries)))
	if len(entries) > 0 {
		x.last = entries[len(entries)-1].LastOffset
	}
	return x, nil, nil
}

// append adds an entry, creating the file on the first one.
func (x *txnIndex) append(a AbortedTxn) error {
	if x.f == nil {
		f, err := os.OpenFile(x.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		x.f = f
	}
	var buf [AbortedTxnSize]byte
	n := x.n.Load()
	if _, err := x.f.WriteAt(a.AppendTo(buf[:0]), n*AbortedTxnSize); err != nil {
		_ = x.f.Truncate(n * AbortedTxnSize)
		return fmt.Errorf("%s: %w", x.path, err)
	}
	x.last = a.LastOffset
	x.n.Store(n + 1)
	return nil
}

// truncateEntries keeps the first n entries.
func (x *txnIndex) truncateEntries(n int64) error {
	if x.f == nil {
		return nil
	}
	if err := x.f.Truncate(n * AbortedTxnSize); err != nil {
		return fmt.Errorf("%s: %w", x.path, err)
	}
	x.n.Store(n)
	return nil
}

// truncateFrom removes the entries of markers at or after offset. Called
// by the writer with Log.segMu held exclusively.
func (x *txnIndex) truncateFrom(offset int64) error {
	if x == nil || x.f == nil || x.n.Load() == 0 || x.last < offset {
		return nil
	}
	keep := int64(0)
	x.last = -1
	err := x.scan(func(a AbortedTxn) bool {
		if a.LastOffset >= offset {
			return false
		}
		keep++
		x.last = a.LastOffset
		return true
	})
	if err != nil {
		return err
	}
	return x.truncateEntries(keep)
}

// scan calls fn with each published entry in order until it returns false.
func (x *txnIndex) scan(fn func(AbortedTxn) bool) error {
	if x == nil {
		return nil
	}
	n := x.n.Load()
	if x.f == nil || n == 0 {
		return nil
	}
	var buf [64 * AbortedTxnSize]byte
	prev := int64(-1)
	for i := int64(0); i < n; {
		k := min(n-i, 64)
		chunk := buf[:k*AbortedTxnSize]
		if _, err := x.f.ReadAt(chunk, i*AbortedTxnSize); err != nil {
			return fmt.Errorf("%s at position %d: %w", x.path, i*AbortedTxnSize, err)
		}
		for p := 0; p < len(chunk); p += AbortedTxnSize {
			a, err := parseAbortedTxn(chunk[p:p+AbortedTxnSize], prev)
			if err != nil {
				return fmt.Errorf("%w: %s at position %d: %v", ErrCorruptFile, x.path, i*AbortedTxnSize+int64(p), err)
			}
			if !fn(a) {
				return nil
			}
			prev = a.LastOffset
		}
		i += k
	}
	return nil
}

// collect appends to out the entries of transactions that may have records
// in [from, upTo): a marker at or after from and a first offset below
// upTo. complete reports that no later segment can hold more (an entry's
// LastStableOffset reached upTo).
func (x *txnIndex) collect(from, upTo int64, out []AbortedTxn) ([]AbortedTxn, bool, error) {
	complete := false
	err := x.scan(func(a AbortedTxn) bool {
		if a.LastOffset >= from && a.FirstOffset < upTo {
			out = append(out, a)
		}
		complete = a.LastStableOffset >= upTo
		return !complete
	})
	return out, complete, err
}

func (x *txnIndex) sync() error {
	if x == nil || x.f == nil {
		return nil
	}
	return fsyncFile(x.f)
}

func (x *txnIndex) close() error {
	if x == nil || x.f == nil {
		return nil
	}
	err := x.f.Close()
	x.f = nil
	return err
}

// rename moves the file (if there is one) and remembers the new path.
func (x *txnIndex) rename(to string) error {
	if x == nil {
		return nil
	}
	if x.f != nil {
		if err := os.Rename(x.path, to); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	x.path = to
	return nil
}
