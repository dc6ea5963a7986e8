package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
)

// A network partition (issue 16): three nodes, each in a network namespace
// of its own on a bridge (cluster.Isolated), carry an RF=3 topic under an
// idempotent acks=all load. The active controller, which also leads a
// partition, is cut off the network while its process runs on. The two
// others elect a new Raft leader, move its partition leadership to
// themselves and keep acknowledging every partition; the cut node's
// partitions leave it. After the link comes back the node rejoins every
// ISR, and every acknowledged record is read back exactly once: nothing
// the cut-off leader held was acknowledged past what its followers had.
func TestNetworkPartitionOfTheLeader(t *testing.T) {
	const topic, partitions = "partitioned", 3
	c := cluster.Start(t, cluster.Nodes(3), cluster.Isolated(), cluster.LogLevel("info"), cluster.TailLines(300),
		cluster.Override("min.insync.replicas", "2"))
	h := harness{Cluster: c}
	ctx := ctxFor(t, 4*time.Minute)
	cl := client(t, c)
	createAssigned(t, ctx, cl, topic, map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}})
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })

	var rec invariants.Recorder
	prod, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: h.Seeds(), Topic: topic, Partitions: partitions,
		Name: "partition", Rate: 300, MaxRecords: 200_000}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Stop(5 * time.Second)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return rec.Count() >= 500, fmt.Sprintf("%d acknowledged", rec.Count()) })

	var cut int32
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		l, err := quorumLeader(ctx, cl)
		if err != nil {
			return false, err.Error()
		}
		cut = l
		return true, ""
	})
	c.Node(cut).Cut()
	cutAt := time.Now()
	t.Logf("cut node %d (the active controller) off the network", cut)
	var rest []*cluster.Node
	for _, n := range c.Nodes() {
		if n.ID() != cut {
			rest = append(rest, n)
		}
	}
	majority := client(t, c, rest...)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		l, err := quorumLeader(qctx, majority)
		if err != nil {
			return false, err.Error()
		}
		return l != cut, fmt.Sprintf("quorum leader %d", l)
	})
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		for p := range int32(partitions) {
			st := partitionState(t, ctx, h, topic, p, cut)
			if st.Leader == cut || st.Leader < 0 || slices.Contains(st.ISR, cut) {
				return false, fmt.Sprintf("partition %d on the majority side: %+v", p, st)
			}
			if n := rec.CountSince(p, cutAt); n < 50 {
				failed, last := rec.Failed()
				return false, fmt.Sprintf("partition %d: %d acknowledged since the cut (%d failed, last %v)", p, n, failed, last)
			}
		}
		return true, ""
	})
	t.Logf("majority side elected and served every partition %v after the cut", time.Since(cutAt).Round(time.Millisecond))

	c.Node(cut).Heal()
	cluster.WaitFor(t, 90*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })
	before := rec.Count()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		return rec.Count() >= before+200, fmt.Sprintf("%d acknowledged since the heal", rec.Count()-before)
	})
	if _, err := prod.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	r := invariants.Check(rec.Acks(), read)
	checkReport(t, h, topic, "network partition", r)
	if r.Lost > 0 || r.Duplicated > 0 {
		t.Fatalf("lost %d, duplicated %d", r.Lost, r.Duplicated)
	}
	t.Logf("%d acknowledged, all read back once", rec.Count())
}
