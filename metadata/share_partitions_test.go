package metadata

import (
	"errors"
	"testing"
)

func TestSharePartitionStateApply(t *testing.T) {
	id := [16]byte{1}
	k := SharePartitionKey{Group: "sg", TopicID: id, Partition: 0}
	st := func(epoch int32, start int64, ranges ...SharePartitionRange) *SharePartitionState {
		return &SharePartitionState{Group: "sg", TopicID: id, LeaderEpoch: epoch, StartOffset: start, Ranges: ranges}
	}
	img, d := NewImage().Apply([]Record{st(3, 5, SharePartitionRange{First: 6, Last: 7, State: 2, DeliveryCount: 1})})
	if len(d.Skipped) > 0 {
		t.Fatal(d.Skipped)
	}
	got, ok := img.SharePartition(k)
	if !ok || got.StartOffset != 5 || len(got.Ranges) != 1 {
		t.Fatalf("state %+v %v", got, ok)
	}
	for name, bad := range map[string]*SharePartitionState{
		"older leader epoch":  st(2, 9),
		"range below start":   st(3, 5, SharePartitionRange{First: 4, Last: 6}),
		"overlapping ranges":  st(3, 5, SharePartitionRange{First: 6, Last: 8}, SharePartitionRange{First: 8, Last: 9}),
		"acquired persisted":  st(3, 5, SharePartitionRange{First: 6, Last: 6, State: 1}),
		"deleted with ranges": st(3, -1, SharePartitionRange{First: 6, Last: 6, State: 2}),
		"start below -1":      st(3, -2),
		"no group":            {TopicID: id},
	} {
		next, d := img.Apply([]Record{bad})
		if len(d.Skipped) != 1 || !errors.Is(d.Skipped[0].Err, ErrInvalidRecord) {
			t.Errorf("%s: applied (%v)", name, d.Skipped)
		}
		if !next.Equal(img) {
			t.Errorf("%s: image changed", name)
		}
	}
	// A newer epoch replaces; the snapshot records rebuild the same image.
	img, _ = img.Apply([]Record{st(4, 8)})
	if got, _ := img.SharePartition(k); got.StartOffset != 8 || got.LeaderEpoch != 4 {
		t.Fatalf("after epoch 4: %+v", got)
	}
	// Deleted (DeleteShareGroupOffsets): start offset -1, no ranges.
	img, d = img.Apply([]Record{&SharePartitionState{Group: "sg", TopicID: id, LeaderEpoch: 4, StateEpoch: 1, StartOffset: -1}})
	if got, _ := img.SharePartition(k); len(d.Skipped) > 0 || got.StartOffset != -1 || got.StateEpoch != 1 {
		t.Fatalf("deleted state: %+v %v", got, d.Skipped)
	}
	rebuilt, d := NewImage().Apply(img.sharePartitionRecords())
	if len(d.Skipped) > 0 || !rebuilt.Equal(img) {
		t.Fatalf("snapshot records do not rebuild the image: %v", d.Skipped)
	}
}

func TestShareGroupDeleteRaisesItsPartitionsStateEpoch(t *testing.T) {
	id := [16]byte{2}
	img, d := NewImage().Apply([]Record{
		&ShareGroupEpoch{Group: "sg", Epoch: 1},
		&SharePartitionState{Group: "sg", TopicID: id, StartOffset: 3},
		&SharePartitionState{Group: "other", TopicID: id, StartOffset: 4},
	})
	if len(d.Skipped) > 0 {
		t.Fatal(d.Skipped)
	}
	img, _ = img.Apply([]Record{&ShareGroupDelete{Group: "sg"}})
	// A deleted group's share-partitions are deleted states one state
	// epoch up: a leader still holding the old state reloads it, and the
	// old group's late writes are below the stored epoch.
	left := img.SharePartitions("sg")
	if len(left) != 1 || left[0].StartOffset != -1 || left[0].StateEpoch != 1 || len(left[0].Ranges) != 0 {
		t.Fatalf("share-partitions of a deleted group: %+v", left)
	}
	if n := len(img.SharePartitions("other")); n != 1 {
		t.Fatalf("other group's share-partitions: %d, want 1", n)
	}
	late, d := img.Apply([]Record{&SharePartitionState{Group: "sg", TopicID: id, StartOffset: 3}})
	if len(d.Skipped) != 1 || !late.Equal(img) {
		t.Fatalf("a write of the deleted group's state epoch applied: %v", d.Skipped)
	}
	rebuilt, d := NewImage().Apply(img.sharePartitionRecords())
	if len(d.Skipped) > 0 || !rebuilt.Equal(img) {
		t.Fatalf("snapshot records do not rebuild the image: %v", d.Skipped)
	}
}
