package metadata

import (
	"reflect"
	"testing"
)

func shareGroupSamples() []Record {
	return []Record{
		&ShareGroupEpoch{Group: "sg", Epoch: 7, Topics: []ShareGroupTopic{{Name: "orders", ID: idA, Partitions: 6}}},
		&ShareGroupEpoch{Group: "ünï", Topics: []ShareGroupTopic{}},
		&ShareGroupEpoch{},
		&ShareGroupMember{Group: "sg", MemberID: "m1", RackID: "r", ClientID: "c", ClientHost: "/127.0.0.1",
			SubscribedTopicNames: []string{"orders"}, MemberEpoch: 7, PreviousMemberEpoch: 6,
			Assigned: []ShareGroupPartitions{{TopicID: idA, Partitions: []int32{0, 2, 4}}, {TopicID: idB, Partitions: []int32{}}}},
		&ShareGroupMember{SubscribedTopicNames: []string{}, Assigned: []ShareGroupPartitions{}},
		&ShareGroupMember{},
		&ShareGroupRemoveMember{Group: "sg", MemberID: "m1"},
		&ShareGroupTargetAssignment{Group: "sg", AssignmentEpoch: 7, Members: []ShareGroupMemberTarget{
			{MemberID: "m1", Partitions: []ShareGroupPartitions{{TopicID: idA, Partitions: []int32{1}}}}, {MemberID: "m2"}}},
		&ShareGroupTargetAssignment{Members: []ShareGroupMemberTarget{}},
		&ShareGroupDelete{Group: "sg"},
	}
}

func TestShareGroupApplyAndSnapshot(t *testing.T) {
	m1 := &ShareGroupMember{Group: "sg", MemberID: "m1", SubscribedTopicNames: []string{"orders"}, MemberEpoch: 2, PreviousMemberEpoch: 1,
		Assigned: []ShareGroupPartitions{{TopicID: idA, Partitions: []int32{0, 1}}}}
	img, d := mustApply(t, NewImage(),
		&ShareGroupEpoch{Group: "sg", Epoch: 2, Topics: []ShareGroupTopic{{Name: "orders", ID: idA, Partitions: 2}}},
		m1,
		&ShareGroupMember{Group: "sg", MemberID: "m2", MemberEpoch: 1},
		&ShareGroupTargetAssignment{Group: "sg", AssignmentEpoch: 2, Members: []ShareGroupMemberTarget{{MemberID: "m1", Partitions: m1.Assigned}, {MemberID: "m2"}}},
	)
	if !reflect.DeepEqual(d.ShareGroupsChanged, []string{"sg"}) {
		t.Fatalf("delta %v", d.ShareGroupsChanged)
	}
	g, ok := img.ShareGroup("sg")
	if !ok || g.Epoch != 2 || g.AssignmentEpoch != 2 || len(g.Members) != 2 || !shareMemberEqual(g.Members["m1"], *m1) {
		t.Fatalf("group %+v", g)
	}
	// The snapshot replays to the same image.
	again, d2 := NewImage().Apply(img.Records())
	if len(d2.Skipped) != 0 || !again.Equal(img) {
		t.Fatalf("snapshot replay differs (skipped %v)", d2.Skipped)
	}
	// Removing a member drops its target; the old image is untouched.
	next, _ := mustApply(t, img, &ShareGroupRemoveMember{Group: "sg", MemberID: "m2"})
	if g2, _ := next.ShareGroup("sg"); len(g2.Members) != 1 || len(g2.Target) != 1 {
		t.Fatalf("after remove %+v", g2)
	}
	if g, _ := img.ShareGroup("sg"); len(g.Members) != 2 {
		t.Fatal("remove changed the old image")
	}
	gone, _ := mustApply(t, next, &ShareGroupDelete{Group: "sg"})
	if _, ok := gone.ShareGroup("sg"); ok || len(gone.ShareGroups()) != 0 {
		t.Fatal("delete left the group")
	}
}

func TestShareGroupApplySkips(t *testing.T) {
	classic, _ := mustApply(t, NewImage(), &CommitOffsets{Group: "cg", Offsets: []OffsetCommit{{Topic: "t", Offset: 1}}})
	for _, tc := range []struct {
		name string
		img  *Image
		rec  Record
	}{
		{"member of no group", NewImage(), &ShareGroupMember{Group: "x", MemberID: "m"}},
		{"remove from no group", NewImage(), &ShareGroupRemoveMember{Group: "x", MemberID: "m"}},
		{"target of no group", NewImage(), &ShareGroupTargetAssignment{Group: "x"}},
		{"delete no group", NewImage(), &ShareGroupDelete{Group: "x"}},
		{"epoch without id", NewImage(), &ShareGroupEpoch{}},
		{"a classic group's id", classic, &ShareGroupEpoch{Group: "cg", Epoch: 1}},
	} {
		next, d := tc.img.Apply([]Record{tc.rec})
		if len(d.Skipped) != 1 || !next.Equal(tc.img) {
			t.Errorf("%s: skipped %v", tc.name, d.Skipped)
		}
	}
}
