package metadata

import (
	"maps"
	"slices"
)

// Share-partition state (KIP-932) is record 50: the delivery state a share
// group has in one partition, written by the partition's leader. The
// leader writes it coalesced (one Raft entry carries every share-partition
// that changed since the previous entry, each as its latest whole state),
// so a queue acknowledging thousands of records a second costs a few
// hundred applies. A new leader loads it: what was acknowledged or
// archived stays so, and records in flight come back available with their
// delivery counts.
const TypeSharePartitionState RecordType = 50

// SharePartitionRange is a run of offsets with one persisted state
// (0 Available, 2 Acknowledged, 4 Archived: Kafka's numbers) and delivery
// count.
type SharePartitionRange struct {
	First, Last   int64
	State         int8
	DeliveryCount int16
}

// SharePartitionState is one share-partition's whole durable state: the
// share-partition start offset, the state epoch, and the offsets at or
// after it whose state is not "available, never delivered". LeaderEpoch is
// the writer's leader epoch: the controller refuses a write from a leader
// that has been replaced, so a deposed leader cannot overwrite its
// successor's state. StateEpoch rises when an admin rewrites the state
// (AlterShareGroupOffsets): a leader holding an older one reloads, and its
// writes of the older epoch are refused. StartOffset -1 (no ranges) is a
// deleted state (DeleteShareGroupOffsets): the leader starts the
// share-partition again where share.auto.offset.reset says.
type SharePartitionState struct {
	Group       string
	TopicID     [16]byte
	Partition   int32
	LeaderEpoch int32
	StateEpoch  int32
	StartOffset int64
	Ranges      []SharePartitionRange
}

func (*SharePartitionState) Type() RecordType { return TypeSharePartitionState }
func (*SharePartitionState) Version() int16   { return 0 }

// SharePartitionKey names a share-partition.
type SharePartitionKey struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

func (s *SharePartitionState) key() SharePartitionKey {
	return SharePartitionKey{Group: s.Group, TopicID: s.TopicID, Partition: s.Partition}
}

func (s *SharePartitionState) equal(o *SharePartitionState) bool {
	return s.key() == o.key() && s.LeaderEpoch == o.LeaderEpoch && s.StateEpoch == o.StateEpoch &&
		s.StartOffset == o.StartOffset && slices.Equal(s.Ranges, o.Ranges)
}

// SharePartition returns a share-partition's durable state; its Ranges are
// shared with the image and must not be modified.
func (img *Image) SharePartition(k SharePartitionKey) (SharePartitionState, bool) {
	s, ok := img.sharePartitions[k]
	if !ok {
		return SharePartitionState{}, false
	}
	return *s, true
}

// SharePartitions returns the share-partitions of one group (every group
// when group is ""), sorted by topic id and partition.
func (img *Image) SharePartitions(group string) []SharePartitionState {
	var out []SharePartitionState
	for k, s := range img.sharePartitions {
		if group == "" || k.Group == group {
			out = append(out, *s)
		}
	}
	slices.SortFunc(out, func(a, b SharePartitionState) int {
		if a.Group != b.Group {
			if a.Group < b.Group {
				return -1
			}
			return 1
		}
		for i := range a.TopicID {
			if a.TopicID[i] != b.TopicID[i] {
				return int(a.TopicID[i]) - int(b.TopicID[i])
			}
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// sharePartitionApplier replays record 50. The map is copied on the first
// change of a batch (share-partition writes are coalesced, so a batch
// usually carries many of them and there are a few applies a second).
type sharePartitionApplier struct {
	img   *Image
	owned bool
}

func (a *sharePartitionApplier) own() {
	if !a.owned {
		a.img.sharePartitions = maps.Clone(a.img.sharePartitions)
		if a.img.sharePartitions == nil {
			a.img.sharePartitions = map[SharePartitionKey]*SharePartitionState{}
		}
		a.owned = true
	}
}

func (a *sharePartitionApplier) state(r *SharePartitionState) error {
	if r.Group == "" || r.Partition < 0 || r.StartOffset < -1 || (r.StartOffset == -1 && len(r.Ranges) > 0) {
		return invalid("share-partition state without a group, or with a negative partition or start offset")
	}
	prev := r.StartOffset - 1
	for _, rg := range r.Ranges {
		if rg.First <= prev || rg.Last < rg.First || rg.DeliveryCount < 0 || (rg.State != 0 && rg.State != 2 && rg.State != 4) {
			return invalid("share-partition state of %s: ranges not ascending and disjoint past the start offset, or a state unknown", r.Group)
		}
		prev = rg.Last
	}
	if old, ok := a.img.sharePartitions[r.key()]; ok && (old.LeaderEpoch > r.LeaderEpoch || old.StateEpoch > r.StateEpoch) {
		return invalid("share-partition state of %s from leader epoch %d state epoch %d, after epochs %d and %d wrote",
			r.Group, r.LeaderEpoch, r.StateEpoch, old.LeaderEpoch, old.StateEpoch)
	}
	a.own()
	c := *r
	c.Ranges = slices.Clone(r.Ranges)
	a.img.sharePartitions[r.key()] = &c
	return nil
}

// dropGroup deletes a deleted share group's share-partitions: each
// becomes a deleted state (start offset -1) one state epoch up, not
// nothing, so a leader still holding the old group's share-partition in
// memory sees a newer state epoch and reloads (a re-created group starts
// where share.auto.offset.reset says), and the old group's writes still
// in flight are fenced by the controller. The deleted states stay in the
// image: one small record per partition the group had state in.
func (a *sharePartitionApplier) dropGroup(group string) {
	for k, old := range a.img.sharePartitions {
		if k.Group == group {
			a.own()
			a.img.sharePartitions[k] = &SharePartitionState{Group: group, TopicID: k.TopicID, Partition: k.Partition,
				LeaderEpoch: old.LeaderEpoch, StateEpoch: old.StateEpoch + 1, StartOffset: -1}
		}
	}
}

func (img *Image) sharePartitionRecords() []Record {
	var recs []Record
	for _, s := range img.SharePartitions("") {
		c := s
		c.Ranges = slices.Clone(s.Ranges)
		recs = append(recs, &c)
	}
	return recs
}

func encodeSharePartition(w *writer, r *SharePartitionState) {
	w.str(r.Group)
	w.uuid(r.TopicID)
	w.i32(r.Partition)
	w.i32(r.LeaderEpoch)
	w.i32(r.StateEpoch)
	w.i64(r.StartOffset)
	w.count(len(r.Ranges), r.Ranges == nil)
	for _, rg := range r.Ranges {
		w.i64(rg.First)
		w.i64(rg.Last)
		w.i8(rg.State)
		w.i16(rg.DeliveryCount)
	}
}

func decodeSharePartition(r *reader) *SharePartitionState {
	x := &SharePartitionState{Group: r.str(), TopicID: r.uuid(), Partition: r.i32(), LeaderEpoch: r.i32(), StateEpoch: r.i32(), StartOffset: r.i64()}
	if n, ok := r.count(19); ok {
		x.Ranges = make([]SharePartitionRange, n)
		for i := range x.Ranges {
			x.Ranges[i] = SharePartitionRange{First: r.i64(), Last: r.i64(), State: r.i8(), DeliveryCount: r.i16()}
		}
	}
	return x
}
