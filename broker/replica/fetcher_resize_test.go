package replica

import (
	"context"
	"slices"
	"testing"
	"time"
)

// num.replica.fetchers changed on a running follower: its partitions move
// to the fetchers Kafka's hash picks among the new count, emptied fetchers
// stop (goleak checks), and replication goes on through every change.
func TestSetNumFetchers(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 2, fetchers: 1})
	topics := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	for _, name := range topics {
		c.createTopic(name, 1, 1, 2)
	}
	end := int64(0)
	produce := func() {
		t.Helper()
		for _, name := range topics {
			_, ack, err := c.partition(1, name).AppendAsLeader(batchOf("x", name), -1)
			if err != nil {
				t.Fatal(err)
			}
			if err := ack.Wait(context.Background(), 10*time.Second); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		end += 2
		for _, name := range topics {
			waitFor(t, name+" on the follower", func() bool { return c.partition(2, name).Log().LogEndOffset() == end })
		}
	}
	m := c.ms[2]
	placed := func(n int) {
		t.Helper()
		m.applyMu.Lock()
		defer m.applyMu.Unlock()
		var want []int
		for _, name := range topics {
			id := fetcherID(name, 0, n)
			if !slices.Contains(want, id) {
				want = append(want, id)
			}
			f := m.fetchers[fetcherKey{source: 1, id: id}]
			if f == nil {
				t.Fatalf("%s: no fetcher %d", name, id)
			}
			f.mu.Lock()
			_, has := f.parts[c.partition(2, name)]
			f.mu.Unlock()
			if !has {
				t.Fatalf("%s is not on fetcher %d of %d", name, id, n)
			}
		}
		if len(m.fetchers) != len(want) {
			t.Fatalf("%d fetchers, want %d (one per index used)", len(m.fetchers), len(want))
		}
	}
	produce()
	placed(1)
	for _, n := range []int{3, 5, 1} {
		if err := m.SetNumFetchers(n); err != nil {
			t.Fatal(err)
		}
		if m.NumFetchers() != n {
			t.Fatalf("NumFetchers %d, want %d", m.NumFetchers(), n)
		}
		placed(n)
		produce()
	}
	if err := m.SetNumFetchers(0); err == nil {
		t.Fatal("0 fetchers accepted")
	}
}
