package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
)

// Node replacement, the runbook in README.md ("Replacing a lost broker"):
// three voters and a broker-only node 4 (process.roles=broker, a Raft
// non-voter) carry an RF=3 topic under an idempotent acks=all load. Node
// 4's disk is lost (kill -9, its directory removed). A new broker-only
// node with a new id, 5, joins the running cluster; `raftka reassign
// drain --broker 4 --broker-list 5` moves 4's replicas to it, `verify`
// sees the moves done, `raftka cluster unregister --id 4` retires 4.
// Every partition is back at three in-sync replicas, and every
// acknowledged record is read back exactly once.
func TestReplaceLostBrokerNode(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, partitions = "replaced", 3
	c := cluster.Prepare(t, cluster.Nodes(5), cluster.BrokerOnly(4, 5), cluster.LogLevel("info"),
		cluster.Override("min.insync.replicas", "2"))
	c.StartNodes(1, 2, 3, 4)
	h := harness{Cluster: c}
	ctx := ctxFor(t, 4*time.Minute)
	cl := client(t, c, c.Node(1), c.Node(2), c.Node(3))
	createAssigned(t, ctx, cl, topic, map[int32][]int32{0: {1, 4, 2}, 1: {4, 2, 3}, 2: {3, 1, 4}})
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions, 5) })

	var rec invariants.Recorder
	prod, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: []string{c.Node(1).ClientAddr(), c.Node(2).ClientAddr(), c.Node(3).ClientAddr()},
		Topic: topic, Partitions: partitions, Name: "replace", Rate: 300, MaxRecords: 200_000}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Stop(5 * time.Second)
	waitAcks := func(n int, what string) {
		t.Helper()
		before := rec.Count()
		cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
			failed, last := rec.Failed()
			return rec.Count() >= before+n, fmt.Sprintf("%d acknowledged %s (%d failed, last %v)", rec.Count()-before, what, failed, last)
		})
	}
	waitAcks(500, "before the loss")

	c.Node(4).Kill()
	if err := os.RemoveAll(c.Node(4).DataDir()); err != nil {
		t.Fatal(err)
	}
	waitAcks(200, "with node 4 gone")

	c.StartNodes(5)
	run := func(args ...string) (string, error) {
		return cluster.Run(t, append(args, "--bootstrap-server", c.Node(1).ClientAddr())...)
	}
	out, err := run("reassign", "drain", "--broker", "4", "--broker-list", "5")
	if err != nil {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	_, rest, ok := strings.Cut(out, "Reassignment (use it with reassign verify or cancel)\n")
	plan, _, ok2 := strings.Cut(rest, "\n")
	if !ok || !ok2 {
		t.Fatalf("drain printed:\n%s", out)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, []byte(plan), 0o600); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 90*time.Second, func() (bool, string) {
		out, err := run("reassign", "verify", "--reassignment-json-file", file)
		return err == nil, fmt.Sprintf("verify: %v\n%s", err, out)
	})
	if out, err := run("cluster", "unregister", "--id", "4"); err != nil || !strings.Contains(out, "Broker 4 is no longer registered.") {
		t.Fatalf("unregister: %v\n%s", err, out)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		if ok, why := invariants.FullISR(ctx, h, topic, partitions, 4); !ok {
			return false, why
		}
		st, err := invariants.TopicState(ctx, h.ClientAddr(1), topic)
		if err != nil {
			return false, err.Error()
		}
		for p, s := range st {
			if len(s.Replicas) != 3 || slices.Contains(s.Replicas, 4) || !slices.Contains(s.Replicas, 5) {
				return false, fmt.Sprintf("partition %d: %+v", p, s)
			}
		}
		md, err := nodeMetadata(ctx, c.Node(1))
		if err != nil {
			return false, err.Error()
		}
		for _, b := range md.Brokers {
			if b.NodeID == 4 {
				return false, "broker 4 still in Metadata"
			}
		}
		return true, ""
	})
	waitAcks(200, "after the replacement")
	if _, err := prod.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	read, err := invariants.ReadAll(ctx, []string{c.Node(1).ClientAddr(), c.Node(5).ClientAddr()}, topic)
	if err != nil {
		t.Fatal(err)
	}
	r := invariants.Check(rec.Acks(), read)
	checkReport(t, h, topic, "node replacement", r)
	if r.Lost > 0 || r.Duplicated > 0 {
		t.Fatalf("lost %d, duplicated %d", r.Lost, r.Duplicated)
	}
	t.Logf("%d acknowledged, all read back once", rec.Count())
}
