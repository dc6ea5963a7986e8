package storage

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
)

func TestCleanupPolicyRule(t *testing.T) {
	cases := []struct {
		in                string
		deletes, compacts bool
		str               string
		bad               bool
	}{
		{in: "delete", deletes: true, str: "delete"},
		{in: "compact", compacts: true, str: "compact"},
		{in: "compact,delete", deletes: true, compacts: true, str: "compact,delete"},
		{in: "delete, compact", deletes: true, compacts: true, str: "compact,delete"},
		{in: "", str: ""},
		{in: "delete,,", deletes: true, str: "delete"},
		{in: "remove", bad: true},
		{in: "compact,Delete", bad: true},
	}
	for _, c := range cases {
		p, err := ParseCleanupPolicy(c.in)
		if c.bad {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%q: err %v, want ErrInvalidConfig", c.in, err)
			}
			continue
		}
		if err != nil || p.Deletes() != c.deletes || p.Compacts() != c.compacts || p.String() != c.str {
			t.Errorf("%q: %v deletes %v compacts %v %q, want %v %v %q", c.in, err, p.Deletes(), p.Compacts(), p.String(), c.deletes, c.compacts, c.str)
		}
	}
	if DefaultConfig().CleanupPolicy != PolicyDelete {
		t.Error("the default policy is not delete")
	}
	bad := DefaultConfig()
	bad.CleanupPolicy = 4
	if err := bad.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("policy bit 4 validated: %v", err)
	}
}

// fillOld writes 20 batches one simulated second apart, in segments of
// about three batches, and marks them all replicated. The records have
// keys: a compacted log refuses records without one.
func fillOld(t *testing.T, l *Log, clk *testClock) {
	t.Helper()
	for i := 0; i < 20; i++ {
		ts := clk.now().UnixMilli()
		b := recordbatch.Build(ts, recordbatch.Record{Key: []byte("a"), Value: []byte("v-0"), Timestamp: ts},
			recordbatch.Record{Key: []byte("b"), Value: []byte("v-1"), Timestamp: ts})
		if _, err := l.Append(b, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		clk.advance(time.Second)
	}
	l.SetHighWatermark(l.LogEndOffset())
}

func TestRetentionByPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy  CleanupPolicy
		deletes bool
	}{
		{PolicyDelete, true},
		{PolicyCompact, false},
		{PolicyCompact | PolicyDelete, true},
		{0, false},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			clk := newClock()
			cfg := smallConfig()
			cfg.SegmentBytes = 300
			cfg.RetentionMs = 1000
			cfg.RetentionBytes = 200
			cfg.CleanupPolicy = tc.policy
			l, _ := openTestLog(t, partDir(t), cfg, LogOptions{Now: clk.now})
			defer l.Close()
			fillOld(t, l, clk)
			segs, size, end := l.NumSegments(), l.Size(), l.LogEndOffset()
			// An hour of simulated time, checked every five minutes as
			// log.retention.check.interval.ms does by default.
			for range 12 {
				clk.advance(5 * time.Minute)
				if _, err := l.ApplyRetention(clk.now()); err != nil {
					t.Fatal(err)
				}
			}
			if tc.deletes {
				if l.LogStartOffset() != end || l.Size() != 0 {
					t.Fatalf("log [%d, %d) size %d after an hour past retention.ms", l.LogStartOffset(), l.LogEndOffset(), l.Size())
				}
				return
			}
			if l.LogStartOffset() != 0 || l.NumSegments() != segs || l.Size() != size || len(readAll(t, l, 0)) != 20 {
				t.Fatalf("policy %q lost data: start %d, %d of %d segments, %d of %d bytes", tc.policy, l.LogStartOffset(), l.NumSegments(), segs, l.Size(), size)
			}
		})
	}
}

