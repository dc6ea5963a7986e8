package metadata

// shardMap is the copy-on-write map behind the large parts of the image
// (topics and consumer groups). Its keys are spread over a fixed number of
// shards; a new image copies the shard array (shardCount pointers) and clones
// only the shards a batch touches, so applying a batch costs O(change +
// shard size) rather than O(whole map), and an image shares every untouched
// shard with its parent.
//
// A shardMap value is immutable once built; shardBuilder is the only writer.
type shardMap[K comparable, V any] struct {
	shards [shardCount]map[K]V
	n      int
}

const shardCount = 64

func (m *shardMap[K, V]) get(k K, h uint32) (V, bool) {
	v, ok := m.shards[h%shardCount][k]
	return v, ok
}

func (m *shardMap[K, V]) len() int { return m.n }

func (m *shardMap[K, V]) each(f func(K, V)) {
	for _, s := range m.shards {
		for k, v := range s {
			f(k, v)
		}
	}
}

// shardBuilder clones a shard the first time a batch writes to it and writes
// in place after that, so a batch touching one key many times clones once.
type shardBuilder[K comparable, V any] struct {
	m     shardMap[K, V]
	owned [shardCount]bool
}

func newShardBuilder[K comparable, V any](base *shardMap[K, V]) *shardBuilder[K, V] {
	return &shardBuilder[K, V]{m: *base}
}

func (b *shardBuilder[K, V]) get(k K, h uint32) (V, bool) { return b.m.get(k, h) }

func (b *shardBuilder[K, V]) own(i uint32) map[K]V {
	if !b.owned[i] {
		old := b.m.shards[i]
		s := make(map[K]V, len(old)+1)
		for k, v := range old {
			s[k] = v
		}
		b.m.shards[i] = s
		b.owned[i] = true
	}
	return b.m.shards[i]
}

func (b *shardBuilder[K, V]) set(k K, h uint32, v V) {
	s := b.own(h % shardCount)
	if _, ok := s[k]; !ok {
		b.m.n++
	}
	s[k] = v
}

func (b *shardBuilder[K, V]) del(k K, h uint32) {
	if _, ok := b.m.get(k, h); !ok {
		return
	}
	s := b.own(h % shardCount)
	delete(s, k)
	b.m.n--
}

func (b *shardBuilder[K, V]) build() shardMap[K, V] { return b.m }

// FNV-1a; stable across processes, though nothing depends on that.
func hashString(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

func hashID(id [16]byte) uint32 {
	h := uint32(2166136261)
	for _, c := range id {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}
