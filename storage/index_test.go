package storage

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOffsetIndexLookup(t *testing.T) {
	x, err := openOffsetIndex(filepath.Join(t.TempDir(), "0.index"), 100, 64, false)
	if err != nil {
		t.Fatal(err)
	}
	defer x.close()
	if err := x.preallocate(); err != nil {
		t.Fatal(err)
	}
	for i, e := range [][2]int64{{110, 0}, {120, 500}, {130, 900}} {
		if err := x.add(e[0], e[1]); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	for _, tc := range []struct{ target, off, pos int64 }{
		{99, 100, 0}, {100, 100, 0}, {110, 110, 0}, {119, 110, 0}, {125, 120, 500}, {1000, 130, 900},
	} {
		off, pos := x.lookup(tc.target)
		if off != tc.off || pos != tc.pos {
			t.Errorf("lookup(%d) = %d,%d want %d,%d", tc.target, off, pos, tc.off, tc.pos)
		}
	}
	if off, pos := x.lookupPosition(600); off != 120 || pos != 500 {
		t.Errorf("lookupPosition(600) = %d,%d", off, pos)
	}
	if err := x.truncateTo(120); err != nil || x.entries() != 1 {
		t.Fatalf("truncateTo: %v, %d entries", err, x.entries())
	}
	if err := x.trim(); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(x.path)
	if st.Size() != offsetEntrySize {
		t.Fatalf("trimmed size %d", st.Size())
	}
	if !x.full() == (x.entries() >= 8) {
		t.Fatal("full() disagrees with the entry count")
	}
}

func TestTimeIndex(t *testing.T) {
	x, err := openTimeIndex(filepath.Join(t.TempDir(), "0.timeindex"), 0, 120, false)
	if err != nil {
		t.Fatal(err)
	}
	defer x.close()
	for _, e := range [][2]int64{{100, 1}, {100, 5}, {90, 6}, {200, 8}} {
		if err := x.maybeAdd(e[0], e[1]); err != nil {
			t.Fatal(err)
		}
	}
	if x.entries() != 2 {
		t.Fatalf("only strictly growing timestamps are added: %d entries", x.entries())
	}
	if got := x.lookupBefore(150); got != 1 {
		t.Errorf("lookupBefore(150) = %d", got)
	}
	if got := x.lookupBefore(100); got != 0 {
		t.Errorf("lookupBefore(100) = %d", got)
	}
	if got := x.lookupBefore(1000); got != 8 {
		t.Errorf("lookupBefore(1000) = %d", got)
	}
	if err := x.check(9); err != nil {
		t.Fatal(err)
	}
	if err := x.check(8); err == nil {
		t.Fatal("entry at the next offset accepted")
	}
}

// fuzzIndexFile writes data as an index file and opens it: either an error
// or a loaded index whose check and lookups run without panicking.
func FuzzOffsetIndexFile(f *testing.F) {
	f.Add([]byte{}, int64(0))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 1, 0}, int64(50))
	f.Add([]byte{1, 2, 3}, int64(-5))
	f.Fuzz(func(t *testing.T, data []byte, target int64) {
		path := filepath.Join(t.TempDir(), "00000000000000000000.index")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		x, err := openOffsetIndex(path, 0, 1<<20, false)
		if x == nil {
			return
		}
		defer x.close()
		if err != nil {
			if len(data)%offsetEntrySize == 0 {
				t.Fatalf("whole entries rejected: %v", err)
			}
			return
		}
		if x.check(1<<40, 1<<40) == nil {
			off, pos := x.lookup(target)
			if off > target && off != 0 || pos < 0 {
				t.Fatalf("lookup(%d) = %d,%d", target, off, pos)
			}
		}
		x.lookupPosition(target)
		x.truncateTo(target)
	})
}

func FuzzTimeIndexFile(f *testing.F) {
	f.Add([]byte{}, int64(0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 1}, int64(50))
	f.Fuzz(func(t *testing.T, data []byte, ts int64) {
		path := filepath.Join(t.TempDir(), "00000000000000000000.timeindex")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		x, err := openTimeIndex(path, 0, 1<<20, false)
		if x == nil {
			return
		}
		defer x.close()
		if err != nil {
			return
		}
		if x.check(1<<40) == nil {
			if got := x.lookupBefore(ts); got < 0 {
				t.Fatalf("lookupBefore(%d) = %d", ts, got)
			}
		}
		x.last()
		x.truncateTo(ts)
	})
}
