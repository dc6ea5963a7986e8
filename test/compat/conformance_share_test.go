package compat

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const shareGroup = "conformance-share"

func shareHeartbeat(v int16, group, member string, epoch int32, topics []string) kmsg.Request {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.Version, r.GroupID, r.MemberID, r.MemberEpoch, r.SubscribedTopicNames = v, group, member, epoch, topics
	return r
}

func shareDescribe(v int16, groups ...string) kmsg.Request {
	r := kmsg.NewPtrShareGroupDescribeRequest()
	r.Version, r.GroupIDs = v, groups
	return r
}

// shareGroupRows are the share group membership APIs (Kafka 4.2; v1 is
// both their lowest and highest version). The join row runs before the
// describe row that reads its group.
func shareGroupRows() []row {
	return []row{
		{76, lowest, "heartbeat of an unknown group", "GroupMetadataManager.shareGroupHeartbeat: a member epoch other than 0 for a group that does not exist is refused; GROUP_ID_NOT_FOUND, which clients answer by rejoining",
			func(v int16, e *env) kmsg.Request { return shareHeartbeat(v, noGroup, "m-1", 3, nil) },
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode, kerr.GroupIDNotFound.Code)
			}},
		{76, lowest, "join without subscriptions", "GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid: \"SubscribedTopicNames must be set in first request.\", INVALID_REQUEST",
			func(v int16, e *env) kmsg.Request { return shareHeartbeat(v, shareGroup, "m-1", 0, nil) },
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode, kerr.InvalidRequest.Code)
			}},
		{76, highest, "join", "GroupMetadataManager.shareGroupHeartbeat: a join bumps the group epoch, computes the target with the simple assignor and answers it with the member epoch",
			func(v int16, e *env) kmsg.Request { return shareHeartbeat(v, shareGroup, "m-1", 0, []string{topic}) },
			func(r kmsg.Response, e *env) error {
				resp := r.(*kmsg.ShareGroupHeartbeatResponse)
				if err := want("top level", resp.ErrorCode, 0); err != nil {
					return err
				}
				if resp.MemberEpoch != 1 || resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 1 ||
					resp.Assignment.TopicPartitions[0].TopicID != e.topicID || len(resp.Assignment.TopicPartitions[0].Partitions) != 1 {
					return fmt.Errorf("epoch %d, assignment %+v: want epoch 1 and the topic's one partition", resp.MemberEpoch, resp.Assignment)
				}
				return nil
			}},
		{77, lowest, "unknown group", "GroupMetadataManager.shareGroupDescribe: a group that does not exist is GROUP_ID_NOT_FOUND",
			func(v int16, e *env) kmsg.Request { return shareDescribe(v, noGroup) },
			func(r kmsg.Response, _ *env) error {
				return want("group", r.(*kmsg.ShareGroupDescribeResponse).Groups[0].ErrorCode, kerr.GroupIDNotFound.Code)
			}},
		{77, highest, "the joined group", "ShareGroup.asDescribedGroup: state Stable, the epochs, assignor simple, the member with its subscription and assignment by topic id and name",
			func(v int16, e *env) kmsg.Request { return shareDescribe(v, shareGroup) },
			func(r kmsg.Response, e *env) error {
				g := r.(*kmsg.ShareGroupDescribeResponse).Groups[0]
				if err := want("group", g.ErrorCode, 0); err != nil {
					return err
				}
				if g.GroupState != "Stable" || g.GroupEpoch != 1 || g.AssignmentEpoch != 1 || g.Assignor != "simple" || len(g.Members) != 1 {
					return fmt.Errorf("described %+v", g)
				}
				m := g.Members[0]
				if m.MemberID != "m-1" || m.MemberEpoch != 1 || len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != topic {
					return fmt.Errorf("member %+v", m)
				}
				return nil
			}},
	}
}
