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

func shareFetch(v int16, group, member string, epoch int32) *kmsg.ShareFetchRequest {
	r := kmsg.NewPtrShareFetchRequest()
	r.Version, r.GroupID, r.MemberID, r.ShareSessionEpoch = v, kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
	r.MaxRecords, r.BatchSize = 10, 10
	return r
}

func shareAck(v int16, group, member string, epoch int32) *kmsg.ShareAcknowledgeRequest {
	r := kmsg.NewPtrShareAcknowledgeRequest()
	r.Version, r.GroupID, r.MemberID, r.ShareSessionEpoch = v, kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
	return r
}

// shareDeliveryRows are ShareFetch and ShareAcknowledge (Kafka 4.2, v1-v2):
// the share session's epochs and an acknowledgement of records the member
// does not hold.
func shareDeliveryRows() []row {
	return []row{
		{78, lowest, "session epoch without a session", "ShareSessionCache / SharePartitionManager.newContext: an epoch other than 0 with no session is SHARE_SESSION_NOT_FOUND",
			func(v int16, e *env) kmsg.Request { return shareFetch(v, shareGroup, "no-session-member", 5) },
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.ShareFetchResponse).ErrorCode, kerr.ShareSessionNotFound.Code)
			}},
		{78, highest, "open a session", "SharePartitionManager.newContext: epoch 0 opens a share session; the answer carries the acquisition lock duration",
			func(v int16, e *env) kmsg.Request {
				r := shareFetch(v, shareGroup, "fetch-member", 0)
				t := kmsg.NewShareFetchRequestTopic()
				t.TopicID = e.topicID
				t.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}
				r.Topics = append(r.Topics, t)
				return r
			},
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.ShareFetchResponse)
				if err := want("top level", resp.ErrorCode, 0); err != nil {
					return err
				}
				if resp.AcquisitionLockTimeoutMillis != 30000 {
					return fmt.Errorf("AcquisitionLockTimeoutMillis %d, want 30000", resp.AcquisitionLockTimeoutMillis)
				}
				return nil
			}},
		{78, highest, "stale session epoch", "ShareSessionCache: an epoch that is not the session's next is INVALID_SHARE_SESSION_EPOCH",
			func(v int16, e *env) kmsg.Request { return shareFetch(v, shareGroup, "fetch-member", 7) },
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.ShareFetchResponse).ErrorCode, kerr.InvalidShareSessionEpoch.Code)
			}},
		{78, highest, "renew asking for records", "KafkaApis.handleShareFetchRequest, v2 (KIP-1222): IsRenewAck with fetch sizes other than 0 is INVALID_REQUEST",
			func(v int16, e *env) kmsg.Request {
				r := shareFetch(v, shareGroup, "renew-member", 0)
				r.IsRenewAck = true
				t := kmsg.NewShareFetchRequestTopic()
				t.TopicID = e.topicID
				p := kmsg.NewShareFetchRequestTopicPartition()
				p.AcknowledgementBatches = []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{4}}}
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.ShareFetchResponse).ErrorCode, kerr.InvalidRequest.Code)
			}},
		{79, lowest, "acknowledge opening a session", "KafkaApis.handleShareAcknowledgeRequest: ShareAcknowledge with epoch 0 is INVALID_SHARE_SESSION_EPOCH",
			func(v int16, e *env) kmsg.Request { return shareAck(v, shareGroup, "fetch-member", 0) },
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.ShareAcknowledgeResponse).ErrorCode, kerr.InvalidShareSessionEpoch.Code)
			}},
		{79, highest, "acknowledge records not held", "SharePartition.acknowledge: offsets the member has not acquired are INVALID_RECORD_STATE, the state unchanged",
			func(v int16, e *env) kmsg.Request {
				r := shareAck(v, shareGroup, "fetch-member", 1)
				t := kmsg.NewShareAcknowledgeRequestTopic()
				t.TopicID = e.topicID
				p := kmsg.NewShareAcknowledgeRequestTopicPartition()
				p.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 1000, LastOffset: 1001, AcknowledgeTypes: []int8{1}}}
				t.Partitions = append(t.Partitions, p)
				r.Topics = append(r.Topics, t)
				return r
			},
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.ShareAcknowledgeResponse)
				if err := want("top level", resp.ErrorCode, 0); err != nil {
					return err
				}
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
					return fmt.Errorf("answer %+v", resp.Topics)
				}
				return want("partition", resp.Topics[0].Partitions[0].ErrorCode, kerr.InvalidRecordState.Code)
			}},
	}
}

// shareOffsetRows are the share-group offset admin calls (Kafka 4.2:
// DescribeShareGroupOffsets v0-v1, AlterShareGroupOffsets v0). They run
// after the share group rows, so shareGroup exists with member m-1, and
// before the delivery rows: their ShareFetch initializes partition 0's
// share state (its start offset at the log end, as share.auto.offset.reset
// latest says), after which it is no longer a partition without state.
func shareOffsetRows() []row {
	return []row{
		{90, lowest, "unknown group", "GroupCoordinatorService.describeShareGroupOffsets: an id that is not a share group is GROUP_ID_NOT_FOUND",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
				r.Version = v
				r.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: noGroup}}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("group", r.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].ErrorCode, kerr.GroupIDNotFound.Code)
			}},
		{90, highest, "a partition without state", "ShareCoordinatorShard: a share-partition never initialized answers start offset -1 (and lag -1)",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
				r.Version = v
				r.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: shareGroup, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				g := r.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
				if err := want("group", g.ErrorCode, 0); err != nil {
					return err
				}
				if len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
					return fmt.Errorf("answer %+v", g.Topics)
				}
				p := g.Topics[0].Partitions[0]
				if err := want("partition", p.ErrorCode, 0); err != nil {
					return err
				}
				if p.StartOffset != -1 || p.Lag != -1 {
					return fmt.Errorf("start offset %d lag %d, want -1 -1", p.StartOffset, p.Lag)
				}
				return nil
			}},
		{91, lowest, "a group with members", "GroupMetadataManager.shareGroupAlterOffsets: a share group with members is NON_EMPTY_GROUP",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
				r.Version, r.GroupID = v, shareGroup
				r.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}}}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.AlterShareGroupOffsetsResponse).ErrorCode, kerr.NonEmptyGroup.Code)
			}},
		{91, highest, "unknown group", "GroupMetadataManager.shareGroupAlterOffsets: an id that is no share group is GROUP_ID_NOT_FOUND",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
				r.Version, r.GroupID = v, noGroup
				r.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}}}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.AlterShareGroupOffsetsResponse).ErrorCode, kerr.GroupIDNotFound.Code)
			}},
	}
}

// shareDeleteOffsetRows: DeleteShareGroupOffsets v0 (Kafka 4.2).
func shareDeleteOffsetRows() []row {
	del := func(v int16, group string) kmsg.Request {
		r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		r.Version, r.GroupID = v, group
		r.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
		return r
	}
	return []row{
		{92, lowest, "a group with members", "GroupMetadataManager.shareGroupDeleteOffsets: a share group with members is NON_EMPTY_GROUP",
			func(v int16, e *env) kmsg.Request { return del(v, shareGroup) },
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode, kerr.NonEmptyGroup.Code)
			}},
		{92, highest, "unknown group", "GroupMetadataManager.shareGroupDeleteOffsets: an id that is no share group is GROUP_ID_NOT_FOUND",
			func(v int16, e *env) kmsg.Request { return del(v, noGroup) },
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode, kerr.GroupIDNotFound.Code)
			}},
	}
}
