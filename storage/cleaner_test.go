package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/raftka/raftka/storage/recordbatch"
)

// kv is one keyed write; a nil value is a tombstone.
type kv struct {
	key, value string
	tombstone  bool
}

// keyedBatch builds an uncompressed batch of keyed records, with producer
// pid (and sequence seq) if pid >= 0, then compresses it with codec.
func keyedBatch(t testing.TB, ts int64, codec Compression, pid int64, seq int32, recs ...kv) []byte {
	t.Helper()
	rs := make([]recordbatch.Record, len(recs))
	for i, r := range recs {
		rs[i] = recordbatch.Record{OffsetDelta: int32(i), Timestamp: ts, Key: []byte(r.key)}
		if !r.tombstone {
			rs[i].Value = []byte(r.value)
		}
		if r.key == "" {
			rs[i].Key = nil
		}
	}
	b := recordbatch.Batch{BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Records: rs}
	if pid >= 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 0, seq
	}
	return recompressBatch(t, b.Encode(), codec)
}

// recompressBatch rewrites an uncompressed batch's records with codec.
func recompressBatch(t testing.TB, raw []byte, codec Compression) []byte {
	t.Helper()
	if codec == CompressionNone {
		return raw
	}
	out, err := compressRecords(append([]byte(nil), raw[:BatchHeaderSize]...), codec, raw[BatchHeaderSize:], false, defaultLevel(codec))
	if err != nil {
		t.Fatal(err)
	}
	b := Batch(out)
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-batchOverhead))
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(b.Attributes())|uint16(codec))
	b.updateCRC()
	return b
}

// rec is a record as read back.
type rec struct {
	offset    int64
	key       string
	value     string
	tombstone bool
}

// readRecords reads every record of l from offset from, checking offsets
// strictly increase; control batches (markers) are passed over.
func readRecords(t testing.TB, l *Log, from int64) []rec {
	t.Helper()
	var out []rec
	last := int64(-1)
	for _, b := range readAll(t, l, from) {
		if b.BaseOffset() <= last {
			t.Fatalf("batch at %d after offset %d", b.BaseOffset(), last)
		}
		if b.Control() {
			last = b.LastOffset()
			continue
		}
		err := b.Records(func(r Record) bool {
			if r.Offset <= last {
				t.Fatalf("record at %d after offset %d", r.Offset, last)
			}
			last = r.Offset
			if r.Offset >= from {
				out = append(out, rec{offset: r.Offset, key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil})
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		last = max(last, b.LastOffset())
	}
	return out
}

func compactConfig() Config {
	c := smallConfig()
	c.SegmentBytes = 1024
	c.CleanupPolicy = PolicyCompact
	c.MinCleanableDirtyRatio = 0
	c.DeleteRetentionMs = 60_000
	return c
}

// appendWritten appends b as a compacted log can come to hold it: a batch
// with a keyless record, which Append refuses under cleanup.policy=compact,
// is appended while the log's policy is delete, as when a topic's policy
// changed from delete to compact after the write.
func appendWritten(l *Log, b []byte, keyless bool) (AppendResult, error) {
	if !keyless {
		return l.Append(b, AppendOptions{})
	}
	cfg := l.Config()
	was := cfg
	cfg.CleanupPolicy = PolicyDelete
	if err := l.UpdateConfig(cfg); err != nil {
		return AppendResult{}, err
	}
	res, err := l.Append(b, AppendOptions{})
	if err2 := l.UpdateConfig(was); err == nil {
		err = err2
	}
	return res, err
}

func mustClean(t testing.TB, l *Log, now time.Time) CleanStats {
	t.Helper()
	st, _, err := l.Clean(now, CleanOptions{DedupeBufferBytes: 1 << 20})
	if err != nil {
		t.Fatalf("Clean: %v", err)
	}
	return st
}

func TestCleanKeepsLatestPerKey(t *testing.T) {
	for _, codec := range []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			clk := newClock()
			dir := partDir(t)
			cfg := compactConfig()
			l, _ := openTestLog(t, dir, cfg, LogOptions{Now: clk.now})
			latest := map[string]int64{}
			for i := range 300 {
				k := fmt.Sprintf("k%d", i%10)
				res, err := l.Append(keyedBatch(t, clk.now().UnixMilli(), codec, -1, 0, kv{key: k, value: fmt.Sprint(i)}, kv{key: "other", value: fmt.Sprint(i)}), AppendOptions{})
				if err != nil {
					t.Fatal(err)
				}
				latest[k], latest["other"] = res.BaseOffset, res.LastOffset
			}
			l.SetHighWatermark(l.LogEndOffset())
			sizeBefore := l.Size()
			st := mustClean(t, l, clk.now())
			if st.SegmentsWritten == 0 || l.Size() >= sizeBefore/4 {
				t.Fatalf("clean wrote %d segments, size %d of %d", st.SegmentsWritten, l.Size(), sizeBefore)
			}
			check := func(l *Log) {
				seen := map[string]int64{}
				for _, r := range readRecords(t, l, 0) {
					if r.value != fmt.Sprint(r.offset/2) {
						t.Fatalf("offset %d holds %q", r.offset, r.value)
					}
					seen[r.key] = r.offset
				}
				for k, off := range latest {
					if seen[k] != off {
						t.Fatalf("key %s ends at %d, want %d", k, seen[k], off)
					}
				}
			}
			check(l)
			end := l.FirstDirtyOffset()
			if end == 0 {
				t.Fatal("no cleaner checkpoint")
			}
			l.Close()
			// Unclean reopen with the checkpoint: every segment is rescanned
			// and the gaps the clean left are accepted.
			l2, rep := openTestLog(t, dir, cfg, LogOptions{Now: clk.now, CleanerCheckpoint: end})
			if rep.LostData() {
				t.Fatalf("reopen lost data: %+v", rep.Truncations)
			}
			check(l2)
			l2.Close()
		})
	}
}

