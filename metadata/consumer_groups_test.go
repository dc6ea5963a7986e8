package metadata

import (
	"errors"
	"testing"
	"time"
)

func cgState(epoch, coordEpoch int32, members ...ConsumerGroupMember) *ConsumerGroup {
	return &ConsumerGroup{Group: "cg", CoordinatorEpoch: coordEpoch, Epoch: epoch, AssignmentEpoch: epoch, Members: members,
		Topics: []ConsumerGroupTopic{{Name: "orders", ID: idA, Partitions: 2}}, StateTimestampMs: 1000}
}

func owning(id string, ps ...int32) ConsumerGroupMember {
	return ConsumerGroupMember{MemberID: id, Epoch: 1, SubscribedTopicNames: []string{"orders"},
		Assigned: []ConsumerGroupPartitions{{TopicID: idA, Partitions: ps}}}
}

func withRegexes(g *ConsumerGroup, regexes ...string) *ConsumerGroup {
	for i, r := range regexes {
		g.Regexes = append(g.Regexes, ConsumerGroupRegex{Regex: r, Topics: []string{"orders"}, Version: int64(10 + i), TimestampMs: 1000})
	}
	return g
}

func TestConsumerGroupApply(t *testing.T) {
	img, d := mustApply(t, NewImage(), cgState(1, 0, owning("a", 0), owning("b", 1)))
	if len(d.GroupsChanged) != 1 || d.GroupsChanged[0] != "cg" {
		t.Fatalf("GroupsChanged = %v", d.GroupsChanged)
	}
	got, ok := img.ConsumerGroup("cg")
	if !ok || len(got.Members) != 2 || got.Epoch != 1 {
		t.Fatalf("ConsumerGroup = %+v %v", got, ok)
	}

	cases := []struct {
		name string
		rec  *ConsumerGroup
		want error
	}{
		{"two owners", cgState(2, 0, owning("a", 0, 1), owning("b", 1)), ErrInvalidRecord},
		{"unsorted members", cgState(2, 0, owning("b", 1), owning("a", 0)), ErrInvalidRecord},
		{"older group epoch", cgState(0, 0), ErrStaleRecord},
		{"assignment ahead of the group", &ConsumerGroup{Group: "cg", Epoch: 1, AssignmentEpoch: 2}, ErrInvalidRecord},
		{"no group id", &ConsumerGroup{}, ErrInvalidRecord},
		{"unsorted regexes", withRegexes(cgState(2, 0), "b", "a"), ErrInvalidRecord},
		{"a regex twice", withRegexes(cgState(2, 0), "a", "a"), ErrInvalidRecord},
		{"an empty regex", withRegexes(cgState(2, 0), ""), ErrInvalidRecord},
	}
	for _, c := range cases {
		_, d := img.Apply([]Record{c.rec})
		if len(d.Skipped) != 1 || !errors.Is(d.Skipped[0].Err, c.want) {
			t.Errorf("%s: skipped %v, want %v", c.name, d.Skipped, c.want)
		}
	}

	// A newer coordinator epoch fences the older one.
	img, _ = mustApply(t, img, cgState(2, 5, owning("a", 0, 1)))
	if _, d := img.Apply([]Record{cgState(3, 4, owning("a", 0))}); len(d.Skipped) != 1 || !errors.Is(d.Skipped[0].Err, ErrGroupCoordinatorFenced) {
		t.Fatalf("stale coordinator: skipped %v", d.Skipped)
	}

	// The state survives a snapshot (image -> records -> replay), regex
	// resolutions included.
	img, _ = mustApply(t, img, withRegexes(cgState(2, 5, owning("a", 0, 1)), "ord.*"))
	replayed, _ := mustApply(t, NewImage(), img.Records()...)
	if !replayed.Equal(img) {
		t.Fatal("snapshot replay differs")
	}
	if got, _ := replayed.ConsumerGroup("cg"); len(got.Regexes) != 1 || got.Regexes[0].Regex != "ord.*" || got.Regexes[0].Version != 10 {
		t.Fatalf("replayed regexes %+v", got.Regexes)
	}

	// RemoveConsumerGroup keeps the offsets; DeleteGroup drops everything.
	img, _ = mustApply(t, img, &CommitOffsets{Group: "cg", Offsets: []OffsetCommit{{Topic: "orders", Partition: 0, Offset: 5}}})
	kept, _ := mustApply(t, img, &RemoveConsumerGroup{Group: "cg"})
	if _, ok := kept.ConsumerGroup("cg"); ok || kept.Offsets("cg") == nil {
		t.Fatal("RemoveConsumerGroup: want the state gone and the offsets kept")
	}
	gone, _ := mustApply(t, img, &DeleteGroup{Group: "cg"})
	if _, ok := gone.ConsumerGroup("cg"); ok || gone.Offsets("cg") != nil {
		t.Fatal("DeleteGroup left state behind")
	}
}

