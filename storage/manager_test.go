package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestManagerLifecycle(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "d1"), filepath.Join(t.TempDir(), "d2")}
	clk := newClock()
	open := func() (*Manager, []*RecoveryReport) {
		m, reps, err := OpenManager(ManagerOptions{Dirs: dirs, Now: clk.now, ConfigFor: func(string) Config { return smallConfig() }, FlushCheckInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return m, reps
	}
	m, _ := open()
	for p := int32(0); p < 4; p++ {
		l, err := m.GetOrCreate("orders", p, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			if _, err := l.Append(batchOf(1, "m", 2), AppendOptions{LeaderEpoch: 1}); err != nil {
				t.Fatal(err)
			}
		}
		l.SetHighWatermark(6)
	}
	if _, err := m.GetOrCreate("bad/name", 0, smallConfig()); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("bad topic name: %v", err)
	}
	// Partitions spread over both dirs.
	for _, d := range dirs {
		if ents, _ := filepath.Glob(filepath.Join(d, "orders-*")); len(ents) != 2 {
			t.Fatalf("%s holds %d partitions, want 2", d, len(ents))
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, CleanShutdownFile)); err != nil {
			t.Fatalf("no clean-shutdown marker in %s", d)
		}
		hws, err := ReadOffsetCheckpoint(filepath.Join(d, ReplicationCheckpointFile))
		if err != nil || len(hws) != 2 {
			t.Fatalf("replication checkpoint in %s: %v %v", d, hws, err)
		}
		for tp, hw := range hws {
			if hw != 6 {
				t.Fatalf("%s: hw %d", tp, hw)
			}
		}
	}
	// Clean reopen: nothing rescanned, offsets restored, marker removed.
	m, reps := open()
	if len(reps) != 4 {
		t.Fatalf("%d reports", len(reps))
	}
	for _, r := range reps {
		if !r.Clean || len(r.Recovered) != 0 {
			t.Fatalf("clean reopen rescanned: %+v", r)
		}
	}
	l, ok := m.Get("orders", 2)
	if !ok || l.LogEndOffset() != 10 || l.HighWatermark() != 6 {
		t.Fatalf("orders-2 after reopen: ok %v", ok)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], CleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatal("marker still present while running")
	}
	if _, err := l.DeleteRecords(4); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete("orders", 3); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Get("orders", 3); ok {
		t.Fatal("deleted partition still present")
	}
	if err := m.Tick(clk.now(), true, true, true, true); err != nil {
		t.Fatal(err)
	}
	starts, _ := ReadOffsetCheckpoint(filepath.Join(m.dirOf[TopicPartition{"orders", 2}], LogStartOffsetCheckpointFile))
	if starts[TopicPartition{"orders", 2}] != 4 {
		t.Fatalf("log start checkpoint %v", starts)
	}
	// Simulate a crash: drop the logs without Close; no marker is written.
	close(m.stop)
	<-m.done
	m.mu.Lock()
	for _, l := range m.logs {
		l.Close()
	}
	m.logs = map[TopicPartition]*Log{}
	m.mu.Unlock()
	m, reps = open()
	defer m.Close()
	if len(reps) != 3 {
		t.Fatalf("%d logs after delete and crash", len(reps))
	}
	for _, r := range reps {
		if r.Clean || len(r.Recovered) == 0 {
			t.Fatalf("unclean reopen did not recover: %+v", r)
		}
	}
	l, _ = m.Get("orders", 2)
	if l.LogStartOffset() != 4 || l.LogEndOffset() != 10 {
		t.Fatalf("orders-2: [%d, %d)", l.LogStartOffset(), l.LogEndOffset())
	}
}

func TestManagerRejectsCorruptCheckpoint(t *testing.T) {
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, RecoveryPointCheckpointFile), []byte("7\n"), 0o644)
	_, _, err := OpenManager(ManagerOptions{Dirs: []string{d}, DisableScheduler: true})
	if !errors.Is(err, ErrCorruptFile) {
		t.Fatalf("got %v", err)
	}
}

func TestManagerPassesFollowerDropBehind(t *testing.T) {
	d := t.TempDir()
	open := func() *Manager {
		m, _, err := OpenManager(ManagerOptions{Dirs: []string{d}, DisableScheduler: true, FollowerDropBehind: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := open()
	l, err := m.GetOrCreate("t", 0, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if l.followerDropBehind != 1<<20 {
		t.Fatalf("created log drops behind %d", l.followerDropBehind)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = open()
	defer m.Close()
	if l, ok := m.Get("t", 0); !ok || l.followerDropBehind != 1<<20 {
		t.Fatalf("reopened log: %v %d", ok, l.followerDropBehind)
	}
}

// TestManagerGetOrCreateConcurrent: creations run outside the manager's
// lock, so they overlap; callers asking for one partition at once all get
// the one log, and different partitions spread over the dirs as before.
func TestManagerGetOrCreateConcurrent(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m, _, err := OpenManager(ManagerOptions{Dirs: dirs, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const parts, callers = 16, 4
	logs := make([][callers]*Log, parts)
	var wg sync.WaitGroup
	for p := range parts {
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := m.GetOrCreate("c", int32(p), DefaultConfig())
				if err != nil {
					t.Error(err)
				}
				logs[p][c] = l
			}()
		}
	}
	wg.Wait()
	perDir := map[string]int{}
	for p := range parts {
		for c := 1; c < callers; c++ {
			if logs[p][c] != logs[p][0] {
				t.Fatalf("partition %d: callers got different logs", p)
			}
		}
		perDir[filepath.Dir(logs[p][0].Dir())]++
	}
	if perDir[dirs[0]] != parts/2 || perDir[dirs[1]] != parts/2 {
		t.Fatalf("partitions per dir %v, want %d each", perDir, parts/2)
	}
}
