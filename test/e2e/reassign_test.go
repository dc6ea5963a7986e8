package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reassignment under load (issue 16, KIP-455): an RF=3 topic on brokers
// {1,2,3} moves to {2,3,4} (a fourth node) while an idempotent
// acks=all producer runs. Broker 4 is frozen first, so the moves stay in
// progress: they are listed with adding [4] / removing [1], and one of
// them is cancelled halfway and goes back to its original replicas. Once
// 4 runs again the others complete; then the cancelled one is moved too.
// Nothing acknowledged is lost or duplicated, and broker 1 ends up with no
// replica.
func TestReassignmentUnderLoad(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, partitions = "moving", 3
	c := cluster.Start(t, cluster.Nodes(4), cluster.LogLevel("info"),
		cluster.Override("min.insync.replicas", "2"))
	h := harness{Cluster: c}
	ctx := ctxFor(t, 4*time.Minute)
	cl := client(t, c)
	// Admin calls go to broker 1 (which forwards them to the active
	// controller): a client left to itself may have learned broker 4 as
	// its controller (Metadata names the answering broker), and 4 is
	// frozen for part of the test.
	adm := pinned{cl.Broker(1)}

	// Every partition on {1,2,3}, preferred leaders spread.
	original := map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}}
	createAssigned(t, ctx, cl, topic, original)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })

	var rec invariants.Recorder
	prod, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: h.Seeds(), Topic: topic, Partitions: partitions,
		Name: "reassign", Rate: 500, MaxRecords: 200_000}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Stop(5 * time.Second)
	// Enough in the logs that the new replica has something to catch up.
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return rec.Count() >= 2000, fmt.Sprintf("%d acknowledged", rec.Count()) })

	target := map[int32][]int32{}
	for p, reps := range original {
		target[p] = slices.Clone(reps)
		target[p][slices.Index(reps, 1)] = 4
	}
	// Broker 4 is a voter too; frozen as the active controller it would
	// stall every admin call until an election, which is not this test.
	for try := 0; ; try++ {
		leader, err := quorumLeader(ctx, cl)
		if err == nil && leader != 4 {
			break
		}
		if try == 3 {
			t.Fatalf("node 4 still leads the quorum (%v)", err)
		}
		if err == nil {
			c.Node(4).Restart() // SIGTERM hands Raft leadership over first
		}
		time.Sleep(time.Second)
	}
	c.Node(4).Stop() // SIGSTOP: 4 cannot catch up, the moves stay in progress
	req := map[int32][]int32{}
	for p, reps := range target {
		req[p] = reps
	}
	alter(t, ctx, adm, topic, req)

	listed := list(t, ctx, adm, topic)
	if len(listed) != partitions {
		t.Fatalf("%d partitions listed as moving, want %d: %+v", len(listed), partitions, listed)
	}
	for p, l := range listed {
		if !slices.Equal(l.AddingReplicas, []int32{4}) || !slices.Equal(l.RemovingReplicas, []int32{1}) {
			t.Fatalf("partition %d listed %+v, want adding [4] removing [1]", p, l)
		}
		if got, want := len(l.Replicas), 4; got != want {
			t.Fatalf("partition %d has replicas %v during the move, want the union of 4", p, l.Replicas)
		}
	}

	// Cancel partition 2 halfway: back to {1,2,3}, no longer listed.
	cancel := map[int32][]int32{2: nil}
	alter(t, ctx, adm, topic, cancel)
	if l := list(t, ctx, adm, topic); len(l) != 2 {
		t.Fatalf("after cancelling partition 2: %+v", l)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		st := partitionState(t, ctx, h, topic, 2, 4)
		// The original set, in the union's order (target, then removed),
		// as Kafka's PartitionReassignmentRevert leaves it.
		got := slices.Sorted(slices.Values(st.Replicas))
		return slices.Equal(got, []int32{1, 2, 3}), fmt.Sprintf("partition 2 replicas %v after cancel, want the set %v", st.Replicas, original[2])
	})
	// A second cancel finds nothing to cancel.
	if codes := adm.alter(ctx, topic, cancel); codes[2] != kerr.NoReassignmentInProgress {
		t.Fatalf("second cancel: %v, want NO_REASSIGNMENT_IN_PROGRESS", codes)
	}

	c.Node(4).Cont()
	thawed := time.Now()
	waitMoved(t, ctx, h, adm, topic, map[int32][]int32{0: target[0], 1: target[1]})
	t.Logf("partitions 0 and 1 moved %v after broker 4 resumed", time.Since(thawed).Round(time.Millisecond))

	alter(t, ctx, adm, topic, map[int32][]int32{2: target[2]})
	waitMoved(t, ctx, h, adm, topic, target)

	// Writes still flow to every partition after the moves.
	moved := time.Now()
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		for p := range int32(partitions) {
			if n := rec.CountSince(p, moved); n < 10 {
				failed, lastErr := rec.Failed()
				return false, fmt.Sprintf("partition %d: %d acknowledged since the move (%d failed, last %v)", p, n, failed, lastErr)
			}
		}
		return true, ""
	})
	if _, err := prod.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	r := invariants.Check(rec.Acks(), read)
	checkReport(t, h, topic, "reassignment", r)
	if r.Duplicated > 0 || r.Lost > 0 {
		t.Fatalf("lost %d, duplicated %d", r.Lost, r.Duplicated)
	}
}

