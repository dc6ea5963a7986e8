package storage

import (
	"hash/maphash"
	"math"
	"math/bits"
)

// offsetMapEntryBytes is what one key costs of
// log.cleaner.dedupe.buffer.size, as in Kafka's SkimpyOffsetMap (a
// 16-byte hash of the key and an 8-byte offset): the buffer divided by it
// (and by the threads) is how many keys one clean can dedupe, the same
// number as in Kafka. A slot here takes 16 bytes (mapSlot), so the map
// uses two thirds of the buffer.
const offsetMapEntryBytes = 24

// offsetMapLoadFactor is log.cleaner.io.buffer.load.factor's default: the
// map is full at 90% of its slots, so probes stay short.
const offsetMapLoadFactor = 0.9

// offsetMapInitialSlots is the size a map starts each clean at (256
// KiB): it doubles as keys come, up to the budget.
const offsetMapInitialSlots = 1 << 14

// offsetMap maps a key's 96-bit hash to the last offset the key has in
// the dirty part of a log. It is an open-addressing table in one slice, so
// building it allocates nothing per key. It starts small and doubles
// whenever it is three quarters full, up to log.cleaner.dedupe.buffer.size (where
// it fills to 90%, the same keys per clean as one table of the whole
// budget): every lookup is a random access, and a table the size of the
// keys a log has stays in the CPU caches where one of the whole budget
// (128 MiB by default) makes each a cache and TLB miss, which profiling
// the cleaner beside a producer showed as most of its CPU time. For the
// same reason a slot is 16 bytes, not Kafka's 24: a 64-bit and a 32-bit
// hash of the key and the offset's distance from the map's base (the
// first dirty offset; a clean's dirty range is cut where it would span
// more than 2^32 offsets). Only during the last doubling does the memory
// briefly exceed the budget (by the smaller table being copied). Two keys
// with the same hash would lose the older one's latest value; with 95
// independent bits (h1's low bit is fixed) a map of the most keys it can
// hold, 2^31, meets that with a probability below 2^-33 per clean, and one
// of the 5.6 million keys 128 MiB holds below 2^-50.
type offsetMap struct {
	seed1, seed2 maphash.Seed
	slots        []mapSlot
	maxSlots     int // the budget's slots
	used, limit  int
	// base is the offset the slots' offsets count from.
	base int64
	// lastOffset is the largest offset put, the end of what the map covers.
	lastOffset int64
}

type mapSlot struct {
	h1  uint64 // 0 marks an empty slot
	h2  uint32
	off uint32 // offset - base
}

// newOffsetMap sizes a map from a memory budget in bytes.
func newOffsetMap(bytes int64) *offsetMap {
	n := int(min(max(bytes/offsetMapEntryBytes, 16), math.MaxInt32))
	return &offsetMap{seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed(), maxSlots: n,
		slots: make([]mapSlot, min(n, offsetMapInitialSlots)), limit: int(float64(n) * offsetMapLoadFactor), lastOffset: -1}
}

// clear empties the map for the next clean, back to its initial size,
// with offsets counted from base.
func (m *offsetMap) clear(base int64) {
	if len(m.slots) > offsetMapInitialSlots {
		m.slots = make([]mapSlot, min(m.maxSlots, offsetMapInitialSlots))
	} else {
		clear(m.slots)
	}
	m.used, m.lastOffset, m.base = 0, -1, base
}

// full says whether no further new key may be put.
func (m *offsetMap) full() bool { return m.used >= m.limit }

func (m *offsetMap) hash(key []byte) (uint64, uint32) {
	h1 := maphash.Bytes(m.seed1, key) | 1 // never 0: 0 marks empty
	return h1, uint32(maphash.Bytes(m.seed2, key))
}

// slot returns the slot holding the hash, or the empty slot where it
// goes. The probe starts from h1's high bits: its low bit is always set.
func (m *offsetMap) slot(h1 uint64, h2 uint32) *mapSlot {
	// No division: the start is h1 scaled to the table (Lemire's
	// fast range, from the high bits), and the probe wraps by compare.
	n := uint64(len(m.slots))
	i, _ := bits.Mul64(h1, n)
	for {
		s := &m.slots[i]
		if s.h1 == 0 || s.h1 == h1 && s.h2 == h2 {
			return s
		}
		if i++; i == n {
			i = 0
		}
	}
}

// put records offset as key's latest. It reports false, storing nothing,
// when the key is new and the map is full, or offset is more than 2^32
// from the base (the map cannot cover it).
func (m *offsetMap) put(key []byte, offset int64) bool {
	d := offset - m.base
	if d < 0 || d > math.MaxUint32 {
		return false
	}
	h1, h2 := m.hash(key)
	s := m.slot(h1, h2)
	if s.h1 == 0 {
		if m.full() {
			return false
		}
		if 4*m.used >= 3*len(m.slots) && len(m.slots) < m.maxSlots {
			m.grow()
			s = m.slot(h1, h2)
		}
		*s = mapSlot{h1: h1, h2: h2}
		m.used++
	}
	s.off = uint32(d)
	m.lastOffset = max(m.lastOffset, offset)
	return true
}

// grow doubles the table (up to the budget) and moves every entry.
func (m *offsetMap) grow() {
	old := m.slots
	m.slots = make([]mapSlot, min(2*len(old), m.maxSlots))
	for _, e := range old {
		if e.h1 != 0 {
			*m.slot(e.h1, e.h2) = e
		}
	}
}

// get returns key's latest offset in the map.
func (m *offsetMap) get(key []byte) (int64, bool) {
	s := m.slot(m.hash(key))
	return m.base + int64(s.off), s.h1 != 0
}
