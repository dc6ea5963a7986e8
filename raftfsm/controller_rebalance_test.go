package raftfsm

import (
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterISR sends the AlterPartition a partition's leader would send to set
// its ISR, built from the image the client's node has applied (v3, with
// the members' broker epochs).
func alterISR(t *testing.T, c *ControllerClient, node *Node, topic string, part int32, isr []int32) {
	t.Helper()
	img, _ := node.Current()
	ti := topicIn(t, img, topic)
	p, _ := ti.Partition(part)
	leader, _ := img.Broker(p.Leader)
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = leader.ID, leader.Epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic, rt.TopicID = topic, ti.ID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = part, p.LeaderEpoch, p.PartitionEpoch
	for _, id := range isr {
		b, _ := img.Broker(id)
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = id, b.Epoch
		rp.NewEpochISR = append(rp.NewEpochISR, e)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.AlterPartition(ctxT(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterPartition %s-%d to %v: %v / %v", topic, part, isr,
			kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}
}

func brokerFenced(node *Node, id int32, fenced bool) func() bool {
	return func() bool {
		img, _ := node.Current()
		b, ok := img.Broker(id)
		return ok && b.Fenced == fenced
	}
}

func topicIn(t *testing.T, img *metadata.Image, name string) metadata.TopicImage {
	t.Helper()
	ti, ok := img.Topic(name)
	if !ok {
		t.Fatalf("no topic %s", name)
	}
	return ti
}

func partitionOf(t *testing.T, node *Node, topic string, part int32) metadata.PartitionRegistration {
	t.Helper()
	img, _ := node.Current()
	p, _ := topicIn(t, img, topic).Partition(part)
	return p
}

func createAssigned(t *testing.T, c *ControllerClient, name string, replicas []int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := c.CreateTopics(ctxT(t, 10*time.Second), req)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", name, err, resp)
	}
}

// TestPreferredLeaderRebalance: a broker is fenced (its leaderships move),
// comes back, is let back into the ISRs by the leaders, and the periodic
// check makes it the leader of its preferred partitions again.
func TestPreferredLeaderRebalance(t *testing.T) {
	const interval = 200 * time.Millisecond
	tc := startCluster(t, 3, func(c *Config) {
		c.AutoLeaderRebalance = true
		c.LeaderImbalanceCheckInterval = interval
		c.LeaderImbalancePerBrokerPercentage = 10
	})
	tc.leader(10 * time.Second)
	brokers := startBrokers(t, tc, 3)
	node := tc.nodes[0]
	c := NewControllerClient(ClientConfig{Voters: tc.voters, Waiter: node})
	defer c.Close()
	mustCreate(t, c, "rb", 6, 3)

	victim := brokers[0]
	preferred := func() []int32 {
		img, _ := node.Current()
		ti, _ := img.Topic("rb")
		var out []int32
		for _, p := range ti.Partitions {
			if p.Replicas[0] == victim.id {
				out = append(out, p.Partition)
			}
		}
		return out
	}
	mine := preferred()
	if len(mine) == 0 {
		t.Fatal("placement made the victim preferred nowhere")
	}

	victim.pause(true)
	waitFor(t, 15*time.Second, "victim fenced", brokerFenced(node, victim.id, true))
	for _, pn := range mine {
		if p := partitionOf(t, node, "rb", pn); p.Leader == victim.id || slices.Contains(p.ISR, victim.id) {
			t.Fatalf("rb-%d after fencing: leader %d ISR %v", pn, p.Leader, p.ISR)
		}
	}
	victim.pause(false)
	waitFor(t, 15*time.Second, "victim unfenced", brokerFenced(node, victim.id, false))

	// The leaders see the victim catch up and add it back to their ISRs.
	img, _ := node.Current()
	ti, _ := img.Topic("rb")
	for _, p := range ti.Partitions {
		if !slices.Contains(p.ISR, victim.id) {
			alterISR(t, c, node, "rb", p.Partition, append(slices.Clone(p.ISR), victim.id))
		}
	}
	start := time.Now()
	waitFor(t, 20*interval+5*time.Second, "preferred leadership restored", func() bool {
		for _, pn := range mine {
			if partitionOf(t, node, "rb", pn).Leader != victim.id {
				return false
			}
		}
		return true
	})
	t.Logf("preferred leadership restored %v after the ISR expansion (check interval %v)", time.Since(start), interval)
	// Nothing is left that a check could still move.
	img, _ = node.Current()
	if left := img.PreferredLeaderElections(0, maxElectionsPerRebalance); len(left) > 0 {
		t.Fatalf("%d preferred elections still possible after the rebalance", len(left))
	}
}

// TestOfflinePartitionsAndUncleanElection: partitions whose last ISR member
// is fenced go offline unless the topic allows unclean election; they get
// their leader back in the entry that unfences it; turning unclean election
// on for an offline topic elects at once.
func TestOfflinePartitionsAndUncleanElection(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.leader(10 * time.Second)
	brokers := startBrokers(t, tc, 3)
	node := tc.nodes[0]
	c := NewControllerClient(ClientConfig{Voters: tc.voters, Waiter: node})
	defer c.Close()

	b1 := brokers[0]
	createAssigned(t, c, "solo", []int32{1}, nil)
	createAssigned(t, c, "clean", []int32{1, 2}, nil)
	createAssigned(t, c, "late", []int32{1, 2}, nil)
	createAssigned(t, c, "dirty", []int32{1, 2}, map[string]string{uncleanKey: "true"})
	for _, name := range []string{"clean", "late", "dirty"} {
		alterISR(t, c, node, name, 0, []int32{1}) // broker 2 fell behind
	}

	sub := node.Subscribe()
	defer sub.Close()
	b1.pause(true)
	waitFor(t, 15*time.Second, "broker 1 fenced", brokerFenced(node, 1, true))
	want := map[string]struct {
		leader int32
		isr    []int32
	}{
		"solo":  {metadata.NoLeader, []int32{1}},
		"clean": {metadata.NoLeader, []int32{1}},
		"late":  {metadata.NoLeader, []int32{1}},
		"dirty": {2, []int32{2}},
	}
	for name, w := range want {
		if p := partitionOf(t, node, name, 0); p.Leader != w.leader || !slices.Equal(p.ISR, w.isr) {
			t.Fatalf("%s after fencing: leader %d ISR %v, want %d %v", name, p.Leader, p.ISR, w.leader, w.isr)
		}
	}

	// Turning unclean election on elects the offline partition in the
	// same commit as the config.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "late"
	kv := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	kv.Name, kv.Value = uncleanKey, kmsg.StringPtr("true")
	r.Configs = append(r.Configs, kv)
	req.Resources = append(req.Resources, r)
	if resp, err := c.IncrementalAlterConfigs(ctxT(t, 10*time.Second), req); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter late: %v %+v", err, resp)
	}
	if p := partitionOf(t, node, "late", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) {
		t.Fatalf("late after enabling unclean election: leader %d ISR %v", p.Leader, p.ISR)
	}

	b1.pause(false)
	ctx := ctxT(t, 15*time.Second)
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for the unfence: %v", err)
		}
		if ev.Reset || ev.Delta == nil || !slices.Contains(ev.Delta.BrokersUnfenced, 1) {
			continue
		}
		for name, leader := range map[string]int32{"solo": 1, "clean": 1, "dirty": 2, "late": 2} {
			ti, _ := ev.Image.Topic(name)
			if p := ti.Partitions[0]; p.Leader != leader {
				t.Fatalf("%s in the unfencing entry: leader %d, want %d", name, p.Leader, leader)
			}
		}
		break
	}
}
