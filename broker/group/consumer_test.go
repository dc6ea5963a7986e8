package group

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/group/assignor"
	"github.com/raftka/raftka/broker/group/consumergroup"
	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

var ordersID = [16]byte{0x0d}

// countingWriter counts the consumer group writes that reach the
// controller.
type countingWriter struct {
	*testCtrl
	writes atomic.Int32
	deltas atomic.Int32 // of them ConsumerGroupDelta records
}

func (w *countingWriter) WriteConsumerGroup(ctx context.Context, rec metadata.Record) (uint64, error) {
	w.writes.Add(1)
	if _, ok := rec.(*metadata.ConsumerGroupDelta); ok {
		w.deltas.Add(1)
	}
	return w.ControllerClient.WriteConsumerGroup(ctx, rec)
}

func consumerTwin(t testing.TB) *twin {
	md := slotsImage(t, 1)
	md.apply(t, &metadata.CreateTopic{Name: "orders", ID: ordersID, Partitions: []metadata.PartitionRegistration{
		{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		{Partition: 1, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		{Partition: 2, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		{Partition: 3, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
	}})
	return md
}

func consumerCoordinator(t testing.TB, md *twin, node int32) (*Coordinator, *countingWriter) {
	w := &countingWriter{testCtrl: &testCtrl{ControllerClient: md.node.Client()}}
	c := NewCoordinator(CoordinatorConfig{
		NodeID: node,
		Group:  Config{MinSessionTimeout: 10 * time.Millisecond, MaxSessionTimeout: time.Minute},
		Consumer: ConsumerConfig{
			SessionTimeout: time.Minute, HeartbeatInterval: time.Second,
		},
		Logger: zerolog.Nop(),
	}, md, w)
	t.Cleanup(c.Close)
	return c, w
}

func heartbeat(t *testing.T, c *Coordinator, r consumergroup.HeartbeatRequest) consumergroup.HeartbeatResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if r.Version == 0 {
		r.Version = 1
	}
	resp, err := c.ConsumerHeartbeat(ctx, "cg", r)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func join(member string) consumergroup.HeartbeatRequest {
	return consumergroup.HeartbeatRequest{MemberID: member, MemberEpoch: 0, RebalanceTimeoutMs: 30000,
		SubscribedTopicNames: []string{"orders"}, Owned: []consumergroup.TopicPartitions{}}
}

func beat(member string, epoch int32, owned ...int32) consumergroup.HeartbeatRequest {
	return consumergroup.HeartbeatRequest{MemberID: member, MemberEpoch: epoch, RebalanceTimeoutMs: -1,
		Owned: []consumergroup.TopicPartitions{{TopicID: ordersID, Partitions: owned}}}
}

func owned(a assignor.Assignment) []int32 { return a[ordersID] }

// A consumer group's state reaches the image before the heartbeat that
// changed it is answered, a steady heartbeat writes nothing, and a
// partition moves to its new owner only after the old one revoked it.
func TestConsumerHeartbeatPersistsAndReconciles(t *testing.T) {
	md := consumerTwin(t)
	c, w := consumerCoordinator(t, md, 1)

	a := heartbeat(t, c, join("a"))
	if a.ErrorCode != 0 || a.MemberEpoch != 1 || len(owned(a.Assignment)) != 4 {
		t.Fatalf("a joins: %+v", a)
	}
	rec, ok := md.image().ConsumerGroup("cg")
	if !ok || rec.Epoch != 1 || len(rec.Members) != 1 || rec.Members[0].Epoch != 1 {
		t.Fatalf("image after the join: %+v %v", rec, ok)
	}
	writes := w.writes.Load()
	for range 5 {
		if r := heartbeat(t, c, beat("a", 1, 0, 1, 2, 3)); r.ErrorCode != 0 || r.MemberEpoch != 1 {
			t.Fatalf("steady heartbeat: %+v", r)
		}
	}
	if got := w.writes.Load(); got != writes {
		t.Fatalf("steady heartbeats wrote %d times", got-writes)
	}

	b := heartbeat(t, c, join("b"))
	if b.ErrorCode != 0 || b.MemberEpoch != 2 || len(owned(b.Assignment)) != 0 {
		t.Fatalf("b joins: %+v (nothing may be given while a holds it all)", b)
	}
	ra := heartbeat(t, c, beat("a", 1, 0, 1, 2, 3))
	if ra.MemberEpoch != 1 || len(owned(ra.Assignment)) != 2 {
		t.Fatalf("a asked to revoke: %+v", ra)
	}
	keep := owned(ra.Assignment)
	ra = heartbeat(t, c, beat("a", 1, keep...))
	if ra.MemberEpoch != 2 {
		t.Fatalf("a after revoking: %+v", ra)
	}
	rb := heartbeat(t, c, beat("b", 2))
	if rb.MemberEpoch != 2 || len(owned(rb.Assignment)) != 2 {
		t.Fatalf("b after a revoked: %+v", rb)
	}
	for _, p := range owned(rb.Assignment) {
		for _, q := range keep {
			if p == q {
				t.Fatalf("partition %d given to both", p)
			}
		}
	}
	rec, _ = md.image().ConsumerGroup("cg")
	if rec.Epoch != 2 || rec.AssignmentEpoch != 2 || len(rec.Members) != 2 || rec.Members[0].Epoch != 2 || rec.Members[1].Epoch != 2 {
		t.Fatalf("image after the rebalance: %+v", rec)
	}

	// Leave: the member is gone from the image too.
	if r := heartbeat(t, c, consumergroup.HeartbeatRequest{MemberID: "b", MemberEpoch: consumergroup.LeaveEpoch, RebalanceTimeoutMs: -1}); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("b leaves: %+v", r)
	}
	if rec, _ := md.image().ConsumerGroup("cg"); len(rec.Members) != 1 || rec.Epoch != 3 {
		t.Fatalf("image after the leave: %+v", rec)
	}
	// Rounds that moved one member of two wrote that member only.
	if w.deltas.Load() == 0 {
		t.Fatalf("%d writes, none a ConsumerGroupDelta", w.writes.Load())
	}
}

// A coordinator that takes the slot over resumes the group from the image:
// members keep their epochs and partitions (no rebalance), and the old
// coordinator can no longer write.
func TestConsumerGroupFailover(t *testing.T) {
	md := consumerTwin(t)
	c1, _ := consumerCoordinator(t, md, 1)
	c2, _ := consumerCoordinator(t, md, 2)
	a := heartbeat(t, c1, join("a"))
	b := heartbeat(t, c1, join("b"))
	ra := heartbeat(t, c1, beat("a", 1, owned(a.Assignment)...))
	ra = heartbeat(t, c1, beat("a", 1, owned(ra.Assignment)...))
	rb := heartbeat(t, c1, beat("b", b.MemberEpoch))
	if ra.MemberEpoch != 2 || rb.MemberEpoch != 2 || len(owned(rb.Assignment)) != 2 {
		t.Fatalf("before failover: a %+v b %+v", ra, rb)
	}
	before, _ := md.image().ConsumerGroup("cg")

	md.apply(t, &metadata.PartitionChange{TopicID: slotsID, Partition: 0, Leader: 2, ISR: []int32{1, 2}})

	if r := heartbeat(t, c1, beat("a", 2, 0, 1)); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("old coordinator answered %+v, want NOT_COORDINATOR", r)
	}
	for _, m := range []struct {
		id   string
		owns []int32
	}{{"a", owned(ra.Assignment)}, {"b", owned(rb.Assignment)}} {
		r := heartbeat(t, c2, beat(m.id, 2, m.owns...))
		if r.ErrorCode != 0 || r.MemberEpoch != 2 {
			t.Fatalf("%s at the new coordinator: %+v", m.id, r)
		}
	}
	after, _ := md.image().ConsumerGroup("cg")
	if after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch {
		t.Fatalf("the failover rebalanced: epochs %d/%d -> %d/%d", before.Epoch, before.AssignmentEpoch, after.Epoch, after.AssignmentEpoch)
	}

	// The old slot epoch cannot write any more.
	stale := before
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, err := md.node.Client().WriteConsumerGroup(ctx, &stale)
	if !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("write with the old slot epoch: %v, want NOT_COORDINATOR", err)
	}
}

// OffsetCommit in a consumer group: the member epoch is the generation, as
// Kafka's ConsumerGroup.validateOffsetCommit.
func TestConsumerGroupCommit(t *testing.T) {
	md := consumerTwin(t)
	c, _ := consumerCoordinator(t, md, 1)
	a := heartbeat(t, c, join("a"))
	offsets := []metadata.OffsetCommit{{Topic: "orders", Partition: 0, Offset: 7, LeaderEpoch: -1}}
	cases := []struct {
		name    string
		member  string
		epoch   int32
		version int16
		want    error
	}{
		{"current epoch", "a", a.MemberEpoch, 9, nil},
		{"older epoch", "a", a.MemberEpoch - 1, 9, kerr.StaleMemberEpoch},
		{"newer epoch", "a", a.MemberEpoch + 1, 9, kerr.FencedMemberEpoch},
		{"unknown member", "z", 1, 9, kerr.UnknownMemberID},
		{"outside the group while it has members", "", -1, 9, kerr.UnknownMemberID},
		{"below v9", "a", a.MemberEpoch, 8, kerr.UnsupportedVersion},
	}
	for _, tc := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		err := c.Commit(ctx, CommitRequest{Group: "cg", MemberID: tc.member, Generation: tc.epoch, Offsets: offsets, Version: tc.version})
		cancel()
		if !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if o, ok := md.image().Offset("cg", "orders", 0); !ok || o.Offset != 7 {
		t.Fatalf("committed offset %+v %v", o, ok)
	}

	// TxnOffsetCommit: the same member epoch checks, with its own writer
	// run only when they pass, and no v9 rule (Kafka's
	// validateOffsetCommit with isTransactional).
	for _, tc := range []struct {
		name   string
		member string
		epoch  int32
		want   error
	}{
		{"txn at the current epoch", "a", a.MemberEpoch, nil},
		{"txn at an older epoch", "a", a.MemberEpoch - 1, kerr.StaleMemberEpoch},
		{"txn at a newer epoch", "a", a.MemberEpoch + 1, kerr.FencedMemberEpoch},
		{"txn from an unknown member", "z", 1, kerr.UnknownMemberID},
		{"txn without a member while the group has members", "", -1, kerr.UnknownMemberID},
	} {
		wrote := false
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		err := c.Commit(ctx, CommitRequest{Group: "cg", MemberID: tc.member, Generation: tc.epoch, Transactional: true,
			Write: func(context.Context) error { wrote = true; return nil }})
		cancel()
		if !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if wrote != (tc.want == nil) {
			t.Errorf("%s: wrote %v", tc.name, wrote)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := c.ValidateFetch(ctx, "cg", "a", a.MemberEpoch-1); !errors.Is(err, kerr.StaleMemberEpoch) {
		t.Errorf("fetch with an old epoch: %v", err)
	}
	if err := c.ValidateFetch(ctx, "cg", "a", a.MemberEpoch); err != nil {
		t.Errorf("fetch with the current epoch: %v", err)
	}
}

// A group is one kind or the other: an empty classic group becomes a
// consumer group, a classic member whose protocol is not the consumer
// protocol's Subscription cannot join a consumer group with members, and
// the empty consumer group becomes classic again.
func TestConsumerGroupConversion(t *testing.T) {
	md := consumerTwin(t)
	c, _ := consumerCoordinator(t, md, 1)
	md.apply(t, &metadata.GroupGeneration{Group: "cg", Generation: 3, ProtocolType: "consumer", Members: []metadata.GroupMember{}})

	a := heartbeat(t, c, join("a"))
	if a.ErrorCode != 0 {
		t.Fatalf("consumer member joining an empty classic group: %+v", a)
	}
	if j := await(t, c.Join("cg", joinReq("", time.Minute))); j.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join with a subscription that does not decode: %+v", j)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if d, err := c.Describe(ctx, "cg"); !errors.Is(err, kerr.GroupIDNotFound) || !d.NotClassic {
		t.Fatalf("DescribeGroups of a consumer group: %v", err)
	}
	list, err := c.List(ctx)
	if err != nil || len(list) != 1 || list[0].Type != "consumer" || list[0].StateName != "Stable" {
		t.Fatalf("List: %+v %v", list, err)
	}
	if errs := c.Delete(ctx, []string{"cg"}); !errors.Is(errs[0], kerr.NonEmptyGroup) {
		t.Fatalf("delete of a consumer group with members: %v", errs[0])
	}

	heartbeat(t, c, consumergroup.HeartbeatRequest{MemberID: "a", MemberEpoch: consumergroup.LeaveEpoch, RebalanceTimeoutMs: -1})
	j := await(t, c.Join("cg", joinReq("", time.Minute)))
	if j.ErrorCode != kerr.MemberIDRequired.Code && j.ErrorCode != 0 {
		t.Fatalf("classic join of the empty consumer group: %+v", j)
	}
	if _, ok := md.image().ConsumerGroup("cg"); ok {
		t.Fatal("the consumer group state outlived the conversion")
	}
}

// A first heartbeat that fails its checks brings no group into being.
func TestConsumerRefusedJoinWritesNothing(t *testing.T) {
	md := consumerTwin(t)
	c, w := consumerCoordinator(t, md, 1)
	r := join("")
	if resp := heartbeat(t, c, r); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("join without a member id at v1: %+v", resp)
	}
	if n := w.writes.Load(); n != 0 {
		t.Fatalf("%d writes for a refused join", n)
	}
	if _, ok := md.image().ConsumerGroup("cg"); ok {
		t.Fatal("a refused join recorded the group")
	}
}

// The assignors' rack input comes from the replicas' brokers in the image.
func TestImageMetadataRacks(t *testing.T) {
	md := slotsImage(t, 1)
	md.apply(t,
		&metadata.RegisterBroker{BrokerID: 3, BrokerEpoch: 3, Rack: "r3"},
		&metadata.RegisterBroker{BrokerID: 4, BrokerEpoch: 4, Rack: "r4"},
		&metadata.CreateTopic{Name: "racked", ID: ordersID, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{3, 4}, ISR: []int32{3, 4}, Leader: 3},
			{Partition: 1, Replicas: []int32{4}, ISR: []int32{4}, Leader: 4},
		}})
	m := imageMetadata{img: md.image()}
	racks := m.Racks("racked", ordersID)
	if len(racks) != 2 || !slices.Equal(racks[0], []string{"r3", "r4"}) || !slices.Equal(racks[1], []string{"r4"}) {
		t.Fatalf("racks %v", racks)
	}
	if r := m.Racks(OffsetsTopic, slotsID); r != nil {
		t.Fatalf("brokers without racks gave %v", r)
	}
}

