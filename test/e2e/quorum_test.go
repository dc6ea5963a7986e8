package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quorumMembers asks the cluster for the quorum's voters and observers.
func quorumMembers(ctx context.Context, cl *kgo.Client) (leader int32, voters, observers []int32, err error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	tp := kmsg.NewDescribeQuorumRequestTopic()
	tp.Topic = "__cluster_metadata"
	tp.Partitions = append(tp.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, tp)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, nil, nil, err
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, nil, nil, fmt.Errorf("DescribeQuorum: error %d", resp.ErrorCode)
	}
	p := resp.Topics[0].Partitions[0]
	for _, v := range p.CurrentVoters {
		voters = append(voters, v.ReplicaID)
	}
	for _, o := range p.Observers {
		observers = append(observers, o.ReplicaID)
	}
	slices.Sort(voters)
	slices.Sort(observers)
	return p.LeaderID, voters, observers, nil
}

func waitVoters(t *testing.T, ctx context.Context, cl *kgo.Client, want ...int32) int32 {
	t.Helper()
	var leader int32
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		l, v, o, err := quorumMembers(ctx, cl)
		if err != nil {
			return false, err.Error()
		}
		leader = l
		return slices.Equal(v, want) && l >= 0, fmt.Sprintf("leader %d voters %v observers %v, want voters %v", l, v, o, want)
	})
	return leader
}

// commits proves the quorum has a leader that commits: a topic is created
// and every running node shows it.
func commits(t *testing.T, ctx context.Context, cl *kgo.Client, name string) {
	t.Helper()
	adm := kadm.NewClient(cl)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		err := createTopic(ctx, adm, name, 1, 1)
		if err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
			return false, err.Error()
		}
		return true, ""
	})
}

