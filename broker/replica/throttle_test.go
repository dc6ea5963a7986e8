package replica

import (
	"math"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
)

func TestRateQuota(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	q := newRateQuota()
	q.record(1<<30, t0)
	if q.exceeded(t0) {
		t.Fatal("no bound set, yet exceeded")
	}
	q = newRateQuota()
	q.set(1000) // 1000 B/s, at most one second's worth at once
	steps := []struct {
		at        time.Duration
		add       int
		allowance float64
	}{
		{0, 0, 1000},
		{0, 600, 400},
		{100 * time.Millisecond, 0, 500},
		{100 * time.Millisecond, 1500, 0}, // 1000 B of debt
		{time.Second, 0, 0},               // 900 B earned: still 100 B short
		{1500 * time.Millisecond, 0, 400},
		{time.Minute, 0, 1000}, // never more than a second's worth
	}
	for i, s := range steps {
		if s.add > 0 {
			q.record(s.add, at(s.at))
		}
		if got := q.allowance(at(s.at)); math.Abs(got-s.allowance) > 0.5 {
			t.Errorf("step %d at %v: allowance %v, want %v", i, s.at, got, s.allowance)
		}
		if got := q.exceeded(at(s.at)); got != (s.allowance == 0) {
			t.Errorf("step %d at %v: exceeded %v", i, s.at, got)
		}
	}
	q.set(0)
	if !q.exceeded(at(time.Hour)) {
		t.Error("a bound of 0 must hold every throttled replica")
	}
	q.set(math.MaxInt64)
	if q.exceeded(at(time.Hour)) {
		t.Error("Long.MAX_VALUE is no throttle")
	}
}

func TestThrottledReplicas(t *testing.T) {
	for _, tc := range []struct {
		v    string
		p, b int32
		want bool
	}{
		{"*", 3, 9, true},
		{"0:1,1:2", 1, 2, true},
		{"0:1, 1:2", 1, 2, true},
		{"0:1,1:2", 1, 1, false},
		{"10:1", 1, 1, false},
		{"", 0, 1, false},
	} {
		if got := metadata.ThrottledReplicas(tc.v, tc.p, tc.b); got != tc.want {
			t.Errorf("%q %d:%d = %v", tc.v, tc.p, tc.b, got)
		}
	}
}
