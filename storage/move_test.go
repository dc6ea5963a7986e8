package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A log moves to another dir while a writer keeps appending: every
// acknowledged append is in the moved log once, in order, with its
// offsets; the leader epochs, log start and high watermark come along;
// appends refused during the swap are ErrClosed (retried by clients); the
// log's files leave the old dir; and after a restart the log is found in
// the new dir.
func TestMoveLogWhileAppending(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	opts := ManagerOptions{Dirs: []string{a, b}, DisableScheduler: true}
	m, _, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.SegmentBytes = 64 << 10 // several segments
	l, err := m.GetOrCreate("mv", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Dir(l.Dir())
	dest := b
	if src == b {
		dest = a
	}
	var cur atomic.Pointer[Log]
	cur.Store(l)
	var (
		mu    sync.Mutex
		acked [][]byte
	)
	appendOne := func(i int) error {
		bt := batchOf(int64(i), "v", 5)
		for {
			_, err := cur.Load().Append(bt, AppendOptions{LeaderEpoch: 3})
			if errors.Is(err, ErrClosed) {
				time.Sleep(time.Millisecond)
				continue
			}
			if err != nil {
				return err
			}
			mu.Lock()
			acked = append(acked, bt)
			mu.Unlock()
			return nil
		}
	}
	for i := range 2000 {
		if err := appendOne(i); err != nil {
			t.Fatal(err)
		}
	}
	l.SetHighWatermark(5000)
	if _, err := l.DeleteRecords(100); err != nil {
		t.Fatal(err)
	}
	if err := l.LeaderEpochs().Assign(4, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	werr := make(chan error, 1)
	go func() {
		for i := 2000; i < 20000; i++ {
			select {
			case <-stop:
				werr <- nil
				return
			default:
			}
			if err := appendOne(i); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	if do, err := m.MoveTarget(l.tp, dest); err != nil || !do {
		t.Fatalf("MoveTarget: %v %v", do, err)
	}
	held := 0
	err = m.MoveLog(l.tp, dest, MoveOptions{
		Hold: func(<-chan struct{}) (func(), bool) { held++; return func() {}, true },
		Swap: func(nl *Log) { cur.Store(nl) },
	})
	if err != nil {
		t.Fatalf("MoveLog: %v", err)
	}
	time.Sleep(20 * time.Millisecond) // appends go on into the new log
	close(stop)
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	nl := cur.Load()
	if nl == l || filepath.Dir(nl.Dir()) != dest || held != 1 {
		t.Fatalf("after the move: log in %s (same object %v), Hold called %d times", nl.Dir(), nl == l, held)
	}
	if got, ok := m.Get("mv", 0); !ok || got != nl {
		t.Fatal("the manager hands out another log")
	}
	if d, _ := m.DirOf(l.tp); d != dest {
		t.Fatalf("DirOf %s, want %s", d, dest)
	}
	if _, err := os.Stat(filepath.Join(src, l.tp.String())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("old dir still there: %v", err)
	}
	if len(m.Moves()) != 0 {
		t.Fatalf("moves left: %v", m.Moves())
	}
	mu.Lock()
	want := acked
	mu.Unlock()
	if nl.HighWatermark() != 5000 || nl.LogStartOffset() != 100 {
		t.Fatalf("after the move: high watermark %d, log start %d; want 5000 and 100", nl.HighWatermark(), nl.LogStartOffset())
	}
	// Batches from the first one holding the log start on.
	requireBatchesFrom(t, nl, 100, want[100/5:])
	if e, ok := nl.LeaderEpochs().Latest(); !ok || e.Epoch < 3 {
		t.Fatalf("leader epochs %v", nl.LeaderEpochs().Entries())
	}
	found4 := false
	for _, e := range nl.LeaderEpochs().Entries() {
		found4 = found4 || e.Epoch == 4
	}
	if !found4 {
		t.Fatalf("epoch 4 (assigned with no record) lost: %v", nl.LeaderEpochs().Entries())
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, _, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2, ok := m2.Get("mv", 0)
	if !ok || filepath.Dir(l2.Dir()) != dest {
		t.Fatal("moved log not found in its new dir after a restart")
	}
	requireBatchesFrom(t, l2, 100, want[100/5:])
}

func requireBatchesFrom(t *testing.T, l *Log, from int64, want [][]byte) {
	t.Helper()
	got := readAll(t, l, from)
	if len(got) != len(want) {
		t.Fatalf("read %d batches from %d, want %d", len(got), from, len(want))
	}
	for i := range got {
		if string(got[i]) != string(want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
}

// A move that stopped: a future dir beside its current log is removed at
// the next start (the current log serves), and one whose current log is
// gone (the crash came between the swap's renames) becomes the log.
func TestMoveLogCrashRecovery(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	opts := ManagerOptions{Dirs: []string{a, b}, DisableScheduler: true}
	m, _, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for p := range int32(2) {
		l, err := m.GetOrCreate("c", p, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			bt := batchOf(int64(i), "x", 2)
			if _, err := l.Append(bt, AppendOptions{LeaderEpoch: 1}); err != nil {
				t.Fatal(err)
			}
			if p == 0 {
				want = append(want, bt)
			}
		}
	}
	l0, _ := m.Get("c", 0)
	l1, _ := m.Get("c", 1)
	d0, d1 := filepath.Dir(l0.Dir()), filepath.Dir(l1.Dir())
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	other := func(d string) string {
		if d == a {
			return b
		}
		return a
	}
	// c-0: the crash came between the renames: only the future is left.
	if err := os.Rename(filepath.Join(d0, "c-0"), filepath.Join(other(d0), "c-0.0011-future")); err != nil {
		t.Fatal(err)
	}
	// c-1: the crash came during the copy: a partial future beside it.
	if err := os.MkdirAll(filepath.Join(other(d1), "c-1.0022-future"), 0o755); err != nil {
		t.Fatal(err)
	}
	m2, _, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	n0, ok := m2.Get("c", 0)
	if !ok || filepath.Dir(n0.Dir()) != other(d0) {
		t.Fatal("the complete future log of c-0 was not promoted")
	}
	requireBatches(t, n0, want)
	if n1, ok := m2.Get("c", 1); !ok || filepath.Dir(n1.Dir()) != d1 {
		t.Fatal("c-1 lost its current log")
	}
	if _, err := os.Stat(filepath.Join(other(d1), "c-1.0022-future")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the unfinished future log of c-1 is still there: %v", err)
	}
}

// MoveTarget refuses a dir that is not a log dir, or is offline, and a
// partition with no log; a log already in the dir needs nothing.
func TestMoveTarget(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{a, b}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreate("t", 0, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	cur := filepath.Dir(l.Dir())
	if do, err := m.MoveTarget(l.tp, cur); do || err != nil {
		t.Fatalf("same dir: %v %v", do, err)
	}
	if _, err := m.MoveTarget(l.tp, filepath.Join(root, "c")); !errors.Is(err, ErrLogDirNotFound) {
		t.Fatalf("unknown dir: %v", err)
	}
	if _, err := m.MoveTarget(TopicPartition{"t", 9}, a); !errors.Is(err, ErrNoLog) {
		t.Fatalf("no log: %v", err)
	}
	other := a
	if cur == a {
		other = b
	}
	m.FailDir(other, errors.New("test"))
	time.Sleep(10 * time.Millisecond)
	if _, err := m.MoveTarget(l.tp, other); !errors.Is(err, ErrLogDirFailed) {
		t.Fatalf("offline dir: %v", err)
	}
}
