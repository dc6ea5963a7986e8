package broker

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startAdminNode runs one in-process node: an in-memory Raft voter with its
// controller, a broker Server on a loopback listener, and the broker's
// registration; it returns once the broker is unfenced. Everything stops
// when the test ends.
func startAdminNode(t *testing.T) (*raftfsm.Node, string) {
	t.Helper()
	node, err := raftfsm.StartInMemory(raftfsm.Config{
		NodeID:                   1,
		ClusterID:                "admin-e2e-cluster",
		HeartbeatInterval:        50 * time.Millisecond,
		SessionTimeout:           2 * time.Second,
		DefaultPartitions:        2,
		DefaultReplicationFactor: 1,
		Logger:                   zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Shutdown() })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{
		Logger:    testLogger(t),
		Listeners: []Listener{{Name: "CLIENT", Listener: ln}},
		NodeID:    1,
		Config:    testConfig(t, "log.retention.hours=24\n"),
		Deps:      Deps{Metadata: node, Controller: node.Client(), Admin: node.Client(), Quorum: node},
	})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})

	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	life, err := StartLifecycle(LifecycleOptions{
		NodeID: 1, ClusterID: "admin-e2e-cluster",
		Endpoints:  []metadata.Endpoint{{Listener: "CLIENT", Host: "127.0.0.1", Port: port}},
		Controller: node.Client(),
		Applied:    func() uint64 { _, i := node.Current(); return i },
		Interval:   50 * time.Millisecond,
		Logger:     testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(life.Close)
	waitFor(t, "broker 1 unfenced", func() bool {
		img, _ := node.Current()
		b, ok := img.Broker(1)
		return ok && !b.Fenced
	})
	return node, ln.Addr().String()
}

func TestAdminRoundTripsAgainstOneNode(t *testing.T) {
	node, addr := startAdminNode(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(testDeadline))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*testDeadline)
	defer cancel()

	// CreateTopics, with a config and the default partition count.
	created, err := adm.CreateTopic(ctx, -1, -1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, "events")
	if err != nil || created.Err != nil {
		t.Fatalf("create: %v %v", err, created.Err)
	}
	if created.NumPartitions != 2 || len(created.Configs) == 0 || created.ID == (kadm.TopicID{}) {
		t.Fatalf("created %+v", created)
	}
	img, _ := node.Current() // read-your-writes: the image already has it
	if _, ok := img.Topic("events"); !ok {
		t.Fatal("topic not in the image after CreateTopics returned")
	}
	if again, _ := adm.CreateTopic(ctx, 1, 1, nil, "events"); again.Err == nil {
		t.Fatal("creating an existing topic succeeded")
	}

	// CreatePartitions.
	if res, err := adm.UpdatePartitions(ctx, 4, "events"); err != nil || res["events"].Err != nil {
		t.Fatalf("create partitions: %v %+v", err, res)
	}
	if img, _ := node.Current(); len(mustTopic(t, img, "events").Partitions) != 4 {
		t.Fatal("partitions not added")
	}

	// DescribeConfigs and both alter APIs.
	rcs, err := adm.DescribeTopicConfigs(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("events", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs: %v %v", err, rc.Err)
	}
	sources := map[string]kmsg.ConfigSource{}
	for _, c := range rc.Configs {
		sources[c.Key] = c.Source
	}
	if sources["cleanup.policy"] != kmsg.ConfigSourceDynamicTopicConfig || sources["retention.ms"] != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("sources %v", sources)
	}
	if res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("delete")}}, "events"); err != nil || res[0].Err != nil {
		t.Fatalf("incremental alter: %v %+v", err, res)
	}
	if got := mustTopic(t, currentImage(node), "events").Configs["cleanup.policy"]; got != "compact,delete" {
		t.Fatalf("cleanup.policy after APPEND = %q", got)
	}
	if res, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("60000")}}, "events"); err != nil || res[0].Err != nil {
		t.Fatalf("legacy alter: %v %+v", err, res)
	}
	if cfgs := mustTopic(t, currentImage(node), "events").Configs; len(cfgs) != 1 || cfgs["retention.ms"] != "60000" {
		t.Fatalf("configs after AlterConfigs %v", cfgs)
	}
	brokerCfgs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil || len(brokerCfgs) != 1 || brokerCfgs[0].Err != nil || len(brokerCfgs[0].Configs) == 0 {
		t.Fatalf("broker configs: %v %+v", err, brokerCfgs)
	}

	// DescribeCluster and DescribeQuorum.
	dc := kmsg.NewPtrDescribeClusterRequest()
	dcResp, err := dc.RequestWith(ctx, cl)
	if err != nil || dcResp.ClusterID != "admin-e2e-cluster" || dcResp.ControllerID != 1 || len(dcResp.Brokers) != 1 {
		t.Fatalf("describe cluster: %v %+v", err, dcResp)
	}
	if x := ReadBrokerExtensions(dcResp.Brokers[0]); x.Epoch < 0 || x.Fenced {
		t.Fatalf("extensions %+v", x)
	}
	dq := kmsg.NewPtrDescribeQuorumRequest()
	qt := kmsg.NewDescribeQuorumRequestTopic()
	qt.Topic = metadataTopic
	qt.Partitions = append(qt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	dq.Topics = append(dq.Topics, qt)
	dqResp, err := dq.RequestWith(ctx, cl)
	if err != nil || dqResp.ErrorCode != 0 {
		t.Fatalf("describe quorum: %v %+v", err, dqResp)
	}
	if p := dqResp.Topics[0].Partitions[0]; p.LeaderID != 1 || p.HighWatermark <= 0 || len(p.CurrentVoters) != 1 {
		t.Fatalf("quorum partition %+v", p)
	}

	// InitProducerId, then an idempotent client's id: two distinct ids.
	ip := kmsg.NewPtrInitProducerIDRequest()
	first, err := ip.RequestWith(ctx, cl)
	if err != nil || first.ErrorCode != 0 || first.ProducerID < 0 {
		t.Fatalf("init producer id: %v %+v", err, first)
	}
	second, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || second.ErrorCode != 0 || second.ProducerID == first.ProducerID {
		t.Fatalf("second producer id: %v %+v", err, second)
	}

	// ElectLeaders: the preferred replica already leads.
	if res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"events": {0: {}}}); err != nil {
		t.Fatalf("elect leaders: %v", err)
	} else if r := res["events"][0]; r.Err == nil {
		t.Fatalf("elect leaders on a led partition: %+v, want ELECTION_NOT_NEEDED", r)
	}

	// DeleteTopics.
	if res, err := adm.DeleteTopics(ctx, "events"); err != nil || res["events"].Err != nil {
		t.Fatalf("delete: %v %+v", err, res)
	}
	if _, ok := currentImage(node).Topic("events"); ok {
		t.Fatal("topic still in the image after DeleteTopics returned")
	}
}

func currentImage(n *raftfsm.Node) *metadata.Image {
	img, _ := n.Current()
	return img
}

func mustTopic(t *testing.T, img *metadata.Image, name string) metadata.TopicImage {
	t.Helper()
	ti, ok := img.Topic(name)
	if !ok {
		t.Fatalf("topic %s not in the image", name)
	}
	return ti
}
