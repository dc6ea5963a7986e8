package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
)

// harness adapts a test/cluster Cluster to invariants.Harness.
type harness = cluster.ByID

// partitionState waits until some node other than skip answers for topic
// and returns partition's state as that node sees it.
func partitionState(t *testing.T, ctx context.Context, h harness, topic string, partition int32, skip ...int32) invariants.PartitionState {
	t.Helper()
	var st invariants.PartitionState
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		all, _, err := invariants.StateFrom(ctx, h, topic, skip...)
		if err != nil {
			return false, err.Error()
		}
		s, ok := all[partition]
		if !ok || s.Leader < 0 {
			return false, fmt.Sprintf("partition %d: %+v", partition, s)
		}
		st = s
		return true, ""
	})
	return st
}

// preferredLeaders reports whether every node of h sees every partition of
// topic led by its first replica with a full ISR; if not, it says what each
// node sees that is wrong.
func preferredLeaders(ctx context.Context, h harness, topic string, partitions int) (bool, string) {
	if ok, why := invariants.FullISR(ctx, h, topic, partitions); !ok {
		return false, why
	}
	var wrong []string
	for _, id := range h.Nodes() {
		st, err := invariants.TopicState(ctx, h.ClientAddr(id), topic)
		if err != nil {
			return false, fmt.Sprintf("node %d: %v", id, err)
		}
		for _, p := range slices.Sorted(maps.Keys(st)) {
			if s := st[p]; s.Leader != s.Replicas[0] {
				wrong = append(wrong, fmt.Sprintf("node %d sees partition %d led by %d (epoch %d), preferred %d, ISR %v", id, p, s.Leader, s.LeaderEpoch, s.Replicas[0], s.ISR))
			}
		}
	}
	return len(wrong) == 0, strings.Join(wrong, "; ")
}

// eventually polls cond until it holds or timeout passes, like
// cluster.WaitFor, but reports instead of failing, for waits whose failure
// must not skip the checks after them.
func eventually(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok || time.Now().After(deadline) {
			return ok, why
		}
		<-tick.C
	}
}

// checkReport fails t on any violation and on an empty run.
func checkReport(t *testing.T, h harness, topic, what string, r invariants.Report) {
	t.Helper()
	t.Logf("%s: %v", what, r)
	if !r.OK() {
		t.Errorf("%s: invariants broken: %v", what, r)
		invariants.LogSuspects(t, h, topic, r)
	}
	if r.Acknowledged == 0 {
		t.Errorf("%s: nothing was acknowledged", what)
	}
}

// startLagCluster starts three nodes with replica.lag.time.max.ms = lag
// and min.insync.replicas = 2, creates topic with RF=3, and waits until
// every partition's ISR is full: the setup of the tests that freeze a
// replica and watch the ISR react.
func startLagCluster(t *testing.T, lag time.Duration, topic string, partitions int32) (*cluster.Cluster, harness, context.Context) {
	t.Helper()
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"),
		cluster.Override("replica.lag.time.max.ms", fmt.Sprint(lag.Milliseconds())),
		cluster.Override("min.insync.replicas", "2"))
	h := harness{Cluster: c}
	ctx := ctxFor(t, 3*time.Minute)
	if err := invariants.CreateTopic(ctx, h.Seeds(), topic, partitions, 3, nil); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, int(partitions)) })
	return c, h, ctx
}