func createAssigned(t testing.TB, ctx context.Context, cl *kgo.Client, topic string, assignment map[int32][]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := range int32(len(assignment)) {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, assignment[p]
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false, err.Error()
		}
		if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
			// Broker 4 may not be registered yet.
			return false, err.Error()
		}
		return true, ""
	})
}

// pinned sends admin requests to one broker.
type pinned struct{ b *kgo.Broker }

// alter sends one AlterPartitionReassignments (nil replicas cancel) and
// returns each partition's error (nil for none, or the request's).
func (a pinned) alter(ctx context.Context, topic string, parts map[int32][]int32) map[int32]error {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, parts[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	out := map[int32]error{}
	resp, err := req.RequestWith(ctx, a.b)
	for p := range parts {
		out[p] = err
	}
	if err != nil {
		return out
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = kerr.ErrorForCode(p.ErrorCode)
		}
	}
	return out
}

func alter(t *testing.T, ctx context.Context, a pinned, topic string, parts map[int32][]int32) {
	t.Helper()
	for p, err := range a.alter(ctx, topic, parts) {
		if err != nil {
			t.Fatalf("%s-%d: %v", topic, p, err)
		}
	}
}

// listAll lists every ongoing reassignment of topic (null topics: every
// one in the cluster, which kadm cannot ask for).
func (a pinned) listAll(ctx context.Context, topic string) (map[int32]kmsg.ListPartitionReassignmentsResponseTopicPartition, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, a.b)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	out := map[int32]kmsg.ListPartitionReassignmentsResponseTopicPartition{}
	for _, rt := range resp.Topics {
		if rt.Topic == topic {
			for _, p := range rt.Partitions {
				out[p.Partition] = p
			}
		}
	}
	return out, nil
}

