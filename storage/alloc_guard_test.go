package storage

import (
	"io"
	"path/filepath"
	"strconv"
	"testing"
)

// Allocation guards for the hot paths (issue 18: allocation-free per
// record). They count allocations per call with testing.AllocsPerRun, never
// time, so they hold on a loaded machine. The bounds are what the paths
// allocate today per call, whatever the batch's record count: a change that
// allocates per record (or per call on top) fails here. BenchmarkAppend,
// BenchmarkRead and BenchmarkAppendAsFollower report the same paths with
// -benchmem.

// The bounds per call of each path. Under the race detector sync.Pool
// drops items at random and the read path's reader escapes: a few more.
const (
	appendAllocs       = 0
	followerAllocs     = 0
	readAllocs         = 1 // the reader of the range Read returns (r.Reader)
	raceAllocsPerRound = 3
)

func allocBound(n int) float64 {
	if raceEnabled {
		return float64(n + raceAllocsPerRound)
	}
	return float64(n)
}

func TestAllocsAppendPath(t *testing.T) {
	for _, records := range []int{1, 16} {
		batch := benchBatch(records * 1024)
		l, _, err := OpenLog(filepath.Join(t.TempDir(), "a-0"), DefaultConfig(), LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		appendOne := func() {
			if _, err := l.Append(batch, AppendOptions{LeaderEpoch: 1}); err != nil {
				t.Fatal(err)
			}
		}
		appendOne()
		if got := testing.AllocsPerRun(200, appendOne); got > allocBound(appendAllocs) {
			t.Errorf("Log.Append of %d records: %v allocations per call, want at most %d", records, got, appendAllocs)
		}
		l.Close()
	}
}

func TestAllocsFollowerAppendPath(t *testing.T) {
	for _, records := range []int{1, 16} {
		batch := benchBatch(records * 1024)
		l, _, err := OpenLog(filepath.Join(t.TempDir(), "f-0"), DefaultConfig(), LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		follow := func() {
			Batch(batch).SetBaseOffset(l.LogEndOffset())
			if _, err := l.AppendAsFollower(batch); err != nil {
				t.Fatal(err)
			}
		}
		follow()
		if got := testing.AllocsPerRun(200, follow); got > allocBound(followerAllocs) {
			t.Errorf("Log.AppendAsFollower of %d records: %v allocations per call, want at most %d", records, got, followerAllocs)
		}
		l.Close()
	}
}

// TestAllocsReadPath: the read a Fetch (and a follower's fetch) makes of a
// log: Read of a range and the copy of its bytes.
func TestAllocsReadPath(t *testing.T) {
	for _, records := range []int{1, 16} {
		batch := benchBatch(records * 1024)
		l, _, err := OpenLog(filepath.Join(t.TempDir(), "r-0"), DefaultConfig(), LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for range 64 {
			if _, err := l.Append(batch, AppendOptions{LeaderEpoch: 1}); err != nil {
				t.Fatal(err)
			}
		}
		buf := make([]byte, 1<<20)
		read := func() {
			r, err := l.Read(0, 64<<10)
			if err != nil || r.Len == 0 {
				t.Fatal(r, err)
			}
			if _, err := io.ReadFull(r.Reader(), buf[:r.Len]); err != nil {
				t.Fatal(err)
			}
		}
		read()
		if got := testing.AllocsPerRun(200, read); got > allocBound(readAllocs) {
			t.Errorf("Log.Read of %d-record batches: %v allocations per call, want at most %d", records, got, readAllocs)
		}
		l.Close()
	}
}

// BenchmarkAppendAsFollower is the follower fetch path's append: a fetched
// batch, already offset-assigned by the leader, validated and written.
func BenchmarkAppendAsFollower(b *testing.B) {
	for _, size := range benchSizes {
		batch := benchBatch(size)
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			l, _, err := OpenLog(filepath.Join(b.TempDir(), "f-0"), DefaultConfig(), LogOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				Batch(batch).SetBaseOffset(l.LogEndOffset())
				if _, err := l.AppendAsFollower(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