// Retention reads the policy at each pass: a topic altered from delete to
// compact stops losing segments at once, and DeleteRecords still moves a
// compacted log's start.
func TestRetentionPolicyChangedAtRuntime(t *testing.T) {
	clk := newClock()
	cfg := smallConfig()
	cfg.SegmentBytes = 300
	cfg.RetentionMs = 30_000
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{Now: clk.now})
	defer l.Close()
	fillOld(t, l, clk)
	clk.advance(15 * time.Second)
	res, err := l.ApplyRetention(clk.now())
	if err != nil || res.Segments == 0 {
		t.Fatalf("delete policy removed nothing: %+v %v", res, err)
	}
	start, segs := l.LogStartOffset(), l.NumSegments()
	cfg.CleanupPolicy = PolicyCompact
	if err := l.UpdateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Hour)
	if res, err := l.ApplyRetention(clk.now()); err != nil || res.Segments != 0 || l.LogStartOffset() != start || l.NumSegments() != segs {
		t.Fatalf("compact policy still deleted: %+v %v", res, err)
	}
	l.segMu.RLock()
	off := l.segments[1].baseOffset
	l.segMu.RUnlock()
	if _, err := l.DeleteRecords(off); err != nil {
		t.Fatal(err)
	}
	if res, err := l.ApplyRetention(clk.now()); err != nil || l.LogStartOffset() != off || l.NumSegments() != segs-1 {
		t.Fatalf("DeleteRecords on a compacted log: %+v %v, start %d", res, err, l.LogStartOffset())
	}
	cfg.CleanupPolicy = PolicyCompact | PolicyDelete
	if err := l.UpdateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ApplyRetention(clk.now()); err != nil || l.Size() != 0 {
		t.Fatalf("compact,delete kept %d bytes: %v", l.Size(), err)
	}
}

// The manager's scheduled retention obeys the policy of each log.
func TestManagerRetentionByPolicy(t *testing.T) {
	clk := newClock()
	policies := map[string]CleanupPolicy{"kv": PolicyCompact, "events": PolicyDelete}
	conf := func(topic string) Config {
		c := smallConfig()
		c.SegmentBytes = 300
		c.RetentionMs = 1000
		c.CleanupPolicy = policies[topic]
		return c
	}
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{filepath.Join(t.TempDir(), "d")}, Now: clk.now, ConfigFor: conf, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for topic := range policies {
		l, err := m.GetOrCreate(topic, 0, conf(topic))
		if err != nil {
			t.Fatal(err)
		}
		fillOld(t, l, clk)
	}
	for range 60 {
		clk.advance(time.Minute)
		if err := m.Tick(clk.now(), true, false, false, false); err != nil {
			t.Fatal(err)
		}
	}
	kv, _ := m.Get("kv", 0)
	events, _ := m.Get("events", 0)
	if n := len(readAll(t, kv, 0)); n != 20 || kv.LogStartOffset() != 0 {
		t.Fatalf("compacted topic holds %d of 20 batches from %d", n, kv.LogStartOffset())
	}
	if events.Size() != 0 {
		t.Fatalf("delete topic kept %d bytes", events.Size())
	}
}

// segment.jitter.ms is drawn per segment, so segments roll at different
// ages between segment.ms - segment.jitter.ms and segment.ms.
func TestSegmentJitterPerSegment(t *testing.T) {
	clk := newClock()
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.SegmentMs = 1000
	cfg.SegmentJitterMs = 900
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{Now: clk.now})
	defer l.Close()
	for range 600 {
		if _, err := l.Append(batchOf(clk.now().UnixMilli(), "j", 1), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		clk.advance(10 * time.Millisecond)
	}
	l.segMu.RLock()
	segs := l.segments[:len(l.segments)-1]
	spans := map[int64]bool{}
	for _, s := range segs {
		span := s.maxTs - s.firstTs
		if span > cfg.SegmentMs || span < cfg.SegmentMs-cfg.SegmentJitterMs-10 {
			t.Errorf("segment at %d spans %d ms", s.baseOffset, span)
		}
		spans[span] = true
	}
	l.segMu.RUnlock()
	if len(segs) < 6 || len(spans) < 3 {
		t.Fatalf("%d segments rolled at %d distinct ages: the jitter is not drawn per segment", len(segs), len(spans))
	}
}

