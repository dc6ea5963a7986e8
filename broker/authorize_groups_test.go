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

// The group APIs against a real coordinator with the authorizer on: the
// anonymous principal may READ group g-ok only (and DESCRIBE it by
// implication), nothing on the topic.
func TestGroupAPIsAuthorization(t *testing.T) {
	node, err := raftfsm.StartInMemory(raftfsm.Config{NodeID: 1, ClusterID: "group-acl-cluster-0001",
		HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: 2 * time.Second,
		DefaultPartitions: 1, DefaultReplicationFactor: 1, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if _, err := node.CommitRecords(ctx,
		anonACL(1, metadata.ACLResourceGroup, "g-ok", metadata.ACLPatternLiteral, metadata.ACLOpRead, metadata.ACLPermissionAllow),
		&metadata.CreateTopic{Name: "orders", ID: [16]byte{7}, Partitions: []metadata.PartitionRegistration{{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
	); err != nil {
		t.Fatal(err)
	}
	groups := group.NewCoordinator(group.CoordinatorConfig{
		NodeID: 1, Group: group.Config{MinSessionTimeout: 100 * time.Millisecond, MaxSessionTimeout: time.Minute},
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
	broker := cl.SeedBrokers()[0] // no metadata lookup or coordinator search first

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"g-ok", "g-no"}, true
	r, err := broker.Request(ctx, dg)
	if err != nil {
		t.Fatal(err)
	}
	dresp := r.(*kmsg.DescribeGroupsResponse)
	if dresp.Groups[0].ErrorCode == kerr.GroupAuthorizationFailed.Code || dresp.Groups[1].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe: %+v", dresp.Groups)
	}
	if got, want := dresp.Groups[0].AuthorizedOperations, opSet(opRead, opDescribe); got != want {
		t.Fatalf("g-ok operations %b, want %b", got, want)
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g-no", "g-ok"}
	r, err = broker.Request(ctx, del)
	if err != nil {
		t.Fatal(err)
	}
	delResp := r.(*kmsg.DeleteGroupsResponse)
	if delResp.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code || delResp.Groups[1].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("delete without DELETE: %+v", delResp.Groups) // READ does not grant DELETE
	}

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version = 9
	oc.Group, oc.Generation, oc.MemberID = "g-ok", -1, ""
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = "orders"
	op := kmsg.NewOffsetCommitRequestTopicPartition()
	op.Offset = 1
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)
	r, err = broker.Request(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	if code := r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("commit without READ on the topic: %v", kerr.ErrorForCode(code))
	}
	oc.Group = "g-no"
	r, err = broker.Request(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	if code := r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("commit without READ on the group: %v", kerr.ErrorForCode(code))
	}

	lg := kmsg.NewPtrListGroupsRequest()
	r, err = broker.Request(ctx, lg)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range r.(*kmsg.ListGroupsResponse).Groups {
		if g.Group != "g-ok" {
			t.Fatalf("ListGroups shows %s, which the principal may not describe", g.Group)
		}
	}
}
