package storage

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGroupSyncCoversEveryCaller: callers arriving while a round runs
// share the next round, each caller is answered by a round that started
// after it called, and a round's error reaches exactly its callers.
func TestGroupSyncCoversEveryCaller(t *testing.T) {
	var rounds atomic.Int64
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	fail := errors.New("disk gone")
	var failRound atomic.Int64
	failRound.Store(2)
	g := newGroupSync(func() error {
		n := rounds.Add(1)
		started <- struct{}{}
		<-release
		if n == failRound.Load() {
			return fail
		}
		return nil
	})

	first := make(chan error, 1)
	go func() { first <- g.do() }()
	<-started // round 1 runs; the next callers queue behind it
	const waiters = 5
	errs := make(chan error, waiters)
	var wg sync.WaitGroup
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- g.do()
		}()
	}
	// Every waiter must have queued before round 1 ends, or it would
	// be alone in a round of its own.
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		queued := g.next != nil && g.next.callers == waiters
		g.mu.Unlock()
		if queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiters did not queue")
		}
		time.Sleep(time.Millisecond)
	}
	release <- struct{}{} // round 1 ends
	<-started             // round 2, the waiters', run by the first caller
	release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatalf("first caller, covered by round 1: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, fail) {
			t.Fatalf("a waiter covered by the failed round got %v", err)
		}
	}
	if n := rounds.Load(); n != 2 {
		t.Fatalf("%d rounds for 1 + %d callers, want 2", n, waiters)
	}

	// A caller after the rounds gets a round of its own, and its result.
	go func() { <-started; release <- struct{}{} }()
	if err := g.do(); err != nil {
		t.Fatalf("later caller: %v", err)
	}
	if n := rounds.Load(); n != 3 {
		t.Fatalf("%d rounds, want 3", n)
	}
}