func TestCleanTombstonesAndProducers(t *testing.T) {
	clk := newClock()
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 10_000
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{Now: clk.now})
	defer l.Close()
	app := func(b []byte, keyless ...bool) AppendResult {
		t.Helper()
		res, err := appendWritten(l, b, len(keyless) > 0 && keyless[0])
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// Producer 7 writes a then deletes it; its last batch is superseded
	// by another writer's later record, so it stays only as an empty batch.
	app(keyedBatch(t, clk.now().UnixMilli(), CompressionNone, 7, 0, kv{key: "a", value: "1"}))
	app(keyedBatch(t, clk.now().UnixMilli(), CompressionNone, 7, 1, kv{key: "b", value: "1"}))
	app(keyedBatch(t, clk.now().UnixMilli(), CompressionNone, -1, 0, kv{key: "a", tombstone: true}))
	app(keyedBatch(t, clk.now().UnixMilli(), CompressionNone, -1, 0, kv{key: "b", value: "2"}, kv{key: "", value: "keyless"}), true)
	for range 40 {
		app(keyedBatch(t, clk.now().UnixMilli(), CompressionNone, -1, 0, kv{key: "filler", value: "x"}))
	}
	l.SetHighWatermark(l.LogEndOffset())
	mustClean(t, l, clk.now())
	got := map[string]rec{}
	for _, r := range readRecords(t, l, 0) {
		got[r.key] = r
	}
	if r, ok := got["a"]; !ok || !r.tombstone {
		t.Fatalf("the tombstone went before delete.retention.ms: %+v", got)
	}
	if r := got["b"]; r.value != "2" {
		t.Fatalf("b = %+v", r)
	}
	if _, ok := got[""]; ok {
		t.Fatal("a keyless record survived compaction")
	}
	bs := readAll(t, l, 0)
	if b := bs[0]; b.ProducerID() != 7 || b.BaseOffset() != 1 || b.RecordCount() != 0 || b.BaseSequence() != 1 {
		t.Fatalf("producer 7's last batch: pid %d at %d, %d records, seq %d", b.ProducerID(), b.BaseOffset(), b.RecordCount(), b.BaseSequence())
	}
	if p := l.Producers(); len(p) != 1 || p[0].LastSequence != 1 {
		t.Fatalf("producers %+v", p)
	}
	// Within delete.retention.ms of the clean that saw it, the tombstone
	// stays; after it, the next clean removes it.
	clk.advance(9 * time.Second)
	l.Clean(clk.now(), CleanOptions{})
	if _, ok := recordsByKey(t, l)["a"]; !ok {
		t.Fatal("tombstone removed early")
	}
	clk.advance(2 * time.Second)
	if _, did, err := l.Clean(clk.now(), CleanOptions{}); err != nil || !did {
		t.Fatalf("a due tombstone did not make the log due: %v %v", did, err)
	}
	if _, ok := recordsByKey(t, l)["a"]; ok {
		t.Fatal("tombstone kept past its horizon")
	}
}

