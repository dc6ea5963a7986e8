package metadata

import (
	"cmp"
	"slices"
	"strings"
)

// LocalChanges is one broker's view of a Delta: the partitions whose
// replica on that broker must change, as Kafka's TopicsDelta.localChanges
// gives its ReplicaManager. Each list is sorted by topic name, then
// partition; a partition appears in at most one list, except that a topic
// removed and re-created under the same name in one batch has its old
// partitions in Deletes and its new ones in Leaders or Followers (tell them
// apart by TopicID).
type LocalChanges struct {
	// Leaders lists the changed partitions the broker leads in the new
	// image: just elected (LeaderChanged: new partition, new leader or new
	// leader epoch) or, under the same leader epoch, with new replicas or a
	// new ISR, which the leader's high watermark and ISR decisions follow.
	Leaders []PartitionDelta
	// Followers lists the changed partitions the broker is a replica of
	// but does not lead, leaderless ones included: a new leader or epoch
	// to fetch from (LeaderChanged), or new replicas or ISR under the same.
	Followers []PartitionDelta
	// Deletes lists the partitions the broker was a replica of in the old
	// image and is not in the new one: reassigned away (New is the new
	// registration, without the broker) or of a removed topic (New nil).
	// Old is always set.
	Deletes []PartitionDelta
}

// Empty reports whether the delta changes nothing on the broker.
func (l *LocalChanges) Empty() bool {
	return len(l.Leaders) == 0 && len(l.Followers) == 0 && len(l.Deletes) == 0
}

// LocalChanges returns what the delta changes for the replicas of broker.
// The entries point into the images the delta was computed from; treat
// them as read-only.
func (d *Delta) LocalChanges(broker int32) LocalChanges {
	var l LocalChanges
	for _, t := range d.TopicsRemoved {
		for i := range t.Partitions {
			if slices.Contains(t.Partitions[i].Replicas, broker) {
				l.Deletes = append(l.Deletes, PartitionDelta{TopicID: t.ID, Topic: t.Name, Partition: t.Partitions[i].Partition, Old: &t.Partitions[i]})
			}
		}
	}
	for _, pd := range d.ChangedPartitions {
		switch {
		case pd.New != nil && slices.Contains(pd.New.Replicas, broker):
			if pd.New.Leader == broker {
				l.Leaders = append(l.Leaders, pd)
			} else {
				l.Followers = append(l.Followers, pd)
			}
		case pd.Old != nil && slices.Contains(pd.Old.Replicas, broker):
			l.Deletes = append(l.Deletes, pd)
		}
	}
	// ChangedPartitions is sorted already; removed topics came first.
	slices.SortStableFunc(l.Deletes, func(a, b PartitionDelta) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return l
}
