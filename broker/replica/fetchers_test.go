package replica

import (
	"context"
	"slices"
	"testing"
	"time"
)

// fetcherID matches Kafka's AbstractFetcherManager.getFetcherId:
// abs(31 * topic.hashCode() + partition) % num.replica.fetchers. The
// hashCode column is java.lang.String.hashCode of the topic.
func TestFetcherID(t *testing.T) {
	cases := []struct {
		topic     string
		partition int32
		n         int
		hashCode  int32 // for the reader; fetcherID derives it
		want      int
	}{
		{"orders", 0, 3, -1008770331, 2},
		{"orders", 1, 3, -1008770331, 1},
		{"orders", 2, 3, -1008770331, 0},
		{"a", 0, 2, 97, 1},
		{"a", 5, 4, 97, 0},
		{"__consumer_offsets", 7, 5, -970371369, 0},
		{"very-long-topic-name-with-overflow", 3, 7, 775969439, 0},
		{"é", 1, 3, 233, 0},
		{"orders", 0, 1, -1008770331, 0},
	}
	for _, c := range cases {
		if got := fetcherID(c.topic, c.partition, c.n); got != c.want {
			t.Errorf("fetcherID(%q, %d, %d) = %d, want %d", c.topic, c.partition, c.n, got, c.want)
		}
	}
}

// With num.replica.fetchers 3, a follower runs up to three fetchers for one
// source, each partition on the fetcher Kafka would pick, and every one
// replicates.
func TestNumReplicaFetchers(t *testing.T) {
	const n = 3
	c := newCluster(t, clusterOpts{n: 2, fetchers: n})
	// createTopic derives ids from the first letter and length: keep both
	// distinct.
	topics := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	for _, name := range topics {
		c.createTopic(name, 1, 1, 2)
	}
	for _, name := range topics {
		p := c.partition(1, name)
		_, ack, err := p.AppendAsLeader(batchOf("x", name), -1)
		if err != nil {
			t.Fatal(err)
		}
		if err := ack.Wait(context.Background(), 10*time.Second); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, name := range topics {
		waitFor(t, name+" on the follower", func() bool { return c.partition(2, name).Log().LogEndOffset() == 2 })
	}

	m := c.ms[2]
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	var want, got []int
	for _, name := range topics {
		id := fetcherID(name, 0, n)
		if !slices.Contains(want, id) {
			want = append(want, id)
		}
		f := m.fetchers[fetcherKey{source: 1, id: id}]
		if f == nil {
			t.Fatalf("%s: no fetcher %d for source 1", name, id)
		}
		f.mu.Lock()
		_, has := f.parts[c.partition(2, name)]
		f.mu.Unlock()
		if !has {
			t.Errorf("%s is not on fetcher %d", name, id)
		}
	}
	for k := range m.fetchers {
		if k.source != 1 {
			t.Errorf("fetcher for source %d on a pure follower of 1", k.source)
		}
		got = append(got, k.id)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("fetchers %v, want one per index used %v", got, want)
	}
	if len(want) < 2 {
		t.Fatalf("the topics hash to %v only: the test shows nothing", want)
	}
}