// OffsetDelete and DeleteGroups on a consumer group, as Kafka's: a topic a
// member subscribes to keeps its offsets, a group with members is not
// deleted, an empty one is, with its state.
func TestConsumerGroupDeleteOffsetsAndGroup(t *testing.T) {
	md := consumerTwin(t)
	c, _ := consumerCoordinator(t, md, 1)
	a := heartbeat(t, c, join("a"))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	md.apply(t, &metadata.CommitOffsets{Group: "cg", Offsets: []metadata.OffsetCommit{
		{Topic: "orders", Partition: 0, Offset: 1}, {Topic: "other", Partition: 0, Offset: 1},
	}})
	errs, err := c.DeleteOffsets(ctx, "cg", []metadata.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "other", Partition: 0}})
	if err != nil || !errors.Is(errs[0], kerr.GroupSubscribedToTopic) || errs[1] != nil {
		t.Fatalf("DeleteOffsets: %v %v", errs, err)
	}
	if _, ok := md.image().Offset("cg", "other", 0); ok {
		t.Fatal("the unsubscribed topic's offset is still there")
	}
	if errs := c.Delete(ctx, []string{"cg"}); !errors.Is(errs[0], kerr.NonEmptyGroup) {
		t.Fatalf("Delete with a member: %v", errs[0])
	}
	heartbeat(t, c, consumergroup.HeartbeatRequest{MemberID: "a", MemberEpoch: consumergroup.LeaveEpoch, RebalanceTimeoutMs: -1})
	_ = a
	if errs := c.Delete(ctx, []string{"cg"}); errs[0] != nil {
		t.Fatalf("Delete of the empty group: %v", errs[0])
	}
	if _, ok := md.image().ConsumerGroup("cg"); ok || md.image().Offsets("cg") != nil {
		t.Fatal("the deleted group left state behind")
	}
	// The group starts again from nothing.
	if r := heartbeat(t, c, join("b")); r.ErrorCode != 0 || r.MemberEpoch < 1 {
		t.Fatalf("join after the delete: %+v", r)
	}
}

// The controller removes only an empty consumer group's state.
func TestRemoveConsumerGroupRefusedWithMembers(t *testing.T) {
	md := consumerTwin(t)
	c, _ := consumerCoordinator(t, md, 1)
	heartbeat(t, c, join("a"))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := md.node.Client().WriteConsumerGroup(ctx, &metadata.RemoveConsumerGroup{Group: "cg"}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("remove with a member: %v, want INVALID_REQUEST", err)
	}
	if _, ok := md.image().ConsumerGroup("cg"); !ok {
		t.Fatal("the state is gone")
	}
}
