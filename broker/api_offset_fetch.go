package broker

// OffsetFetch (key 9): v1-v9, as Kafka 4.1.
//
// Behaviour: committed offsets come from the metadata image (the Raft
// state), so any broker that coordinates the group answers at once after a
// failover. A partition without a committed offset answers offset -1,
// leader epoch -1, metadata "" and no error, as Kafka does; a null topic
// list (v2+) asks for every committed offset of the group. RequireStable
// (v7+): a partition for which an open transaction holds an offset of the
// group (TxnOffsetCommit not yet committed or aborted) answers
// UNSTABLE_OFFSET_COMMIT, which the client retries, as Kafka's
// GroupMetadata.hasPendingOffsetCommitsForTopicPartition makes it.
//
// Version notes: v1 per-partition errors only (a group error is put on
// every requested partition); v2 top-level error; v3 throttle; v5 leader
// epoch; v6 flexible; v7 RequireStable; v8+ several groups per request,
// each with its own error; v9 KIP-848 member id/epoch (checked for
// consumer-protocol groups: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH; ignored
// for classic groups). v10 (Kafka 4.2: topics by id, UNKNOWN_TOPIC_ID for an unknown
// one) is handled below but not advertised or accepted: Kafka 4.1's
// OffsetFetchRequest.json stops at v9 and raftka answers as 4.1.

import (
	"context"
	"slices"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 9, advertisedMin: 1, min: 1, max: 9, concurrent: true, handle: handleOffsetFetch})
}

// fetchTopic is one requested topic, by name or (v10) id.
type fetchTopic struct {
	name       string
	id         [16]byte
	partitions []int32
}

func handleOffsetFetch(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version < 8 {
		var topics []fetchTopic
		if req.Topics != nil {
			topics = []fetchTopic{}
			for _, t := range req.Topics {
				topics = append(topics, fetchTopic{name: t.Topic, partitions: t.Partitions})
			}
		}
		g := fetchGroupOffsets(ctx, rc, req.Version, req.Group, "", -1, topics, req.RequireStable)
		resp.ErrorCode = g.ErrorCode
		for _, t := range g.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				if req.Version < 2 && g.ErrorCode != 0 {
					rp.ErrorCode = g.ErrorCode
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for _, rg := range req.Groups {
		var topics []fetchTopic
		if rg.Topics != nil {
			topics = []fetchTopic{}
			for _, t := range rg.Topics {
				topics = append(topics, fetchTopic{name: t.Topic, id: t.TopicID, partitions: t.Partitions})
			}
		}
		resp.Groups = append(resp.Groups, fetchGroupOffsets(ctx, rc, req.Version, rg.Group, derefOr(rg.MemberID, ""), rg.MemberEpoch, topics, req.RequireStable))
	}
	return resp, nil
}

// fetchGroupOffsets answers one group in the v8+ shape; older versions
// are translated by the caller. topics nil means every committed offset.
func fetchGroupOffsets(ctx context.Context, rc *request, version int16, groupID, memberID string, memberEpoch int32, topics []fetchTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = groupID
	groups, md := groupsOf(rc), rc.conn.srv.deps.Metadata
	fail := func(code int16) kmsg.OffsetFetchResponseGroup {
		out.ErrorCode = code
		if version < 2 {
			// No top-level error field: answer each requested partition.
			for _, t := range topics {
				out.Topics = append(out.Topics, offsetsOf(t, nil, code))
			}
		}
		return out
	}
	switch {
	case !rc.authorize(opDescribe, resGroup, groupID):
		return fail(kerr.GroupAuthorizationFailed.Code)
	case groups == nil || md == nil:
		return fail(kerr.CoordinatorNotAvailable.Code)
	case groupID == "":
		return fail(kerr.InvalidGroupID.Code)
	case isShareGroup(rc, groupID):
		return fail(kerr.GroupIDNotFound.Code) // ShareGroup.validateOffsetFetch: "not a consumer group"
	}
	img, _ := md.Current()
	if err := groups.Ownership(img, groupID); err != nil {
		return fail(errorCode(err))
	}
	// v9+: a consumer-protocol member fetching with its epoch must be a
	// member at that epoch (Kafka's ConsumerGroup.validateOffsetFetch).
	if _, consumer := img.ConsumerGroup(groupID); consumer && version >= 9 && memberEpoch >= 0 {
		if cg := consumerGroupsOf(rc); cg != nil {
			if err := cg.ValidateFetch(ctx, groupID, memberID, memberEpoch); err != nil {
				return fail(errorCode(err))
			}
		}
	}
	if topics == nil {
		committed := img.Offsets(groupID)
		byTopic := make(map[string][]int32)
		for tp := range committed {
			byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
		}
		names := make([]string, 0, len(byTopic))
		for n := range byTopic {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			if !rc.authorize(opDescribe, resTopic, n) {
				continue
			}
			ft := fetchTopic{name: n, partitions: byTopic[n]}
			slices.Sort(ft.partitions)
			if version >= 10 {
				ti, ok := img.Topic(n)
				if !ok {
					continue // deleted since the commit: no id to name it by
				}
				ft.id = ti.ID
			}
			out.Topics = append(out.Topics, offsetsOf(ft, func(p int32) (metadata.OffsetAndMetadata, bool) {
				o, ok := committed[metadata.TopicPartition{Topic: n, Partition: p}]
				return o, ok
			}, 0))
		}
		if requireStable {
			markUnstable(img, groupID, &out)
		}
		return out
	}
	for _, t := range topics {
		if version >= 10 {
			ti, ok := img.TopicByID(t.id)
			if !ok {
				out.Topics = append(out.Topics, offsetsOf(t, nil, kerr.UnknownTopicID.Code))
				continue
			}
			t.name = ti.Name
		}
		if !rc.authorize(opDescribe, resTopic, t.name) {
			out.Topics = append(out.Topics, offsetsOf(t, nil, kerr.TopicAuthorizationFailed.Code))
			continue
		}
		out.Topics = append(out.Topics, offsetsOf(t, func(p int32) (metadata.OffsetAndMetadata, bool) {
			return img.Offset(groupID, t.name, p)
		}, 0))
	}
	if requireStable {
		markUnstable(img, groupID, &out)
	}
	return out
}

// markUnstable answers UNSTABLE_OFFSET_COMMIT for each partition with an
// offset pending in an open transaction.
func markUnstable(img *metadata.Image, groupID string, out *kmsg.OffsetFetchResponseGroup) {
	for i := range out.Topics {
		t := &out.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.ErrorCode == 0 && img.HasPendingTxnOffset(groupID, t.Topic, p.Partition) {
				p.ErrorCode, p.Offset, p.LeaderEpoch = kerr.UnstableOffsetCommit.Code, -1, -1
			}
		}
	}
}

// offsetsOf answers one topic: lookup gives the committed offsets (nil when
// code answers every partition).
func offsetsOf(t fetchTopic, lookup func(int32) (metadata.OffsetAndMetadata, bool), code int16) kmsg.OffsetFetchResponseGroupTopic {
	rt := kmsg.NewOffsetFetchResponseGroupTopic()
	rt.Topic, rt.TopicID = t.name, t.id
	for _, p := range t.partitions {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p, -1, -1, kmsg.StringPtr(""), code
		if lookup != nil {
			if o, ok := lookup(p); ok {
				rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Offset, o.LeaderEpoch, kmsg.StringPtr(o.Metadata)
			}
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}
