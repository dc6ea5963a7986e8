package broker

// DescribeShareGroupOffsets (key 90, v0-v1) and AlterShareGroupOffsets
// (key 91, v0), as Kafka 4.2.
//
// Behaviour:
//   - Describe answers each share-partition's start offset (SPSO) from the
//     metadata image (record 50, as the leaders last made it durable), its
//     leader epoch, and (v1) its lag: the records from the SPSO to the high
//     watermark that are not yet acknowledged or archived, when this node
//     holds a replica of the partition (-1 otherwise). Partitions the group
//     has no state for answer start offset -1. Topics null: every
//     share-partition of the group. DESCRIBE on the group
//     (GROUP_AUTHORIZATION_FAILED) and on each topic
//     (TOPIC_AUTHORIZATION_FAILED); GROUP_ID_NOT_FOUND for an id that is not
//     a share group.
//   - Alter sets start offsets of a share group without members
//     (NON_EMPTY_GROUP otherwise; READ on the group, READ on each topic):
//     each partition's state becomes "start here, nothing in flight" with a
//     higher state epoch, which makes its leader load it again and refuses
//     what that leader would still write of the old state. The coordinator
//     answers (NOT_COORDINATOR elsewhere). A negative offset is
//     INVALID_REQUEST; an unknown topic or partition
//     UNKNOWN_TOPIC_OR_PARTITION.
//
//   - Delete (key 92, v0) drops the state of whole topics of a share group
//     without members (NON_EMPTY_GROUP otherwise; DELETE on the group, READ
//     on each topic): each of its share-partitions is written as deleted
//     (start offset -1, a higher state epoch), so its leader starts it
//     again where share.auto.offset.reset says, and Describe shows -1.

import (
	"context"
	"errors"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 90, advertisedMin: 0, min: 0, max: 1, concurrent: true, handle: handleDescribeShareGroupOffsets})
	register(apiEntry{key: 91, advertisedMin: 0, min: 0, max: 0, handle: handleAlterShareGroupOffsets})
	register(apiEntry{key: 92, advertisedMin: 0, min: 0, max: 0, handle: handleDeleteShareGroupOffsets})
}

// shareLag is the records of [SPSO, hw) not finished.
func shareLag(st metadata.SharePartitionState, hw int64) int64 {
	if hw < 0 || st.StartOffset < 0 {
		return -1
	}
	lag := hw - st.StartOffset
	for _, r := range st.Ranges {
		if r.State == 2 || r.State == 4 {
			lag -= max(0, min(r.Last, hw-1)-r.First+1)
		}
	}
	return max(lag, 0)
}

