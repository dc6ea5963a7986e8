package raftfsm

import (
	"errors"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
)

func inmemConfig(id int32) Config {
	return Config{NodeID: id, ClusterID: testClusterID, SessionTimeout: time.Hour, Logger: testLogger()}
}

func TestInMemorySingleVoter(t *testing.T) {
	n, err := StartInMemory(inmemConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Shutdown() })
	if !n.IsLeader() || n.LeaderID() != 1 || n.Addr() != InmemAddr(1) {
		t.Fatalf("leader %v, leader id %d, addr %s", n.IsLeader(), n.LeaderID(), n.Addr())
	}
	if img, _ := n.Current(); img.ClusterID() != testClusterID {
		t.Fatalf("cluster id %q", img.ClusterID())
	}
	ctx := ctxT(t, 10*time.Second)
	idx, err := n.CommitRecords(ctx, &metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 7})
	if err != nil {
		t.Fatal(err)
	}
	img, applied := n.Current()
	if b, ok := img.Broker(1); !ok || b.Epoch != 7 || applied < idx {
		t.Fatalf("broker 1 %+v (registered %v) at index %d, committed at %d", b, ok, applied, idx)
	}
	// A decision runs for requests: the topic lands on the one broker.
	mustCreate(t, n.Client(), "orders", 2, 1)
	img, _ = n.Current()
	if ti, ok := img.Topic("orders"); !ok || len(ti.Partitions) != 2 {
		t.Fatalf("orders: %+v (%v)", ti, ok)
	}
	// A record the image would skip commits nothing.
	if _, err := n.CommitRecords(ctx, &metadata.FenceBroker{BrokerID: 9, BrokerEpoch: 1}); err == nil {
		t.Fatal("fencing an unknown broker committed")
	}
	if _, after := n.Current(); after != applied+1 {
		// The topic was one entry; nothing else may have been added.
		t.Fatalf("index %d after a skipped commit, want %d", after, applied+1)
	}
}

// Three voters on one network: a follower's client is forwarded to the
// leader, the quorum survives the leader's stop, and a restarted node
// finds its log where it left it.
func TestInMemoryQuorum(t *testing.T) {
	w := NewInmemNetwork()
	voters := []Voter{{ID: 1, Addr: InmemAddr(1)}, {ID: 2, Addr: InmemAddr(2)}, {ID: 3, Addr: InmemAddr(3)}}
	cfg := func(id int32) Config {
		c := inmemConfig(id)
		c.Inmem, c.Voter, c.Voters = w, true, voters
		c.RaftHeartbeatTimeout, c.RaftElectionTimeout, c.RaftLeaderLeaseTimeout = 250*time.Millisecond, 250*time.Millisecond, 200*time.Millisecond
		return c
	}
	nodes := make([]*Node, 3)
	for i := range nodes {
		n, err := StartInMemory(cfg(int32(i + 1)))
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			if n != nil {
				_ = n.Shutdown()
			}
		}
	})
	leaderOf := func() int {
		l := -1
		waitFor(t, 10*time.Second, "an active controller", func() bool {
			for i, n := range nodes {
				if n != nil && n.activeController() != nil {
					l = i
					return true
				}
			}
			return false
		})
		return l
	}
	l := leaderOf()
	f := (l + 1) % 3
	ctx := ctxT(t, 20*time.Second)
	if _, err := nodes[l].CommitRecords(ctx,
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 1}, &metadata.RegisterBroker{BrokerID: 2, BrokerEpoch: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[f].CommitRecords(ctx, &metadata.RegisterBroker{BrokerID: 3, BrokerEpoch: 3}); !errors.Is(err, ErrNotController) {
		t.Fatalf("CommitRecords on a follower: %v", err)
	}
	mustCreate(t, nodes[f].Client(), "a", 1, 2)
	if img, _ := nodes[f].Current(); !hasTopic(img, "a") {
		t.Fatal("the follower's client returned before its image had the topic")
	}

	last := nodes[l].raft.LastIndex()
	if err := nodes[l].Shutdown(); err != nil {
		t.Fatal(err)
	}
	nodes[l] = nil
	l2 := leaderOf()
	for i, n := range nodes {
		if n != nil && i != l2 {
			mustCreate(t, n.Client(), "b", 1, 2)
			break
		}
	}

	n, err := StartInMemory(cfg(int32(l + 1)))
	if err != nil {
		t.Fatal(err)
	}
	nodes[l] = n
	if got := n.raft.LastIndex(); got < last {
		t.Fatalf("restarted with log up to %d, had %d", got, last)
	}
	waitFor(t, 10*time.Second, "the restarted node to catch up", func() bool {
		img, _ := n.Current()
		return hasTopic(img, "a") && hasTopic(img, "b")
	})
}

func hasTopic(img *metadata.Image, name string) bool {
	_, ok := img.Topic(name)
	return ok
}

// BenchmarkStartInMemory is what a test pays for a twin: start, elect,
// write the cluster id, shut down.
func BenchmarkStartInMemory(b *testing.B) {
	for b.Loop() {
		n, err := StartInMemory(Config{NodeID: 1, Logger: testLogger()})
		if err != nil {
			b.Fatal(err)
		}
		if err := n.Shutdown(); err != nil {
			b.Fatal(err)
		}
	}
}