func recordsByKey(t testing.TB, l *Log) map[string]rec {
	got := map[string]rec{}
	for _, r := range readRecords(t, l, l.LogStartOffset()) {
		got[r.key] = r
	}
	return got
}

func TestCleanerPlan(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CleanupPolicy = PolicyCompact
	seg := func(base, next, bytes, ts int64) segmentStat {
		return segmentStat{Base: base, Next: next, Bytes: bytes, FirstTs: ts, MaxTs: ts}
	}
	segs := []segmentStat{seg(0, 100, 1000, 1000), seg(100, 200, 1000, 2000), seg(200, 300, 1000, 3000), seg(300, 350, 500, 4000)}
	base := cleanInput{Segments: segs, StableEnd: 350, TombstoneHorizon: math.MaxInt64, Config: cfg}
	with := func(f func(*cleanInput)) cleanInput {
		in := base
		f(&in)
		return in
	}
	for _, tc := range []struct {
		name     string
		in       cleanInput
		now      int64
		eligible bool
		first    int64
		end      int64
		ratio    float64
	}{
		{"all dirty", base, 5000, true, 0, 300, 1},
		{"delete policy", with(func(in *cleanInput) { in.Config.CleanupPolicy = PolicyDelete }), 5000, false, 0, 0, 0},
		{"one third dirty, ratio 0.5", with(func(in *cleanInput) { in.FirstDirty = 200 }), 5000, false, 200, 300, 1.0 / 3},
		{"one third dirty, ratio 0.3", with(func(in *cleanInput) { in.FirstDirty = 200; in.Config.MinCleanableDirtyRatio = 0.3 }), 5000, true, 200, 300, 1.0 / 3},
		{"checkpoint inside a segment", with(func(in *cleanInput) { in.FirstDirty = 150 }), 5000, true, 100, 300, 2.0 / 3},
		{"high watermark bounds", with(func(in *cleanInput) { in.StableEnd = 250 }), 5000, true, 0, 200, 1},
		{"min lag keeps young segments", with(func(in *cleanInput) { in.Config.MinCompactionLagMs = 3500 }), 5000, true, 0, 100, 1},
		{"min lag keeps all", with(func(in *cleanInput) { in.Config.MinCompactionLagMs = 10_000 }), 5000, false, 0, 0, 0},
		{"max lag forces", with(func(in *cleanInput) { in.FirstDirty = 200; in.Config.MaxCompactionLagMs = 1000 }), 5000, true, 200, 300, 1.0 / 3},
		{"tombstones due", with(func(in *cleanInput) { in.FirstDirty = 300; in.TombstoneHorizon = 4000 }), 5000, true, 300, 300, 0},
		{"nothing dirty", with(func(in *cleanInput) { in.FirstDirty = 300 }), 5000, false, 300, 300, 0},
		{"active only", with(func(in *cleanInput) { in.Segments = segs[3:] }), 5000, false, 0, 0, 0},
	} {
		p := planClean(tc.in, tc.now)
		if p.Eligible != tc.eligible || p.FirstDirty != tc.first || p.End != tc.end || math.Abs(p.Ratio-tc.ratio) > 1e-9 {
			t.Errorf("%s: %+v", tc.name, p)
		}
	}
	if i := dirtiest([]cleanPlan{{Eligible: true, Ratio: 0.6}, {Eligible: false, Ratio: 0.9}, {Eligible: true, Ratio: 0.7}}); i != 2 {
		t.Errorf("dirtiest picked %d", i)
	}
	if i := dirtiest([]cleanPlan{{Ratio: 1}}); i != -1 {
		t.Errorf("dirtiest picked %d of none due", i)
	}
}

