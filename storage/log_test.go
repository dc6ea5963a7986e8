package storage

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
)

func TestAppendReadReopen(t *testing.T) {
	dir := partDir(t)
	clk := newClock()
	cfg := smallConfig()
	cfg.SegmentBytes = 1024
	l, _ := openTestLog(t, dir, cfg, LogOptions{Now: clk.now})
	var want [][]byte
	next := int64(0)
	for i := 0; i < 50; i++ {
		b := batchOf(clk.now().UnixMilli(), "a", 1+i%5)
		res, err := l.Append(b, AppendOptions{LeaderEpoch: 3})
		if err != nil {
			t.Fatal(err)
		}
		if res.BaseOffset != next || res.LastOffset != next+int64(i%5) {
			t.Fatalf("append %d: offsets %d..%d, want base %d", i, res.BaseOffset, res.LastOffset, next)
		}
		next = res.LastOffset + 1
		want = append(want, append([]byte(nil), b...))
	}
	if l.NumSegments() < 3 {
		t.Fatalf("want several segments at segment.bytes=%d, got %d", cfg.SegmentBytes, l.NumSegments())
	}
	check := func(l *Log) {
		requireBatches(t, l, want)
		if l.LogEndOffset() != next {
			t.Fatalf("LEO %d, want %d", l.LogEndOffset(), next)
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, rep := openTestLog(t, dir, cfg, LogOptions{Now: clk.now, CleanShutdown: true})
	if len(rep.Recovered) != 0 || len(rep.RebuiltIndexes) != 0 {
		t.Fatalf("clean reopen rescanned: %+v", rep)
	}
	check(l2)
	l2.Close()
	l3, rep := openTestLog(t, dir, cfg, LogOptions{Now: clk.now})
	if len(rep.Recovered) == 0 || rep.LostData() {
		t.Fatalf("unclean reopen: %+v", rep)
	}
	check(l3)
	if e, off := l3.EndOffsetForEpoch(3); e != 3 || off != next {
		t.Fatalf("EndOffsetForEpoch(3) = %d, %d", e, off)
	}
	l3.Close()
}

func TestReadOutOfRange(t *testing.T) {
	l, _ := openTestLog(t, partDir(t), smallConfig(), LogOptions{})
	defer l.Close()
	if _, err := l.Append(batchOf(1, "x", 3), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if r, err := l.Read(3, 100); err != nil || r.Len != 0 {
		t.Fatalf("read at LEO: %v %v", r, err)
	}
	if _, err := l.Read(4, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past LEO: %v", err)
	}
	if _, err := l.Read(-1, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	// A read inside a batch returns the whole batch.
	r, err := l.Read(1, 1)
	if err != nil || r.Len == 0 {
		t.Fatalf("read mid-batch: %v %v", r, err)
	}
}

func TestLogAppendTime(t *testing.T) {
	clk := newClock()
	cfg := smallConfig()
	cfg.MessageTimestampType = LogAppendTime
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{Now: clk.now})
	defer l.Close()
	res, err := l.Append(batchOf(5, "x", 2), AppendOptions{})
	if err != nil || res.LogAppendTime != clk.now().UnixMilli() {
		t.Fatalf("append: %+v %v", res, err)
	}
	b := readAll(t, l, 0)[0]
	if !b.LogAppendTime() || b.MaxTimestamp() != clk.now().UnixMilli() || !b.CRCValid() {
		t.Fatal("batch not rewritten to LogAppendTime with a valid CRC")
	}
	if ts, off, ok := l.MaxTimestamp(); !ok || ts != clk.now().UnixMilli() || off != 0 {
		t.Fatalf("MaxTimestamp %d %d %v", ts, off, ok)
	}
}

func TestAppendRejects(t *testing.T) {
	clk := newClock()
	cfg := smallConfig()
	cfg.MaxMessageBytes = 200
	cfg.MessageTimestampBeforeMaxMs = 1000
	cfg.MessageTimestampAfterMaxMs = 1000
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{Now: clk.now})
	now := clk.now().UnixMilli()
	for _, tc := range []struct {
		name  string
		batch []byte
		want  error
	}{
		{"too large", batchOf(now, "big", 20), ErrRecordTooLarge},
		{"too old", batchOf(now-5000, "old", 1), ErrInvalidTimestamp},
		{"future", batchOf(now+5000, "new", 1), ErrInvalidTimestamp},
		{"corrupt", []byte("not a batch"), ErrCorruptBatch},
	} {
		if _, err := l.Append(tc.batch, AppendOptions{}); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	if l.LogEndOffset() != 0 {
		t.Fatal("a rejected batch moved the log end")
	}
	if _, err := l.AppendAsFollower(append(batchOf(now, "a", 1), 1, 2)); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("follower trailing garbage: %v", err)
	}
	l.Close()
	if _, err := l.Append(batchOf(now, "late", 1), AppendOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
}

func TestFindOffsetByTimestamp(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 600
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{})
	defer l.Close()
	// Batch i has records at 1000+10i, +1, +2: offsets 3i..3i+2.
	for i := 0; i < 30; i++ {
		ts := int64(1000 + 10*i)
		b := recordbatch.Build(ts, recordbatch.Record{Timestamp: ts, Value: []byte("a")}, recordbatch.Record{Timestamp: ts + 1, Value: []byte("b")}, recordbatch.Record{Timestamp: ts + 2, Value: []byte("c")})
		if _, err := l.Append(b, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if l.NumSegments() < 3 {
		t.Fatalf("%d segments", l.NumSegments())
	}
	for _, tc := range []struct {
		ts   int64
		off  int64
		want bool
	}{{0, 0, true}, {1000, 0, true}, {1001, 1, true}, {1003, 3, true}, {1152, 47, true}, {1291, 88, true}, {1293, 0, false}} {
		off, ok, err := l.FindOffsetByTimestamp(tc.ts)
		if err != nil || ok != tc.want || (ok && off != tc.off) {
			t.Errorf("ts %d: got %d %v %v, want %d %v", tc.ts, off, ok, err, tc.off, tc.want)
		}
	}
	if ts, off, ok := l.MaxTimestamp(); !ok || ts != 1292 || off != 89 {
		t.Fatalf("MaxTimestamp = %d %d %v", ts, off, ok)
	}
}

// FindByTimestamp answers the found record's own timestamp and offset and
// its batch's leader epoch, passing over records below the log start
// offset (Kafka's LogSegment.findOffsetByTimestamp).
func TestFindByTimestamp(t *testing.T) {
	cfg := smallConfig()
	clk := &testClock{t: time.UnixMilli(5000)}
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{Now: clk.now})
	defer l.Close()
	appendB := func(b []byte, epoch int32) {
		t.Helper()
		if _, err := l.Append(b, AppendOptions{LeaderEpoch: epoch}); err != nil {
			t.Fatal(err)
		}
	}
	// Offsets 0-2, uncompressed, timestamps out of order.
	appendB(recordbatch.Build(1000, recordbatch.Record{Timestamp: 1000}, recordbatch.Record{Timestamp: 990}, recordbatch.Record{Timestamp: 1010}), 3)
	// Offsets 3-5, gzip-compressed: decompressed for the search.
	gz := recordbatch.Build(2000, recordbatch.Record{Timestamp: 2000}, recordbatch.Record{Timestamp: 2005}, recordbatch.Record{Timestamp: 2010})
	appendB(compressBatch(t, gz, codecCases[1]), 4)
	// Offsets 6-7, stamped with LogAppendTime 5000: every record carries it.
	cfg.MessageTimestampType = LogAppendTime
	if err := l.UpdateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	appendB(recordbatch.Build(3000, recordbatch.Record{Timestamp: 3000}, recordbatch.Record{Timestamp: 3001}), 5)

	check := func(ts int64, want TimestampAndOffset, wantOK bool) {
		t.Helper()
		got, ok, err := l.FindByTimestamp(ts)
		if err != nil || ok != wantOK || (ok && got != want) {
			t.Fatalf("ts %d: got %+v %v %v, want %+v %v", ts, got, ok, err, want, wantOK)
		}
		if off, ok, err := l.FindOffsetByTimestamp(ts); err != nil || ok != wantOK || (ok && off != want.Offset) {
			t.Fatalf("FindOffsetByTimestamp(%d) = %d %v %v", ts, off, ok, err)
		}
	}
	check(995, TimestampAndOffset{Timestamp: 1000, Offset: 0, LeaderEpoch: 3}, true)
	check(1001, TimestampAndOffset{Timestamp: 1010, Offset: 2, LeaderEpoch: 3}, true)
	check(2000, TimestampAndOffset{Timestamp: 2000, Offset: 3, LeaderEpoch: 4}, true) // compressed: its first record
	check(2003, TimestampAndOffset{Timestamp: 2005, Offset: 4, LeaderEpoch: 4}, true) // compressed: the record inside
	check(4000, TimestampAndOffset{Timestamp: 5000, Offset: 6, LeaderEpoch: 5}, true)
	check(5001, TimestampAndOffset{}, false)

	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.DeleteRecords(1); err != nil {
		t.Fatal(err)
	}
	// Offset 1 (990) is below the target and offset 0 below the log start.
	check(995, TimestampAndOffset{Timestamp: 1010, Offset: 2, LeaderEpoch: 3}, true)
	if _, err := l.DeleteRecords(4); err != nil {
		t.Fatal(err)
	}
	check(995, TimestampAndOffset{Timestamp: 2005, Offset: 4, LeaderEpoch: 4}, true)
}

func TestSegmentMsRoll(t *testing.T) {
	clk := newClock()
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.SegmentMs = 1000
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{Now: clk.now})
	defer l.Close()
	for i := 0; i < 5; i++ {
		if _, err := l.Append(batchOf(clk.now().UnixMilli(), "x", 1), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		clk.advance(600 * time.Millisecond)
	}
	// Batches at 0, 600, 1200, 1800, 2400 ms: rolls before 1200 and 2400.
	if n := l.NumSegments(); n != 3 {
		t.Fatalf("%d segments, want 3", n)
	}
}

func TestRetention(t *testing.T) {
	clk := newClock()
	cfg := smallConfig()
	cfg.SegmentBytes = 300
	cfg.RetentionMs = 10_000
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{Now: clk.now})
	defer l.Close()
	for i := 0; i < 20; i++ {
		if _, err := l.Append(batchOf(clk.now().UnixMilli(), "x", 2), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		clk.advance(time.Second)
	}
	segs := l.NumSegments()
	// Nothing goes above the high watermark.
	if res, err := l.ApplyRetention(clk.now().Add(time.Hour)); err != nil || res.Segments != 0 {
		t.Fatalf("retention with hw 0: %+v %v", res, err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	res, err := l.ApplyRetention(clk.now())
	if err != nil || res.Segments == 0 || res.Segments >= segs || res.LogStartOffset == 0 {
		t.Fatalf("time retention: %+v %v (of %d segments)", res, err, segs)
	}
	for _, b := range readAll(t, l, l.LogStartOffset()) {
		if b.MaxTimestamp() < clk.now().UnixMilli()-10_000-3000 {
			t.Fatalf("an expired segment survived: batch at %d", b.MaxTimestamp())
		}
	}
	cfg.RetentionMs = -1
	cfg.RetentionBytes = 500
	l.UpdateConfig(cfg)
	if _, err := l.ApplyRetention(clk.now()); err != nil {
		t.Fatal(err)
	}
	if l.Size()-int64(l.active().size.Load()) > 500 {
		t.Fatalf("size retention left %d bytes", l.Size())
	}
	// Everything expired: the active segment is rolled and removed too.
	cfg.RetentionMs = 1
	l.UpdateConfig(cfg)
	if _, err := l.ApplyRetention(clk.now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != l.LogEndOffset() || l.Size() != 0 {
		t.Fatalf("all expired: log [%d, %d) size %d", l.LogStartOffset(), l.LogEndOffset(), l.Size())
	}
}

func TestReadUpToAndMaxBytes(t *testing.T) {
	l, _ := openTestLog(t, partDir(t), smallConfig(), LogOptions{})
	defer l.Close()
	var sizes []int64
	for i := 0; i < 10; i++ {
		b := batchOf(1, "x", 2)
		sizes = append(sizes, int64(len(b)))
		l.Append(b, AppendOptions{})
	}
	r, err := l.ReadUpTo(0, 1<<20, 5) // offsets 0..3 are whole batches below 5
	if err != nil || r.Len != sizes[0]+sizes[1] {
		t.Fatalf("ReadUpTo(0, _, 5): len %d %v", r.Len, err)
	}
	if r, err := l.ReadUpTo(4, 1<<20, 5); err != nil || r.Len != 0 {
		t.Fatalf("the batch holding the limit is excluded: %d %v", r.Len, err)
	}
	r, _ = l.Read(0, int(sizes[0]+sizes[1]+sizes[2]/2))
	if r.Len != sizes[0]+sizes[1] {
		t.Fatalf("maxBytes cut inside a batch: len %d", r.Len)
	}
	r, _ = l.Read(0, 1)
	if r.Len != sizes[0] {
		t.Fatalf("maxBytes below one batch must still return it: %d", r.Len)
	}
}

// TestConcurrentReaders runs readers beside a writer that appends, rolls
// and truncates; every region read must hold whole valid batches (the race
// detector checks the publication).
func TestConcurrentReaders(t *testing.T) {
	cfg := smallConfig()
	cfg.FileDeleteDelayMs = 60_000
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{})
	done := make(chan struct{})
	errs := make(chan error, 4)
	// A truncation rewrites the bytes under regions read before it, so a
	// reader judges a region only if no truncation began between its Read
	// and its Bytes.
	var truncations atomic.Int64
	for r := 0; r < 3; r++ {
		go func() {
			var off int64
			for i := 0; ; i++ {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if i%10 == 0 {
					l.MaxTimestamp()
					if _, _, err := l.FindOffsetByTimestamp(1); err != nil {
						errs <- err
						return
					}
				}
				gen := truncations.Load()
				reg, err := l.Read(off, 4096)
				if errors.Is(err, ErrOffsetOutOfRange) {
					off = l.LogStartOffset()
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				data, err := reg.Bytes()
				if err != nil {
					errs <- err
					return
				}
				stale := truncations.Load() != gen
				for len(data) > 0 {
					n, err := BatchSize(data)
					if (err != nil || n > len(data)) && stale {
						break
					}
					if err != nil || n > len(data) {
						errs <- fmt.Errorf("partial batch in a region")
						return
					}
					if _, err := Batch(data[:n]).ValidateStored(); err != nil {
						// A truncation may have rewritten the bytes under an
						// old region; only a published region must be whole.
						break
					}
					off = Batch(data[:n]).NextOffset()
					data = data[n:]
				}
				if reg.Len == 0 {
					off = 0
				}
			}
		}()
	}
	for i := 0; i < 400; i++ {
		if _, err := l.Append(batchOf(1, "c", 1+i%4), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if i%97 == 96 {
			truncations.Add(1)
			if err := l.Truncate(l.LogEndOffset() - 5); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	for r := 0; r < 3; r++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
}

func TestGroupCommit(t *testing.T) {
	cfg := smallConfig()
	cfg.FlushMessages = 1
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{})
	defer l.Close()
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 20; i++ {
				if _, err := l.Append(batchOf(1, "g", 1), AppendOptions{}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if l.RecoveryPoint() != l.LogEndOffset() || l.LogEndOffset() != 160 {
		t.Fatalf("recovery point %d, LEO %d", l.RecoveryPoint(), l.LogEndOffset())
	}
}