// A rolled segment is flushed by the next tick, so the recovery point
// follows the log and an unclean restart rescans only the active segment.
func TestRolledSegmentsFlushed(t *testing.T) {
	clk := newClock()
	cfg := smallConfig()
	cfg.SegmentBytes = 300
	dirs := []string{filepath.Join(t.TempDir(), "d")}
	m, _, err := OpenManager(ManagerOptions{Dirs: dirs, Now: clk.now, ConfigFor: func(string) Config { return cfg }, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreate("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := l.Append(batchOf(clk.now().UnixMilli(), "f", 2), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if l.RecoveryPoint() != 0 {
		t.Fatalf("recovery point %d before any flush", l.RecoveryPoint())
	}
	l.segMu.RLock()
	active := l.segments[len(l.segments)-1].baseOffset
	segs := len(l.segments)
	l.segMu.RUnlock()
	if err := m.Tick(clk.now(), false, true, false, false); err != nil {
		t.Fatal(err)
	}
	if l.RecoveryPoint() != active {
		t.Fatalf("recovery point %d after a tick, want the active segment's base %d", l.RecoveryPoint(), active)
	}
	rps, err := ReadOffsetCheckpoint(filepath.Join(dirs[0], RecoveryPointCheckpointFile))
	if err != nil || rps[TopicPartition{"t", 0}] != active {
		t.Fatalf("checkpointed recovery point %v %v", rps, err)
	}
	if err := l.FlushRolled(); err != nil || l.RecoveryPoint() != active {
		t.Fatalf("second FlushRolled: %v, recovery point %d", err, l.RecoveryPoint())
	}
	// An unclean restart from that checkpoint rescans the active segment
	// only.
	m.Close()
	l3, rep := openTestLog(t, filepath.Join(dirs[0], "t-0"), cfg, LogOptions{Now: clk.now, RecoveryPoint: active})
	defer l3.Close()
	if len(rep.Recovered) != 1 || segs < 3 {
		t.Fatalf("rescanned %v of %d segments", rep.Recovered, segs)
	}
}

// OnFlush hears of each flush that fsynced, from Sync and FlushRolled, and
// of none that had nothing to do.
func TestOnFlushReportsEachFsync(t *testing.T) {
	clk := newClock()
	cfg := smallConfig()
	cfg.SegmentBytes = 300
	var flushes []time.Duration
	var mu sync.Mutex
	dirs := []string{filepath.Join(t.TempDir(), "d")}
	m, _, err := OpenManager(ManagerOptions{Dirs: dirs, Now: clk.now, ConfigFor: func(string) Config { return cfg }, DisableScheduler: true,
		OnFlush: func(d time.Duration) { mu.Lock(); flushes = append(flushes, d); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreate("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(flushes) }
	if err := l.Sync(); err != nil || count() != 0 {
		t.Fatalf("Sync of an empty log: %v, %d flushes reported", err, count())
	}
	for range 20 {
		if _, err := l.Append(batchOf(clk.now().UnixMilli(), "f", 2), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.FlushRolled(); err != nil || count() != 1 {
		t.Fatalf("FlushRolled: %v, %d flushes reported, want 1", err, count())
	}
	if err := l.FlushRolled(); err != nil || count() != 1 {
		t.Fatalf("FlushRolled with nothing rolled: %v, %d flushes reported, want still 1", err, count())
	}
	if err := l.Sync(); err != nil || count() != 2 {
		t.Fatalf("Sync: %v, %d flushes reported, want 2", err, count())
	}
	if err := l.Sync(); err != nil || count() != 2 {
		t.Fatalf("Sync with nothing new: %v, %d flushes reported, want still 2", err, count())
	}
}
