package storage

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// cleanWrite is one record the model test wrote.
type cleanWrite struct {
	kv
	offset, ts int64
}

// TestCleanerModel drives a compacted log with random keyed writes
// (tombstones, keyless records, an idempotent producer, every codec),
// rolls, clock moves, high-watermark moves, cleans and reopens (clean, and
// unclean with every segment rescanned), and after every step checks it
// against the writes: every record read is one written at that offset;
// offsets strictly increase; each key's last record is its latest write,
// or nothing only if that write is a tombstone older than
// delete.retention.ms; every write at or above the cleaner checkpoint is
// still there unchanged; reading from any offset gives the same records
// above it; the producer's sequence survives.
func TestCleanerModel(t *testing.T) {
	noFsync(t)
	rapid.Check(t, func(rt *rapid.T) {
		dir := partDir(t)
		clk := newClock()
		cfg := compactConfig()
		cfg.SegmentBytes = int64(rapid.IntRange(200, 2000).Draw(rt, "segmentBytes"))
		cfg.DeleteRetentionMs = int64(rapid.IntRange(0, 20_000).Draw(rt, "deleteRetentionMs"))
		cfg.MinCompactionLagMs = int64(rapid.SampledFrom([]int{0, 5000}).Draw(rt, "minLagMs"))
		cfg.MinCleanableDirtyRatio = rapid.SampledFrom([]float64{0, 0.5}).Draw(rt, "minRatio")
		codec := rapid.SampledFrom([]Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}).Draw(rt, "codec")
		buffer := int64(rapid.SampledFrom([]int{1 << 10, 1 << 20}).Draw(rt, "dedupeBytes"))
		l, _, err := OpenLog(dir, cfg, LogOptions{Now: clk.now})
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { l.Close() }()
		byOffset := map[int64]cleanWrite{}
		latest := map[string]cleanWrite{}
		var seq int32 // producer 9's next sequence
		check := func(op string) {
			recs := readRecords(t, l, l.LogStartOffset())
			seen := map[string]int64{}
			at := map[int64]bool{}
			for _, r := range recs {
				w, ok := byOffset[r.offset]
				if !ok || w.key != r.key || w.value != r.value || w.tombstone != r.tombstone {
					rt.Fatalf("after %s: offset %d holds %+v, written %+v", op, r.offset, r, w)
				}
				if r.key != "" {
					seen[r.key] = r.offset
				}
				at[r.offset] = true
			}
			for k, w := range latest {
				off, ok := seen[k]
				switch {
				case ok && off != w.offset:
					rt.Fatalf("after %s: key %s ends at %d, its latest write is at %d", op, k, off, w.offset)
				case !ok && !(w.tombstone && clk.now().UnixMilli()-w.ts >= cfg.DeleteRetentionMs):
					rt.Fatalf("after %s: key %s lost its latest write %+v", op, k, w)
				}
			}
			for off, w := range byOffset {
				if off >= l.FirstDirtyOffset() && !at[off] {
					rt.Fatalf("after %s: write %+v above the cleaner checkpoint %d is gone", op, w, l.FirstDirtyOffset())
				}
			}
			if leo := l.LogEndOffset(); leo > l.LogStartOffset() {
				from := rapid.Int64Range(l.LogStartOffset(), leo).Draw(rt, "readFrom")
				var want []rec
				for _, r := range recs {
					if r.offset >= from {
						want = append(want, r)
					}
				}
				got := readRecords(t, l, from)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					rt.Fatalf("after %s: reading from %d gives %v, want %v", op, from, got, want)
				}
			}
			if seq > 0 {
				ps := l.Producers()
				if len(ps) != 1 || ps[0].LastSequence != seq-1 {
					rt.Fatalf("after %s: producers %+v, want last sequence %d", op, ps, seq-1)
				}
			}
		}
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for step := range steps {
			var op string
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0, 1, 2, 3, 4:
				op = "write"
				n := rapid.IntRange(1, 3).Draw(rt, "records")
				recs := make([]kv, n)
				for i := range recs {
					k := rapid.IntRange(-1, 7).Draw(rt, "key")
					recs[i] = kv{key: fmt.Sprintf("k%d", k), value: fmt.Sprintf("v%d-%d", step, i)}
					if k < 0 {
						recs[i].key = "" // keyless: compaction drops it
					}
					recs[i].tombstone = rapid.IntRange(0, 4).Draw(rt, "tombstone") == 0
				}
				pid := int64(-1)
				if rapid.Bool().Draw(rt, "idempotent") {
					pid = 9
				}
				b := keyedBatch(t, clk.now().UnixMilli(), codec, pid, seq, recs...)
				res, err := appendWritten(l, b, slices.ContainsFunc(recs, func(r kv) bool { return r.key == "" }))
				if err != nil {
					rt.Fatal(err)
				}
				if pid >= 0 {
					seq += int32(n)
				}
				for i, r := range recs {
					w := cleanWrite{kv: r, offset: res.BaseOffset + int64(i), ts: clk.now().UnixMilli()}
					if r.tombstone {
						w.value = ""
					}
					byOffset[w.offset] = w
					if r.key != "" {
						latest[r.key] = w
					}
				}
			case 5:
				op = "roll"
				if err := l.Roll(); err != nil {
					rt.Fatal(err)
				}
			case 6:
				op = "clock"
				clk.advance(time.Duration(rapid.IntRange(0, 30_000).Draw(rt, "ms")) * time.Millisecond)
			case 7:
				op = "clean"
				l.SetHighWatermark(l.LogEndOffset())
				leo, start := l.LogEndOffset(), l.LogStartOffset()
				if _, _, err := l.Clean(clk.now(), CleanOptions{DedupeBufferBytes: buffer}); err != nil && !errors.Is(err, ErrCleanerBufferTooSmall) {
					rt.Fatal(err)
				}
				if l.LogEndOffset() != leo || l.LogStartOffset() != start {
					rt.Fatalf("clean moved the log from [%d, %d) to [%d, %d)", start, leo, l.LogStartOffset(), l.LogEndOffset())
				}
			case 8:
				op = "reopen"
				ckpt := l.FirstDirtyOffset()
				if err := l.Close(); err != nil {
					rt.Fatal(err)
				}
				clean := rapid.Bool().Draw(rt, "cleanShutdown")
				var rep *RecoveryReport
				l, rep, err = OpenLog(dir, cfg, LogOptions{Now: clk.now, CleanShutdown: clean, CleanerCheckpoint: ckpt, HighWatermark: l.HighWatermark()})
				if err != nil {
					rt.Fatal(err)
				}
				if rep.LostData() {
					rt.Fatalf("reopen cut the log: %+v", rep.Truncations)
				}
			case 9:
				op = "high watermark"
				l.SetHighWatermark(rapid.Int64Range(l.LogStartOffset(), l.LogEndOffset()).Draw(rt, "hw"))
			}
			check(op)
		}
	})
}
