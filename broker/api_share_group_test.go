package broker

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/broker/group/sharegroup"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share group APIs on a real coordinator with the authorizer on: the
// anonymous principal may READ group sg-ok and READ (so DESCRIBE) topic orders,
// nothing else (topic secret exists but is not describable).
func TestShareGroupAPIs(t *testing.T) {
	node, err := raftfsm.StartInMemory(raftfsm.Config{NodeID: 1, ClusterID: "share-acl-cluster-0001",
		HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: 2 * time.Second,
		DefaultPartitions: 1, DefaultReplicationFactor: 1, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	part := func() []metadata.PartitionRegistration {
		return []metadata.PartitionRegistration{{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}, {Partition: 1, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}
	}
	if _, err := node.CommitRecords(ctx,
		anonACL(1, metadata.ACLResourceGroup, "sg-ok", metadata.ACLPatternLiteral, metadata.ACLOpRead, metadata.ACLPermissionAllow),
		anonACL(2, metadata.ACLResourceTopic, "orders", metadata.ACLPatternLiteral, metadata.ACLOpRead, metadata.ACLPermissionAllow), // implies DESCRIBE
		&metadata.CreateTopic{Name: "orders", ID: [16]byte{7}, Partitions: part()},
		&metadata.CreateTopic{Name: "secret", ID: [16]byte{8}, Partitions: part()},
		&metadata.CreateTopic{Name: group.OffsetsTopic, ID: [16]byte{9}, Partitions: part()[:1]},
	); err != nil {
		t.Fatal(err)
	}
	groups := group.NewCoordinator(group.CoordinatorConfig{
		NodeID: 1, Group: group.Config{MinSessionTimeout: 100 * time.Millisecond, MaxSessionTimeout: time.Minute},
		OffsetsTopicPartitions: 1, OffsetsTopicReplicationFactor: 1, Logger: testLogger(t),
	}, node.Publisher(), node.Client())
	t.Cleanup(groups.Close)
	waitFor(t, "the coordinator slot", func() bool { img, _ := node.Current(); return groups.Ownership(img, "sg-ok") == nil })
	shares := sharegroup.NewCoordinator(sharegroup.CoordinatorConfig{
		Owner: groups.Ownership,
		GroupConfig: func(string) sharegroup.Config {
			return sharegroup.Config{SessionTimeout: time.Minute, HeartbeatInterval: time.Second, MaxSize: 10}
		},
		Metadata:  node,
		Persister: sharegroup.NewControllerPersister(node.Client()),
		Log:       testLogger(t),
	})
	t.Cleanup(shares.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Logger: testLogger(t), NodeID: 1, Listeners: []Listener{{Name: "CLIENT", Listener: ln}},
		Authorizer: &metadata.Authorizer{},
		Deps:       Deps{Metadata: node, Controller: node.Client(), Groups: groups, ShareGroups: shares}})
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
	heartbeat := func(group string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, "m-1", epoch, topics
		r, err := broker.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.ShareGroupHeartbeatResponse)
	}

	if r := heartbeat("sg-no", 0, "orders"); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("join without READ on the group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := heartbeat("sg-ok", 0, "orders", "secret"); r.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("join subscribing an undescribable topic: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	r := heartbeat("sg-ok", 0, "orders")
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || r.MemberID == nil || *r.MemberID != "m-1" || r.HeartbeatIntervalMillis != 1000 ||
		r.Assignment == nil || len(r.Assignment.TopicPartitions) != 1 || len(r.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("join: %+v", r)
	}
	if r := heartbeat("sg-ok", 1); r.ErrorCode != 0 || r.Assignment != nil {
		t.Fatalf("idle heartbeat: %+v", r)
	}
	if r := heartbeat("sg-ok", 7); r.ErrorCode != kerr.FencedMemberEpoch.Code || r.ErrorMessage == nil {
		t.Fatalf("epoch ahead: %+v", r)
	}

	describe := func(ids ...string) []kmsg.ShareGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs, req.IncludeAuthorizedOperations = ids, true
		r, err := broker.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.ShareGroupDescribeResponse).Groups
	}
	d := describe("sg-ok", "sg-no")
	if d[0].ErrorCode != 0 || d[0].GroupState != "Stable" || len(d[0].Members) != 1 || d[0].Members[0].Assignment.TopicPartitions[0].Topic != "orders" ||
		d[0].AuthorizedOperations != opSet(opRead, opDescribe) || d[1].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe: %+v", d)
	}
	// A member subscribed to a topic the principal may not describe hides
	// the group's members (joined behind the handler's back).
	if res := shares.Heartbeat(ctx, "sg-ok", sharegroup.HeartbeatRequest{MemberID: "m-2", MemberEpoch: 0, Subscribed: []string{"secret"}}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if d := describe("sg-ok"); d[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || len(d[0].Members) != 0 {
		t.Fatalf("describe with an undescribable topic: %+v", d[0])
	}

	list := func(types, states []string) []kmsg.ListGroupsResponseGroup {
		t.Helper()
		req := kmsg.NewPtrListGroupsRequest()
		req.TypesFilter, req.StatesFilter = types, states
		r, err := broker.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.ListGroupsResponse).Groups
	}
	if l := list(nil, nil); len(l) != 1 || l[0].Group != "sg-ok" || l[0].GroupType != "share" || l[0].ProtocolType != "share" || l[0].GroupState != "Stable" {
		t.Fatalf("list: %+v", l)
	}
	if l := list([]string{"SHARE"}, []string{"stable"}); len(l) != 1 {
		t.Fatalf("list share/stable: %+v", l)
	}
	if l := list([]string{"classic"}, nil); len(l) != 0 {
		t.Fatalf("list classic: %+v", l)
	}
	if l := list(nil, []string{"Empty"}); len(l) != 0 {
		t.Fatalf("list empty: %+v", l)
	}

	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Version, jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = 9, "sg-ok", "consumer", 10000, 10000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	jr, err := broker.Request(ctx, jg)
	if err != nil {
		t.Fatal(err)
	}
	if code := jr.(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join of a share group: %v", kerr.ErrorForCode(code))
	}

	// The offset APIs of the classic protocol: not a consumer group.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.Generation = 9, "sg-ok", -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	if r, err := broker.Request(ctx, oc); err != nil {
		t.Fatal(err)
	} else if code := r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.GroupIDNotFound.Code {
		t.Fatalf("OffsetCommit to a share group: %v", kerr.ErrorForCode(code))
	}
	of := kmsg.NewPtrOffsetFetchRequest() // kgo sends it at v9: groups
	of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "sg-ok"}}
	if r, err := broker.Request(ctx, of); err != nil {
		t.Fatal(err)
	} else if g := r.(*kmsg.OffsetFetchResponse).Groups; len(g) != 1 || g[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("OffsetFetch of a share group: %+v", g)
	}

	// The group is durable: the image holds its epoch and both members.
	img, _ := node.Current()
	if st, ok := img.ShareGroup("sg-ok"); !ok || st.Epoch != 2 || len(st.Members) != 2 {
		t.Fatalf("image: %+v", st)
	}

	// DeleteGroups: DELETE on the group first, then NON_EMPTY_GROUP while
	// members remain; an empty one goes.
	deleteGroup := func() int16 {
		t.Helper()
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{"sg-ok"}
		r, err := broker.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode
	}
	if code := deleteGroup(); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("delete without DELETE: %v", kerr.ErrorForCode(code))
	}
	if _, err := node.CommitRecords(ctx, anonACL(3, metadata.ACLResourceGroup, "sg-ok", metadata.ACLPatternLiteral, metadata.ACLOpDelete, metadata.ACLPermissionAllow)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the DELETE ACL", func() bool { return deleteGroup() != kerr.GroupAuthorizationFailed.Code })
	if code := deleteGroup(); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with members: %v", kerr.ErrorForCode(code))
	}
	for _, m := range []string{"m-1", "m-2"} {
		if res := shares.Heartbeat(ctx, "sg-ok", sharegroup.HeartbeatRequest{MemberID: m, MemberEpoch: sharegroup.LeaveEpoch}); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if code := deleteGroup(); code != 0 {
		t.Fatalf("delete of the empty group: %v", kerr.ErrorForCode(code))
	}
	img, _ = node.Current()
	if _, ok := img.ShareGroup("sg-ok"); ok {
		t.Fatal("deleted share group still in the image")
	}
}
