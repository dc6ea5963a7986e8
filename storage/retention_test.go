package storage

import (
	"errors"
	"path/filepath"
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
