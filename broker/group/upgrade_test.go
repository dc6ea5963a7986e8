package group

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/group/consumergroup"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func consumerSubscription(topics ...string) []byte {
	s := kmsg.NewConsumerMemberMetadata()
	s.Version, s.Topics = 1, topics
	return s.AppendTo(nil)
}

func consumerAssignment(t *testing.T, b []byte) []int32 {
	t.Helper()
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		t.Fatalf("assignment does not decode: %v", err)
	}
	var out []int32
	for _, tp := range a.Topics {
		if tp.Topic != "orders" {
			t.Fatalf("assignment of topic %q", tp.Topic)
		}
		out = append(out, tp.Partitions...)
	}
	return out
}

func classicJoinReq(memberID string) JoinRequest {
	return JoinRequest{MemberID: memberID, ClientID: "sarama", ProtocolType: "consumer",
		Protocols:      []Protocol{{Name: "range", Metadata: consumerSubscription("orders")}},
		SessionTimeout: 30 * time.Second, RebalanceTimeout: 30 * time.Second}
}

func hbErr(t *testing.T, c *Coordinator, member string, gen int32) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	return c.Heartbeat(ctx, "cg", member, "", gen)
}

// The online upgrade on the coordinator: a classic group with members
// becomes a consumer group when a consumer-protocol member joins (the
// classic members keep their generation and partitions, then are told to
// rejoin and get the server assignor's partitions through SyncGroup), it
// is durable with its classic members, and when the consumer-protocol
// member leaves the group is a classic group again whose members rejoin.
func TestOnlineUpgradeAndDowngrade(t *testing.T) {
	md := consumerTwin(t)
	c, _ := consumerCoordinator(t, md, 1)

	// A classic group: s1 leads and gives s1 0,1 and s2 2,3.
	j1 := await(t, c.Join("cg", classicJoinReq("")))
	if j1.ErrorCode == kerr.MemberIDRequired.Code {
		j1 = await(t, c.Join("cg", classicJoinReq(j1.MemberID)))
	}
	ch2 := c.Join("cg", classicJoinReq(""))
	// s1 rejoins for the rebalance s2's join started.
	ch1 := c.Join("cg", classicJoinReq(j1.MemberID))
	j2, j1b := await(t, ch2), await(t, ch1)
	if j2.ErrorCode != 0 || j1b.ErrorCode != 0 || j1b.Leader != j1.MemberID {
		t.Fatalf("classic joins: %+v / %+v", j2, j1b)
	}
	gen := j1b.Generation
	assign := func(ps ...int32) []byte {
		a := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = "orders", ps
		a.Topics = append(a.Topics, at)
		return a.AppendTo(nil)
	}
	s2 := c.Sync("cg", SyncRequest{MemberID: j2.MemberID, Generation: gen})
	s1 := await(t, c.Sync("cg", SyncRequest{MemberID: j1.MemberID, Generation: gen,
		Assignments: map[string][]byte{j1.MemberID: assign(0, 1), j2.MemberID: assign(2, 3)}}))
	if s1.ErrorCode != 0 || await(t, s2).ErrorCode != 0 {
		t.Fatalf("classic syncs: %+v", s1)
	}

	// A consumer-protocol member joins: the group converts.
	a := heartbeat(t, c, join("a"))
	if a.ErrorCode != 0 || a.MemberEpoch != gen+1 || len(owned(a.Assignment)) != 0 {
		t.Fatalf("consumer member joining the classic group: %+v (generation %d)", a, gen)
	}
	rec, ok := md.image().ConsumerGroup("cg")
	if !ok || len(rec.Members) != 3 || rec.Version() != 1 {
		t.Fatalf("image after the upgrade: %+v %v", rec, ok)
	}
	classic := 0
	for _, m := range rec.Members {
		if m.Classic != nil {
			classic++
			if m.Classic.SessionTimeoutMs != 30000 || m.Epoch != gen {
				t.Errorf("classic member recorded as %+v", m)
			}
		}
	}
	if classic != 2 {
		t.Fatalf("%d classic members recorded", classic)
	}
	// DescribeGroups describes classic groups only, as Kafka's: the
	// classic members are ConsumerGroupDescribe's (MemberType 0).
	dctx, dcancel := context.WithTimeout(context.Background(), waitLimit)
	defer dcancel()
	if d, err := c.Describe(dctx, "cg"); !errors.Is(err, kerr.GroupIDNotFound) || !d.NotClassic {
		t.Fatalf("DescribeGroups of the consumer group with classic members: %+v %v", d, err)
	}
	if d, err := c.Describe(dctx, "nobody"); !errors.Is(err, kerr.GroupIDNotFound) || d.NotClassic {
		t.Fatalf("DescribeGroups of an unknown group: %+v %v", d, err)
	}
	cd, err := c.ConsumerDescribe(dctx, "cg", 1)
	if err != nil || cd.ErrorCode != 0 || len(cd.Members) != 3 {
		t.Fatalf("ConsumerGroupDescribe of the mixed group: %+v %v", cd, err)
	}
	types := map[int8]int{}
	for _, m := range cd.Members {
		types[m.MemberType]++
	}
	if types[0] != 2 || types[1] != 1 {
		t.Fatalf("ConsumerGroupDescribe member types %v, want two classic (0) and one consumer (1)", types)
	}

	// The classic members are told to rejoin; eager, they own nothing
	// when they do, and get the server assignor's partitions.
	for _, id := range []string{j1.MemberID, j2.MemberID} {
		if err := hbErr(t, c, id, gen); !errors.Is(err, kerr.RebalanceInProgress) {
			t.Fatalf("heartbeat of %s after the upgrade: %v", id, err)
		}
	}
	got := map[string][]int32{}
	for _, id := range []string{j1.MemberID, j2.MemberID} {
		j := await(t, c.Join("cg", classicJoinReq(id)))
		if j.ErrorCode != 0 || j.Generation != gen+1 || j.Leader != "" || len(j.Members) != 0 || j.Protocol != "range" {
			t.Fatalf("rejoin of %s: %+v", id, j)
		}
		s := await(t, c.Sync("cg", SyncRequest{MemberID: id, Generation: j.Generation, ProtocolType: "consumer", Protocol: "range"}))
		if s.ErrorCode != 0 {
			t.Fatalf("sync of %s: %+v", id, s)
		}
		got[id] = consumerAssignment(t, s.Assignment)
	}
	ra := heartbeat(t, c, beat("a", a.MemberEpoch))
	all := append(append(slices.Clone(owned(ra.Assignment)), got[j1.MemberID]...), got[j2.MemberID]...)
	slices.Sort(all)
	if !slices.Equal(all, []int32{0, 1, 2, 3}) || len(owned(ra.Assignment)) == 0 {
		t.Fatalf("after the rebalance: a %v, classic %v", owned(ra.Assignment), got)
	}
	for _, id := range []string{j1.MemberID, j2.MemberID} {
		if err := hbErr(t, c, id, gen+1); err != nil {
			t.Fatalf("steady heartbeat of %s: %v", id, err)
		}
	}
	// Commits of a classic member: its generation is its member epoch.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	offsets := []metadata.OffsetCommit{{Topic: "orders", Partition: got[j1.MemberID][0], Offset: 3, LeaderEpoch: -1}}
	if err := c.Commit(ctx, CommitRequest{Group: "cg", MemberID: j1.MemberID, Generation: gen + 1, Offsets: offsets, Version: 7}); err != nil {
		t.Fatalf("classic member's commit: %v", err)
	}
	if err := c.Commit(ctx, CommitRequest{Group: "cg", MemberID: j1.MemberID, Generation: gen, Offsets: offsets, Version: 7}); !errors.Is(err, kerr.IllegalGeneration) {
		t.Fatalf("classic member's commit at an old generation: %v", err)
	}

	// The consumer-protocol member leaves: only classic members are left,
	// and the group is a classic group again; its members rejoin it.
	heartbeat(t, c, consumergroup.HeartbeatRequest{MemberID: "a", MemberEpoch: consumergroup.LeaveEpoch, RebalanceTimeoutMs: -1})
	if _, ok := md.image().ConsumerGroup("cg"); ok {
		t.Fatal("the consumer group state outlived the downgrade")
	}
	if err := hbErr(t, c, j1.MemberID, gen+1); !errors.Is(err, kerr.RebalanceInProgress) {
		t.Fatalf("heartbeat after the downgrade: %v", err)
	}
	r1, r2 := c.Join("cg", classicJoinReq(j1.MemberID)), c.Join("cg", classicJoinReq(j2.MemberID))
	k1, k2 := await(t, r1), await(t, r2)
	if k1.ErrorCode != 0 || k2.ErrorCode != 0 || k1.Leader == "" || k1.Generation <= gen+1 {
		t.Fatalf("rejoins after the downgrade: %+v / %+v", k1, k2)
	}
	d, err := c.Describe(ctx, "cg")
	if err != nil || d.State != CompletingRebalance || len(d.Members) != 2 {
		t.Fatalf("DescribeGroups after the downgrade: %+v %v", d, err)
	}
}

