package raftfsm

import (
	"encoding/binary"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group state the group coordinators (broker/group) keep in the image:
// committed offsets, generations, and their deletion. The coordinator owns
// the group state machine and decides everything Kafka's coordinator
// decides (membership, emptiness, whether a topic is still subscribed);
// the controller checks only what replay needs to be meaningful and
// records it. Every operation queues on the controller loop like the
// others, so concurrent commits from many coordinators leave in one Raft
// entry (see controller.process): N coordinators' writes cost one fsync.
// The wire forms are described in doc.go.

// DeleteOffsetsTag marks an OffsetCommit request to the controller that
// deletes the listed partitions' committed offsets instead of committing
// them (Kafka's OffsetDelete has no flexible version, so its answer could
// not carry IndexTag). Value: one byte, 1.
const DeleteOffsetsTag uint32 = 10002

// InstanceIDTag carries a member's group.instance.id on a SyncGroup
// assignment entry sent to the controller (value: the id's UTF-8 bytes).
const InstanceIDTag uint32 = 10003

// SubscribedTopicsTag carries a generation's SubscribedTopics on the
// SyncGroup request sent to the controller: a uvarint count, then each
// topic as a uvarint length and its bytes. Absent when they are unknown.
const SubscribedTopicsTag uint32 = 10004

func encodeTopics(topics []string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(topics)))
	for _, t := range topics {
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
	}
	return b
}

// decodeTopics reads encodeTopics' form; ok is false for anything else
// (the generation then records its subscriptions as unknown).
func decodeTopics(b []byte) (topics []string, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, false
	}
	b = b[k:]
	topics = make([]string, 0, n)
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, false
		}
		topics = append(topics, string(b[k:k+int(l)]))
		b = b[k+int(l):]
	}
	if len(b) != 0 {
		return nil, false
	}
	return topics, true
}

func isDeleteOffsets(req *kmsg.OffsetCommitRequest) bool {
	found := false
	req.UnknownTags.Each(func(k uint32, v []byte) {
		if k == DeleteOffsetsTag && len(v) == 1 && v[0] == 1 {
			found = true
		}
	})
	return found
}

// offsetCommitAnswer answers every partition of an OffsetCommit with code.
func offsetCommitAnswer(req *kmsg.OffsetCommitRequest, code int16) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// commitOffsetsFrom reads the commit a coordinator sent (see doc.go): the
// wire form's one conversion back to the metadata types the coordinator
// started from, in request order. Generation and MemberID are not read:
// the coordinator checked them against its group before sending.
func commitOffsetsFrom(req *kmsg.OffsetCommitRequest) *metadata.CommitOffsets {
	rec := &metadata.CommitOffsets{Group: req.Group}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			rec.Offsets = append(rec.Offsets, metadata.OffsetCommit{
				Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: deref(p.Metadata),
			})
		}
	}
	return rec
}

// decideCommitOffsets records a coordinator's commit as a CommitOffsets
// record. The commit time is taken here, once, and carried in the record,
// so every replica replays the same value. An offset that replay could not
// store (metadata.CheckOffsetCommit) is answered UNKNOWN_TOPIC_OR_PARTITION
// and left out, as replay would refuse the whole record for it.
func decideCommitOffsets(req *kmsg.OffsetCommitRequest) decideFunc {
	commit := commitOffsetsFrom(req)
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		if commit.Group == "" {
			return decision{resp: offsetCommitAnswer(req, kerr.InvalidGroupID.Code)}
		}
		resp := offsetCommitAnswer(req, 0)
		rec := &metadata.CommitOffsets{Group: commit.Group}
		nowMs := now.UnixMilli()
		k := 0
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				o := commit.Offsets[k]
				k++
				if metadata.CheckOffsetCommit(o) != nil {
					resp.Topics[i].Partitions[j].ErrorCode = kerr.UnknownTopicOrPartition.Code
					continue
				}
				o.CommitTimeMs = nowMs
				rec.Offsets = append(rec.Offsets, o)
			}
		}
		if len(rec.Offsets) == 0 {
			return decision{resp: resp}
		}
		return decision{recs: []metadata.Record{rec}, resp: resp}
	}
}