func TestOffsetMapBound(t *testing.T) {
	m := newOffsetMap(100 * offsetMapEntryBytes)
	n := 0
	for i := 0; ; i++ {
		if !m.put(fmt.Appendf(nil, "key-%d", i), int64(i)) {
			break
		}
		n++
	}
	if n != 90 {
		t.Fatalf("map of 100 slots took %d keys, want 90", n)
	}
	if !m.put([]byte("key-3"), 1000) {
		t.Fatal("a full map refused a known key")
	}
	if off, ok := m.get([]byte("key-3")); !ok || off != 1000 {
		t.Fatalf("key-3 = %d %v", off, ok)
	}
	if _, ok := m.get([]byte("absent")); ok {
		t.Fatal("absent key found")
	}
	// Offsets are kept as their distance from the base, in 32 bits.
	m.clear(1 << 40)
	if !m.put([]byte("a"), 1<<40+math.MaxUint32) || m.put([]byte("b"), 1<<40+math.MaxUint32+1) || m.put([]byte("c"), 1<<40-1) {
		t.Fatal("the map took an offset it cannot hold, or refused one it can")
	}
	if off, ok := m.get([]byte("a")); !ok || off != 1<<40+math.MaxUint32 {
		t.Fatalf("a = %d %v", off, ok)
	}
}

// A map grows from its initial size up to the budget as keys come, keeps
// every key through each doubling, still holds 90% of the budget's slots
// in keys, and starts small again after clear.
func TestOffsetMapGrows(t *testing.T) {
	const slots = 100_000
	m := newOffsetMap(slots * offsetMapEntryBytes)
	if len(m.slots) != offsetMapInitialSlots {
		t.Fatalf("starts at %d slots", len(m.slots))
	}
	n := 0
	for i := 0; ; i++ {
		if !m.put(fmt.Appendf(nil, "key-%d", i), int64(i)) {
			break
		}
		if i == 20_000 && len(m.slots) >= slots {
			t.Fatalf("%d slots for 20,001 keys", len(m.slots))
		}
		n++
	}
	if n != slots*9/10 || len(m.slots) != slots {
		t.Fatalf("took %d keys in %d slots, want %d in %d", n, len(m.slots), slots*9/10, slots)
	}
	for i := 0; i < n; i++ {
		if !m.put(fmt.Appendf(nil, "key-%d", i), int64(i)+1e9) {
			t.Fatalf("a full map refused known key %d", i)
		}
	}
	for i := 0; i < n; i++ {
		if off, ok := m.get(fmt.Appendf(nil, "key-%d", i)); !ok || off != int64(i)+1e9 {
			t.Fatalf("key-%d = %d %v", i, off, ok)
		}
	}
	m.clear(5)
	if len(m.slots) != offsetMapInitialSlots || m.used != 0 {
		t.Fatalf("after clear: %d slots, %d used", len(m.slots), m.used)
	}
	if _, ok := m.get([]byte("key-1")); ok {
		t.Fatal("a cleared map found a key")
	}
}

func TestCleanBufferTooSmall(t *testing.T) {
	clk := newClock()
	cfg := compactConfig()
	cfg.SegmentBytes = 4096 // about 50 keys, more than the smallest map's 14
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{Now: clk.now})
	defer l.Close()
	for i := range 200 {
		l.Append(keyedBatch(t, clk.now().UnixMilli(), CompressionNone, -1, 0, kv{key: fmt.Sprint(i), value: "v"}), AppendOptions{})
	}
	l.SetHighWatermark(l.LogEndOffset())
	if _, _, err := l.Clean(clk.now(), CleanOptions{DedupeBufferBytes: 1}); !errors.Is(err, ErrCleanerBufferTooSmall) {
		t.Fatalf("tiny buffer: %v", err)
	}
}

