package metadata

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// ExpireOffsets decides which committed offsets offsets.retention.minutes
// (KIP-211) has expired at nowMs, and returns the records that remove them:
// DeleteOffsets for a group that keeps some, DeleteGroup for an empty group
// that keeps none (Kafka then deletes the group, as its cleanup does). The
// controller calls it on its check interval with its own clock and commits
// the records, so replay removes exactly what was decided and reads no
// clock.
//
// The rule is Kafka's for classic groups, with the group's membership as
// the image records it (its last generation):
//   - a consumer group with members keeps the offsets of the topics they
//     subscribe to; those of other topics expire one by one, retention
//     after each was committed. When the subscriptions are unknown
//     (another protocol type, a subscription that did not decode), or the
//     group is of another protocol type, it keeps every offset;
//   - an empty group (a generation without members) loses its offsets once
//     retention has passed since it became empty (the generation's
//     StateTimestampMs; an offset's commit time when a version 0 record
//     left that zero), all of them together;
//   - a standalone consumer's offsets (a group with no generation, whose
//     consumers assign partitions themselves and only commit) expire one by
//     one, retention after each was committed.
//
// An empty group with no offsets left is deleted whatever the time, as
// Kafka's cleanup does.
func ExpireOffsets(img *Image, nowMs int64, retention time.Duration) []Record {
	retentionMs := retention.Milliseconds()
	var recs []Record
	img.groups.each(func(name string, g *groupImage) {
		active := g.generation != nil && len(g.generation.Members) > 0
		var subscribed []string
		if cg := g.consumer; cg != nil {
			// A KIP-848 group, as Kafka's ConsumerGroup.isSubscribedToTopic
			// and its empty-since timestamp: the resolved subscribed topics
			// are the ones its members keep.
			active = len(cg.Members) > 0
			subscribed = nil
			if active {
				subscribed = cg.SubscribedTopicNames()
			}
		} else if active {
			if g.generation.ProtocolType != ConsumerProtocolType || g.generation.SubscribedTopics == nil {
				return
			}
			subscribed = g.generation.SubscribedTopics
		}
		var since int64 // zero: each offset's own commit time
		if !active && g.generation != nil && g.generation.ProtocolType != "" {
			since = g.generation.StateTimestampMs
		}
		if !active && g.consumer != nil {
			since = g.consumer.StateTimestampMs
		}
		var expired []TopicPartition
		for tp, o := range g.offsets {
			if _, found := slices.BinarySearch(subscribed, tp.Topic); found {
				continue
			}
			base := since
			if base == 0 {
				base = o.CommitTimeMs
			}
			if nowMs-base >= retentionMs {
				expired = append(expired, tp)
			}
		}
		switch {
		case len(expired) == len(g.offsets) && !active:
			recs = append(recs, &DeleteGroup{Group: name})
		case len(expired) > 0:
			slices.SortFunc(expired, func(a, b TopicPartition) int {
				return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
			})
			recs = append(recs, &DeleteOffsets{Group: name, Partitions: expired})
		}
	})
	// The shard map's order is not the name order; sorted records make
	// the decision the same on every run, and its tests readable.
	slices.SortFunc(recs, func(a, b Record) int { return strings.Compare(expiryGroup(a), expiryGroup(b)) })
	return recs
}

// ConsumerProtocolType is the protocol type of Kafka consumer groups, whose
// member metadata is the consumer protocol's Subscription.
const ConsumerProtocolType = "consumer"

func expiryGroup(r Record) string {
	switch r := r.(type) {
	case *DeleteGroup:
		return r.Group
	case *DeleteOffsets:
		return r.Group
	}
	return ""
}