// A dynamic quorum (KIP-853) of three formatted --initial-controllers; node
// 4 formatted --no-initial-controllers starts as an observer and
// `raftka cluster add-controller` makes it a voter once it has caught up.
// It then votes: with four voters, killing one of the original three
// (twice, in turn) leaves three that elect and commit only with node 4.
// `remove-controller` of the active controller hands leadership over; a
// removal that would leave no live majority is refused; the dead voter is
// then removed.
func TestDynamicQuorumAddRemoveController(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Prepare(t, cluster.Nodes(4), cluster.DynamicQuorum(1, 2, 3), cluster.LogLevel("info"))
	c.StartNodes(1, 2, 3)
	ctx := ctxFor(t, 4*time.Minute)
	cl := client(t, c, c.Node(1), c.Node(2), c.Node(3))
	waitVoters(t, ctx, cl, 1, 2, 3)
	commits(t, ctx, cl, "before")
	c.StartNodes(4)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		_, v, o, err := quorumMembers(ctx, cl)
		if err != nil {
			return false, err.Error()
		}
		return slices.Contains(o, 4), fmt.Sprintf("voters %v observers %v, want 4 observing", v, o)
	})

	run := func(args ...string) (string, error) {
		return cluster.Run(t, append(args, "--bootstrap-server", c.Bootstrap())...)
	}
	start := time.Now()
	out, err := run("cluster", "add-controller", "--controller-config", c.Node(4).ConfigPath())
	if err != nil || !strings.Contains(out, "Added controller 4") {
		t.Fatalf("add-controller: %v\n%s", err, out)
	}
	t.Logf("add-controller: observer to caught-up voter in %v (loaded machine, 2 shared cores): %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
	waitVoters(t, ctx, cl, 1, 2, 3, 4)
	if out, err := run("cluster", "add-controller", "--controller-config", c.Node(4).ConfigPath()); err == nil || !strings.Contains(out+err.Error(), "DUPLICATE_VOTER") {
		t.Fatalf("adding 4 again: %v\n%s", err, out)
	}

	all := client(t, c)
	for i, victim := range []int32{1, 2} {
		c.Node(victim).Kill()
		// Three of four voters left: a majority only with node 4's vote.
		waitVoters(t, ctx, all, 1, 2, 3, 4)
		commits(t, ctx, all, fmt.Sprintf("without-%d", victim))
		if i == 0 {
			c.StartNodes(victim)
		}
	}

	// Node 2 is dead. Remove the active controller (handed over first).
	leader, _, _, err := quorumMembers(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	if leader == 2 {
		t.Fatalf("dead node 2 leads")
	}
	if out, err := run("cluster", "remove-controller", "--controller-id", fmt.Sprint(leader)); err != nil {
		t.Fatalf("remove-controller %d: %v\n%s", leader, err, out)
	}
	var left []int32
	for _, id := range []int32{1, 2, 3, 4} {
		if id != leader {
			left = append(left, id)
		}
	}
	newLeader := waitVoters(t, ctx, all, left...)
	if newLeader == leader {
		t.Fatalf("removed controller %d still leads", leader)
	}
	commits(t, ctx, all, "after-removing-the-leader")

	// Three voters, node 2 dead: removing a live one leaves two with one
	// live. Refused.
	var live int32 = -1
	for _, id := range left {
		if id != 2 && id != newLeader {
			live = id
		}
	}
	out, err = run("cluster", "remove-controller", "--controller-id", fmt.Sprint(live))
	if err == nil || !strings.Contains(out+err.Error(), "INVALID_REQUEST") {
		t.Fatalf("removing live voter %d with 2 dead: want INVALID_REQUEST, got %v\n%s", live, err, out)
	}
	waitVoters(t, ctx, all, left...)
	if out, err := run("cluster", "remove-controller", "--controller-id", "2"); err != nil {
		t.Fatalf("removing dead node 2: %v\n%s", err, out)
	}
	var two []int32
	for _, id := range left {
		if id != 2 {
			two = append(two, id)
		}
	}
	waitVoters(t, ctx, all, two...)
	commits(t, ctx, all, "two-voters")
}

// Node replacement with a wiped disk, in Kafka's runbook order: node 3 of
// a dynamic quorum (a voter and a broker) dies with its disk under an
// acks=all idempotent load. Its new disk is formatted
// --no-initial-controllers (a new directory id) and the node started while
// the old incarnation is still a voter: it refuses votes (vote gate) until
// `remove-controller --controller-id 3 --controller-directory-id OLD` and
// `add-controller` have made the new incarnation the voter. A removal
// naming the new directory id is VOTER_NOT_FOUND. Every partition is back
// at three in-sync replicas and no acknowledged record is lost.
func TestReplaceWipedController(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, partitions = "wiped", 3
	c := cluster.Prepare(t, cluster.Nodes(3), cluster.DynamicQuorum(1, 2, 3), cluster.LogLevel("info"),
		cluster.Override("min.insync.replicas", "2"))
	c.StartAll()
	h := harness{Cluster: c}
	ctx := ctxFor(t, 4*time.Minute)
	cl := client(t, c)
	waitVoters(t, ctx, cl, 1, 2, 3)
	createAssigned(t, ctx, cl, topic, map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}})
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions, 3) })

	var rec invariants.Recorder
	prod, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: []string{c.Node(1).ClientAddr(), c.Node(2).ClientAddr()},
		Topic: topic, Partitions: partitions, Name: "wiped", Rate: 300, MaxRecords: 200_000}, &rec)
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

	old, err := storage.ReadMetaProperties(c.Node(3).DataDir())
	if err != nil {
		t.Fatal(err)
	}
	// The runbook reads the old directory id from describe --replication.
	out, err := cluster.Run(t, "cluster", "describe", "--replication", "--bootstrap-server", c.Bootstrap())
	if err != nil || !strings.Contains(out, "\n3 ") || !strings.Contains(out, old.DirectoryID) {
		t.Fatalf("describe --replication does not show node 3's directory id %s: %v\n%s", old.DirectoryID, err, out)
	}
	c.Node(3).Kill()
	if err := os.RemoveAll(c.Node(3).DataDir()); err != nil {
		t.Fatal(err)
	}
	waitAcks(200, "with node 3 gone")
	run := func(args ...string) (string, error) {
		return cluster.Run(t, append(args, "--bootstrap-server", c.Node(1).ClientAddr()+","+c.Node(2).ClientAddr())...)
	}
	if out, err := cluster.Run(t, "storage", "format", "--config", c.Node(3).ConfigPath(), "--cluster-id", c.ClusterID(), "--no-initial-controllers"); err != nil {
		t.Fatalf("format: %v\n%s", err, out)
	}
	fresh, err := storage.ReadMetaProperties(c.Node(3).DataDir())
	if err != nil || fresh.DirectoryID == old.DirectoryID {
		t.Fatalf("new directory id %q (old %q): %v", fresh.DirectoryID, old.DirectoryID, err)
	}
	c.StartNodes(3)
	// The vote gate: with the active controller killed, the one other
	// original voter needs node 3's vote, which the new disk refuses
	// while the old incarnation is the voter. No leader until the killed
	// node is back.
	leader, _, _, err := quorumMembers(ctx, cl)
	if err != nil || (leader != 1 && leader != 2) {
		t.Fatalf("leader %d: %v", leader, err)
	}
	other := 3 - leader
	c.Node(leader).Kill()
	survivor := client(t, c, c.Node(other))
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		l, _, _, err := quorumMembers(qctx, survivor)
		cancel()
		if err == nil && l >= 0 && l != leader {
			t.Fatalf("node %d was elected with the wiped node 3's vote", l)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.StartNodes(leader)
	waitVoters(t, ctx, cl, 1, 2, 3)
	if out, err := run("cluster", "remove-controller", "--controller-id", "3", "--controller-directory-id", fresh.DirectoryID); err == nil || !strings.Contains(out+err.Error(), "VOTER_NOT_FOUND") {
		t.Fatalf("removing 3 by its new directory id: want VOTER_NOT_FOUND, got %v\n%s", err, out)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		out, err := run("cluster", "remove-controller", "--controller-id", "3", "--controller-directory-id", old.DirectoryID)
		return err == nil, fmt.Sprintf("remove-controller 3: %v\n%s", err, out)
	})
	waitVoters(t, ctx, client(t, c, c.Node(1), c.Node(2)), 1, 2)
	if out, err := run("cluster", "add-controller", "--controller-config", c.Node(3).ConfigPath()); err != nil {
		t.Fatalf("add-controller 3: %v\n%s", err, out)
	}
	waitVoters(t, ctx, cl, 1, 2, 3)
	// Promoted, the new incarnation votes: with the active controller
	// killed again, the other two elect.
	leader, _, _, err = quorumMembers(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	c.Node(leader).Kill()
	var rest []*cluster.Node
	for _, id := range []int32{1, 2, 3} {
		if id != leader {
			rest = append(rest, c.Node(id))
		}
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		l, v, _, err := quorumMembers(qctx, client(t, c, rest...))
		return err == nil && l >= 0 && l != leader, fmt.Sprintf("leader %d voters %v: %v", l, v, err)
	})
	c.StartNodes(leader)
	cluster.WaitFor(t, 90*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions, 3) })
	waitAcks(200, "after the replacement")
	if _, err := prod.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	read, err := invariants.ReadAll(ctx, []string{c.Node(1).ClientAddr(), c.Node(3).ClientAddr()}, topic)
	if err != nil {
		t.Fatal(err)
	}
	r := invariants.Check(rec.Acks(), read)
	checkReport(t, h, topic, "wiped controller replacement", r)
	if r.Lost > 0 || r.Duplicated > 0 {
		t.Fatalf("lost %d, duplicated %d", r.Lost, r.Duplicated)
	}
	t.Logf("%d acknowledged, all read back once", rec.Count())
}