func handleDescribeShareGroupOffsets(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	srv := rc.conn.srv
	img := srv.image()
	disabled := shareGroupsDisabled(rc)
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		if disabled != nil {
			rg.ErrorCode = disabled.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if !rc.authorize(opDescribe, resGroup, g.GroupID) {
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if _, ok := img.ShareGroup(g.GroupID); !ok {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		topics := g.Topics
		if topics == nil {
			seen := map[string]int{}
			for _, st := range img.SharePartitions(g.GroupID) {
				t, ok := img.TopicByID(st.TopicID)
				// A deleted state (DeleteShareGroupOffsets, or a group
				// deleted before this one was created) is not the group's.
				if !ok || st.StartOffset < 0 {
					continue
				}
				i, ok := seen[t.Name]
				if !ok {
					i = len(topics)
					seen[t.Name] = i
					topics = append(topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: t.Name})
				}
				topics[i].Partitions = append(topics[i].Partitions, st.Partition)
			}
		}
		for _, t := range topics {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = t.Topic
			ti, known := img.Topic(t.Topic)
			rt.TopicID = ti.ID
			allowed := rc.authorize(opDescribe, resTopic, t.Topic)
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
				reg, ok := ti.Partition(p)
				switch {
				case !allowed:
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case !known || !ok:
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					rp.LeaderEpoch = reg.LeaderEpoch
					if st, ok := img.SharePartition(metadata.SharePartitionKey{Group: g.GroupID, TopicID: ti.ID, Partition: p}); ok {
						rp.StartOffset = st.StartOffset
						hw := int64(-1)
						if srv.deps.Replicas != nil {
							if part, err := srv.deps.Replicas.Partition(t.Topic, p); err == nil {
								hw = part.Log().HighWatermark()
							}
						}
						rp.Lag = shareLag(st, hw)
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// ShareGroupMembers is what AlterShareGroupOffsets asks of the share group
// coordinator; *sharegroup.Coordinator satisfies it.
type ShareGroupMembers interface {
	ShareGroupHasMembers(groupID string) (bool, error)
}

// emptyShareGroup is nil when groupID is a share group without members
// that this node coordinates, else the error the offset admin calls
// answer.
func emptyShareGroup(srv *Server, groupID string) *kerr.Error {
	members, ok := srv.deps.ShareGroups.(ShareGroupMembers)
	if srv.deps.ShareGroups == nil || !ok {
		return kerr.CoordinatorNotAvailable
	}
	has, err := members.ShareGroupHasMembers(groupID)
	if err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return ke
		}
		return kerr.UnknownServerError
	}
	if has {
		return kerr.NonEmptyGroup
	}
	return nil
}

func handleAlterShareGroupOffsets(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	srv := rc.conn.srv
	fail := func(e *kerr.Error) (kmsg.Response, error) {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	if e := shareGroupsDisabled(rc); e != nil {
		return fail(e)
	}
	if !rc.authorize(opRead, resGroup, req.GroupID) {
		return fail(kerr.GroupAuthorizationFailed)
	}
	if e := emptyShareGroup(srv, req.GroupID); e != nil {
		return fail(e)
	}
	img := srv.image()
	type pending struct {
		ti, pi int
		done   <-chan error
	}
	var waits []pending
	for ti, t := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		topic, known := img.Topic(t.Topic)
		rt.TopicID = topic.ID
		allowed := rc.authorize(opRead, resTopic, t.Topic)
		for pi, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			reg, ok := topic.Partition(p.Partition)
			switch {
			case !allowed:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !known || !ok:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.StartOffset < 0:
				rp.ErrorCode = kerr.InvalidRequest.Code
			default:
				key := metadata.SharePartitionKey{Group: req.GroupID, TopicID: topic.ID, Partition: p.Partition}
				prev, _ := img.SharePartition(key)
				rec := &metadata.SharePartitionState{Group: req.GroupID, TopicID: topic.ID, Partition: p.Partition,
					LeaderEpoch: reg.LeaderEpoch, StateEpoch: prev.StateEpoch + 1, StartOffset: p.StartOffset}
				waits = append(waits, pending{ti, pi, srv.shares.writer.submit(rec)})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	rc.release()
	for _, w := range waits {
		var err error
		select {
		case err = <-w.done:
		case <-ctx.Done():
			err = kerr.RequestTimedOut
		}
		if err != nil {
			resp.Topics[w.ti].Partitions[w.pi].ErrorCode = errorCode(err)
		}
	}
	return resp, nil
}

func handleDeleteShareGroupOffsets(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	srv := rc.conn.srv
	if e := shareGroupsDisabled(rc); e != nil {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	if !rc.authorize(opDelete, resGroup, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if e := emptyShareGroup(srv, req.GroupID); e != nil {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	img := srv.image()
	type pending struct {
		ti   int
		done <-chan error
	}
	var waits []pending
	for ti, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		topic, known := img.Topic(t.Topic)
		rt.TopicID = topic.ID
		switch {
		case !rc.authorize(opRead, resTopic, t.Topic):
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case !known:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			for _, st := range img.SharePartitions(req.GroupID) {
				reg, ok := topic.Partition(st.Partition)
				if st.TopicID != topic.ID || !ok || st.StartOffset < 0 {
					continue
				}
				rec := &metadata.SharePartitionState{Group: req.GroupID, TopicID: topic.ID, Partition: st.Partition,
					LeaderEpoch: reg.LeaderEpoch, StateEpoch: st.StateEpoch + 1, StartOffset: -1}
				waits = append(waits, pending{ti, srv.shares.writer.submit(rec)})
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	rc.release()
	for _, w := range waits {
		var err error
		select {
		case err = <-w.done:
		case <-ctx.Done():
			err = kerr.RequestTimedOut
		}
		if rt := &resp.Topics[w.ti]; err != nil && rt.ErrorCode == 0 {
			rt.ErrorCode = errorCode(err)
		}
	}
	return resp, nil
}
