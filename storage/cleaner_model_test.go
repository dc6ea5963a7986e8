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
	batchLast  int64     // the last offset of its batch
	txn        *modelTxn // nil: not transactional
}

// modelTxn is a transaction of the cleaner model: its producer, first
// offset and marker's offset (-1 while open), and whether it committed.
type modelTxn struct {
	pid           int64
	first, marker int64
	commit        bool
}

// committed says whether a write is one a read_committed reader sees.
func (w cleanWrite) committed() bool { return w.txn == nil || w.txn.marker >= 0 && w.txn.commit }

// TestCleanerModel drives a compacted log with random keyed writes
// (tombstones, keyless records, an idempotent producer, every codec),
// transactional writes of two producers ended by COMMIT or ABORT markers
// (also for transactions that wrote nothing), rolls, clock moves,
// high-watermark moves, cleans and reopens (clean, and unclean with every
// segment rescanned), and after every step checks it against the writes:
// every record read is one written at that offset; offsets strictly
// increase; the LSO is the model's; a read_committed read gives for each
// key its latest committed write below the LSO, or nothing only if that
// write is a tombstone older than delete.retention.ms; no aborted record
// is left below the cleaner checkpoint, and every write at or above it is
// still there unchanged; reading from any offset gives the same records
// above it; the producers' sequences survive.
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
		var seq int32 // producer 9's next sequence
		txnPIDs := []int64{20, 21}
		txnSeq := map[int64]int32{}
		openTxn := map[int64]*modelTxn{}
		var txns []*modelTxn
		lso := func() int64 {
			hw := l.HighWatermark()
			lso := hw
			for _, x := range txns {
				if x.marker < 0 || x.marker >= hw {
					lso = min(lso, x.first)
				}
			}
			return max(lso, l.LogStartOffset())
		}
		check := func(op string) {
			recs := readRecords(t, l, l.LogStartOffset())
			at := map[int64]bool{}
			for _, r := range recs {
				w, ok := byOffset[r.offset]
				if !ok || w.key != r.key || w.value != r.value || w.tombstone != r.tombstone {
					rt.Fatalf("after %s: offset %d holds %+v, written %+v", op, r.offset, r, w)
				}
				if w.txn != nil && w.txn.marker >= 0 && !w.txn.commit && r.offset < l.FirstDirtyOffset() {
					rt.Fatalf("after %s: aborted write %+v is left below the cleaner checkpoint %d", op, w, l.FirstDirtyOffset())
				}
				at[r.offset] = true
			}
			stable := lso()
			if got := l.LastStableOffset(); got != stable {
				rt.Fatalf("after %s: LSO %d, the model's %d", op, got, stable)
			}
			// Each key's latest committed write below the LSO (reads stop
			// at the first batch reaching it).
			latest := map[string]cleanWrite{}
			for _, w := range byOffset {
				if w.key != "" && w.batchLast < stable && w.committed() {
					if p, ok := latest[w.key]; !ok || p.offset < w.offset {
						latest[w.key] = w
					}
				}
			}
			seen := map[string]rec{}
			for _, r := range consumeCommittedRecords(rt, l, rapid.SampledFrom([]int{1, 300, 1 << 20}).Draw(rt, "maxBytes")) {
				if r.key != "" {
					seen[r.key] = r
				}
			}
			for k, w := range latest {
				r, ok := seen[k]
				switch {
				case ok && r.offset != w.offset:
					rt.Fatalf("after %s: read_committed, key %s ends at %d (%q), its latest committed write is at %d (%q)", op, k, r.offset, r.value, w.offset, w.value)
				case !ok && !(w.tombstone && clk.now().UnixMilli()-w.ts >= cfg.DeleteRetentionMs):
					rt.Fatalf("after %s: read_committed, key %s lost its latest committed write %+v", op, k, w)
				}
			}
			for k, r := range seen {
				if _, ok := latest[k]; !ok {
					rt.Fatalf("after %s: read_committed gives key %s (%+v), which has no committed write", op, k, r)
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
			want := map[int64]int32{}
			if seq > 0 {
				want[9] = seq - 1
			}
			for pid, s := range txnSeq {
				want[pid] = s - 1
			}
			for _, p := range l.Producers() {
				if w, ok := want[p.ProducerID]; ok && p.LastSequence != w {
					rt.Fatalf("after %s: producer %d's last sequence %d, want %d", op, p.ProducerID, p.LastSequence, w)
				}
				delete(want, p.ProducerID)
			}
			if len(want) > 0 {
				rt.Fatalf("after %s: producers %v lost", op, want)
			}
		}
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for step := range steps {
			var op string
			switch rapid.IntRange(0, 12).Draw(rt, "op") {
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
					w := cleanWrite{kv: r, offset: res.BaseOffset + int64(i), ts: clk.now().UnixMilli(), batchLast: res.LastOffset}
					if r.tombstone {
						w.value = ""
					}
					byOffset[w.offset] = w
				}
			case 10, 11:
				op = "transactional write"
				pid := rapid.SampledFrom(txnPIDs).Draw(rt, "txnProducer")
				n := rapid.IntRange(1, 3).Draw(rt, "records")
				recs := make([]kv, n)
				for i := range recs {
					recs[i] = kv{key: fmt.Sprintf("k%d", rapid.IntRange(0, 7).Draw(rt, "key")), value: fmt.Sprintf("t%d-%d-%d", pid, step, i)}
					recs[i].tombstone = rapid.IntRange(0, 4).Draw(rt, "tombstone") == 0
				}
				b := recompressBatch(t, txnKeyed(clk.now().UnixMilli(), pid, txnSeq[pid], recs...), codec)
				res, err := l.Append(b, AppendOptions{})
				if err != nil {
					rt.Fatal(err)
				}
				txnSeq[pid] += int32(n)
				x := openTxn[pid]
				if x == nil {
					x = &modelTxn{pid: pid, first: res.BaseOffset, marker: -1}
					openTxn[pid] = x
					txns = append(txns, x)
				}
				for i, r := range recs {
					w := cleanWrite{kv: r, offset: res.BaseOffset + int64(i), ts: clk.now().UnixMilli(), batchLast: res.LastOffset, txn: x}
					if r.tombstone {
						w.value = ""
					}
					byOffset[w.offset] = w
				}
			case 12:
				pid := rapid.SampledFrom(txnPIDs).Draw(rt, "txnProducer")
				commit := rapid.Bool().Draw(rt, "commit")
				op = fmt.Sprintf("marker (commit %v) of producer %d", commit, pid)
				res, err := l.AppendMarker(marker(pid, 0, 0, commit), AppendOptions{})
				if err != nil {
					rt.Fatal(err)
				}
				if x := openTxn[pid]; x != nil {
					x.marker, x.commit = res.BaseOffset, commit
					delete(openTxn, pid)
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
				// Forward only, as a leader's: the cleaner's output is
				// relative to the HW it cleaned below.
				l.SetHighWatermark(rapid.Int64Range(l.HighWatermark(), l.LogEndOffset()).Draw(rt, "hw"))
			}
			check(op)
		}
	})
}