// TestCreateLogFsyncs: a log created with its NewLog files costs one fsync
// of each file and one of its directory, plus the log dir's fsync, and
// its partition.metadata and leader epoch are there to read back.
func TestCreateLogFsyncs(t *testing.T) {
	dir := t.TempDir()
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{dir}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var mu sync.Mutex
	var synced []string
	old := fsyncFile
	fsyncFile = func(f *os.File) error {
		mu.Lock()
		synced = append(synced, filepath.Base(f.Name()))
		mu.Unlock()
		return old(f)
	}
	t.Cleanup(func() { fsyncFile = old })

	id := TopicID{1, 2, 3}
	l, err := m.GetOrCreateWith("t", 0, DefaultConfig(), true, &NewLog{TopicID: id, LeaderEpoch: 7})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{PartitionMetadataFile + tmpSuffix, LeaderEpochCheckpointFile + tmpSuffix, "t-0", filepath.Base(dir)}
	mu.Lock()
	got := slices.Clone(synced)
	mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("fsynced %v, want %v", got, want)
	}
	gotID, ok, err := ReadPartitionMetadata(filepath.Join(l.Dir(), PartitionMetadataFile))
	if err != nil || !ok || gotID != id {
		t.Fatalf("partition.metadata: %v %v %v", gotID, ok, err)
	}
	if e, ok := l.LeaderEpochs().Latest(); !ok || e != (EpochEntry{7, 0}) {
		t.Fatalf("leader epochs: %v %v", e, ok)
	}
	reread, err := OpenLeaderEpochCache(filepath.Join(l.Dir(), LeaderEpochCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := reread.Latest(); !ok || e != (EpochEntry{7, 0}) {
		t.Fatalf("leader-epoch-checkpoint on disk: %v %v", e, ok)
	}
}

// TestCreateLogFailedDirFsync: a creation whose directory fsync fails
// fails, is not served, and a later try creates it.
func TestCreateLogFailedDirFsync(t *testing.T) {
	dir := t.TempDir()
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{dir}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	fail := errors.New("EIO")
	old := fsyncFile
	fsyncFile = func(f *os.File) error {
		if f.Name() == dir {
			return fail
		}
		return old(f)
	}
	t.Cleanup(func() { fsyncFile = old })
	if _, err := m.GetOrCreateWith("t", 0, DefaultConfig(), true, &NewLog{LeaderEpoch: -1}); !errors.Is(err, fail) {
		t.Fatalf("creation with a failing log dir fsync: %v", err)
	}
	if _, ok := m.Get("t", 0); ok {
		t.Fatal("a log whose creation failed is served")
	}
	fsyncFile = old
	if _, err := m.GetOrCreateWith("t", 0, DefaultConfig(), true, &NewLog{LeaderEpoch: -1}); err != nil {
		t.Fatalf("second try: %v", err)
	}
}

// TestDeleteManyShareFsyncs: partitions deleted at once share the log
// dir's fsync and the checkpoint rewrite, and closing a log to delete it
// fsyncs nothing of it; a failing log dir fsync still fails each delete.
func TestDeleteManyShareFsyncs(t *testing.T) {
	dir := t.TempDir()
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{dir}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const n = 16
	for i := range n {
		l, err := m.GetOrCreate("t", int32(i), DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(producedBatch(t, 1_700_000_000_000, 3, CompressionNone, false, 0), AppendOptions{LeaderEpoch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	// The first fsync of the log dir, and the first of a checkpoint file,
	// wait until the other deletions have queued behind them, so the test
	// sees the sharing whatever the machine's scheduling.
	queued := func(g *groupSync) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.next != nil && g.next.callers == n-1
	}
	holdUntil := func(ok func() bool) {
		for deadline := time.Now().Add(10 * time.Second); !ok() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	var mu sync.Mutex
	var synced []string
	var heldDir, heldCkpt atomic.Bool
	old := fsyncFile
	fsyncFile = func(f *os.File) error {
		name := f.Name()
		mu.Lock()
		synced = append(synced, name)
		mu.Unlock()
		switch {
		case name == dir && heldDir.CompareAndSwap(false, true):
			holdUntil(func() bool {
				m.dirSyncs.mu.Lock()
				g := m.dirSyncs.m[dir]
				m.dirSyncs.mu.Unlock()
				return queued(g)
			})
		case strings.HasSuffix(name, tmpSuffix) && heldCkpt.CompareAndSwap(false, true):
			holdUntil(func() bool { return queued(m.deleteCkpt) })
		}
		return old(f)
	}
	t.Cleanup(func() { fsyncFile = old })
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Delete("t", int32(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	fsyncFile = old
	// One delete alone: a log dir fsync and 4 checkpoint files, each with
	// the log dir's fsync (9), and before closeDiscard its log's own
	// flushes. Sixteen at once: two rounds of the first (the held one, the
	// rest), two of the checkpoints (8 each), and no file of the logs.
	mu.Lock()
	got := slices.Clone(synced)
	mu.Unlock()
	for _, name := range got {
		if name != dir && !strings.HasSuffix(name, tmpSuffix) {
			t.Errorf("fsynced %s: a deleted log is closed without flushing", name)
		}
	}
	if len(got) > 2+2*8 {
		t.Fatalf("%d fsyncs for %d concurrent deletes, want at most %d: %v", len(got), n, 2+2*8, got)
	}
	for i := range n {
		if _, err := os.Stat(filepath.Join(dir, TopicPartition{"t", int32(i)}.String())); !os.IsNotExist(err) {
			t.Fatalf("t-%d still there: %v", i, err)
		}
	}

	if _, err := m.GetOrCreate("u", 0, DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("EIO")
	old = fsyncFile
	fsyncFile = func(f *os.File) error {
		if f.Name() == dir {
			return fail
		}
		return old(f)
	}
	defer func() { fsyncFile = old }()
	if err := m.Delete("u", 0); !errors.Is(err, fail) {
		t.Fatalf("delete with a failing log dir fsync: %v", err)
	}
}
