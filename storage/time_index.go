package storage

import (
	"encoding/binary"
	"fmt"
)

// timeIndex maps timestamps to offsets in one segment. The file is a
// sequence of 12-byte entries, big-endian:
//
//	timestamp      int64   the largest timestamp seen so far in the segment
//	relativeOffset uint32  offset - base offset of the batch that first had it
//
// An entry is added, at most once per index.interval.bytes, only when the
// segment's maximum timestamp has grown past the last entry, so timestamps
// strictly increase and offsets never decrease. When a segment stops being
// active a final entry records its maximum timestamp, which time-based
// retention and the max-timestamp lookup read back after a restart.
type timeIndex struct {
	*index
	baseOffset int64
}

const timeEntrySize = 12

func openTimeIndex(path string, baseOffset int64, maxBytes int, discard bool) (*timeIndex, error) {
	x, err := openIndex(path, timeEntrySize, maxBytes, discard)
	if x == nil {
		return nil, err
	}
	return &timeIndex{index: x, baseOffset: baseOffset}, err
}

func (t *timeIndex) entry(i int) (ts int64, offset int64) {
	e := t.buf[i*timeEntrySize:]
	return int64(binary.BigEndian.Uint64(e)), t.baseOffset + int64(binary.BigEndian.Uint32(e[8:]))
}

// lookupBefore returns the offset of the last entry whose timestamp is below
// ts (every batch before that offset has smaller timestamps), or the base
// offset.
func (t *timeIndex) lookupBefore(ts int64) int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	i := t.search(func(e []byte) bool { return int64(binary.BigEndian.Uint64(e)) < ts })
	if i == 0 {
		return t.baseOffset
	}
	_, off := t.entry(i - 1)
	return off
}

func (t *timeIndex) last() (ts, offset int64, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := len(t.buf) / timeEntrySize
	if n == 0 {
		return NoTimestamp, 0, false
	}
	ts, offset = t.entry(n - 1)
	return ts, offset, true
}

// maybeAdd appends (ts, offset) if ts is above the last entry's timestamp.
// force ignores fullness (the final entry when the segment rolls is
// written only if there is room; the in-memory maximum stays correct).
func (t *timeIndex) maybeAdd(ts, offset int64) error {
	if lts, loff, ok := t.last(); ok && (ts <= lts || offset < loff) {
		return nil
	}
	if t.full() {
		return nil
	}
	var e [timeEntrySize]byte
	binary.BigEndian.PutUint64(e[:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-t.baseOffset))
	return t.appendEntry(e[:])
}

// truncateTo removes entries for offsets >= offset.
func (t *timeIndex) truncateTo(offset int64) error {
	t.mu.RLock()
	rel := offset - t.baseOffset
	n := t.search(func(e []byte) bool { return int64(binary.BigEndian.Uint32(e[8:])) < rel })
	t.mu.RUnlock()
	return t.truncateEntries(n)
}

// check verifies timestamps strictly increase, offsets never decrease and
// lie within the segment.
func (t *timeIndex) check(next int64) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	prevTs, prevOff := int64(NoTimestamp)-1, t.baseOffset
	for i := 0; i < len(t.buf)/timeEntrySize; i++ {
		ts, off := t.entry(i)
		if ts <= prevTs || off < prevOff || off >= next {
			return fmt.Errorf("%w: %s: entry %d (timestamp %d, offset %d) out of order or beyond the segment", ErrCorruptFile, t.path, i, ts, off)
		}
		prevTs, prevOff = ts, off
	}
	return nil
}
