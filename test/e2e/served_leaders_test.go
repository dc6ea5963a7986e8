package e2e

// Issue 18, P3: a broker serves only metadata its partition layer has
// applied, and CreateTopics and ElectLeaders answer once the other
// replicas' brokers serve the change, so a produce sent to the leaders
// Metadata names, right after either answer, is taken at once: no
// NOT_LEADER_OR_FOLLOWER, and no catch-up wait on any node.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceToLeaders asks node via for topic's leaders and sends one raw
// acks=all Produce to each partition's leader, with no client retry to
// hide an error. It returns the leaders by partition.
func produceToLeaders(ctx context.Context, c *cluster.Cluster, via *cluster.Node, topic string) (map[int32]int32, error) {
	md, err := nodeMetadata(ctx, via)
	if err != nil {
		return nil, err
	}
	leaders := map[int32]int32{}
	for _, mt := range md.Topics {
		if mt.Topic == nil || *mt.Topic != topic {
			continue
		}
		if mt.ErrorCode != 0 {
			return nil, fmt.Errorf("node %d: Metadata of %s: %v", via.ID(), topic, kerr.ErrorForCode(mt.ErrorCode))
		}
		for _, p := range mt.Partitions {
			leaders[p.Partition] = p.Leader
		}
	}
	if len(leaders) == 0 {
		return nil, fmt.Errorf("node %d does not serve %s right after the answer", via.ID(), topic)
	}
	for p, l := range leaders {
		n := c.Node(l)
		if n == nil {
			return nil, fmt.Errorf("%s-%d: leader %d is no node of the cluster", topic, p, l)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, -1, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = recordbatch.BuildValues(time.Now().UnixMilli(), []byte("v"))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := invariants.RawRequest(ctx, n.ClientAddr(), req)
		if err != nil {
			return nil, fmt.Errorf("%s-%d: produce to node %d: %w", topic, p, l, err)
		}
		if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			return nil, fmt.Errorf("%s-%d: node %d, named leader, answered %v", topic, p, l, kerr.ErrorForCode(code))
		}
	}
	return leaders, nil
}

func catchUpWaits(t *testing.T, c *cluster.Cluster) float64 {
	t.Helper()
	var total float64
	for _, n := range c.Nodes() {
		v, err := metric(n, `raftka_catch_up_waits_total{from="client"}`)
		if err != nil {
			t.Fatal(err)
		}
		total += v
	}
	return total
}

func TestProduceRightAfterCreateOrLeaderMove(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3))
	ctx := ctxFor(t, 3*time.Minute)
	via := c.Node(1)
	cl := client(t, c, via)
	adm := kadm.NewClient(cl)
	before := catchUpWaits(t, c)

	const rounds = 10
	for i := range rounds {
		topic := fmt.Sprintf("fresh-%d", i)
		if err := createTopic(ctx, adm, topic, 6, 3); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
		leaders, err := produceToLeaders(ctx, c, via, topic)
		if err != nil {
			t.Fatalf("right after CreateTopics: %v", err)
		}

		// Move every leader to the partition's next replica: reorder the
		// replicas (same set, so the reassignment completes at once) and
		// elect the preferred ones.
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.TimeoutMillis = 30_000
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = topic
		for p, l := range leaders {
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rp.Partition = p
			next := l%3 + 1
			rp.Replicas = []int32{next, next%3 + 1, l}
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		if _, err := req.RequestWith(ctx, cl); err != nil {
			t.Fatalf("reorder %s: %v", topic, err)
		}
		if ok, why := eventually(30*time.Second, func() (bool, string) {
			listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: nil})
			if err != nil {
				return false, err.Error()
			}
			return len(listed) == 0, fmt.Sprintf("%d reassignments ongoing", len(listed))
		}); !ok {
			t.Fatalf("reorder of %s: %s", topic, why)
		}
		set := kadm.TopicsSet{}
		for p := range leaders {
			set.Add(topic, p)
		}
		elected, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
		if err != nil {
			t.Fatalf("elect %s: %v", topic, err)
		}
		for _, ps := range elected {
			for _, r := range ps {
				if r.Err != nil {
					t.Fatalf("elect %s-%d: %v", topic, r.Partition, r.Err)
				}
			}
		}
		moved, err := produceToLeaders(ctx, c, via, topic)
		if err != nil {
			t.Fatalf("right after ElectLeaders: %v", err)
		}
		for p, l := range moved {
			if l == leaders[p] {
				md, _ := nodeMetadata(ctx, via)
				t.Fatalf("%s-%d: leader still %d after the election (%+v); metadata %+v", topic, p, l, elected, md.Topics)
			}
		}
	}
	if n := catchUpWaits(t, c) - before; n != 0 {
		t.Fatalf("%v client requests waited for a node to catch up on the metadata", n)
	}
}
