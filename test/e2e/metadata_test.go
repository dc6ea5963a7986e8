package e2e

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
)

// A three-node cluster agrees on one Raft leader; killing it with SIGKILL
// leaves a quorum that elects another and serves metadata changes again.
func TestQuorumSurvivesLeaderKill(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3))
	cl := client(t, c)
	ctx := ctxFor(t, 90*time.Second)

	var leader int32 = -1
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		id, err := quorumLeader(ctx, cl)
		leader = id
		return err == nil, fmt.Sprint(err)
	})
	// Every node names the same leader in its own DescribeQuorum answer.
	for _, n := range c.Nodes() {
		cl1 := client(t, c, n)
		id, err := quorumLeader(ctx, cl1)
		if err != nil || id != leader {
			t.Fatalf("node %d sees leader %d (%v), want %d", n.ID(), id, err, leader)
		}
	}

	adm := kadm.NewClient(cl)
	if err := createTopic(ctx, adm, "before-kill", 3, 3); err != nil {
		t.Fatalf("create before kill: %v", err)
	}
	killed := time.Now()
	c.Node(leader).Kill()
	var survivors []*cluster.Node
	for _, n := range c.Nodes() {
		if n.ID() != leader {
			survivors = append(survivors, n)
		}
	}
	scl := client(t, c, survivors...)
	sadm := kadm.NewClient(scl)
	var newLeader int32
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		id, err := quorumLeader(ctx, scl)
		if err != nil || id == leader {
			return false, fmt.Sprintf("leader %d, %v", id, err)
		}
		newLeader = id
		return true, ""
	})
	elected := time.Since(killed)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		err := createTopic(ctx, sadm, "after-kill", 3, 2)
		return err == nil, fmt.Sprint(err)
	})
	t.Logf("SIGKILL of Raft leader %d: node %d elected after %v; metadata writes served again after %v",
		leader, newLeader, elected.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	// The killed node comes back, catches up and agrees.
	c.Node(leader).Restart()
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		ids, err := topicIDs(ctx, c.Node(leader))
		if err != nil {
			return false, err.Error()
		}
		_, a := ids["before-kill"]
		_, b := ids["after-kill"]
		return a && b, fmt.Sprintf("restarted node knows %v", slices.Sorted(maps.Keys(ids)))
	})
}

// Topic creation stays linearizable while the Raft leader is SIGKILLed
// every few seconds: every acknowledged creation exists on every node with
// one id, and all nodes agree on every topic, acknowledged or not.
func TestTopicCreationLinearizableUnderLeaderKills(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3))
	cl := client(t, c)
	ctx := ctxFor(t, 3*time.Minute)
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		_, err := quorumLeader(ctx, cl)
		return err == nil, fmt.Sprint(err)
	})

	const writers, rounds = 4, 3
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		fails int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wcl, err := kgoClient(c)
			if err != nil {
				t.Error(err)
				return
			}
			defer wcl.Close()
			adm := kadm.NewClient(wcl)
			for i := 0; i < 1000; i++ { // bounded: the kill rounds end it far sooner
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("lin-%d-%d", w, i)
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := createTopic(cctx, adm, name, 1, 1)
				cancel()
				mu.Lock()
				if err == nil {
					acked[name] = true
				} else {
					fails++
				}
				mu.Unlock()
			}
		}()
	}

	// Creations flow between kills: each round waits for a few more
	// acknowledgements before it strikes.
	ackedAtLeast := func(n int) {
		cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			return len(acked) >= n, fmt.Sprintf("%d creations acknowledged", len(acked))
		})
	}
	for r := range rounds {
		ackedAtLeast((r + 1) * 8)
		leader, err := quorumLeader(ctx, cl)
		if err != nil {
			cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
				leader, err = quorumLeader(ctx, cl)
				return err == nil, fmt.Sprint(err)
			})
		}
		t.Logf("round %d: SIGKILL Raft leader %d", r, leader)
		c.Node(leader).Kill()
		cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
			id, err := quorumLeader(ctx, cl)
			return err == nil && id != leader, fmt.Sprintf("leader %d, %v", id, err)
		})
		c.Node(leader).Restart()
	}
	ackedAtLeast((rounds + 1) * 8)
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(acked) == 0 {
		t.Fatal("no creation was acknowledged")
	}
	// All nodes converge on one set of topics with one id each.
	var views []map[string][16]byte
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		views = views[:0]
		for _, n := range c.Nodes() {
			ids, err := topicIDs(ctx, n)
			if err != nil {
				return false, fmt.Sprintf("node %d: %v", n.ID(), err)
			}
			views = append(views, ids)
		}
		for i := 1; i < len(views); i++ {
			if !maps.Equal(views[0], views[i]) {
				return false, fmt.Sprintf("node views differ: %d vs %d topics", len(views[0]), len(views[i]))
			}
		}
		return true, ""
	})
	for name := range acked {
		if _, ok := views[0][name]; !ok {
			t.Errorf("acknowledged topic %s is missing", name)
		}
	}
	t.Logf("%d creations acknowledged, %d failed (allowed to exist or not), %d topics on every node", len(acked), fails, len(views[0]))
}

