package e2e

import (
	"context"
	"fmt"
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

// TestEligibleLeaderReplicas is KIP-966's scenario. One partition on
// brokers {2,3,4} (broker-only nodes, so the controller on node 1 outlives
// them), min.insync.replicas=2, acks=all load. The followers die one after
// the other, then the leader: with eligible.leader.replicas.version 1 the
// follower that left the ISR while it was at min.insync.replicas (3) and
// the last leader (2) are eligible, and bringing 3 back makes it leader
// with no unclean election and no acknowledged record lost. At version 0
// (Kafka's behaviour before ELR) the same 3 finds itself outside the ISR
// and the partition stays offline until 2, the last ISR member, returns.
func TestEligibleLeaderReplicas(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	for _, elr := range []bool{true, false} {
		name := "version 1"
		if !elr {
			name = "version 0"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testELR(t, elr)
		})
	}
}

func testELR(t *testing.T, elr bool) {
	const topic = "elr"
	c := cluster.Start(t, cluster.Nodes(4), cluster.BrokerOnly(2, 3, 4), cluster.LogLevel("info"),
		cluster.Override("min.insync.replicas", "2"))
	h := harness{Cluster: c}
	ctx := ctxFor(t, 4*time.Minute)
	cl := client(t, c, c.Node(1))
	adm := cl.Broker(1)
	if elr {
		out, err := cluster.Run(t, "features", "upgrade", "--bootstrap-server", c.Node(1).ClientAddr(), "--feature", "eligible.leader.replicas.version=1")
		if err != nil {
			t.Fatalf("features upgrade: %v\n%s", err, out)
		}
	}
	createAssigned(t, ctx, cl, topic, map[int32][]int32{0: {2, 3, 4}})
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		p, err := describePartition(ctx, adm, topic)
		return err == nil && p.LeaderID == 2 && len(p.ISR) == 3, fmt.Sprintf("%+v %v", p, err)
	})

	var rec invariants.Recorder
	prod, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: h.Seeds(), Topic: topic, Partitions: 1,
		Name: "elr", Rate: 300, MaxRecords: 100_000, Opts: []kgo.Opt{kgo.RecordDeliveryTimeout(5 * time.Second)}}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Stop(5 * time.Second)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return rec.Count() >= 500, fmt.Sprintf("%d acknowledged", rec.Count()) })

	// KIP-966's order: a follower, the other follower, then the leader.
	waitISR := func(what string, cond func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool) kmsg.DescribeTopicPartitionsResponseTopicPartition {
		t.Helper()
		var last kmsg.DescribeTopicPartitionsResponseTopicPartition
		cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
			p, err := describePartition(ctx, adm, topic)
			last = p
			return err == nil && cond(p), fmt.Sprintf("%s: leader %d ISR %v ELR %v (%v)", what, p.LeaderID, p.ISR, p.EligibleLeaderReplicas, err)
		})
		return last
	}
	c.Node(4).Kill()
	waitISR("ISR {2,3}", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool {
		return slices.Equal(p.ISR, []int32{2, 3}) && len(p.EligibleLeaderReplicas) == 0
	})
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		n := rec.Count()
		time.Sleep(500 * time.Millisecond)
		return rec.Count() > n, "acks=all flowing at min.insync.replicas"
	})
	c.Node(3).Kill()
	p := waitISR("ISR {2}", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool {
		return slices.Equal(p.ISR, []int32{2})
	})
	if want := []int32{3}; elr && !slices.Equal(p.EligibleLeaderReplicas, want) {
		t.Fatalf("ELR %v with ISR {2}, want %v", p.EligibleLeaderReplicas, want)
	}
	c.Node(2).Kill()
	if _, err := prod.Stop(10 * time.Second); err != nil {
		t.Logf("producer stopped: %v", err) // records in flight to dead brokers fail
	}
	acked := rec.Acks()
	if elr {
		p = waitISR("ISR empty, leaderless", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool {
			return p.LeaderID == -1 && len(p.ISR) == 0
		})
		if !slices.Equal(p.EligibleLeaderReplicas, []int32{2, 3}) {
			t.Fatalf("ELR %v with the ISR empty, want [2 3]", p.EligibleLeaderReplicas)
		}
		out, err := cluster.Run(t, "topics", "describe", "--bootstrap-server", c.Node(1).ClientAddr(), "--topic", topic)
		if err != nil || !strings.Contains(out, "Elr: 2,3\tLastKnownElr: ") {
			t.Fatalf("topics describe: %v\n%s", err, out)
		}
	} else {
		waitISR("offline with the last leader kept in the ISR", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool {
			return p.LeaderID == -1 && slices.Equal(p.ISR, []int32{2})
		})
	}

	c.StartNodes(3)
	if elr {
		p = waitISR("3 elected from the ELR", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool { return p.LeaderID == 3 })
		if !slices.Equal(p.ISR, []int32{3}) || !slices.Equal(p.EligibleLeaderReplicas, []int32{2}) {
			t.Fatalf("after the ELR election: ISR %v ELR %v, want [3] and [2]", p.ISR, p.EligibleLeaderReplicas)
		}
	} else {
		// 3 is registered and unfenced, and still the partition has no
		// leader: it is not in the ISR and the election may not be unclean.
		cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
			ok, err := brokerListed(ctx, adm, 3)
			return ok, fmt.Sprintf("broker 3 listed: %v %v", ok, err)
		})
		time.Sleep(3 * time.Second) // several heartbeats: any election would have run
		p, err := describePartition(ctx, adm, topic)
		if err != nil || p.LeaderID != -1 || !slices.Equal(p.ISR, []int32{2}) {
			t.Fatalf("without ELR, 3 back: leader %d ISR %v (%v), want offline with ISR [2]", p.LeaderID, p.ISR, err)
		}
		c.StartNodes(2)
		waitISR("2, the last ISR member, leads again", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool { return p.LeaderID == 2 })
	}
	// Everyone back: the ISR reaches min.insync.replicas again, the HW
	// moves, and every acknowledged record is readable.
	c.StartNodes(2, 4)
	waitISR("ISR back to full", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool {
		return len(p.ISR) == 3 && len(p.EligibleLeaderReplicas) == 0
	})
	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	r := invariants.Check(acked, read)
	checkReport(t, h, topic, "eligible leader replicas", r)
	if r.Lost > 0 {
		t.Fatalf("lost %d acknowledged records", r.Lost)
	}
	t.Logf("%d acknowledged before the leader died, all readable", len(acked))
}

// describePartition asks b for partition 0 of topic with
// DescribeTopicPartitions (the API that carries the ELR).
func describePartition(ctx context.Context, b *kgo.Broker, topic string) (kmsg.DescribeTopicPartitionsResponseTopicPartition, error) {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	req.ResponsePartitionLimit = 10
	resp, err := req.RequestWith(ctx, b)
	if err != nil {
		return kmsg.DescribeTopicPartitionsResponseTopicPartition{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) == 0 {
		return kmsg.DescribeTopicPartitionsResponseTopicPartition{}, fmt.Errorf("answer without the partition: %+v", resp.Topics)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return kmsg.DescribeTopicPartitionsResponseTopicPartition{}, err
	}
	return resp.Topics[0].Partitions[0], nil
}

// brokerListed reports whether b's Metadata lists broker id (registered,
// unfenced).
func brokerListed(ctx context.Context, b *kgo.Broker, id int32) (bool, error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, b)
	if err != nil {
		return false, err
	}
	for _, br := range resp.Brokers {
		if br.NodeID == id {
			return true, nil
		}
	}
	return false, nil
}
