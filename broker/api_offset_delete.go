package broker

// OffsetDelete (key 47): v0, as Kafka 4.2.
//
// Behaviour: removes some committed offsets of a group. An Empty group may
// lose any of them; a consumer group with members may lose only those of
// topics no member subscribes to (GROUP_SUBSCRIBED_TO_TOPIC for the rest,
// and for all when a subscription cannot be decoded); any other non-empty
// group is NON_EMPTY_GROUP. Unknown topics and partitions answer
// UNKNOWN_TOPIC_OR_PARTITION; an unknown group GROUP_ID_NOT_FOUND.

import (
	"context"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 47, advertisedMin: 0, min: 0, max: 0, handle: handleOffsetDelete})
}

func handleOffsetDelete(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	groups, md := groupsOf(rc), rc.conn.srv.deps.Metadata
	switch {
	case !rc.authorize(opDelete, resGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	case groups == nil || md == nil:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	case isShareGroup(rc, req.Group):
		resp.ErrorCode = kerr.GroupIDNotFound.Code // ShareGroup.validateOffsetDelete: "not a consumer group"
		return resp, nil
	}
	img, _ := md.Current()
	type slot struct{ i, j int }
	codes := make([][]int16, len(req.Topics))
	var parts []metadata.TopicPartition
	var slots []slot
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
		ti, known := img.Topic(t.Topic)
		readable := rc.authorize(opRead, resTopic, t.Topic)
		for j, p := range t.Partitions {
			if !readable {
				codes[i][j] = kerr.TopicAuthorizationFailed.Code
				continue
			}
			if !known || p.Partition < 0 || int(p.Partition) >= len(ti.Partitions) {
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
				continue
			}
			parts = append(parts, metadata.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			slots = append(slots, slot{i, j})
		}
	}
	errs, err := groups.DeleteOffsets(ctx, req.Group, parts)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	for k, s := range slots {
		codes[s.i][s.j] = errorCode(errs[k])
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