// A follower copies a compacted leader's batches, gaps included.
func TestFollowerAcceptsGaps(t *testing.T) {
	dir := partDir(t)
	l, _ := openTestLog(t, dir, smallConfig(), LogOptions{})
	b := keyedBatch(t, 1, CompressionNone, -1, 0, kv{key: "k", value: "v"})
	Batch(b).SetBaseOffset(5)
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	Batch(b).SetBaseOffset(5)
	if _, err := l.AppendAsFollower(b); !errors.Is(err, ErrUnexpectedOffset) {
		t.Fatalf("overlap: %v", err)
	}
	if l.LogEndOffset() != 6 || l.FirstDirtyOffset() != 6 {
		t.Fatalf("LEO %d, checkpoint %d", l.LogEndOffset(), l.FirstDirtyOffset())
	}
	l.Close()
	l2, rep := openTestLog(t, dir, smallConfig(), LogOptions{CleanerCheckpoint: 6})
	defer l2.Close()
	if rep.LostData() || l2.LogEndOffset() != 6 {
		t.Fatalf("reopen: %+v, LEO %d", rep, l2.LogEndOffset())
	}
}

// A clean told to abort (the Manager closing) stops, swaps nothing in and
// leaves no files behind.
func TestCleanAbort(t *testing.T) {
	clk := newClock()
	dir := partDir(t)
	l, _ := openTestLog(t, dir, compactConfig(), LogOptions{Now: clk.now})
	defer l.Close()
	for i := range 100 {
		l.Append(keyedBatch(t, clk.now().UnixMilli(), CompressionNone, -1, 0, kv{key: fmt.Sprint(i % 3), value: "v"}), AppendOptions{})
	}
	l.SetHighWatermark(l.LogEndOffset())
	before := readRecords(t, l, 0)
	abort := make(chan struct{})
	close(abort)
	if _, _, err := l.Clean(clk.now(), CleanOptions{Abort: abort}); !errors.Is(err, errCleanAborted) {
		t.Fatalf("aborted clean: %v", err)
	}
	if got := readRecords(t, l, 0); len(got) != len(before) {
		t.Fatalf("an aborted clean changed the log: %d records of %d", len(got), len(before))
	}
	for _, pat := range []string{"*.cleaned", "*.swap"} {
		if m, _ := filepath.Glob(filepath.Join(dir, pat)); len(m) > 0 {
			t.Fatalf("left %v", m)
		}
	}
}