// decideDeleteOffsets records a DeleteOffsets (OffsetDelete) for the
// partitions that have a committed offset; the others need nothing.
func decideDeleteOffsets(req *kmsg.OffsetCommitRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		if req.Group == "" {
			return decision{resp: offsetCommitAnswer(req, kerr.InvalidGroupID.Code)}
		}
		rec := &metadata.DeleteOffsets{Group: req.Group}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if _, ok := img.Offset(req.Group, t.Topic, p.Partition); ok {
					rec.Partitions = append(rec.Partitions, metadata.TopicPartition{Topic: t.Topic, Partition: p.Partition})
				}
			}
		}
		resp := offsetCommitAnswer(req, 0)
		if len(rec.Partitions) == 0 {
			return decision{resp: resp}
		}
		return decision{recs: []metadata.Record{rec}, resp: resp}
	}
}

// groupGenerationFrom reads the GroupGeneration a coordinator sent as a
// SyncGroup (see doc.go).
func groupGenerationFrom(req *kmsg.SyncGroupRequest) *metadata.GroupGeneration {
	gen := &metadata.GroupGeneration{
		Group: req.Group, Generation: req.Generation,
		ProtocolType: deref(req.ProtocolType), Protocol: deref(req.Protocol), Leader: req.MemberID,
	}
	req.UnknownTags.Each(func(k uint32, v []byte) {
		if k == SubscribedTopicsTag {
			if topics, ok := decodeTopics(v); ok {
				gen.SubscribedTopics = topics
			}
		}
	})
	for _, a := range req.GroupAssignment {
		m := metadata.GroupMember{MemberID: a.MemberID}
		a.UnknownTags.Each(func(k uint32, v []byte) {
			if k == InstanceIDTag {
				m.InstanceID = string(v)
			}
		})
		gen.Members = append(gen.Members, m)
	}
	return gen
}

// decideGroupGeneration records a group's completed rebalance. Generations
// only grow: one not above the recorded generation is ILLEGAL_GENERATION
// (replay would skip it), as is a negative one.
func decideGroupGeneration(req *kmsg.SyncGroupRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ProtocolType, resp.Protocol = req.ProtocolType, req.Protocol
		gen := groupGenerationFrom(req)
		if gen.Group == "" {
			resp.ErrorCode = kerr.InvalidGroupID.Code
			return decision{resp: resp}
		}
		if cur, ok := img.GroupGeneration(gen.Group); gen.Generation < 0 || (ok && gen.Generation <= cur.Generation) {
			resp.ErrorCode = kerr.IllegalGeneration.Code
			return decision{resp: resp}
		}
		gen.StateTimestampMs = now.UnixMilli()
		return decision{recs: []metadata.Record{gen}, resp: resp}
	}
}

// decideExpireOffsets removes the committed offsets that
// offsets.retention.minutes has expired (metadata.ExpireOffsets), with the
// controller's clock; the records carry the decision, so replay reads no
// clock. What a group's members subscribe to and whether it has any are
// the coordinator's, as its last recorded generation says. A member joining an empty group at the moment its offsets expire
// is a race Kafka's group lock closes and this check does not: the member
// starts from auto.offset.reset, as it would had it joined a moment later.
func decideExpireOffsets(c *controller, img *metadata.Image, now time.Time) decision {
	recs := metadata.ExpireOffsets(img, now.UnixMilli(), c.n.cfg.OffsetsRetention)
	if len(recs) > 0 {
		c.n.log.Info().Int("groups", len(recs)).Dur("retention", c.n.cfg.OffsetsRetention).Msg("expiring committed offsets of empty groups")
	}
	return decision{recs: recs}
}

// decideDeleteGroups records a DeleteGroup for every named group the image
// holds. Kafka deletes only empty groups; the coordinator, which knows the
// members, has checked that before asking. A group the image does not hold
// needs no record and is answered without error.
func decideDeleteGroups(req *kmsg.DeleteGroupsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		var recs []metadata.Record
		cur := img
		for _, g := range req.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group = g
			_, consumer := cur.ConsumerGroup(g)
			switch _, hasGen := cur.GroupGeneration(g); {
			case g == "":
				rg.ErrorCode = kerr.InvalidGroupID.Code
			case hasGen || consumer || cur.Offsets(g) != nil:
				rec := &metadata.DeleteGroup{Group: g}
				recs = append(recs, rec)
				cur, _ = cur.Apply([]metadata.Record{rec})
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return decision{recs: recs, resp: resp}
	}
}