// Offsets of a consumer-protocol group expire as Kafka's: with members,
// only those of topics no member subscribes to; empty, all of them
// retention after it became empty.
func TestExpireOffsetsConsumerGroup(t *testing.T) {
	img, _ := mustApply(t, NewImage(), cgState(1, 0, owning("a", 0)),
		&CommitOffsets{Group: "cg", Offsets: []OffsetCommit{
			{Topic: "orders", Partition: 0, Offset: 5, CommitTimeMs: 0},
			{Topic: "old", Partition: 0, Offset: 5, CommitTimeMs: 0},
		}})
	recs := ExpireOffsets(img, 10_000, time.Second)
	if len(recs) != 1 {
		t.Fatalf("records %v", recs)
	}
	if d, ok := recs[0].(*DeleteOffsets); !ok || len(d.Partitions) != 1 || d.Partitions[0].Topic != "old" {
		t.Fatalf("want only the unsubscribed topic expired, got %#v", recs[0])
	}
	empty, _ := mustApply(t, img, &ConsumerGroup{Group: "cg", Epoch: 2, AssignmentEpoch: 2, StateTimestampMs: 5_000})
	if recs := ExpireOffsets(empty, 5_500, time.Second); len(recs) != 0 {
		t.Fatalf("expired before retention passed since empty: %v", recs)
	}
	if recs := ExpireOffsets(empty, 6_000, time.Second); len(recs) != 1 || recs[0].Type() != TypeDeleteGroup {
		t.Fatalf("want the empty group deleted, got %v", recs)
	}
}

// A delta changes only the members it names: the others stay as
// recorded, a removed member is gone, and the result is checked as a
// whole group (a partition held twice is refused, a group not recorded
// cannot take a delta).
func TestConsumerGroupDeltaApply(t *testing.T) {
	img, _ := mustApply(t, NewImage(), cgState(1, 0, owning("a", 0), owning("b", 1), owning("c")))
	cur, _ := img.ConsumerGroup("cg")
	next := cgState(2, 0, owning("a", 0), owning("c", 1))
	d, smaller := DeltaOf(&cur, next)
	if !smaller || len(d.Members) != 1 || d.Members[0].MemberID != "c" || len(d.Removed) != 1 || d.Removed[0] != "b" {
		t.Fatalf("delta %+v smaller %v", d, smaller)
	}
	img, _ = mustApply(t, img, d)
	got, _ := img.ConsumerGroup("cg")
	if !got.Equal(next) {
		t.Fatalf("after the delta %+v, want %+v", got, next)
	}
	// The header's regexes come in full: a delta sets them, the next one
	// without them clears them.
	withRe := withRegexes(cgState(3, 0, owning("a", 0), owning("c", 1)), "o.*")
	withRe.Members[1].SubscribedTopicRegex = "o.*"
	d, _ = DeltaOf(next, withRe)
	if d.Version() != 2 || len(d.Members) != 1 {
		t.Fatalf("delta with a regex: version %d, %d members", d.Version(), len(d.Members))
	}
	img, _ = mustApply(t, img, d)
	if got, _ := img.ConsumerGroup("cg"); !got.Equal(withRe) {
		t.Fatalf("after the regex delta %+v, want %+v", got, withRe)
	}
	noRe := cgState(4, 0, owning("a", 0), owning("c", 1))
	d, _ = DeltaOf(withRe, noRe)
	img, _ = mustApply(t, img, d)
	if got, _ := img.ConsumerGroup("cg"); len(got.Regexes) != 0 || !got.Equal(noRe) {
		t.Fatalf("after the delta without regexes %+v", got)
	}
	bad := &ConsumerGroupDelta{Group: "cg", Epoch: 5, AssignmentEpoch: 5, Members: []ConsumerGroupMember{owning("z", 0)}}
	if _, d := img.Apply([]Record{bad}); len(d.Skipped) != 1 {
		t.Fatal("a delta giving a held partition to another member applied")
	}
	unknown := &ConsumerGroupDelta{Group: "other", Epoch: 1, AssignmentEpoch: 1}
	if _, d := img.Apply([]Record{unknown}); len(d.Skipped) != 1 {
		t.Fatal("a delta of a group not recorded applied")
	}
}
