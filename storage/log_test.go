package storage

import (
	"bytes"
	"errors"
	"testing"
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
		got := readAll(t, l, 0)
		if len(got) != len(want) {
			t.Fatalf("read %d batches, want %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("batch %d differs", i)
			}
		}
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
