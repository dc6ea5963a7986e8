package replica

import (
	"context"
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

// TestLeaderThrottle: a leader answers a follower out of the ISR fetching
// a partition its topic lists in leader.replication.throttled.replicas
// with no more than leader.replication.throttled.rate allows, and with the
// offsets alone once the quota is used up; consumers and unlisted
// partitions are not held back.
func TestLeaderThrottle(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 2})
	c.net.SetDown(2, true) // broker 2 fetches nothing itself
	id := c.createTopic("t", 1, 1, 2)
	c.ctrl.apply(t, &metadata.PartitionChange{TopicID: id, Partition: 0, Leader: metadata.NoLeaderChange, ISR: []int32{1}})
	big := string(make([]byte, 2000))
	for range 5 {
		if _, err := produce(t, c, 1, "t", 1, big); err != nil {
			t.Fatal(err)
		}
	}
	m := c.ms[1]
	waitFor(t, "the shrunk ISR on the leader", func() bool { return len(c.partition(1, "t").State().ISR) == 1 })
	fetch := func(replica int32) int64 {
		res := m.Fetch(context.Background(), FetchRequest{ReplicaID: replica, MaxBytes: 1 << 20,
			Parts: []FetchPartition{{Topic: "t", Partition: 0, Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, KnownHighWatermark: -1, LogStartOffset: -1}}})
		if res[0].Err != nil {
			t.Fatalf("fetch as %d: %v", replica, res[0].Err)
		}
		return res[0].Region.Len
	}
	all := fetch(2)
	if all < 10000 {
		t.Fatalf("unthrottled follower fetch got %d bytes, want all five batches", all)
	}
	m.SetLeaderThrottle(3000)
	if got := fetch(2); got != all {
		t.Fatalf("a rate without a throttled-replica list held the fetch to %d of %d bytes", got, all)
	}
	c.ctrl.apply(t, &metadata.Config{ResourceType: metadata.ConfigResourceTopic, ResourceName: "t", Key: "leader.replication.throttled.replicas", Value: "0:1"})
	// Back to back (the bucket refills 3 B per ms): the answers carry at
	// most the 3000 B allowance plus the one whole batch a read may
	// overshoot by, then offsets alone.
	var sum int64
	empty := false
	for range 5 {
		got := fetch(2)
		if got == 0 {
			empty = true
			break
		}
		sum += got
	}
	if !empty || sum == 0 || sum > 3000+2100 {
		t.Fatalf("throttled fetches carried %d bytes before an empty answer (one seen: %v), want some, at most the 3000 B allowance and one batch", sum, empty)
	}
	if got := fetch(-1); got == 0 {
		t.Fatal("a consumer was throttled")
	}
	if m.LeaderThrottle() != 3000 {
		t.Fatalf("LeaderThrottle %d", m.LeaderThrottle())
	}
	// A follower in the ISR is never held back.
	c.ctrl.apply(t, &metadata.PartitionChange{TopicID: id, Partition: 0, Leader: metadata.NoLeaderChange, ISR: []int32{1, 2}})
	waitFor(t, "the grown ISR on the leader", func() bool { return len(c.partition(1, "t").State().ISR) == 2 })
	if got := fetch(2); got != all {
		t.Fatalf("in-sync follower got %d of %d bytes", got, all)
	}
}
