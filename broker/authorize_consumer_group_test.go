package broker

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupHeartbeat's topic authorization, as Kafka 4.1
// (KAFKA-18813): the anonymous principal may READ group cg and DESCRIBE
// topic seen, not topic hidden. A subscription naming hidden is
// TOPIC_AUTHORIZATION_FAILED; a regex matching both takes only seen.
func TestConsumerHeartbeatTopicAuthorization(t *testing.T) {
	node, err := raftfsm.StartInMemory(raftfsm.Config{NodeID: 1, ClusterID: "cg-acl-cluster-00001",
		HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: 2 * time.Second,
		DefaultPartitions: 1, DefaultReplicationFactor: 1, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	seenID, hiddenID := [16]byte{8}, [16]byte{9}
	part := []metadata.PartitionRegistration{{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}
	if _, err := node.CommitRecords(ctx,
		anonACL(1, metadata.ACLResourceGroup, "cg", metadata.ACLPatternLiteral, metadata.ACLOpRead, metadata.ACLPermissionAllow),
		anonACL(2, metadata.ACLResourceTopic, "seen", metadata.ACLPatternLiteral, metadata.ACLOpDescribe, metadata.ACLPermissionAllow),
		&metadata.CreateTopic{Name: "seen", ID: seenID, Partitions: part},
		&metadata.CreateTopic{Name: "hidden", ID: hiddenID, Partitions: part},
		&metadata.CreateTopic{Name: metadata.OffsetsTopic, ID: [16]byte{0xcc}, Partitions: part},
	); err != nil {
		t.Fatal(err)
	}
	groups := group.NewCoordinator(group.CoordinatorConfig{
		NodeID: 1, Group: group.Config{MinSessionTimeout: 100 * time.Millisecond, MaxSessionTimeout: time.Minute},
		Consumer:               group.ConsumerConfig{SessionTimeout: time.Minute, HeartbeatInterval: time.Second},
		OffsetsTopicPartitions: 1, OffsetsTopicReplicationFactor: 1, Logger: testLogger(t),
	}, node.Publisher(), node.Client())
	t.Cleanup(groups.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Logger: testLogger(t), NodeID: 1, Listeners: []Listener{{Name: "CLIENT", Listener: ln}},
		Authorizer: &metadata.Authorizer{},
		Deps:       Deps{Metadata: node, Controller: node.Client(), Groups: groups}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	broker := cl.SeedBrokers()[0]

	hb := func(names []string, regex *string) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "cg", "m-1", 0, 30000
		req.SubscribedTopicNames, req.SubscribedTopicRegex, req.Topics = names, regex, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		r, err := broker.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.ConsumerGroupHeartbeatResponse)
	}
	if r := hb([]string{"seen", "hidden"}, nil); r.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("subscription naming an undescribable topic: error %d", r.ErrorCode)
	}
	re := "seen|hidden"
	var r *kmsg.ConsumerGroupHeartbeatResponse
	for range 50 {
		if r = hb(nil, &re); r.ErrorCode != kerr.NotCoordinator.Code && r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r.ErrorCode != 0 || r.Assignment == nil {
		t.Fatalf("regex heartbeat: error %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if len(r.Assignment.Topics) != 1 || r.Assignment.Topics[0].TopicID != seenID {
		t.Fatalf("regex assignment %+v: want topic seen only", r.Assignment.Topics)
	}
	rec, _ := node.Current()
	cg, ok := rec.ConsumerGroup("cg")
	if !ok || len(cg.Topics) != 1 || cg.Topics[0].Name != "seen" {
		t.Fatalf("recorded subscribed topics %+v", cg.Topics)
	}
}
