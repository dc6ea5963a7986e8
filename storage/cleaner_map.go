package storage

import (
	"hash/maphash"
	"math"
)

// offsetMapEntryBytes is what one key costs in the cleaner's map, as in
// Kafka's SkimpyOffsetMap: a 16-byte hash of the key and an 8-byte offset.
// log.cleaner.dedupe.buffer.size divided by it (and by the threads) is how
// many keys one clean can dedupe.
const offsetMapEntryBytes = 24

// offsetMapLoadFactor is log.cleaner.io.buffer.load.factor's default: the
// map is full at 90% of its slots, so probes stay short.
const offsetMapLoadFactor = 0.9

// offsetMap maps a key's 128-bit hash to the last offset the key has in
// the dirty part of a log. It is an open-addressing table in one slice,
// sized once from the dedupe buffer, so building it allocates nothing per
// key. Two keys with the same 128-bit hash would lose the older one's
// latest value; with two independent 64-bit hashes that needs about 2^64
// keys, the same bound Kafka accepts with MD5.
type offsetMap struct {
	seed1, seed2 maphash.Seed
	slots        []mapSlot
	used, limit  int
	// lastOffset is the largest offset put, the end of what the map covers.
	lastOffset int64
}

type mapSlot struct {
	h1, h2 uint64 // h1 == 0 marks an empty slot
	offset int64
}

// newOffsetMap sizes a map from a memory budget in bytes.
func newOffsetMap(bytes int64) *offsetMap {
	n := int(min(max(bytes/offsetMapEntryBytes, 16), math.MaxInt32))
	return &offsetMap{seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed(), slots: make([]mapSlot, n), limit: int(float64(n) * offsetMapLoadFactor), lastOffset: -1}
}

// clear empties the map for the next clean, keeping its memory.
func (m *offsetMap) clear() {
	clear(m.slots)
	m.used, m.lastOffset = 0, -1
}

// full says whether no further new key may be put.
func (m *offsetMap) full() bool { return m.used >= m.limit }

func (m *offsetMap) hash(key []byte) (uint64, uint64) {
	h1 := maphash.Bytes(m.seed1, key) | 1 // never 0: 0 marks empty
	return h1, maphash.Bytes(m.seed2, key)
}

// put records offset as key's latest. It reports false, storing nothing,
// when the key is new and the map is full.
func (m *offsetMap) put(key []byte, offset int64) bool {
	h1, h2 := m.hash(key)
	n := uint64(len(m.slots))
	for i := h1 % n; ; i = (i + 1) % n {
		s := &m.slots[i]
		if s.h1 == 0 {
			if m.full() {
				return false
			}
			*s = mapSlot{h1: h1, h2: h2, offset: offset}
			m.used++
			break
		}
		if s.h1 == h1 && s.h2 == h2 {
			s.offset = offset
			break
		}
	}
	m.lastOffset = max(m.lastOffset, offset)
	return true
}

// get returns key's latest offset in the map.
func (m *offsetMap) get(key []byte) (int64, bool) {
	h1, h2 := m.hash(key)
	n := uint64(len(m.slots))
	for i := h1 % n; ; i = (i + 1) % n {
		s := &m.slots[i]
		if s.h1 == 0 {
			return 0, false
		}
		if s.h1 == h1 && s.h2 == h2 {
			return s.offset, true
		}
	}
}