func list(t *testing.T, ctx context.Context, a pinned, topic string) map[int32]kmsg.ListPartitionReassignmentsResponseTopicPartition {
	t.Helper()
	l, err := a.listAll(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// waitMoved waits until nothing of topic is listed as moving and every
// node sees each partition of want on exactly those replicas, all in sync.
func waitMoved(t *testing.T, ctx context.Context, h harness, a pinned, topic string, want map[int32][]int32) {
	t.Helper()
	cluster.WaitFor(t, 90*time.Second, func() (bool, string) {
		l, err := a.listAll(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		if len(l) > 0 {
			return false, fmt.Sprintf("still moving: %+v", l)
		}
		for _, id := range h.Nodes() {
			st, err := invariants.TopicState(ctx, h.ClientAddr(id), topic)
			if err != nil {
				return false, fmt.Sprintf("node %d: %v", id, err)
			}
			for p, reps := range want {
				s := st[p]
				if !slices.Equal(s.Replicas, reps) || len(s.ISR) != len(reps) || !slices.Contains(reps, s.Leader) {
					return false, fmt.Sprintf("node %d sees partition %d as %+v, want replicas %v all in sync", id, p, s, reps)
				}
			}
		}
		return true, ""
	})
}

// `raftka reassign drain` then `verify` on real processes: every replica on
// broker 3 moves to the others, verify exits 1 while anything moves and 0
// once all of it has, and afterwards no partition lists broker 3, which is
// then stopped and unregistered (UnregisterBroker on the client listener).
func TestReassignCLIDrain(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, partitions = "drained", 4
	c := cluster.Start(t, cluster.Nodes(4), cluster.LogLevel("info"))
	h := harness{Cluster: c}
	ctx := ctxFor(t, 3*time.Minute)
	cl := client(t, c)
	createAssigned(t, ctx, cl, topic, map[int32][]int32{0: {1, 3}, 1: {3, 2}, 2: {2, 4}, 3: {4, 3}})
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })
	p, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: h.Seeds(), Topic: topic, Partitions: partitions,
		Name: "drain", Rate: 200, MaxRecords: 1000}, &invariants.Recorder{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(5 * time.Second)

	bin := cluster.Binary(t)
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, append(args, "--bootstrap-server", c.Node(1).ClientAddr())...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("reassign", "drain", "--broker", "3")
	if err != nil {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	_, rest, ok := strings.Cut(out, "Reassignment (use it with reassign verify or cancel)\n")
	plan, _, ok2 := strings.Cut(rest, "\n")
	if !ok || !ok2 || !strings.Contains(out, "Successfully started partition reassignments for drained-0,drained-1,drained-3") {
		t.Fatalf("drain printed:\n%s", out)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, []byte(plan), 0o600); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		out, err := run("reassign", "verify", "--reassignment-json-file", file)
		return err == nil, fmt.Sprintf("verify: %v\n%s", err, out)
	})
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		st, err := invariants.TopicState(ctx, h.ClientAddr(1), topic)
		if err != nil {
			return false, err.Error()
		}
		for p, s := range st {
			if slices.Contains(s.Replicas, 3) || len(s.ISR) != 2 {
				return false, fmt.Sprintf("partition %d: %+v", p, s)
			}
		}
		return true, ""
	})
	if out, err := run("reassign", "drain", "--broker", "3"); err != nil || !strings.Contains(out, "Broker 3 holds no replicas.") {
		t.Fatalf("second drain: %v\n%s", err, out)
	}

	// Retire broker 3: stop it, then UnregisterBroker through the client
	// listener; Metadata no longer lists it, a second unregister is
	// BROKER_ID_NOT_REGISTERED.
	c.Node(3).Term()
	unreg := func() int16 {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = 3
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := unreg(); code != 0 {
		t.Fatalf("unregister broker 3: %v", kerr.ErrorForCode(code))
	}
	md, err := nodeMetadata(ctx, c.Node(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range md.Brokers {
		if b.NodeID == 3 {
			t.Fatalf("broker 3 still in Metadata after UnregisterBroker: %+v", md.Brokers)
		}
	}
	if code := unreg(); code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("second unregister: %v", kerr.ErrorForCode(code))
	}
}

// A reassignment is Raft state: the active controller is killed (-9) while
// every move is in progress (broker 4 frozen; five nodes, so a quorum
// remains), the new controller still
// lists them, and they complete under it once 4 runs again, with nothing
// acknowledged lost or duplicated.
func TestReassignmentSurvivesControllerFailover(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, partitions = "failover-move", 3
	// Five voters: one killed and one frozen still leave a quorum.
	c := cluster.Start(t, cluster.Nodes(5), cluster.LogLevel("info"),
		cluster.Override("min.insync.replicas", "2"))
	h := harness{Cluster: c}
	ctx := ctxFor(t, 4*time.Minute)
	cl := client(t, c)
	original := map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}}
	createAssigned(t, ctx, cl, topic, original)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })

	var rec invariants.Recorder
	prod, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: h.Seeds(), Topic: topic, Partitions: partitions,
		Name: "failover-move", Rate: 300, MaxRecords: 200_000}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Stop(5 * time.Second)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return rec.Count() >= 500, fmt.Sprintf("%d acknowledged", rec.Count()) })

	var leader int32
	for try := 0; ; try++ {
		leader, err = quorumLeader(ctx, cl)
		if err == nil && leader != 4 {
			break
		}
		if try == 3 {
			t.Fatalf("node 4 still leads the quorum (%v)", err)
		}
		if err == nil {
			c.Node(4).Restart()
		}
		time.Sleep(time.Second)
	}
	// Admin calls go through a node that stays up and unfrozen.
	via := int32(1)
	for via == leader {
		via++
	}
	adm := pinned{cl.Broker(int(via))}
	target := map[int32][]int32{}
	for p, reps := range original {
		target[p] = slices.Clone(reps)
		target[p][slices.Index(reps, 1)] = 4
	}
	c.Node(4).Stop()
	alter(t, ctx, adm, topic, target)
	if l := list(t, ctx, adm, topic); len(l) != partitions {
		t.Fatalf("before failover: %+v", l)
	}

	c.Node(leader).Kill()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		l, err := adm.listAll(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		for p, e := range l {
			if !slices.Equal(e.AddingReplicas, []int32{4}) || !slices.Equal(e.RemovingReplicas, []int32{1}) {
				return false, fmt.Sprintf("partition %d listed %+v", p, e)
			}
		}
		return len(l) == partitions, fmt.Sprintf("%d partitions listed after the failover", len(l))
	})
	c.Node(4).Cont()
	c.Node(leader).Restart()
	waitMoved(t, ctx, h, adm, topic, target)

	if _, err := prod.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	r := invariants.Check(rec.Acks(), read)
	checkReport(t, h, topic, "reassignment across a controller failover", r)
	if r.Duplicated > 0 || r.Lost > 0 {
		t.Fatalf("lost %d, duplicated %d", r.Lost, r.Duplicated)
	}
}
