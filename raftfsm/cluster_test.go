package raftfsm

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"time"
)

func TestClusterCreateTopicsViaFollowerAndFailover(t *testing.T) {
	tc := startCluster(t, 3, nil)
	li := tc.leader(10 * time.Second)
	fi := tc.follower()
	brokers := startBrokers(t, tc, 3)

	// A client that knows only the follower's address: the follower
	// forwards, and the call returns once the follower itself has applied
	// the commit.
	follower := tc.nodes[fi]
	c := NewControllerClient(ClientConfig{Voters: []Voter{tc.voters[fi]}, Waiter: follower})
	defer c.Close()
	resp, index, err := c.Request(ctxT(t, 10*time.Second), createTopicReq("orders", 3, 3))
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.(*kmsg.CreateTopicsResponse).Topics[0]; ct.ErrorCode != 0 {
		t.Fatalf("create orders: code %d %s", ct.ErrorCode, deref(ct.ErrorMessage))
	}
	if index == 0 {
		t.Fatalf("response carries no commit index: %+v", resp)
	}
	img, applied := follower.Current()
	if applied < index {
		t.Fatalf("follower applied %d < commit %d after the call returned", applied, index)
	}
	topic, ok := img.Topic("orders")
	if !ok || len(topic.Partitions) != 3 {
		t.Fatalf("follower image lacks orders after read-your-writes wait: %+v", topic)
	}
	for i, n := range tc.nodes {
		if err := n.WaitForIndex(ctxT(t, 5*time.Second), index); err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
		got, _ := n.Current()
		if gt, ok := got.Topic("orders"); !ok || gt.ID != topic.ID {
			t.Fatalf("node %d: orders missing or with another id", i+1)
		}
	}

	// Kill the leader (clean Shutdown, which transfers leadership) and time
	// how long until the next CreateTopics is served.
	survivors := []Voter{}
	for i, v := range tc.voters {
		if i != li {
			survivors = append(survivors, v)
		}
	}
	// Brokers report the node they live on; stop the one on the leader.
	brokers[li].stop()
	start := time.Now()
	tc.stop(li)
	c2 := NewControllerClient(ClientConfig{Voters: survivors})
	defer c2.Close()
	mustCreate(t, c2, "after-failover", 1, 1)
	t.Logf("failover after leader shutdown (with leadership transfer): next CreateTopics served in %v", time.Since(start))

	// A second failover without transfer: stop Raft on the new leader the
	// hard way (no LeadershipTransfer) to measure election-based failover.
	li2 := tc.leader(10 * time.Second)
	// Only two nodes are left; stopping one loses the quorum, so bring the
	// first one back before measuring.
	tc.restart(li)
	waitFor(t, 10*time.Second, "restarted node catches up", func() bool {
		n := tc.nodes[li]
		img, _ := n.Current()
		_, ok := img.Topic("after-failover")
		return ok
	})
	start = time.Now()
	hardStop(tc, li2)
	c3 := NewControllerClient(ClientConfig{Voters: tc.voters})
	defer c3.Close()
	mustCreate(t, c3, "after-crash", 1, 1)
	t.Logf("failover after leader crash (no transfer, election): next CreateTopics served in %v", time.Since(start))
}

// hardStop stops a node's Raft without a leadership transfer, as a crash
// would, then releases its resources.
func hardStop(tc *testCluster, i int) {
	n := tc.nodes[i]
	_ = n.raft.Shutdown().Error()
	n.mux.close()
	tc.stop(i)
}