// FuzzCleanBatch feeds the cleaner's batch filter arbitrary records
// sections under every codec: it never panics, fails only with
// ErrCorruptBatch, and what it writes is a valid stored batch with the
// same offset range whose records are records of the input at their
// offsets.
func FuzzCleanBatch(f *testing.F) {
	raw := keyedBatch(f, 1_700_000_000_000, CompressionNone, 5, 0, kv{key: "a", value: "1"}, kv{key: "b", tombstone: true}, kv{key: "a", value: "2"}, kv{value: "keyless"})
	for _, c := range []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		b := recompressBatch(f, raw, c)
		f.Add(uint8(c), int32(4), int32(3), b[BatchHeaderSize:], int64(0), false)
		f.Add(uint8(c), int32(4), int32(3), b[BatchHeaderSize:], int64(1_700_000_100_000), true)
	}
	f.Fuzz(func(t *testing.T, codec uint8, count, lastDelta int32, data []byte, now int64, horizon bool) {
		b := Batch(withCompressedRecords(raw, Compression(codec&attrCompressionMask), data))
		binary.BigEndian.PutUint32(b[offRecordCount:], uint32(count))
		binary.BigEndian.PutUint32(b[offLastDelta:], uint32(lastDelta))
		if horizon {
			binary.BigEndian.PutUint16(b[offAttributes:], uint16(b.Attributes())|attrDeleteHorizon)
		}
		b.updateCRC()
		m := newOffsetMap(1 << 10)
		m.put([]byte("a"), 2)
		m.put([]byte("b"), 1)
		bf := &batchFilter{m: m, nowMs: now, deleteRetentionMs: 1000, lastOfProducer: map[int64]producerLast{5: {lastData: b.LastOffset()}}, horizon: math.MaxInt64}
		in := map[int64]Record{}
		_ = b.Records(func(r Record) bool {
			r.Key, r.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
			in[r.Offset] = r
			return true
		})
		nb, err := bf.filter(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptBatch) {
				t.Fatalf("%v is not ErrCorruptBatch", err)
			}
			return
		}
		if nb == nil {
			return
		}
		if _, err := nb.ValidateStored(); err != nil {
			t.Fatalf("filtered batch does not validate: %v", err)
		}
		if nb.BaseOffset() != b.BaseOffset() || nb.LastOffset() != b.LastOffset() || nb.RecordCount() > b.RecordCount() || nb.Compression() != b.Compression() && nb.RecordCount() > 0 {
			t.Fatalf("filtered batch %d..%d (%d records, %s) from %d..%d (%d, %s)", nb.BaseOffset(), nb.LastOffset(), nb.RecordCount(), nb.Compression(), b.BaseOffset(), b.LastOffset(), b.RecordCount(), b.Compression())
		}
		err = nb.Records(func(r Record) bool {
			w, ok := in[r.Offset]
			if !ok || !bytes.Equal(w.Key, r.Key) || !bytes.Equal(w.Value, r.Value) || (w.Value == nil) != (r.Value == nil) || !nb.LogAppendTime() && w.Timestamp != r.Timestamp {
				t.Fatalf("record at %d is %+v, the input's is %+v", r.Offset, r, w)
			}
			return true
		})
		if err != nil {
			t.Fatalf("filtered batch does not decode: %v", err)
		}
	})
}

// txnKeyed is a transactional batch of keyed records from producer pid.
func txnKeyed(ts int64, pid int64, seq int32, recs ...kv) []byte {
	rs := make([]recordbatch.Record, len(recs))
	for i, r := range recs {
		rs[i] = recordbatch.Record{OffsetDelta: int32(i), Timestamp: ts, Key: []byte(r.key)}
		if !r.tombstone {
			rs[i].Value = []byte(r.value)
		}
	}
	return recordbatch.Batch{Transactional: true, BaseTimestamp: ts, ProducerID: pid, BaseSequence: seq, Records: rs}.Encode()
}

// markersOf lists the offsets of l's control batches, and which carry a
// delete horizon.
func markersOf(t testing.TB, l *Log) (offsets []int64, horizon []bool) {
	t.Helper()
	for _, b := range readAll(t, l, l.LogStartOffset()) {
		if b.Control() {
			offsets = append(offsets, b.BaseOffset())
			horizon = append(horizon, b.Attributes()&attrDeleteHorizon != 0)
		}
	}
	return offsets, horizon
}