// A node that was away while more entries than the snapshot threshold were
// committed catches up by installing a snapshot.
func TestSnapshotInstallOnReturn(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3),
		cluster.Override("raftka.metadata.snapshot.threshold", "16"),
		cluster.Override("raftka.metadata.snapshot.interval.ms", "200"),
		cluster.Override("raftka.metadata.snapshot.trailing.logs", "8"))
	cl := client(t, c)
	ctx := ctxFor(t, 2*time.Minute)
	var leader int32
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		id, err := quorumLeader(ctx, cl)
		leader = id
		return err == nil, fmt.Sprint(err)
	})
	var away *cluster.Node
	for _, n := range c.Nodes() {
		if n.ID() != leader {
			away = n
			break
		}
	}
	away.Kill()
	var live []*cluster.Node
	for _, n := range c.Nodes() {
		if n != away {
			live = append(live, n)
		}
	}
	adm := kadm.NewClient(client(t, c, live...))
	const topics = 60
	for i := range topics {
		if err := createTopic(ctx, adm, fmt.Sprintf("snap-%d", i), 1, 2); err != nil {
			t.Fatalf("create snap-%d: %v", i, err)
		}
	}
	away.Restart()
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		ids, err := topicIDs(ctx, away)
		if err != nil {
			return false, err.Error()
		}
		return len(ids) >= topics, fmt.Sprintf("returned node knows %d topics", len(ids))
	})
	restores, err := metric(away, "raftka_metadata_snapshot_restores_total")
	if err != nil {
		t.Fatal(err)
	}
	if restores < 1 {
		t.Fatalf("the returned node caught up without restoring a snapshot (restores %v)", restores)
	}
}

// A broker that stops heartbeating (SIGSTOP) is fenced within the session
// timeout and loses its leaderships to live ISR members; after SIGCONT it is
// unfenced again.
func TestFencingOnSIGSTOP(t *testing.T) {
	c := cluster.Start(t, cluster.Nodes(3))
	cl := client(t, c)
	ctx := ctxFor(t, 2*time.Minute)
	adm := kadm.NewClient(cl)
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		err := createTopic(ctx, adm, "fence", 6, 3)
		return err == nil, fmt.Sprint(err)
	})
	leader, err := quorumLeader(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	// The victim is a broker that is not the Raft leader, so the quorum
	// keeps its leader and the test isolates broker fencing.
	victim := c.Nodes()[rand.IntN(3)]
	for victim.ID() == leader {
		victim = c.Nodes()[rand.IntN(3)]
	}
	var observer *cluster.Node
	for _, n := range c.Nodes() {
		if n != victim {
			observer = n
			break
		}
	}
	stopped := time.Now()
	victim.Stop()
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		resp, err := nodeMetadata(ctx, observer)
		if err != nil {
			return false, err.Error()
		}
		for _, b := range resp.Brokers {
			if b.NodeID == victim.ID() {
				return false, "victim still listed as a live broker"
			}
		}
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if p.Leader == victim.ID() {
					return false, fmt.Sprintf("partition %d still led by the victim", p.Partition)
				}
				if p.Leader < 0 {
					return false, fmt.Sprintf("partition %d has no leader", p.Partition)
				}
			}
		}
		return true, ""
	})
	t.Logf("broker %d fenced and its leaderships moved %v after SIGSTOP", victim.ID(), time.Since(stopped).Round(time.Millisecond))
	victim.Cont()
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		resp, err := nodeMetadata(ctx, observer)
		if err != nil {
			return false, err.Error()
		}
		for _, b := range resp.Brokers {
			if b.NodeID == victim.ID() {
				return true, ""
			}
		}
		return false, "victim not unfenced yet"
	})
}
