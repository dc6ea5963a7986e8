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
	if img, _ := node.Current(); len(mustCG(t, img).Topics) != 1 || mustCG(t, img).Topics[0].Name != "seen" {
		t.Fatalf("recorded subscribed topics %+v", mustCG(t, img).Topics)
	}

	// ConsumerGroupDescribe: the group's assignments name only seen, which
	// the client may describe; once hidden is in a member's assignment
	// (another principal's regex took it), the group is
	// TOPIC_AUTHORIZATION_FAILED.
	describe := func() kmsg.ConsumerGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"cg"}
		r, err := broker.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	}
	if d := describe(); d.ErrorCode != 0 || len(d.Members) != 1 {
		t.Fatalf("describe: error %d, %d members", d.ErrorCode, len(d.Members))
	}
	if _, err := node.CommitRecords(ctx, anonACL(3, metadata.ACLResourceTopic, "hidden", metadata.ACLPatternLiteral, metadata.ACLOpDescribe, metadata.ACLPermissionAllow)); err != nil {
		t.Fatal(err)
	}
	if r := hb2(broker, ctx, t, r.MemberEpoch, re); r.ErrorCode != 0 {
		t.Fatalf("heartbeat after the grant: error %d", r.ErrorCode)
	}
	if _, err := node.CommitRecords(ctx, &metadata.RemoveAccessControlEntry{ID: [16]byte{3, 0xac}}); err != nil {
		t.Fatal(err)
	}
	if d := describe(); d.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(d.Members) != 0 {
		t.Fatalf("describe with an undescribable topic assigned: error %d, %d members", d.ErrorCode, len(d.Members))
	}
	rec, _ := node.Current()
	cg, ok := rec.ConsumerGroup("cg")
	if !ok || len(cg.Topics) != 2 {
		t.Fatalf("recorded subscribed topics after the grant %+v", cg.Topics)
	}
}

// hb2 is member m-1's steady heartbeat with its regex.
func hb2(broker *kgo.Broker, ctx context.Context, t *testing.T, epoch int32, re string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "cg", "m-1", epoch, -1
	req.SubscribedTopicRegex = &re
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: [16]byte{8}, Partitions: []int32{0}}}
	r, err := broker.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return r.(*kmsg.ConsumerGroupHeartbeatResponse)
}

func mustCG(t *testing.T, img *metadata.Image) metadata.ConsumerGroup {
	t.Helper()
	cg, ok := img.ConsumerGroup("cg")
	if !ok {
		t.Fatal("no consumer group cg in the image")
	}
	return cg
}