// TestCleanTransactions: the cleaner removes the records of aborted
// transactions (and keeps them out of the key map, so an older committed
// value survives an aborted newer one); a marker stays while a batch of
// its transaction remains, is stamped with a delete horizon by the clean
// that first finds it removable, and goes at the first clean after
// delete.retention.ms; the .txnindex keeps an aborted range only while
// the range held records; the producer's last batch stays; the cleaner
// never cleans past the last stable offset; reopening finds no
// transaction open.
func TestCleanTransactions(t *testing.T) {
	noFsync(t)
	clk := newClock()
	dir := partDir(t)
	cfg := compactConfig()
	l, _ := openTestLog(t, dir, cfg, LogOptions{Now: clk.now})
	defer func() { l.Close() }()
	ts := clk.now().UnixMilli()
	plain := func(recs ...kv) int64 {
		return appendOK(t, l, keyedBatch(t, clk.now().UnixMilli(), CompressionNone, -1, 0, recs...)).BaseOffset
	}
	fill := func(n int) {
		for i := range n {
			plain(kv{key: "filler", value: fmt.Sprint(i)})
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(l.LogEndOffset())
	}
	plain(kv{key: "a", value: "v0"})                                   // 0
	appendOK(t, l, txnKeyed(ts, 5, 0, kv{key: "a", value: "aborted"})) // 1
	abortAt := appendMarkerOK(t, l, marker(5, 0, 0, false)).BaseOffset // 2
	appendOK(t, l, txnKeyed(ts, 5, 1, kv{key: "k", value: "1"}))       // 3
	commit1 := appendMarkerOK(t, l, marker(5, 0, 0, true)).BaseOffset  // 4
	appendOK(t, l, txnKeyed(ts, 5, 2, kv{key: "m", value: "1"}))       // 5
	commit2 := appendMarkerOK(t, l, marker(5, 0, 0, true)).BaseOffset  // 6
	plain(kv{key: "k", value: "2"})                                    // 7
	fill(30)

	mustClean(t, l, clk.now())
	got := recordsByKey(t, l)
	if got["a"].value != "v0" || got["k"].value != "2" || got["m"].value != "1" {
		t.Fatalf("after the first clean: %+v", got)
	}
	for _, r := range readRecords(t, l, 0) {
		if r.value == "aborted" {
			t.Fatalf("aborted record %+v survived the clean", r)
		}
	}
	offs, hz := markersOf(t, l)
	if !slices.Equal(offs, []int64{abortAt, commit1, commit2}) || slices.Contains(hz, true) {
		t.Fatalf("after the first clean: markers at %v (horizon %v), want %d, %d, %d without", offs, hz, abortAt, commit1, commit2)
	}
	if a, err := l.AbortedTransactions(0, l.LogEndOffset()); err != nil || len(a) != 1 || a[0].FirstOffset != 1 || a[0].LastOffset != abortAt {
		t.Fatalf("after the first clean: aborted %+v, %v", a, err)
	}

	clk.advance(time.Second)
	fill(30)
	mustClean(t, l, clk.now())
	offs, hz = markersOf(t, l)
	if !slices.Equal(offs, []int64{abortAt, commit1, commit2}) || !slices.Equal(hz, []bool{true, true, false}) {
		t.Fatalf("after the second clean: markers at %v (horizon %v)", offs, hz)
	}
	if a, err := l.AbortedTransactions(0, l.LogEndOffset()); err != nil || len(a) != 0 {
		t.Fatalf("after the second clean: aborted %+v, %v; the range holds no record", a, err)
	}

	// The horizon alone makes the log due.
	clk.advance(time.Duration(cfg.DeleteRetentionMs) * time.Millisecond)
	mustClean(t, l, clk.now())
	if offs, _ = markersOf(t, l); !slices.Equal(offs, []int64{commit2}) {
		t.Fatalf("after delete.retention.ms: markers at %v, want only %d (its transaction's batch is still there)", offs, commit2)
	}
	if got := recordsByKey(t, l); got["a"].value != "v0" || got["k"].value != "2" || got["m"].value != "1" {
		t.Fatalf("after the third clean: %+v", got)
	}

	// An open transaction holds the cleaner back at its first offset.
	open := appendOK(t, l, txnKeyed(ts, 7, 0, kv{key: "a", value: "open"})).BaseOffset
	fill(30)
	fill(30)
	mustClean(t, l, clk.now())
	if l.FirstDirtyOffset() > open || l.LastStableOffset() != open {
		t.Fatalf("cleaned to %d past the open transaction at %d (LSO %d)", l.FirstDirtyOffset(), open, l.LastStableOffset())
	}
	if r := readRecords(t, l, open); len(r) == 0 || r[0].offset != open || r[0].value != "open" {
		t.Fatalf("the open transaction's record: %+v", r[:min(len(r), 1)])
	}
	appendMarkerOK(t, l, marker(7, 0, 0, false))
	l.SetHighWatermark(l.LogEndOffset())
	for _, clean := range []bool{true, false} {
		hw := l.HighWatermark()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		var err error
		l, _, err = OpenLog(dir, cfg, LogOptions{Now: clk.now, CleanShutdown: clean, HighWatermark: hw, CleanerCheckpoint: l.FirstDirtyOffset()})
		if err != nil {
			t.Fatal(err)
		}
		if lso := l.LastStableOffset(); lso != l.HighWatermark() {
			t.Fatalf("reopened (clean %v): LSO %d, HW %d: a transaction is open", clean, lso, l.HighWatermark())
		}
	}
}

// FuzzCleanMarker: whatever a control batch's records section holds, the
// filter keeps it unchanged, drops it, or rewrites it with a delete
// horizon into a batch that validates and holds the same records at the
// same offsets and timestamps; anything else is ErrCorruptBatch.
func FuzzCleanMarker(f *testing.F) {
	raw := BuildMarkerBatch(TxnMarker{ProducerID: 5, ProducerEpoch: 1, CoordinatorEpoch: 3, Type: ControlCommit}, 1_700_000_000_000)
	raw.SetBaseOffset(10)
	f.Add([]byte(raw[BatchHeaderSize:]), int32(1), int32(0), int64(1_700_000_000_000), false)
	f.Add([]byte(raw[BatchHeaderSize:]), int32(1), int32(0), int64(1_700_000_100_000), true)
	f.Fuzz(func(t *testing.T, data []byte, count, lastDelta int32, now int64, horizon bool) {
		b := Batch(withCompressedRecords(raw, CompressionNone, data))
		binary.BigEndian.PutUint32(b[offRecordCount:], uint32(count))
		binary.BigEndian.PutUint32(b[offLastDelta:], uint32(lastDelta))
		if horizon {
			binary.BigEndian.PutUint16(b[offAttributes:], uint16(b.Attributes())|attrDeleteHorizon)
		}
		b.updateCRC()
		in := map[int64]Record{}
		_ = b.Records(func(r Record) bool {
			r.Key, r.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
			in[r.Offset] = r
			return true
		})
		bf := &batchFilter{m: newOffsetMap(1 << 10), nowMs: now, deleteRetentionMs: 1000, lastOfProducer: map[int64]producerLast{}, txns: newCleanTxns(nil), horizon: math.MaxInt64}
		nb, err := bf.filter(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptBatch) {
				t.Fatalf("%v is not ErrCorruptBatch", err)
			}
			return
		}
		if nb == nil || &nb[0] == &b[0] {
			return
		}
		if _, err := nb.ValidateStored(); err != nil {
			t.Fatalf("rewritten marker does not validate: %v", err)
		}
		if !nb.Control() || nb.Attributes()&attrDeleteHorizon == 0 || nb.BaseTimestamp() != now+1000 || nb.BaseOffset() != b.BaseOffset() || nb.LastOffset() != b.LastOffset() {
			t.Fatalf("rewritten marker: attributes %#x, base timestamp %d, offsets %d..%d", nb.Attributes(), nb.BaseTimestamp(), nb.BaseOffset(), nb.LastOffset())
		}
		n := 0
		err = nb.Records(func(r Record) bool {
			w, ok := in[r.Offset]
			if !ok || !bytes.Equal(w.Key, r.Key) || !bytes.Equal(w.Value, r.Value) || w.Timestamp != r.Timestamp {
				t.Fatalf("record at %d is %+v, the input's is %+v", r.Offset, r, w)
			}
			n++
			return true
		})
		if err != nil || n != len(in) {
			t.Fatalf("rewritten marker holds %d records of %d: %v", n, len(in), err)
		}
	})
}

// The key map's slot is 16 bytes: the size its doc and the budget's
// arithmetic assume.
func TestMapSlotSize(t *testing.T) {
	if n := unsafe.Sizeof(mapSlot{}); n != 16 {
		t.Fatalf("mapSlot is %d bytes", n)
	}
}
