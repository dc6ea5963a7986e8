package storage

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// SetCleaner restarts the cleaner threads with new settings: a thread that
// went to sleep for an hour cleans at once under a short backoff, and the
// threads of the old and new settings all stop on Close (goleak checks).
func TestManagerSetCleaner(t *testing.T) {
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{filepath.Join(t.TempDir(), "d")}, ConfigFor: func(string) Config { return compactConfig() },
		Cleaner: CleanerOptions{Enable: true, Threads: 1, Backoff: time.Hour, DedupeBufferSize: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// The thread's first round finds no log and sleeps an hour.
	time.Sleep(100 * time.Millisecond)
	l, err := m.GetOrCreate("kv", 0, compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	fillKeyed(t, l, &testClock{t: time.Now()}, 200, 5)

	want := CleanerSettings{Threads: 2, DedupeBufferSize: 2 << 20, IOMaxBytesPerSecond: 1 << 30, Backoff: 5 * time.Millisecond}
	if err := m.SetCleaner(want); err != nil {
		t.Fatal(err)
	}
	if got := m.CleanerSettings(); got != want {
		t.Fatalf("settings %+v, want %+v", got, want)
	}
	deadline := time.Now().Add(20 * time.Second)
	for l.FirstDirtyOffset() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if l.FirstDirtyOffset() == 0 {
		t.Fatal("the reconfigured cleaner never cleaned the log")
	}

	for _, bad := range []CleanerSettings{{Threads: -1}, {DedupeBufferSize: -1}, {IOMaxBytesPerSecond: -1}, {Backoff: -time.Second}} {
		if err := m.SetCleaner(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v, want ErrInvalidConfig", bad, err)
		}
	}
	if got := m.CleanerSettings(); got != want {
		t.Fatalf("refused settings changed them: %+v", got)
	}
	// Zero values are the defaults, as at open.
	if err := m.SetCleaner(CleanerSettings{}); err != nil {
		t.Fatal(err)
	}
	if got := m.CleanerSettings(); got.Threads != 1 || got.Backoff != 15*time.Second || got.DedupeBufferSize != 128<<20 {
		t.Fatalf("defaults %+v", got)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.SetCleaner(want); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

// A Manager whose cleaner is off stores the settings and starts nothing.
func TestManagerSetCleanerDisabled(t *testing.T) {
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{filepath.Join(t.TempDir(), "d")}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.SetCleaner(CleanerSettings{Threads: 3, Backoff: time.Second}); err != nil {
		t.Fatal(err)
	}
	if got := m.CleanerSettings(); got.Threads != 3 || got.Backoff != time.Second {
		t.Fatalf("settings %+v", got)
	}
}
