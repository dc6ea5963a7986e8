package storage

import (
	"encoding/binary"
	"fmt"
)

// offsetIndex maps offsets to byte positions in one segment's .log file.
// The file is a sequence of 8-byte entries, big-endian:
//
//	relativeOffset uint32  offset - segment base offset
//	position       uint32  byte position of a batch in the .log file
//
// Entries are sparse (one per index.interval.bytes of log), strictly
// increasing in both fields, and point at the start of the batch whose last
// offset is relativeOffset. A lookup returns the greatest entry at or below
// the target, from which a short scan of batch headers finds the batch.
type offsetIndex struct {
	*index
	baseOffset int64
}

const offsetEntrySize = 8

func openOffsetIndex(path string, baseOffset int64, maxBytes int, discard bool) (*offsetIndex, error) {
	x, err := openIndex(path, offsetEntrySize, maxBytes, discard)
	if x == nil {
		return nil, err
	}
	return &offsetIndex{index: x, baseOffset: baseOffset}, err
}

func (o *offsetIndex) entry(i int) (offset int64, pos int64) {
	e := o.buf[i*offsetEntrySize:]
	return o.baseOffset + int64(binary.BigEndian.Uint32(e)), int64(binary.BigEndian.Uint32(e[4:]))
}

// lookup returns the greatest indexed (offset, position) with offset <=
// target, or (baseOffset, 0) if none.
func (o *offsetIndex) lookup(target int64) (int64, int64) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	rel := target - o.baseOffset
	i := o.search(func(e []byte) bool { return int64(binary.BigEndian.Uint32(e)) <= rel })
	if i == 0 {
		return o.baseOffset, 0
	}
	return o.entry(i - 1)
}

// lookupPosition returns the greatest indexed position <= pos and its
// offset, or (baseOffset, 0).
func (o *offsetIndex) lookupPosition(pos int64) (int64, int64) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	i := o.search(func(e []byte) bool { return int64(binary.BigEndian.Uint32(e[4:])) <= pos })
	if i == 0 {
		return o.baseOffset, 0
	}
	return o.entry(i - 1)
}

// last returns the last entry, ok false if the index is empty.
func (o *offsetIndex) last() (offset, pos int64, ok bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	n := len(o.buf) / offsetEntrySize
	if n == 0 {
		return 0, 0, false
	}
	offset, pos = o.entry(n - 1)
	return offset, pos, true
}

// add appends an entry for the batch ending at offset that starts at pos.
func (o *offsetIndex) add(offset, pos int64) error {
	var e [offsetEntrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(offset-o.baseOffset))
	binary.BigEndian.PutUint32(e[4:], uint32(pos))
	return o.appendEntry(e[:])
}

// truncateTo removes entries for offsets >= offset.
func (o *offsetIndex) truncateTo(offset int64) error {
	o.mu.RLock()
	rel := offset - o.baseOffset
	n := o.search(func(e []byte) bool { return int64(binary.BigEndian.Uint32(e)) < rel })
	o.mu.RUnlock()
	return o.truncateEntries(n)
}

// check verifies the entries are ordered and lie within the segment (next
// is the segment's next offset, size its .log size). An index that fails is
// rebuilt, never trusted.
func (o *offsetIndex) check(next, size int64) error {
	o.mu.RLock()
	defer o.mu.RUnlock()
	prevOff, prevPos := int64(-1), int64(-1)
	for i := 0; i < len(o.buf)/offsetEntrySize; i++ {
		off, pos := o.entry(i)
		if off <= prevOff || pos <= prevPos || off >= next || pos >= size {
			return fmt.Errorf("%w: %s: entry %d (offset %d, position %d) out of order or beyond the segment", ErrCorruptFile, o.path, i, off, pos)
		}
		prevOff, prevPos = off, pos
	}
	return nil
}
