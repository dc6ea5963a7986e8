package storage

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// abandonManager leaves a manager's files as a SIGKILL would: no flush,
// no trimmed indexes (the active ones stay preallocated), no producer
// snapshot, no checkpoint and no clean-shutdown marker. It only closes the
// descriptors so the test process does not leak them.
func abandonManager(t testing.TB, m *Manager) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, l := range m.logs {
		l.mu.Lock()
		l.closed = true
		l.flushMu.Lock()
		l.shut = true
		for _, s := range append(l.segments, l.pending...) {
			_ = s.f.Close() // the indexes hold no descriptor between writes
		}
		l.flushMu.Unlock()
		l.mu.Unlock()
	}
}

// makeSmallLogs creates n single-partition logs with a few small batches
// each under dir, with the default config (10 MiB index preallocation),
// and abandons them as an unclean stop would.
func makeSmallLogs(t testing.TB, dir string, n int) {
	t.Helper()
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{dir}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		l, err := m.GetOrCreate("t"+strconv.Itoa(i), 0, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if _, err := l.Append(batchOf(1_700_000_000_000+int64(j), "v", 2), AppendOptions{LeaderEpoch: 1}); err != nil {
				t.Fatal(err)
			}
		}
		l.SetHighWatermark(l.LogEndOffset())
	}
	abandonManager(t, m)
}

// countFsyncs replaces the fsync hook with one that counts and still
// syncs.
func countFsyncs(t testing.TB) *atomic.Int64 {
	var n atomic.Int64
	old := fsyncFile
	fsyncFile = func(f *os.File) error { n.Add(1); return old(f) }
	t.Cleanup(func() { fsyncFile = old })
	return &n
}

// BenchmarkOpenManagerUnclean measures OpenManager over 500 nearly empty
// logs after an unclean stop (the restart of a node holding many small
// partitions), with real fsyncs, and reports the fsyncs it made.
func BenchmarkOpenManagerUnclean(b *testing.B) {
	const n = 500
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "d"+strconv.Itoa(i))
		makeSmallLogs(b, dir, n)
		syncs := countFsyncs(b)
		b.StartTimer()
		start := time.Now()
		m, reps, err := OpenManager(ManagerOptions{Dirs: []string{dir}, DisableScheduler: true})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/open")
		b.StopTimer()
		b.ReportMetric(float64(syncs.Load()), "fsyncs/open")
		if len(reps) != n {
			b.Fatalf("%d reports, want %d", len(reps), n)
		}
		// The flush of what recovery validated, which the scheduler's
		// first tick does in the background.
		start = time.Now()
		if err := m.Tick(time.Now(), false, false, false, false); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/background-flush")
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// TestOpenManagerAfterUncleanStop: after an unclean stop of many small
// logs, every log comes back whole with its indexes rebuilt, opening
// fsyncs nothing but the per-dir checkpoint files (rebuilt indexes are
// caches; what was rescanned stays above the recovery point until the
// next flush), and that flush, by the caller or the scheduler's next tick,
// fsyncs the segments and the partition directory and advances the
// recovery point.
func TestOpenManagerAfterUncleanStop(t *testing.T) {
	const n = 20
	dir := filepath.Join(t.TempDir(), "d")
	makeSmallLogs(t, dir, n)
	var mu sync.Mutex
	var synced []string
	old := fsyncFile
	fsyncFile = func(f *os.File) error {
		mu.Lock()
		synced = append(synced, f.Name())
		mu.Unlock()
		return nil
	}
	t.Cleanup(func() { fsyncFile = old })
	fsynced := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(synced)
	}

	m, reps, err := OpenManager(ManagerOptions{Dirs: []string{dir}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(reps) != n {
		t.Fatalf("%d reports, want %d", len(reps), n)
	}
	for _, rep := range reps {
		if rep.Clean || len(rep.Recovered) != 1 || rep.LostData() || rep.LogEndOffset != 6 {
			t.Fatalf("report %+v", rep)
		}
	}
	for _, p := range fsynced() {
		if !strings.HasSuffix(p, "-offset-checkpoint"+tmpSuffix) && p != dir {
			t.Fatalf("opening fsynced %s; want only the checkpoint files and their dir", p)
		}
	}
	l, ok := m.Get("t3", 0)
	if !ok {
		t.Fatal("log t3-0 missing")
	}
	if got := readAll(t, l, 0); len(got) != 3 {
		t.Fatalf("read %d batches, want 3", len(got))
	}
	if off, ok, err := l.FindOffsetByTimestamp(1_700_000_000_002); err != nil || !ok || off != 4 {
		t.Fatalf("FindOffsetByTimestamp: %d %v %v", off, ok, err)
	}
	if l.RecoveryPoint() != 0 {
		t.Fatalf("recovery point %d after an unclean open of a log never flushed, want 0", l.RecoveryPoint())
	}
	mu.Lock()
	synced = nil
	mu.Unlock()
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if l.RecoveryPoint() != 6 {
		t.Fatalf("recovery point %d after Sync, want 6", l.RecoveryPoint())
	}
	if got := fsynced(); !slices.Contains(got, l.Dir()) || !slices.Contains(got, filepath.Join(l.Dir(), segmentName(0)+logSuffix)) {
		t.Fatalf("first Sync after an unclean open fsynced %v; want the segment and the partition dir", got)
	}

	// The scheduler's next tick flushes the other recovered logs and
	// checkpoints their recovery points, so another unclean stop does not
	// rescan them.
	if err := m.Tick(time.Now(), false, false, false, false); err != nil {
		t.Fatal(err)
	}
	got := fsynced()
	for _, l := range m.Logs() {
		if l.RecoveryPoint() != 6 {
			t.Fatalf("%s: recovery point %d after the first tick, want 6", l.Dir(), l.RecoveryPoint())
		}
		if l.Dir() != filepath.Join(dir, "t3-0") && !slices.Contains(got, l.Dir()) {
			t.Fatalf("%s: partition dir not fsynced by the first tick", l.Dir())
		}
	}
	rps, err := ReadOffsetCheckpoint(filepath.Join(dir, RecoveryPointCheckpointFile))
	if err != nil || len(rps) != n {
		t.Fatalf("recovery points %v %v", rps, err)
	}
	for tp, rp := range rps {
		if rp != 6 {
			t.Fatalf("%s: checkpointed recovery point %d, want 6", tp, rp)
		}
	}
}
