package storage

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
)

// testClock is a settable clock for logs under test.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time          { return c.t }
func (c *testClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *testClock { return &testClock{t: time.UnixMilli(1_700_000_000_000)} }

// smallConfig makes segments and indexes small so tests roll often.
func smallConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 4096
	c.IndexIntervalBytes = 256
	c.SegmentIndexBytes = 1024
	c.FileDeleteDelayMs = 0
	return c
}

func partDir(t testing.TB) string { return filepath.Join(t.TempDir(), "topic-0") }

func openTestLog(t testing.TB, dir string, cfg Config, opts LogOptions) (*Log, *RecoveryReport) {
	t.Helper()
	l, rep, err := OpenLog(dir, cfg, opts)
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	return l, rep
}

// batchOf builds a batch of n records whose values name their index.
func batchOf(ts int64, tag string, n int) []byte {
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = fmt.Appendf(nil, "%s-%d", tag, i)
	}
	return recordbatch.BuildValues(ts, vals...)
}

// requireBatches fails t unless reading l from offset 0 gives exactly want.
func requireBatches(t testing.TB, l *Log, want [][]byte) {
	t.Helper()
	got := readAll(t, l, 0)
	if len(got) != len(want) {
		t.Fatalf("read %d batches, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
}

// readAll reads every batch from offset to the end through Read.
func readAll(t testing.TB, l *Log, from int64) []Batch {
	t.Helper()
	var out []Batch
	off := from
	for i := 0; i < 100000; i++ {
		r, err := l.Read(off, 1<<16)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if r.Len == 0 {
			return out
		}
		data, err := r.Bytes()
		if err != nil {
			t.Fatalf("region bytes: %v", err)
		}
		for len(data) > 0 {
			n, err := BatchSize(data)
			if err != nil || n > len(data) {
				t.Fatalf("region at offset %d holds a partial batch", off)
			}
			b := Batch(data[:n])
			if _, err := b.ValidateStored(); err != nil {
				t.Fatalf("read a corrupt batch at %d: %v", off, err)
			}
			out = append(out, b)
			off = b.NextOffset()
			data = data[n:]
		}
	}
	t.Fatal("readAll did not finish")
	return nil
}
