package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// failingDir is a SyncData that answers EIO, as a dying disk does, for the
// files under one dir once armed.
type failingDir struct {
	mu    sync.Mutex
	dir   string
	armed bool
}

func (f *failingDir) sync(file *os.File) error {
	f.mu.Lock()
	bad := f.armed && strings.HasPrefix(file.Name(), f.dir+string(filepath.Separator))
	f.mu.Unlock()
	if bad {
		return &fs.PathError{Op: "fsync", Path: file.Name(), Err: syscall.EIO}
	}
	return file.Sync()
}

type dirFailures struct {
	mu    sync.Mutex
	dirs  []string
	parts map[string][]TopicPartition
	ch    chan struct{}
}

func (d *dirFailures) record(dir string, parts []TopicPartition, _ error) {
	d.mu.Lock()
	d.dirs = append(d.dirs, dir)
	d.parts[dir] = parts
	d.mu.Unlock()
	d.ch <- struct{}{}
}

// An fsync error in one log dir takes that dir offline, with its logs and
// only its logs: the request that met it answers ErrLogDirFailed, the
// hook is told the dir and its partitions once, the other dir keeps
// taking appends and new logs, and the failed partitions are not made
// again elsewhere. A restart with the dir unusable (a file where the dir
// was) starts on the good dir with every record it held.
func TestLogDirFailureTakesOnlyThatDirOffline(t *testing.T) {
	root := t.TempDir()
	good, bad := filepath.Join(root, "a"), filepath.Join(root, "b")
	fd := &failingDir{dir: bad}
	seen := &dirFailures{parts: map[string][]TopicPartition{}, ch: make(chan struct{}, 4)}
	opts := ManagerOptions{Dirs: []string{good, bad}, DisableScheduler: true, SyncData: fd.sync, OnDirFailure: seen.record}
	m, _, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := durableConfig()
	var logs []*Log
	for p := range int32(4) {
		l, err := m.GetOrCreate("t", p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	inDir := func(l *Log, d string) bool { return filepath.Dir(l.Dir()) == d }
	var goodLogs, badLogs []*Log
	for _, l := range logs {
		if inDir(l, bad) {
			badLogs = append(badLogs, l)
		} else {
			goodLogs = append(goodLogs, l)
		}
	}
	if len(goodLogs) != 2 || len(badLogs) != 2 {
		t.Fatalf("placement: %d logs in %s, %d in %s; want 2 and 2", len(goodLogs), good, len(badLogs), bad)
	}
	var kept [][]byte
	for _, l := range goodLogs {
		b := batchOf(1, l.tp.String(), 3)
		if _, err := l.Append(b, AppendOptions{LeaderEpoch: 1}); err != nil {
			t.Fatal(err)
		}
		waitDurable(t, l)
		kept = append(kept, b)
	}

	fd.mu.Lock()
	fd.armed = true
	fd.mu.Unlock()
	if _, err := badLogs[0].Append(batchOf(1, "x", 1), AppendOptions{LeaderEpoch: 1}); err != nil {
		t.Fatal(err) // the write itself succeeds; its fsync fails
	}
	waitDurable(t, badLogs[0])
	if err := badLogs[0].FlushError(); !errors.Is(err, ErrLogDirFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("flush error %v; want ErrLogDirFailed wrapping EIO", err)
	}
	select {
	case <-seen.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("OnDirFailure not called within 10s")
	}
	seen.mu.Lock()
	if !slices.Equal(seen.dirs, []string{bad}) {
		t.Fatalf("failed dirs %v, want [%s]", seen.dirs, bad)
	}
	wantParts := []TopicPartition{badLogs[0].tp, badLogs[1].tp}
	slices.SortFunc(wantParts, func(a, b TopicPartition) int { return int(a.Partition - b.Partition) })
	if !slices.Equal(seen.parts[bad], wantParts) {
		t.Fatalf("failed partitions %v, want %v", seen.parts[bad], wantParts)
	}
	seen.mu.Unlock()
	if got := m.OfflineDirs(); len(got) != 1 || got[0].Dir != bad {
		t.Fatalf("OfflineDirs %v", got)
	}
	if _, err := badLogs[1].Append(batchOf(1, "y", 1), AppendOptions{LeaderEpoch: 1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append to a log of the failed dir: %v, want ErrClosed", err)
	}
	for _, l := range badLogs {
		if _, ok := m.Get(l.tp.Topic, l.tp.Partition); ok {
			t.Fatalf("%s still handed out", l.tp)
		}
		if _, err := m.GetOrCreate(l.tp.Topic, l.tp.Partition, cfg); !errors.Is(err, ErrLogDirFailed) {
			t.Fatalf("GetOrCreate of %s from the failed dir: %v, want ErrLogDirFailed", l.tp, err)
		}
	}
	if _, err := m.GetOrCreateNew("t", 10, cfg, false); !errors.Is(err, ErrLogDirFailed) {
		t.Fatalf("GetOrCreateNew(isNew=false) with a dir offline: %v, want ErrLogDirFailed", err)
	}
	for p := int32(20); p < 23; p++ {
		l, err := m.GetOrCreate("t", p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !inDir(l, good) {
			t.Fatalf("new log %s placed in %s", l.tp, filepath.Dir(l.Dir()))
		}
	}
	for _, l := range goodLogs {
		if _, err := l.Append(batchOf(2, "more", 1), AppendOptions{LeaderEpoch: 1}); err != nil {
			t.Fatalf("append to %s in the good dir: %v", l.tp, err)
		}
		waitDurable(t, l)
		if l.FlushError() != nil {
			t.Fatal(l.FlushError())
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bad, CleanShutdownFile)); err == nil {
		t.Fatal("clean-shutdown marker written into the failed dir")
	}

	// The dir is now unusable at start: a file where it was.
	if err := os.RemoveAll(bad); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("not a dir"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.OnDirFailure, opts.SyncData = nil, nil
	m2, _, err := OpenManager(opts)
	if err != nil {
		t.Fatalf("open with one dir unusable: %v", err)
	}
	defer m2.Close()
	if got := m2.OfflineDirs(); len(got) != 1 || got[0].Dir != bad {
		t.Fatalf("OfflineDirs after restart %v", got)
	}
	for i, l := range goodLogs {
		l2, ok := m2.Get(l.tp.Topic, l.tp.Partition)
		if !ok {
			t.Fatalf("%s lost", l.tp)
		}
		got := readAll(t, l2, 0)
		if len(got) != 2 || string(got[0]) != string(kept[i]) {
			t.Fatalf("%s: %d batches after restart", l.tp, len(got))
		}
	}
	if _, err := m2.GetOrCreateNew("t", badLogs[0].tp.Partition, cfg, false); !errors.Is(err, ErrLogDirFailed) {
		t.Fatalf("a hosted partition re-created while a dir is offline: %v", err)
	}

	// Every dir unusable: the start fails.
	opts.Dirs = []string{bad}
	if _, _, err := OpenManager(opts); !errors.Is(err, ErrLogDirFailed) {
		t.Fatalf("open with every dir unusable: %v, want ErrLogDirFailed", err)
	}
}

// A log dir whose meta.properties cannot be read (here a directory where
// the file should be: EISDIR) is left out at start and opened offline; a
// missing one still stops the start, and so does an unreadable metadata
// dir.
func TestCheckDirsAtLeavesOutUnreadableLogDir(t *testing.T) {
	root := t.TempDir()
	a, b, c := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	for _, d := range []string{a, b} {
		if err := WriteMetaProperties(d, MetaProperties{ClusterID: "MkU3OEVBNTcwNTJENDM2Qk", NodeID: 1, DirectoryID: RandomUUID().String()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(c, MetaPropertiesFile), 0o755); err != nil {
		t.Fatal(err)
	}
	metas, failed, err := CheckDirsAt([]string{a, c, b}, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(failed) != 1 || failed[c] == nil || metas[0].ClusterID == "" || metas[1].ClusterID != "" || metas[2].ClusterID == "" {
		t.Fatalf("failed %v, metas %+v", failed, metas)
	}
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{a, c}, DisableScheduler: true, FailedAtStart: failed})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.OfflineDirs(); len(got) != 1 || got[0].Dir != c {
		t.Fatalf("OfflineDirs %v", got)
	}
	if l, err := m.GetOrCreate("t", 0, DefaultConfig()); err != nil || filepath.Dir(l.Dir()) != a {
		t.Fatalf("new log: %v", err)
	}
	if _, _, err := CheckDirsAt([]string{a, c}, c, 1); err == nil {
		t.Fatal("an unreadable metadata dir was accepted")
	}
	if _, _, err := CheckDirsAt([]string{a, filepath.Join(root, "new")}, a, 1); !errors.Is(err, ErrNotFormatted) {
		t.Fatalf("an unformatted dir: %v, want ErrNotFormatted", err)
	}
}
