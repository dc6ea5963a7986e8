package storage

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestLeaderEpochCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), LeaderEpochCheckpointFile)
	c, err := OpenLeaderEpochCache(path)
	if err != nil {
		t.Fatal(err)
	}
	if e, o := c.EndOffsetFor(0, 10); e != UndefinedEpoch || o != UndefinedOffset {
		t.Fatalf("empty cache: %d %d", e, o)
	}
	for _, a := range []EpochEntry{{1, 0}, {1, 5}, {2, 10}, {4, 20}} {
		if err := c.Assign(a.Epoch, a.StartOffset); err != nil {
			t.Fatal(err)
		}
	}
	want := []EpochEntry{{1, 0}, {2, 10}, {4, 20}}
	if got := c.Entries(); !reflect.DeepEqual(got, want) {
		t.Fatalf("entries %v", got)
	}
	for _, tc := range []struct {
		req   int32
		epoch int32
		off   int64
	}{
		{-1, UndefinedEpoch, UndefinedOffset},
		{0, 0, 0}, // below the first epoch: (requested, first start)
		{1, 1, 10},
		{2, 2, 20},
		{3, 2, 20}, // unknown epoch between: largest known below it
		{4, 4, 30}, // the latest: LEO
		{5, UndefinedEpoch, UndefinedOffset},
	} {
		e, o := c.EndOffsetFor(tc.req, 30)
		if e != tc.epoch || o != tc.off {
			t.Errorf("EndOffsetFor(%d) = %d, %d; want %d, %d", tc.req, e, o, tc.epoch, tc.off)
		}
	}
	// Reopen reads the same entries from the file.
	c2, err := OpenLeaderEpochCache(path)
	if err != nil || !reflect.DeepEqual(c2.Entries(), want) {
		t.Fatalf("reopen: %v %v", c2.Entries(), err)
	}
	// A lower epoch at a later offset removes conflicting entries.
	if err := c.Assign(3, 25); err != nil {
		t.Fatal(err)
	}
	if got := c.Entries(); !reflect.DeepEqual(got, []EpochEntry{{1, 0}, {2, 10}, {3, 25}}) {
		t.Fatalf("after non-monotonic assign: %v", got)
	}
	if err := c.TruncateFromEnd(25); err != nil {
		t.Fatal(err)
	}
	if got := c.Entries(); !reflect.DeepEqual(got, []EpochEntry{{1, 0}, {2, 10}}) {
		t.Fatalf("truncate from end: %v", got)
	}
	if err := c.TruncateFromStart(12); err != nil {
		t.Fatal(err)
	}
	if got := c.Entries(); !reflect.DeepEqual(got, []EpochEntry{{2, 12}}) {
		t.Fatalf("truncate from start: %v", got)
	}
	if l, ok := c.Latest(); !ok || l != (EpochEntry{2, 12}) {
		t.Fatalf("latest %v", l)
	}
	if err := c.Assign(-1, 0); err == nil {
		t.Fatal("negative epoch accepted")
	}
}

func TestLeaderEpochCheckpointCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), LeaderEpochCheckpointFile)
	os.WriteFile(path, []byte("0\n2\n5 10\n3 20\n"), 0o644)
	if _, err := OpenLeaderEpochCache(path); !errors.Is(err, ErrCorruptFile) {
		t.Fatalf("non-monotonic file: %v", err)
	}
}