// group.consumer.migration.policy=disabled: a classic group with members
// is not converted; the consumer-protocol member gets GROUP_ID_NOT_FOUND.
func TestOnlineUpgradeDisabled(t *testing.T) {
	md := consumerTwin(t)
	c, _ := consumerCoordinator(t, md, 1)
	c.cfg.Consumer.MigrationPolicy = "DISABLED"
	j := await(t, c.Join("cg", classicJoinReq("")))
	if j.ErrorCode == kerr.MemberIDRequired.Code {
		j = await(t, c.Join("cg", classicJoinReq(j.MemberID)))
	}
	if j.ErrorCode != 0 {
		t.Fatalf("classic join: %+v", j)
	}
	if r := heartbeat(t, c, join("a")); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer join with the upgrade disabled: %+v", r)
	}
	if _, ok := md.image().ConsumerGroup("cg"); ok {
		t.Fatal("converted with the upgrade disabled")
	}
}

// DescribeGroups of each kind of group, as Kafka 4.1's describeGroups: a
// classic group is described; a consumer group, with classic members (the
// upgrade path) or not, is GROUP_ID_NOT_FOUND marked not classic (the
// handler's "is not a classic group" text), and so is only an unknown
// group, without the mark.
func TestDescribeGroupsOfEachKind(t *testing.T) {
	md := consumerTwin(t)
	c, _ := consumerCoordinator(t, md, 1)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	classicMember := func(group string) {
		j := await(t, c.Join(group, classicJoinReq("")))
		if j.ErrorCode == kerr.MemberIDRequired.Code {
			j = await(t, c.Join(group, classicJoinReq(j.MemberID)))
		}
		if j.ErrorCode != 0 {
			t.Fatalf("classic join of %s: %+v", group, j)
		}
		s := await(t, c.Sync(group, SyncRequest{MemberID: j.MemberID, Generation: j.Generation,
			Assignments: map[string][]byte{j.MemberID: {}}}))
		if s.ErrorCode != 0 {
			t.Fatalf("classic sync of %s: %+v", group, s)
		}
	}
	consumerMember := func(group string) {
		r, err := c.ConsumerHeartbeat(ctx, group, join("a"))
		if err != nil || r.ErrorCode != 0 {
			t.Fatalf("consumer join of %s: %+v %v", group, r, err)
		}
	}
	classicMember("classic")
	consumerMember("consumer")
	classicMember("mixed")
	consumerMember("mixed")
	for _, tc := range []struct {
		group      string
		wantErr    error
		notClassic bool
		state      State
	}{
		{group: "classic", state: Stable},
		{group: "consumer", wantErr: kerr.GroupIDNotFound, notClassic: true},
		{group: "mixed", wantErr: kerr.GroupIDNotFound, notClassic: true},
		{group: "nobody", wantErr: kerr.GroupIDNotFound},
	} {
		d, err := c.Describe(ctx, tc.group)
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) || d.NotClassic != tc.notClassic {
			t.Errorf("%s: %+v %v, want error %v, not classic %v", tc.group, d, err, tc.wantErr, tc.notClassic)
			continue
		}
		if tc.wantErr == nil && (d.State != tc.state || len(d.Members) != 1 || d.Protocol != "range") {
			t.Errorf("%s described as %+v", tc.group, d)
		}
	}
	if cd, err := c.ConsumerDescribe(ctx, "mixed", 1); err != nil || cd.ErrorCode != 0 || len(cd.Members) != 2 {
		t.Errorf("ConsumerGroupDescribe of the mixed group: %+v %v", cd, err)
	}
}
