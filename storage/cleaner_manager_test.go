package storage

import (
	"fmt"
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func fillKeyed(t *testing.T, l *Log, clk *testClock, batches, keys int) {
	t.Helper()
	for i := range batches {
		if _, err := l.Append(keyedBatch(t, clk.now().UnixMilli(), CompressionNone, -1, 0, kv{key: fmt.Sprintf("k%d", i%keys), value: fmt.Sprint(i)}), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	l.SetHighWatermark(l.LogEndOffset())
}

// CleanOnce picks the dirtiest due log, cleans it and writes
// cleaner-offset-checkpoint, which the next open reads back.
func TestManagerCleanOnce(t *testing.T) {
	clk := newClock()
	dirs := []string{filepath.Join(t.TempDir(), "d")}
	conf := func(topic string) Config {
		c := compactConfig()
		if topic == "plain" {
			c.CleanupPolicy = PolicyDelete
		}
		return c
	}
	open := func() *Manager {
		m, _, err := OpenManager(ManagerOptions{Dirs: dirs, Now: clk.now, ConfigFor: conf, DisableScheduler: true, Cleaner: CleanerOptions{Enable: true, DedupeBufferSize: 1 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := open()
	for _, topic := range []string{"kv", "plain"} {
		l, err := m.GetOrCreate(topic, 0, conf(topic))
		if err != nil {
			t.Fatal(err)
		}
		fillKeyed(t, l, clk, 200, 5)
	}
	kv, _ := m.Get("kv", 0)
	// A second log, less dirty: half its dirty bytes are already clean.
	kv1, _ := m.GetOrCreate("kv", 1, conf("kv"))
	fillKeyed(t, kv1, clk, 200, 5)
	if _, did, err := m.CleanOnce(clk.now()); err != nil || !did {
		t.Fatalf("first clean: %v %v", did, err)
	}
	fillKeyed(t, kv1, clk, 20, 5)
	tp, did, err := m.CleanOnce(clk.now())
	if err != nil || !did || tp != (TopicPartition{"kv", 0}) && tp != (TopicPartition{"kv", 1}) {
		t.Fatalf("second clean: %v %v %v", tp, did, err)
	}
	for range 3 {
		m.CleanOnce(clk.now())
	}
	plain, _ := m.Get("plain", 0)
	if plain.FirstDirtyOffset() != 0 || len(readRecords(t, plain, 0)) != 200 {
		t.Fatal("the cleaner touched a delete-policy log")
	}
	ckpt := kv.FirstDirtyOffset()
	if ckpt == 0 || len(readRecords(t, kv, 0)) >= 200 {
		t.Fatalf("kv-0 not cleaned: checkpoint %d", ckpt)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadOffsetCheckpoint(filepath.Join(dirs[0], CleanerCheckpointFile))
	if err != nil || got[TopicPartition{"kv", 0}] != ckpt || got[TopicPartition{"plain", 0}] != 0 {
		t.Fatalf("cleaner checkpoint %v %v, want kv-0 at %d", got, err, ckpt)
	}
	m = open()
	defer m.Close()
	if kv, _ := m.Get("kv", 0); kv.FirstDirtyOffset() != ckpt {
		t.Fatalf("reopened checkpoint %d, want %d", kv.FirstDirtyOffset(), ckpt)
	}
}

// With the scheduler on, the cleaner threads clean by themselves and stop
// on Close (goleak checks).
func TestManagerCleanerThreads(t *testing.T) {
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{filepath.Join(t.TempDir(), "d")}, ConfigFor: func(string) Config { return compactConfig() },
		Cleaner: CleanerOptions{Enable: true, Threads: 2, Backoff: 5 * time.Millisecond, DedupeBufferSize: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreate("kv", 0, compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	fillKeyed(t, l, &testClock{t: time.Now()}, 200, 5)
	deadline := time.Now().Add(20 * time.Second)
	for l.FirstDirtyOffset() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if l.FirstDirtyOffset() == 0 {
		t.Fatal("the cleaner threads never cleaned the log")
	}
	if _, _, err := OpenManager(ManagerOptions{Dirs: []string{t.TempDir()}, Cleaner: CleanerOptions{Threads: -1}}); err == nil {
		t.Fatal("negative log.cleaner.threads accepted")
	}
}

func TestThrottle(t *testing.T) {
	now := time.Unix(0, 0)
	var slept time.Duration
	th := NewThrottle(1000, func() time.Time { return now }, func(d time.Duration) { slept += d; now = now.Add(d) })
	th.wait(100) // 0.1 s of budget at once
	if slept != 100*time.Millisecond {
		t.Fatalf("slept %v for 100 bytes at 1000 B/s", slept)
	}
	if NewThrottle(0, nil, nil) != nil || NewThrottle(1.7976931348623157e308, nil, nil) != nil {
		t.Fatal("no limit made a throttle")
	}
	var none *Throttle
	none.wait(1 << 30) // a nil throttle never sleeps
}

// TestBusyThrottle: with a busy rate, the throttle holds the cleaner to
// it while appends come and for throttleBusyHold after the last, to the
// configured rate (here none) otherwise, and the lower of the two always
// applies.
func TestBusyThrottle(t *testing.T) {
	for _, c := range []struct {
		name        string
		rate, busy  float64
		appending   bool
		later       time.Duration // from the append seen to the wait
		wantSleepMs int64         // for 100 bytes
	}{
		{"idle, no limit", 0, 1000, false, 0, 0},
		{"appending", 0, 1000, true, 0, 100},
		{"within the hold after appends", 0, 1000, true, throttleBusyHold - time.Millisecond, 100},
		{"past the hold", 0, 1000, true, throttleBusyHold + time.Millisecond, 0},
		{"the busy rate is lower", 2000, 1000, true, 0, 100},
		{"the configured rate is lower", 500, 1000, true, 0, 200},
		{"the configured rate when idle", 500, 1000, false, 0, 200},
		{"no busy rate", 0, math.Inf(1), true, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Unix(0, 0)
			var slept time.Duration
			var appends atomic.Int64
			th := newBusyThrottle(c.rate, c.busy, &appends, func() time.Time { return now }, func(d time.Duration) { slept += d; now = now.Add(d) })
			if th == nil {
				if c.wantSleepMs != 0 {
					t.Fatal("no throttle")
				}
				return
			}
			if c.appending {
				appends.Add(1)
				th.wait(0) // sees the append
			}
			now = now.Add(c.later)
			slept = 0
			th.wait(100)
			if slept.Milliseconds() != c.wantSleepMs {
				t.Fatalf("slept %v for 100 bytes, want %d ms", slept, c.wantSleepMs)
			}
		})
	}
}

// TestManagerCountsAppends: every append to a Manager's logs (leader,
// marker and follower) moves the count its cleaner's throttle watches,
// and the throttle is the busy one by default.
func TestManagerCountsAppends(t *testing.T) {
	noFsync(t)
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{t.TempDir()}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.throttle == nil || m.throttle.busyRate != DefaultCleanerBusyIO {
		t.Fatalf("throttle %+v, want the busy rate %g", m.throttle, DefaultCleanerBusyIO)
	}
	l, err := m.GetOrCreate("t", 0, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	appendOK(t, l, batchOf(1, "a", 2))
	appendMarkerOK(t, l, marker(3, 0, 0, true))
	f, err := m.GetOrCreate("t", 1, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	b := Batch(batchOf(1, "b", 1))
	b.SetBaseOffset(0)
	if _, err := f.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	if n := m.appends.Load(); n != 3 {
		t.Fatalf("%d appends counted, want 3", n)
	}
}
