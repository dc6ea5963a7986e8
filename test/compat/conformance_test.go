package compat

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// env is what rows build requests from: the cluster's one topic.
type env struct {
	clusterID string
	topicID   [16]byte
}

const (
	topic     = "conformance"
	noTopic   = "conformance-absent"
	noGroup   = "conformance-absent-group"
	lowest    = false
	highest   = true
	unknownID = "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"
)

// row is one request and the answer Kafka 4.1 gives it. kafka says where
// Kafka defines that answer (request handler or the controller's, by class
// and method, or the KIP that changed it).
type row struct {
	key   int16
	at    bool // lowest or highest advertised version
	what  string
	kafka string
	req   func(v int16, e *env) kmsg.Request
	check func(resp kmsg.Response, e *env) error
}

func want(what string, got, exp int16) error {
	if got != exp {
		return fmt.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(exp))
	}
	return nil
}

var rows = []row{
	// Produce (0). v0-v2 are advertised for librdkafka but refused.
	{0, lowest, "magic 0/1 produce refused", "KafkaApis.handleProduceRequest: ProduceRequest.validateRecords refuses v0-v2 per partition (KIP-896); kept advertised for librdkafka (KAFKA-18659)",
		func(v int16, e *env) kmsg.Request { return produce(v, topic, [16]byte{}) },
		func(r kmsg.Response, _ *env) error {
			return want("partition", r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnsupportedVersion.Code)
		}},
	{0, highest, "unknown topic id", "KafkaApis.handleProduceRequest, v13 topics by id (KIP-516): an id the metadata cache lacks is UNKNOWN_TOPIC_ID",
		func(v int16, e *env) kmsg.Request { return produce(v, "", [16]byte([]byte(unknownID))) },
		func(r kmsg.Response, _ *env) error {
			return want("partition", r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicID.Code)
		}},
	// Fetch (1).
	{1, lowest, "unknown topic", "KafkaApis.handleFetchRequest: a partition the metadata cache lacks is UNKNOWN_TOPIC_OR_PARTITION",
		func(v int16, e *env) kmsg.Request { return fetch(v, noTopic, [16]byte{}) },
		func(r kmsg.Response, _ *env) error {
			return want("partition", r.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
		}},
	{1, highest, "unknown topic id", "KafkaApis.handleFetchRequest v13+ (KIP-516): an unknown topic id is UNKNOWN_TOPIC_ID",
		func(v int16, e *env) kmsg.Request { return fetch(v, "", [16]byte([]byte(unknownID))) },
		func(r kmsg.Response, _ *env) error {
			return want("partition", r.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicID.Code)
		}},
	// ListOffsets (2).
	{2, lowest, "unknown partition of a known topic", "ReplicaManager.fetchOffset via getPartitionOrException: UNKNOWN_TOPIC_OR_PARTITION",
		func(v int16, e *env) kmsg.Request { return listOffsets(v, 5) },
		func(r kmsg.Response, _ *env) error {
			return want("partition", r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
		}},
	{2, highest, "partition listed twice", "KafkaApis.handleListOffsetRequest: duplicate partitions (v1+) are INVALID_REQUEST",
		func(v int16, e *env) kmsg.Request { return listOffsets(v, 0, 0) },
		func(r kmsg.Response, _ *env) error {
			for _, p := range r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions {
				if err := want("partition", p.ErrorCode, kerr.InvalidRequest.Code); err != nil {
					return err
				}
			}
			return nil
		}},
	// Metadata (3).
	{3, lowest, "empty topic list means all topics", "MetadataRequest.isAllTopics: at v0 an empty list asks for every topic",
		func(v int16, e *env) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Version = v
			r.Topics = []kmsg.MetadataRequestTopic{}
			return r
		},
		func(r kmsg.Response, _ *env) error {
			for _, t := range r.(*kmsg.MetadataResponse).Topics {
				if t.Topic != nil && *t.Topic == topic {
					return want("topic", t.ErrorCode, 0)
				}
			}
			return fmt.Errorf("topic %s not listed", topic)
		}},
	{3, highest, "unknown topic id", "KafkaApis.handleTopicMetadataRequest v12+: unknown topic ids are UNKNOWN_TOPIC_ID",
		func(v int16, e *env) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Version = v
			t := kmsg.NewMetadataRequestTopic()
			t.TopicID = [16]byte([]byte(unknownID))
			r.Topics = append(r.Topics, t)
			return r
		},
		func(r kmsg.Response, _ *env) error {
			return want("topic", r.(*kmsg.MetadataResponse).Topics[0].ErrorCode, kerr.UnknownTopicID.Code)
		}},
	// OffsetCommit (8).
	{8, lowest, "standalone commit to an unknown topic", "KafkaApis.handleOffsetCommitRequest: topics the metadata cache lacks are UNKNOWN_TOPIC_OR_PARTITION",
		func(v int16, e *env) kmsg.Request { return offsetCommit(v) },
		func(r kmsg.Response, _ *env) error {
			return want("partition", r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
		}},
	{8, highest, "standalone commit to an unknown topic", "KafkaApis.handleOffsetCommitRequest, as at the lowest version",
		func(v int16, e *env) kmsg.Request { return offsetCommit(v) },
		func(r kmsg.Response, _ *env) error {
			return want("partition", r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
		}},
	// OffsetFetch (9).
	{9, lowest, "no committed offset", "OffsetMetadataManager.fetchOffsets: a partition without a commit is offset -1, no error",
		func(v int16, e *env) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Version, r.Group = v, noGroup
			t := kmsg.NewOffsetFetchRequestTopic()
			t.Topic, t.Partitions = topic, []int32{0}
			r.Topics = append(r.Topics, t)
			return r
		},
		func(r kmsg.Response, _ *env) error {
			p := r.(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
			if p.Offset != -1 {
				return fmt.Errorf("offset %d, want -1", p.Offset)
			}
			return want("partition", p.ErrorCode, 0)
		}},
	{9, highest, "no committed offset, groups form", "OffsetMetadataManager.fetchOffsets (v8+ groups): offset -1, no error",
		func(v int16, e *env) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Version = v
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = noGroup
			t := kmsg.NewOffsetFetchRequestGroupTopic()
			t.Topic, t.Partitions = topic, []int32{0}
			g.Topics = append(g.Topics, t)
			r.Groups = append(r.Groups, g)
			return r
		},
		func(r kmsg.Response, _ *env) error {
			g := r.(*kmsg.OffsetFetchResponse).Groups[0]
			if err := want("group", g.ErrorCode, 0); err != nil {
				return err
			}
			if p := g.Topics[0].Partitions[0]; p.Offset != -1 || p.ErrorCode != 0 {
				return fmt.Errorf("partition %+v, want offset -1 and no error", p)
			}
			return nil
		}},
	{9, highest, "several groups, one invalid", "GroupCoordinatorService.fetchOffsets (v8+ groups): each group its own error; an empty group id is INVALID_GROUP_ID, the others answered",
		func(v int16, e *env) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Version = v
			for _, id := range []string{noGroup, "", noGroup + "-2"} {
				g := kmsg.NewOffsetFetchRequestGroup()
				g.Group = id
				t := kmsg.NewOffsetFetchRequestGroupTopic()
				t.Topic, t.Partitions = topic, []int32{0}
				g.Topics = append(g.Topics, t)
				r.Groups = append(r.Groups, g)
			}
			return r
		},
		func(r kmsg.Response, _ *env) error {
			gs := r.(*kmsg.OffsetFetchResponse).Groups
			if len(gs) != 3 || gs[0].Group != noGroup || gs[1].Group != "" || gs[2].Group != noGroup+"-2" {
				return fmt.Errorf("groups %+v, want the three asked for in order", gs)
			}
			for i, code := range []int16{0, kerr.InvalidGroupID.Code, 0} {
				if err := want(fmt.Sprintf("group %d", i), gs[i].ErrorCode, code); err != nil {
					return err
				}
			}
			if p := gs[2].Topics[0].Partitions[0]; p.Offset != -1 || p.ErrorCode != 0 {
				return fmt.Errorf("third group's partition %+v, want offset -1 and no error", p)
			}
			return nil
		}},
	// FindCoordinator (10).
	{10, lowest, "group coordinator", "KafkaApis.handleFindCoordinatorRequest: the leader of the group's partition, no error",
		func(v int16, e *env) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.Version, r.CoordinatorKey = v, noGroup
			return r
		},
		func(r kmsg.Response, _ *env) error {
			resp := r.(*kmsg.FindCoordinatorResponse)
			if resp.NodeID != 1 {
				return fmt.Errorf("node %d, want 1", resp.NodeID)
			}
			return want("coordinator", resp.ErrorCode, 0)
		}},
	{10, highest, "batched keys", "KafkaApis.handleFindCoordinatorRequest v4+ (KIP-699): one coordinator per key",
		func(v int16, e *env) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.Version, r.CoordinatorKeys = v, []string{noGroup, noGroup + "-2"}
			return r
		},
		func(r kmsg.Response, _ *env) error {
			cs := r.(*kmsg.FindCoordinatorResponse).Coordinators
			if len(cs) != 2 {
				return fmt.Errorf("%d coordinators, want 2", len(cs))
			}
			for _, c := range cs {
				if c.NodeID != 1 || c.ErrorCode != 0 {
					return fmt.Errorf("coordinator %+v", c)
				}
			}
			return nil
		}},
}

// groupRows: JoinGroup, Heartbeat, LeaveGroup and SyncGroup with an empty
// group id, at both ends. GroupCoordinatorService checks the id before
// anything else.
func groupRows() []row {
	var out []row
	for _, at := range []bool{lowest, highest} {
		out = append(out,
			row{11, at, "empty group id", "GroupCoordinatorService.joinGroup: isGroupIdNotEmpty, else INVALID_GROUP_ID",
				func(v int16, e *env) kmsg.Request {
					r := kmsg.NewPtrJoinGroupRequest()
					r.Version, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = v, 10000, 10000, "consumer"
					p := kmsg.NewJoinGroupRequestProtocol()
					p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0}
					r.Protocols = append(r.Protocols, p)
					return r
				},
				func(r kmsg.Response, _ *env) error {
					return want("join", r.(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidGroupID.Code)
				}},
			row{12, at, "empty group id", "GroupCoordinatorService.heartbeat: INVALID_GROUP_ID",
				func(v int16, e *env) kmsg.Request {
					r := kmsg.NewPtrHeartbeatRequest()
					r.Version, r.MemberID, r.Generation = v, "m", 1
					return r
				},
				func(r kmsg.Response, _ *env) error {
					return want("heartbeat", r.(*kmsg.HeartbeatResponse).ErrorCode, kerr.InvalidGroupID.Code)
				}},
			row{13, at, "empty group id", "GroupCoordinatorService.leaveGroup: INVALID_GROUP_ID",
				func(v int16, e *env) kmsg.Request {
					r := kmsg.NewPtrLeaveGroupRequest()
					r.Version, r.MemberID = v, "m"
					m := kmsg.NewLeaveGroupRequestMember()
					m.MemberID = "m"
					r.Members = append(r.Members, m)
					return r
				},
				func(r kmsg.Response, _ *env) error {
					return want("leave", r.(*kmsg.LeaveGroupResponse).ErrorCode, kerr.InvalidGroupID.Code)
				}},
			row{14, at, "empty group id", "GroupCoordinatorService.syncGroup: INVALID_GROUP_ID",
				func(v int16, e *env) kmsg.Request {
					r := kmsg.NewPtrSyncGroupRequest()
					r.Version, r.MemberID, r.Generation = v, "m", 1
					r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
					return r
				},
				func(r kmsg.Response, _ *env) error {
					return want("sync", r.(*kmsg.SyncGroupResponse).ErrorCode, kerr.InvalidGroupID.Code)
				}},
			row{68, at, "empty group id", "GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid: \"GroupId can't be empty.\" is INVALID_REQUEST",
				func(v int16, e *env) kmsg.Request {
					r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
					r.Version, r.MemberID, r.RebalanceTimeoutMillis = v, "m", 30000
					r.SubscribedTopicNames, r.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
					return r
				},
				func(r kmsg.Response, _ *env) error {
					return want("heartbeat", r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.InvalidRequest.Code)
				}},
			row{69, at, "unknown group", "GroupMetadataManager.consumerGroupDescribe: a group that does not exist is GROUP_ID_NOT_FOUND",
				func(v int16, e *env) kmsg.Request {
					r := kmsg.NewPtrConsumerGroupDescribeRequest()
					r.Version, r.Groups = v, []string{noGroup}
					return r
				},
				func(r kmsg.Response, _ *env) error {
					gs := r.(*kmsg.ConsumerGroupDescribeResponse).Groups
					if len(gs) != 1 {
						return fmt.Errorf("%d groups answered", len(gs))
					}
					return want("describe", gs[0].ErrorCode, kerr.GroupIDNotFound.Code)
				}},
		)
	}
	out = append(out,
		row{68, highest, "join without a member id", "GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid v1+ (KIP-1082): \"MemberId can't be empty.\" is INVALID_REQUEST",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				r.Version, r.Group, r.RebalanceTimeoutMillis = v, noGroup, 30000
				r.SubscribedTopicNames, r.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("heartbeat", r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, kerr.InvalidRequest.Code)
			}},
		row{68, highest, "join and leave", "GroupMetadataManager.consumerGroupHeartbeat: a member joining at epoch 0 gets epoch 1; consumerGroupLeave answers epoch -1",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				r.Version, r.Group, r.MemberID, r.RebalanceTimeoutMillis = v, "conformance-848", "conformance-member", 30000
				r.SubscribedTopicNames, r.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.ConsumerGroupHeartbeatResponse)
				if err := want("join", resp.ErrorCode, 0); err != nil {
					return err
				}
				if resp.MemberEpoch != 1 || resp.Assignment == nil || len(resp.Assignment.Topics) != 1 {
					return fmt.Errorf("join: epoch %d, assignment %+v; want epoch 1 and the topic's partitions", resp.MemberEpoch, resp.Assignment)
				}
				return nil
			}},
		row{16, highest, "type filter", "GroupCoordinatorShard.listGroups v5 (KIP-1043): the types filter keeps only groups of the named types; consumer-protocol groups are type consumer",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrListGroupsRequest()
				r.Version, r.TypesFilter = v, []string{"Consumer"}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.ListGroupsResponse)
				if err := want("list", resp.ErrorCode, 0); err != nil {
					return err
				}
				for _, g := range resp.Groups {
					if g.GroupType != "consumer" {
						return fmt.Errorf("group %s of type %s listed under the consumer type filter", g.Group, g.GroupType)
					}
				}
				return nil
			}},
	)
	return out
}

// edgeRows are further edge cases for APIs the rows above already cover.
func edgeRows() []row {
	return []row{
		{0, highest, "acks 2", "ReplicaManager.appendRecords: acks other than -1, 0, 1 is INVALID_REQUIRED_ACKS for every partition",
			func(v int16, e *env) kmsg.Request {
				r := produce(v, "", e.topicID)
				r.Acks = 2
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, kerr.InvalidRequiredAcks.Code)
			}},
		{1, highest, "offset past the log end", "Partition.fetchRecords / UnifiedLog.read: a fetch offset beyond the log end is OFFSET_OUT_OF_RANGE",
			func(v int16, e *env) kmsg.Request {
				r := fetch(v, "", e.topicID)
				r.Topics[0].Partitions[0].FetchOffset = 1000
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode, kerr.OffsetOutOfRange.Code)
			}},
		{2, highest, "max timestamp", "ReplicaManager.fetchOffset, timestamp -3 (KIP-734): the record with the largest timestamp, offset 0 here",
			func(v int16, e *env) kmsg.Request {
				r := listOffsets(v, 0)
				r.Topics[0].Partitions[0].Timestamp = -3
				return r
			},
			func(r kmsg.Response, _ *env) error {
				p := r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
				if p.Offset != 0 {
					return fmt.Errorf("offset %d, want 0", p.Offset)
				}
				return want("partition", p.ErrorCode, 0)
			}},
		{3, highest, "no auto-creation: unknown and invalid names, a name twice", "KafkaApis.getTopicMetadata: UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION for an invalid name (Topic.validate); a name is answered once",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrMetadataRequest()
				r.Version, r.AllowAutoTopicCreation = v, false
				for _, n := range []string{noTopic, "bad/name", noTopic} {
					t := kmsg.NewMetadataRequestTopic()
					t.Topic = kmsg.StringPtr(n)
					r.Topics = append(r.Topics, t)
				}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				ts := r.(*kmsg.MetadataResponse).Topics
				if len(ts) != 2 {
					return fmt.Errorf("%d topics, want 2", len(ts))
				}
				got := map[string]int16{}
				for _, t := range ts {
					got[*t.Topic] = t.ErrorCode
				}
				if err := want(noTopic, got[noTopic], kerr.UnknownTopicOrPartition.Code); err != nil {
					return err
				}
				return want("bad/name", got["bad/name"], kerr.InvalidTopicException.Code)
			}},
		{3, lowest, "auto-created topic, first answer", "AutoTopicCreationManager.sendCreateTopicRequest (KRaft): the creation is sent to the controller and the topic answered UNKNOWN_TOPIC_OR_PARTITION with no partitions; below v4 creation is always allowed (MetadataRequest)",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrMetadataRequest()
				r.Version = v
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = kmsg.StringPtr(topic + "-auto")
				r.Topics = append(r.Topics, t)
				return r
			},
			func(r kmsg.Response, _ *env) error {
				t := r.(*kmsg.MetadataResponse).Topics[0]
				if len(t.Partitions) != 0 {
					return fmt.Errorf("%d partitions in the first answer", len(t.Partitions))
				}
				return want("topic", t.ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{19, highest, "replication factor above the brokers", "ReplicationControlManager.createTopic: a replication factor above the registered brokers is INVALID_REPLICATION_FACTOR",
			func(v int16, e *env) kmsg.Request { return createTopics(v, false, topicSpec{noTopic, 1, 3}) },
			func(r kmsg.Response, _ *env) error {
				return want("topic", r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode, kerr.InvalidReplicationFactor.Code)
			}},
		{1, highest, "negative partition of a known topic", "KafkaApis.handleFetchRequest: a partition the metadata cache lacks (metadataCache.contains) is UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request {
				r := fetch(v, "", e.topicID)
				r.Topics[0].Partitions[0].Partition = -1
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{2, lowest, "negative partition", "ReplicaManager.fetchOffset via getPartitionOrException: UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request { return listOffsets(v, -1) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{3, highest, "null topic list means all topics", "MetadataRequest.isAllTopics: from v1 a null list asks for every topic",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrMetadataRequest()
				r.Version, r.Topics = v, nil
				return r
			},
			func(r kmsg.Response, _ *env) error {
				for _, t := range r.(*kmsg.MetadataResponse).Topics {
					if t.Topic != nil && *t.Topic == topic {
						return want("topic", t.ErrorCode, 0)
					}
				}
				return fmt.Errorf("topic %s not listed", topic)
			}},
		{3, highest, "empty topic list means none", "MetadataRequest.isAllTopics: from v1 an empty list asks for no topic; brokers and cluster id still answered",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrMetadataRequest()
				r.Version, r.Topics = v, []kmsg.MetadataRequestTopic{}
				return r
			},
			func(r kmsg.Response, e *env) error {
				resp := r.(*kmsg.MetadataResponse)
				if len(resp.Topics) != 0 {
					return fmt.Errorf("%d topics, want none", len(resp.Topics))
				}
				if len(resp.Brokers) != 1 || resp.ClusterID == nil || *resp.ClusterID != e.clusterID {
					return fmt.Errorf("brokers %+v cluster %v, want broker 1 and %q", resp.Brokers, resp.ClusterID, e.clusterID)
				}
				return nil
			}},
		{20, highest, "a name twice", "ControllerApis.deleteTopics: a name given twice is INVALID_REQUEST \"Duplicate topic name.\", and nothing is deleted",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrDeleteTopicsRequest()
				r.Version, r.TimeoutMillis = v, 30000
				for range 2 {
					t := kmsg.NewDeleteTopicsRequestTopic()
					t.Topic = kmsg.StringPtr(topic)
					r.Topics = append(r.Topics, t)
				}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				ts := r.(*kmsg.DeleteTopicsResponse).Topics
				if len(ts) != 1 {
					return fmt.Errorf("%d answers, want the name answered once", len(ts))
				}
				return want("topic", ts[0].ErrorCode, kerr.InvalidRequest.Code)
			}},
		{37, highest, "validate only", "ReplicationControlManager.createPartitions with validateOnly: the increase is checked, answered NONE, and not made",
			func(v int16, e *env) kmsg.Request {
				r := createPartitions(v, topic, 4)
				r.ValidateOnly = true
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("topic", r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, 0)
			}},
		{37, lowest, "a name twice", "ControllerApis.createPartitions: a name given twice is INVALID_REQUEST \"Duplicate topic name.\", answered once",
			func(v int16, e *env) kmsg.Request {
				r := createPartitions(v, topic, 4)
				r.Topics = append(r.Topics, r.Topics[0])
				return r
			},
			func(r kmsg.Response, _ *env) error {
				ts := r.(*kmsg.CreatePartitionsResponse).Topics
				if len(ts) != 1 {
					return fmt.Errorf("%d answers, want the name answered once", len(ts))
				}
				return want("topic", ts[0].ErrorCode, kerr.InvalidRequest.Code)
			}},
		{44, highest, "a resource twice", "ConfigAdminManager.preprocess: every entry of a resource named twice is INVALID_REQUEST \"Each resource must appear at most once.\", each answered (reassembleIncrementalResponse)",
			func(v int16, e *env) kmsg.Request {
				r := incrementalAlterConfigs(v)
				r.Resources = append(r.Resources, r.Resources[0])
				return r
			},
			func(r kmsg.Response, _ *env) error {
				rs := r.(*kmsg.IncrementalAlterConfigsResponse).Resources
				if len(rs) != 2 {
					return fmt.Errorf("%d answers, want one per entry", len(rs))
				}
				for _, rr := range rs {
					if err := want("resource", rr.ErrorCode, kerr.InvalidRequest.Code); err != nil {
						return err
					}
				}
				return nil
			}},
		{33, lowest, "a resource twice", "ConfigAdminManager.preprocess (legacy): every entry of a resource named twice is INVALID_REQUEST, each answered (reassembleLegacyResponse)",
			func(v int16, e *env) kmsg.Request {
				r := alterConfigs(v)
				r.Resources = append(r.Resources, r.Resources[0])
				return r
			},
			func(r kmsg.Response, _ *env) error {
				rs := r.(*kmsg.AlterConfigsResponse).Resources
				if len(rs) != 2 {
					return fmt.Errorf("%d answers, want one per entry", len(rs))
				}
				for _, rr := range rs {
					if err := want("resource", rr.ErrorCode, kerr.InvalidRequest.Code); err != nil {
						return err
					}
				}
				return nil
			}},
		{32, highest, "cluster-wide broker defaults", "ConfigHelper.describeConfigs: an empty broker name is the cluster default resource, no error",
			func(v int16, e *env) kmsg.Request { return describeConfigs(v, kmsg.ConfigResourceTypeBroker, "") },
			func(r kmsg.Response, _ *env) error {
				return want("resource", r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode, 0)
			}},
	}
}

func adminRows() []row {
	return []row{
		// DescribeGroups (15).
		{15, lowest, "unknown group", "GroupMetadataManager.describeGroups: a group that does not exist is Dead, no error, below v6",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrDescribeGroupsRequest()
				r.Version, r.Groups = v, []string{noGroup}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				g := r.(*kmsg.DescribeGroupsResponse).Groups[0]
				if g.State != "Dead" {
					return fmt.Errorf("state %q, want Dead", g.State)
				}
				return want("group", g.ErrorCode, 0)
			}},
		{15, highest, "unknown group", "DescribeGroups v6 (KIP-1043): a group that does not exist is Dead with GROUP_ID_NOT_FOUND and the exception's message (GroupMetadataManager.describeGroups, group(): \"Group %s not found.\")",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrDescribeGroupsRequest()
				r.Version, r.Groups = v, []string{noGroup}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				g := r.(*kmsg.DescribeGroupsResponse).Groups[0]
				if g.State != "Dead" || g.ErrorMessage == nil || *g.ErrorMessage != "Group "+noGroup+" not found." {
					return fmt.Errorf("state %q, message %v; want Dead, \"Group %s not found.\"", g.State, g.ErrorMessage, noGroup)
				}
				return want("group", g.ErrorCode, kerr.GroupIDNotFound.Code)
			}},
		// ListGroups (16).
		{16, lowest, "list", "KafkaApis.handleListGroupsRequest: no error",
			func(v int16, e *env) kmsg.Request { r := kmsg.NewPtrListGroupsRequest(); r.Version = v; return r },
			func(r kmsg.Response, _ *env) error { return want("list", r.(*kmsg.ListGroupsResponse).ErrorCode, 0) }},
		{16, highest, "filtered by state and type", "KafkaApis.handleListGroupsRequest v4 states (KIP-518), v5 types (KIP-848): no error",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrListGroupsRequest()
				r.Version, r.StatesFilter, r.TypesFilter = v, []string{"Stable"}, []string{"classic"}
				return r
			},
			func(r kmsg.Response, _ *env) error { return want("list", r.(*kmsg.ListGroupsResponse).ErrorCode, 0) }},
		// ApiVersions (18).
		{18, lowest, "versions", "KafkaApis.handleApiVersionsRequest: no error, ApiVersions itself listed",
			func(v int16, e *env) kmsg.Request { r := kmsg.NewPtrApiVersionsRequest(); r.Version = v; return r },
			func(r kmsg.Response, _ *env) error { return apiVersionsOK(r.(*kmsg.ApiVersionsResponse)) }},
		{18, highest, "invalid client software name", "KafkaApis.handleApiVersionsRequest: ApiVersionsRequest.isValid fails, INVALID_REQUEST (KIP-511)",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrApiVersionsRequest()
				r.Version, r.ClientSoftwareName, r.ClientSoftwareVersion = v, "-bad-", "1"
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("api versions", r.(*kmsg.ApiVersionsResponse).ErrorCode, kerr.InvalidRequest.Code)
			}},
		// CreateTopics (19).
		{19, lowest, "zero partitions", "ReplicationControlManager.createTopic: a non-positive partition count is INVALID_PARTITIONS",
			func(v int16, e *env) kmsg.Request { return createTopics(v, false, topicSpec{noTopic, 0, 1}) },
			func(r kmsg.Response, _ *env) error {
				return want("topic", r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode, kerr.InvalidPartitions.Code)
			}},
		{19, highest, "validate only, an existing name, a name twice", "ControllerApis.createTopics: duplicate names INVALID_REQUEST; ReplicationControlManager: TOPIC_ALREADY_EXISTS; validateOnly creates nothing",
			func(v int16, e *env) kmsg.Request {
				return createTopics(v, true, topicSpec{noTopic, 1, 1}, topicSpec{topic, 1, 1}, topicSpec{noTopic + "-twice", 1, 1}, topicSpec{noTopic + "-twice", 1, 1})
			},
			func(r kmsg.Response, _ *env) error {
				got := map[string]int16{}
				for _, t := range r.(*kmsg.CreateTopicsResponse).Topics {
					got[t.Topic] = t.ErrorCode
				}
				if err := want(noTopic, got[noTopic], 0); err != nil {
					return err
				}
				if err := want(topic, got[topic], kerr.TopicAlreadyExists.Code); err != nil {
					return err
				}
				return want("duplicate", got[noTopic+"-twice"], kerr.InvalidRequest.Code)
			}},
		{19, lowest, "timeout 0", createTopicsTimeout0Kafka, createTopicsTimeout0, checkCreateTopicsTimedOut},
		{19, highest, "timeout 0", createTopicsTimeout0Kafka, createTopicsTimeout0, checkCreateTopicsTimedOut},
		// DescribeTopicPartitions (75): v0 only.
		{75, lowest, "a known and an unknown topic, the budget spent before the second", "KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse: named topics in name order, partitions from 0 up to the partition limit; a topic reached with the budget spent is left out and NextCursor points at its partition 0; ELR lists empty with ELR off; TopicAuthorizedOperations filled (DescribeTopicPartitionsRequestHandler)",
			func(v int16, e *env) kmsg.Request { return describeTopicPartitions(v, 1, nil, noTopic, topic) },
			func(r kmsg.Response, e *env) error {
				resp := r.(*kmsg.DescribeTopicPartitionsResponse)
				if len(resp.Topics) != 1 || *resp.Topics[0].Topic != topic || resp.Topics[0].TopicID != e.topicID || len(resp.Topics[0].Partitions) != 1 {
					return fmt.Errorf("topics %+v, want %s with its one partition", resp.Topics, topic)
				}
				if p := resp.Topics[0].Partitions[0]; p.LeaderID != 1 || p.EligibleLeaderReplicas == nil || len(p.EligibleLeaderReplicas) != 0 {
					return fmt.Errorf("partition %+v, want leader 1 and an empty ELR list", p)
				}
				if resp.Topics[0].AuthorizedOperations == -2147483648 {
					return fmt.Errorf("TopicAuthorizedOperations not filled")
				}
				if c := resp.NextCursor; c == nil || c.Topic != noTopic || c.Partition != 0 {
					return fmt.Errorf("next cursor %+v, want %s:0", c, noTopic)
				}
				return want("topic", resp.Topics[0].ErrorCode, 0)
			}},
		{75, highest, "a cursor on a topic not asked for", "DescribeTopicPartitionsRequestHandler: the cursor's topic must be in the topic list, else InvalidRequestException, answered by DescribeTopicPartitionsRequest.getErrorResponse: every topic of the request INVALID_REQUEST",
			func(v int16, e *env) kmsg.Request {
				return describeTopicPartitions(v, 2000, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: noTopic}, topic, topic)
			},
			func(r kmsg.Response, _ *env) error {
				ts := r.(*kmsg.DescribeTopicPartitionsResponse).Topics
				if len(ts) != 2 {
					return fmt.Errorf("%d answers, want one per entry (2)", len(ts))
				}
				for _, t := range ts {
					if err := want(*t.Topic, t.ErrorCode, kerr.InvalidRequest.Code); err != nil {
						return err
					}
				}
				return nil
			}},
		{75, highest, "an unknown and an invalid name", "KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse: a named topic not in the image is UNKNOWN_TOPIC_OR_PARTITION, one whose name Topic.validate refuses INVALID_TOPIC_EXCEPTION, both with no partitions",
			func(v int16, e *env) kmsg.Request { return describeTopicPartitions(v, 2000, nil, noTopic, "bad/name") },
			func(r kmsg.Response, _ *env) error {
				ts := r.(*kmsg.DescribeTopicPartitionsResponse).Topics
				if len(ts) != 2 || *ts[0].Topic != "bad/name" || *ts[1].Topic != noTopic {
					return fmt.Errorf("answers %+v, want bad/name then %s", ts, noTopic)
				}
				if err := want("bad/name", ts[0].ErrorCode, kerr.InvalidTopicException.Code); err != nil {
					return err
				}
				return want(noTopic, ts[1].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		// DeleteTopics (20).
		{20, lowest, "unknown topic", "ControllerApis.deleteTopics: an unknown name is UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrDeleteTopicsRequest()
				r.Version, r.TimeoutMillis, r.TopicNames = v, 30000, []string{noTopic}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("topic", r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{20, highest, "unknown topic id", "ControllerApis.deleteTopics v6 (KIP-516): an unknown id is UNKNOWN_TOPIC_ID",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrDeleteTopicsRequest()
				r.Version, r.TimeoutMillis = v, 30000
				t := kmsg.NewDeleteTopicsRequestTopic()
				t.TopicID = [16]byte([]byte(unknownID))
				r.Topics = append(r.Topics, t)
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("topic", r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, kerr.UnknownTopicID.Code)
			}},
		// DeleteRecords (21).
		{21, lowest, "unknown partition", "ReplicaManager.deleteRecords: a partition not hosted is UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request { return deleteRecords(v, 5, 0) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{21, highest, "offset past the high watermark", "UnifiedLog.maybeIncrementLogStartOffset via Partition.deleteRecordsOnLeader: beyond the high watermark is OFFSET_OUT_OF_RANGE",
			func(v int16, e *env) kmsg.Request { return deleteRecords(v, 0, 1000) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode, kerr.OffsetOutOfRange.Code)
			}},
		// InitProducerId (22).
		{22, lowest, "idempotent producer", "TransactionCoordinator.handleInitProducerId: without a transactional id, a new producer id at epoch 0",
			func(v int16, e *env) kmsg.Request { return initProducerID(v) },
			func(r kmsg.Response, _ *env) error { return initProducerIDOK(r.(*kmsg.InitProducerIDResponse)) }},
		{22, highest, "idempotent producer", "TransactionCoordinator.handleInitProducerId, as at the lowest version",
			func(v int16, e *env) kmsg.Request { return initProducerID(v) },
			func(r kmsg.Response, _ *env) error { return initProducerIDOK(r.(*kmsg.InitProducerIDResponse)) }},
		// OffsetForLeaderEpoch (23).
		{23, lowest, "unknown partition", "ReplicaManager.lastOffsetForLeaderEpoch: UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request { return offsetForLeaderEpoch(v) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{23, highest, "unknown partition", "ReplicaManager.lastOffsetForLeaderEpoch, as at the lowest version",
			func(v int16, e *env) kmsg.Request { return offsetForLeaderEpoch(v) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		// DescribeConfigs (32).
		{32, lowest, "unknown topic", "ConfigHelper.describeConfigs: UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request { return describeConfigs(v, kmsg.ConfigResourceTypeTopic, noTopic) },
			func(r kmsg.Response, _ *env) error {
				return want("resource", r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{32, highest, "another broker's configs", "ConfigHelper.describeConfigs: a broker id other than this broker's is INVALID_REQUEST",
			func(v int16, e *env) kmsg.Request { return describeConfigs(v, kmsg.ConfigResourceTypeBroker, "2") },
			func(r kmsg.Response, _ *env) error {
				return want("resource", r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode, kerr.InvalidRequest.Code)
			}},
		// AlterConfigs (33).
		{33, lowest, "unknown topic", "ConfigurationControlManager.legacyAlterConfigs: an unknown topic is UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request { return alterConfigs(v) },
			func(r kmsg.Response, _ *env) error {
				return want("resource", r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{33, highest, "unknown topic", "ConfigurationControlManager.legacyAlterConfigs, as at the lowest version",
			func(v int16, e *env) kmsg.Request { return alterConfigs(v) },
			func(r kmsg.Response, _ *env) error {
				return want("resource", r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		// AlterReplicaLogDirs (34).
		{34, lowest, "dir not in log.dirs", "ReplicaManager.alterReplicaLogDirs: LogManager.isLogDirOnline throws LogDirNotFoundException",
			func(v int16, e *env) kmsg.Request { return alterReplicaLogDirs(v, "/not/a/log/dir", topic) },
			func(r kmsg.Response, _ *env) error { return alterLogDirsCode(r, kerr.LogDirNotFound.Code) }},
		{34, highest, "dir not in log.dirs", "ReplicaManager.alterReplicaLogDirs, as at the lowest version (v2 flexible)",
			func(v int16, e *env) kmsg.Request { return alterReplicaLogDirs(v, "/not/a/log/dir", topic) },
			func(r kmsg.Response, _ *env) error { return alterLogDirsCode(r, kerr.LogDirNotFound.Code) }},
		// DescribeLogDirs (35).
		{35, lowest, "all log dirs", "ReplicaManager.describeLogDirs: every log dir, no error",
			func(v int16, e *env) kmsg.Request { r := kmsg.NewPtrDescribeLogDirsRequest(); r.Version = v; return r },
			func(r kmsg.Response, _ *env) error { return logDirsOK(r.(*kmsg.DescribeLogDirsResponse)) }},
		{35, highest, "all log dirs", "ReplicaManager.describeLogDirs; v3+ top-level error code 0",
			func(v int16, e *env) kmsg.Request { r := kmsg.NewPtrDescribeLogDirsRequest(); r.Version = v; return r },
			func(r kmsg.Response, _ *env) error { return logDirsOK(r.(*kmsg.DescribeLogDirsResponse)) }},
		// CreatePartitions (37).
		{37, lowest, "unknown topic", "ReplicationControlManager.createPartitions: UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request { return createPartitions(v, noTopic, 2) },
			func(r kmsg.Response, _ *env) error {
				return want("topic", r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{37, highest, "count not above the current", "ReplicationControlManager.createPartitions: a count not above the current one is INVALID_PARTITIONS",
			func(v int16, e *env) kmsg.Request { return createPartitions(v, topic, 1) },
			func(r kmsg.Response, _ *env) error {
				return want("topic", r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, kerr.InvalidPartitions.Code)
			}},
		// DeleteGroups (42).
		{42, lowest, "unknown group", "GroupMetadataManager.validateDeleteGroup: GROUP_ID_NOT_FOUND",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrDeleteGroupsRequest()
				r.Version, r.Groups = v, []string{noGroup}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("group", r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.GroupIDNotFound.Code)
			}},
		{42, highest, "unknown group", "GroupMetadataManager.validateDeleteGroup, as at the lowest version",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrDeleteGroupsRequest()
				r.Version, r.Groups = v, []string{noGroup}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("group", r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.GroupIDNotFound.Code)
			}},
		// ElectLeaders (43).
		{43, lowest, "unknown partition", "ReplicationControlManager.electLeaders: UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request { return electLeaders(v, 5) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.ElectLeadersResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{43, highest, "preferred leader already leads", "ReplicationControlManager.electLeader: ELECTION_NOT_NEEDED",
			func(v int16, e *env) kmsg.Request { return electLeaders(v, 0) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.ElectLeadersResponse).Topics[0].Partitions[0].ErrorCode, kerr.ElectionNotNeeded.Code)
			}},
		// IncrementalAlterConfigs (44).
		{44, lowest, "unknown topic", "ConfigurationControlManager.incrementalAlterConfigs: UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request { return incrementalAlterConfigs(v) },
			func(r kmsg.Response, _ *env) error {
				return want("resource", r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{44, highest, "unknown topic", "ConfigurationControlManager.incrementalAlterConfigs, as at the lowest version",
			func(v int16, e *env) kmsg.Request { return incrementalAlterConfigs(v) },
			func(r kmsg.Response, _ *env) error {
				return want("resource", r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		// OffsetDelete (47), one version.
		{47, lowest, "empty group id", "GroupCoordinatorService.deleteOffsets: INVALID_GROUP_ID",
			func(v int16, e *env) kmsg.Request { return offsetDelete(v, "") },
			func(r kmsg.Response, _ *env) error {
				return want("group", r.(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.InvalidGroupID.Code)
			}},
		{47, highest, "unknown group", "OffsetMetadataManager.deleteOffsets: a group that does not exist is GROUP_ID_NOT_FOUND",
			func(v int16, e *env) kmsg.Request { return offsetDelete(v, noGroup) },
			func(r kmsg.Response, _ *env) error {
				return want("group", r.(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupIDNotFound.Code)
			}},
		// DescribeCluster (60).
		{60, lowest, "cluster", "KafkaApis.handleDescribeCluster: no error, the cluster id, the brokers",
			func(v int16, e *env) kmsg.Request { r := kmsg.NewPtrDescribeClusterRequest(); r.Version = v; return r },
			func(r kmsg.Response, e *env) error { return describeClusterOK(r.(*kmsg.DescribeClusterResponse), e) }},
		{60, highest, "cluster", "KafkaApis.handleDescribeCluster, as at the lowest version",
			func(v int16, e *env) kmsg.Request { r := kmsg.NewPtrDescribeClusterRequest(); r.Version = v; return r },
			func(r kmsg.Response, e *env) error { return describeClusterOK(r.(*kmsg.DescribeClusterResponse), e) }},
		// DescribeQuorum (55).
		{55, lowest, "the metadata partition", "KafkaRaftClient.handleDescribeQuorumRequest: the leader, no error",
			func(v int16, e *env) kmsg.Request { return describeQuorum(v, "__cluster_metadata") },
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.DescribeQuorumResponse)
				if err := want("quorum", resp.ErrorCode, 0); err != nil {
					return err
				}
				if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LeaderID != 1 {
					return fmt.Errorf("partition %+v", p)
				}
				return nil
			}},
		{55, highest, "another topic", "KafkaRaftClient.handleDescribeQuorumRequest: getPartitionLevelErrorResponse, UNKNOWN_TOPIC_OR_PARTITION per partition",
			func(v int16, e *env) kmsg.Request { return describeQuorum(v, topic) },
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.DescribeQuorumResponse)
				if err := want("top level", resp.ErrorCode, 0); err != nil {
					return err
				}
				return want("partition", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
	}
}

// TestConformance sends every row to a one-node cluster at the version its
// row names, and checks that every advertised API has a row at its lowest
// and at its highest version.
func TestConformance(t *testing.T) {
	c := cluster.Start(t, cluster.Nodes(1))
	w := dial(t, c.Node(1).ClientAddr())
	e := setup(t, w)
	e.clusterID = c.ClusterID()

	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raftka-conformance", "1"
	resp, err := w.do(av)
	if err != nil {
		t.Fatal(err)
	}
	ranges := map[int16][2]int16{}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		ranges[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}

	all := slices.Concat(rows, groupRows(), adminRows(), edgeRows(), securityRows(), aclRows(), quotaRows(), txnRows(), reassignRows(), shareGroupRows(), shareOffsetRows(), shareDeliveryRows(), shareDeleteOffsetRows(), featureRows(), quorumRows())
	covered := map[int16][2]bool{}
	for _, r := range all {
		rg, ok := ranges[r.key]
		if !ok {
			t.Errorf("%s: a row for an API raftka does not advertise", kmsg.NameForKey(r.key))
			continue
		}
		v, end := rg[0], 0
		if r.at == highest {
			v, end = rg[1], 1
		}
		cv := covered[r.key]
		cv[end] = true
		covered[r.key] = cv
		name := fmt.Sprintf("%s/v%d/%s", kmsg.NameForKey(r.key), v, strings.ReplaceAll(r.what, " ", "_"))
		t.Run(name, func(t *testing.T) {
			resp, err := w.do(r.req(v, e))
			if err != nil {
				t.Fatalf("%v (Kafka: %s)", err, r.kafka)
			}
			if err := r.check(resp, e); err != nil {
				t.Errorf("%v\nKafka 4.1: %s", err, r.kafka)
			}
		})
	}
	var keys []int16
	for k := range ranges {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if cv := covered[k]; !cv[0] || !cv[1] {
			t.Errorf("%s (key %d) lacks a row at its lowest or highest version: %v", kmsg.NameForKey(k), k, cv)
		}
	}
	t.Logf("%d rows over %d advertised APIs", len(all), len(ranges))
}

// setup creates the topic every row uses and waits for its leader.
func setup(t *testing.T, w *wire) *env {
	t.Helper()
	// The node answers before its quorum has elected a controller; a
	// client retries the retriable answers of that window.
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		resp, err := w.do(createTopics(7, false, topicSpec{topic, 1, 1}))
		if err != nil {
			t.Fatal(err)
		}
		switch code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; {
		case code == 0 || code == kerr.TopicAlreadyExists.Code:
			return true, ""
		case kerr.IsRetriable(kerr.ErrorForCode(code)):
			return false, kerr.ErrorForCode(code).Error()
		default:
			t.Fatalf("create %s: %v", topic, kerr.ErrorForCode(code))
			return false, ""
		}
	})
	e := &env{}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := w.do(req)
		if err != nil {
			return false, err.Error()
		}
		mt := resp.(*kmsg.MetadataResponse).Topics[0]
		if mt.ErrorCode != 0 || len(mt.Partitions) != 1 || mt.Partitions[0].Leader != 1 {
			return false, "no leader yet"
		}
		e.topicID = mt.TopicID
		return true, ""
	})
	// Group rows need the group's coordinator: clients find it first
	// (FindCoordinator creates the offsets topic, as in Kafka) and retry
	// NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, so do as they do.
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version, fc.CoordinatorKey = 3, noGroup
		if _, err := w.do(fc); err != nil {
			return false, err.Error()
		}
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = 7, noGroup
		resp, err := w.do(req)
		if err != nil {
			return false, err.Error()
		}
		if code := resp.(*kmsg.OffsetFetchResponse).ErrorCode; code != 0 {
			return false, kerr.ErrorForCode(code).Error()
		}
		return true, ""
	})
	// Transaction rows need the id's coordinator, found the same way
	// (FindCoordinator creates __transaction_state).
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version, fc.CoordinatorType, fc.CoordinatorKey = 3, 1, noTxn
		resp, err := w.do(fc)
		if err != nil {
			return false, err.Error()
		}
		if code := resp.(*kmsg.FindCoordinatorResponse).ErrorCode; code != 0 {
			return false, kerr.ErrorForCode(code).Error()
		}
		return true, ""
	})
	// One record, so the log has a high watermark of 1.
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		presp, err := w.do(produce(9, topic, [16]byte{}))
		if err != nil {
			t.Fatal(err)
		}
		switch code := presp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; {
		case code == 0:
			return true, ""
		case kerr.IsRetriable(kerr.ErrorForCode(code)):
			return false, kerr.ErrorForCode(code).Error()
		default:
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
			return false, ""
		}
	})
	return e
}

func produce(v int16, name string, id [16]byte) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.Version, r.Acks, r.TimeoutMillis = v, -1, 10000
	t := kmsg.NewProduceRequestTopic()
	t.Topic, t.TopicID = name, id
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = recordbatch.BuildValues(time.Now().UnixMilli(), []byte("conformance"))
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func fetch(v int16, name string, id [16]byte) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version, r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.ReplicaID = v, 0, 1, 1<<20, -1
	r.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = name, id
	p := kmsg.NewFetchRequestTopicPartition()
	p.PartitionMaxBytes = 1 << 20
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func listOffsets(v int16, parts ...int32) *kmsg.ListOffsetsRequest {
	r := kmsg.NewPtrListOffsetsRequest()
	r.Version, r.ReplicaID = v, -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		t.Partitions = append(t.Partitions, rp)
	}
	r.Topics = append(r.Topics, t)
	return r
}

func offsetCommit(v int16) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version, r.Group, r.Generation, r.MemberID = v, noGroup, -1, ""
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = noTopic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Offset = 1
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

// createTopicsTimeout0Kafka: Kafka 4.1's KRaft path for CreateTopics with
// timeoutMs 0 (or less).
const createTopicsTimeout0Kafka = "ControllerApis.handleCreateTopics: the controller's deadline is now + timeoutMs (ControllerRequestContext.requestTimeoutMsToDeadlineNs); QuorumController.createTopics appends the write event with it, and KafkaEventQueue fails an event whose deadline has passed with a TimeoutException before it runs, so nothing is created; CreateTopicsRequest.getErrorResponse answers every entry of the request, a repeated name and __cluster_metadata included, REQUEST_TIMED_OUT, message null (ApiError.fromThrowable)"

func createTopicsTimeout0(v int16, e *env) kmsg.Request {
	r := createTopics(v, false, topicSpec{noTopic + "-t0", 1, 1}, topicSpec{noTopic + "-t0-twice", 1, 1}, topicSpec{noTopic + "-t0-twice", 1, 1}, topicSpec{"__cluster_metadata", 1, 1})
	r.TimeoutMillis = 0
	return r
}

func checkCreateTopicsTimedOut(r kmsg.Response, _ *env) error {
	ts := r.(*kmsg.CreateTopicsResponse).Topics
	names := []string{noTopic + "-t0", noTopic + "-t0-twice", noTopic + "-t0-twice", "__cluster_metadata"}
	if len(ts) != len(names) {
		return fmt.Errorf("%d answers, want one per entry (%d)", len(ts), len(names))
	}
	for i, t := range ts {
		if t.Topic != names[i] || t.ErrorMessage != nil || t.NumPartitions != -1 || t.ReplicationFactor != -1 || len(t.Configs) != 0 {
			return fmt.Errorf("answer %d: %s message %v partitions %d rf %d configs %d, want %s with no message, -1/-1", i, t.Topic, t.ErrorMessage, t.NumPartitions, t.ReplicationFactor, len(t.Configs), names[i])
		}
		if err := want(t.Topic, t.ErrorCode, kerr.RequestTimedOut.Code); err != nil {
			return err
		}
	}
	return nil
}

func describeTopicPartitions(v int16, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, names ...string) *kmsg.DescribeTopicPartitionsRequest {
	r := kmsg.NewPtrDescribeTopicPartitionsRequest()
	r.Version, r.ResponsePartitionLimit, r.Cursor = v, limit, cursor
	for _, n := range names {
		t := kmsg.NewDescribeTopicPartitionsRequestTopic()
		t.Topic = n
		r.Topics = append(r.Topics, t)
	}
	return r
}

type topicSpec struct {
	name       string
	partitions int32
	rf         int16
}

func createTopics(v int16, validateOnly bool, specs ...topicSpec) *kmsg.CreateTopicsRequest {
	r := kmsg.NewPtrCreateTopicsRequest()
	r.Version, r.TimeoutMillis, r.ValidateOnly = v, 30000, validateOnly
	for _, s := range specs {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = s.name, s.partitions, s.rf
		r.Topics = append(r.Topics, t)
	}
	return r
}

func deleteRecords(v int16, partition int32, offset int64) *kmsg.DeleteRecordsRequest {
	r := kmsg.NewPtrDeleteRecordsRequest()
	r.Version, r.TimeoutMillis = v, 10000
	t := kmsg.NewDeleteRecordsRequestTopic()
	t.Topic = topic
	p := kmsg.NewDeleteRecordsRequestTopicPartition()
	p.Partition, p.Offset = partition, offset
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func initProducerID(v int16) *kmsg.InitProducerIDRequest {
	r := kmsg.NewPtrInitProducerIDRequest()
	r.Version, r.TransactionTimeoutMillis = v, 60000
	return r
}

func initProducerIDOK(r *kmsg.InitProducerIDResponse) error {
	if r.ProducerID < 0 || r.ProducerEpoch != 0 {
		return fmt.Errorf("producer id %d epoch %d, want a new id at epoch 0", r.ProducerID, r.ProducerEpoch)
	}
	return want("init", r.ErrorCode, 0)
}

func offsetForLeaderEpoch(v int16) *kmsg.OffsetForLeaderEpochRequest {
	r := kmsg.NewPtrOffsetForLeaderEpochRequest()
	r.Version, r.ReplicaID = v, -1
	t := kmsg.NewOffsetForLeaderEpochRequestTopic()
	t.Topic = topic
	p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	p.Partition, p.LeaderEpoch, p.CurrentLeaderEpoch = 5, 0, -1
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func describeConfigs(v int16, typ kmsg.ConfigResourceType, name string) *kmsg.DescribeConfigsRequest {
	r := kmsg.NewPtrDescribeConfigsRequest()
	r.Version = v
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	r.Resources = append(r.Resources, rr)
	return r
}

func alterConfigs(v int16) *kmsg.AlterConfigsRequest {
	r := kmsg.NewPtrAlterConfigsRequest()
	r.Version = v
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, noTopic
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "retention.ms", kmsg.StringPtr("60000")
	rr.Configs = append(rr.Configs, c)
	r.Resources = append(r.Resources, rr)
	return r
}

func incrementalAlterConfigs(v int16) *kmsg.IncrementalAlterConfigsRequest {
	r := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r.Version = v
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, noTopic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "retention.ms", kmsg.StringPtr("60000")
	rr.Configs = append(rr.Configs, c)
	r.Resources = append(r.Resources, rr)
	return r
}

func logDirsOK(r *kmsg.DescribeLogDirsResponse) error {
	if err := want("log dirs", r.ErrorCode, 0); err != nil {
		return err
	}
	if len(r.Dirs) == 0 {
		return fmt.Errorf("no log dirs")
	}
	for _, d := range r.Dirs {
		if d.ErrorCode != 0 {
			return fmt.Errorf("dir %s: %v", d.Dir, kerr.ErrorForCode(d.ErrorCode))
		}
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				if p.OffsetLag != 0 || p.IsFuture {
					return fmt.Errorf("%s/%d: lag %d future %v, want a current replica's lag 0 (ReplicaManager.getLogEndOffsetLag)", t.Topic, p.Partition, p.OffsetLag, p.IsFuture)
				}
			}
		}
	}
	return nil
}

func createPartitions(v int16, name string, count int32) *kmsg.CreatePartitionsRequest {
	r := kmsg.NewPtrCreatePartitionsRequest()
	r.Version, r.TimeoutMillis = v, 30000
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = name, count
	r.Topics = append(r.Topics, t)
	return r
}

func electLeaders(v int16, partition int32) *kmsg.ElectLeadersRequest {
	r := kmsg.NewPtrElectLeadersRequest()
	r.Version, r.TimeoutMillis = v, 30000
	t := kmsg.NewElectLeadersRequestTopic()
	t.Topic, t.Partitions = topic, []int32{partition}
	r.Topics = append(r.Topics, t)
	return r
}

func offsetDelete(v int16, group string) *kmsg.OffsetDeleteRequest {
	r := kmsg.NewPtrOffsetDeleteRequest()
	r.Version, r.Group = v, group
	t := kmsg.NewOffsetDeleteRequestTopic()
	t.Topic = topic
	t.Partitions = append(t.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
	r.Topics = append(r.Topics, t)
	return r
}

func describeClusterOK(r *kmsg.DescribeClusterResponse, e *env) error {
	if err := want("cluster", r.ErrorCode, 0); err != nil {
		return err
	}
	if r.ClusterID != e.clusterID || len(r.Brokers) != 1 || r.Brokers[0].NodeID != 1 {
		return fmt.Errorf("cluster %q brokers %+v, want %q and broker 1", r.ClusterID, r.Brokers, e.clusterID)
	}
	return nil
}

func describeQuorum(v int16, name string) *kmsg.DescribeQuorumRequest {
	r := kmsg.NewPtrDescribeQuorumRequest()
	r.Version = v
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = name
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	r.Topics = append(r.Topics, t)
	return r
}

func apiVersionsOK(r *kmsg.ApiVersionsResponse) error {
	if err := want("api versions", r.ErrorCode, 0); err != nil {
		return err
	}
	for _, k := range r.ApiKeys {
		if k.ApiKey == 18 {
			return nil
		}
	}
	return fmt.Errorf("ApiVersions not listed")
}

// securityRows: the SASL and SCRAM APIs as a PLAINTEXT listener answers
// them (the conformance cluster has no SASL listener; the secured paths
// are test/e2e's security tests).
func securityRows() []row {
	saslHandshake := func(v int16, _ *env) kmsg.Request {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Version, r.Mechanism = v, "PLAIN"
		return r
	}
	saslAuthenticate := func(v int16, _ *env) kmsg.Request {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.Version, r.SASLAuthBytes = v, []byte("\x00user\x00password")
		return r
	}
	handshakeRefused := func(r kmsg.Response, _ *env) error {
		return want("handshake", r.(*kmsg.SASLHandshakeResponse).ErrorCode, kerr.IllegalSaslState.Code)
	}
	authenticateRefused := func(r kmsg.Response, _ *env) error {
		return want("authenticate", r.(*kmsg.SASLAuthenticateResponse).ErrorCode, kerr.IllegalSaslState.Code)
	}
	describeAbsent := func(v int16, _ *env) kmsg.Request {
		r := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		r.Version = v
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = "conformance-absent-user"
		r.Users = append(r.Users, u)
		return r
	}
	alterTooFewIterations := func(v int16, _ *env) kmsg.Request {
		r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		r.Version = v
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = "conformance-user", 1, 100 // SCRAM-SHA-256
		u.Salt, u.SaltedPassword = []byte("salt"), make([]byte, 32)
		r.Upsertions = append(r.Upsertions, u)
		return r
	}
	return []row{
		{17, lowest, "handshake on a PLAINTEXT listener", "KafkaApis.handleSaslHandshakeRequest: a handshake that reaches the request handlers is ILLEGAL_SASL_STATE",
			saslHandshake, handshakeRefused},
		{17, highest, "handshake on a PLAINTEXT listener", "KafkaApis.handleSaslHandshakeRequest, as at the lowest version",
			saslHandshake, handshakeRefused},
		{36, lowest, "authenticate on a PLAINTEXT listener", "KafkaApis.handleSaslAuthenticateRequest: ILLEGAL_SASL_STATE (authentication is done by the channel's authenticator, never by the handlers)",
			saslAuthenticate, authenticateRefused},
		{36, highest, "authenticate on a PLAINTEXT listener", "KafkaApis.handleSaslAuthenticateRequest, as at the lowest version",
			saslAuthenticate, authenticateRefused},
		{50, lowest, "a user without credentials", "ScramImage.describe (KRaft): a named user with no credentials is RESOURCE_NOT_FOUND in its result",
			describeAbsent,
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.DescribeUserSCRAMCredentialsResponse)
				if err := want("request", resp.ErrorCode, 0); err != nil {
					return err
				}
				if len(resp.Results) != 1 {
					return fmt.Errorf("%d results, want 1", len(resp.Results))
				}
				return want("user", resp.Results[0].ErrorCode, kerr.ResourceNotFound.Code)
			}},
		{50, highest, "a user named twice", "ScramImage.describe (KRaft): a user named more than once is DUPLICATE_RESOURCE in its result",
			func(v int16, e *env) kmsg.Request {
				r := describeAbsent(v, e).(*kmsg.DescribeUserSCRAMCredentialsRequest)
				r.Users = append(r.Users, r.Users[0])
				return r
			},
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.DescribeUserSCRAMCredentialsResponse)
				if err := want("request", resp.ErrorCode, 0); err != nil {
					return err
				}
				if len(resp.Results) != 1 {
					return fmt.Errorf("%d results, want 1", len(resp.Results))
				}
				return want("user", resp.Results[0].ErrorCode, kerr.DuplicateResource.Code)
			}},
		{51, lowest, "an empty user name", "ScramControlManager.alterCredentials: an empty user name is UNACCEPTABLE_CREDENTIAL",
			func(v int16, e *env) kmsg.Request {
				r := alterTooFewIterations(v, e).(*kmsg.AlterUserSCRAMCredentialsRequest)
				r.Upsertions[0].Name, r.Upsertions[0].Iterations = "", 4096
				return r
			},
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.AlterUserSCRAMCredentialsResponse)
				if len(resp.Results) != 1 {
					return fmt.Errorf("%d results, want 1", len(resp.Results))
				}
				return want("user", resp.Results[0].ErrorCode, kerr.UnacceptableCredential.Code)
			}},
		{51, highest, "too few iterations", "ScramControlManager.alterCredentials: iterations below the mechanism's minimum (4096) are UNACCEPTABLE_CREDENTIAL",
			alterTooFewIterations,
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.AlterUserSCRAMCredentialsResponse)
				if len(resp.Results) != 1 {
					return fmt.Errorf("%d results, want 1", len(resp.Results))
				}
				return want("user", resp.Results[0].ErrorCode, kerr.UnacceptableCredential.Code)
			}},
	}
}

// aclRows: the ACL APIs on a cluster without authorizer.class.name, Kafka's
// default (the authorizing paths are test/e2e's ACL tests).
func aclRows() []row {
	describe := func(v int16, _ *env) kmsg.Request {
		r := kmsg.NewPtrDescribeACLsRequest()
		r.Version = v
		r.ResourceType, r.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		r.Operation, r.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return r
	}
	create := func(v int16, _ *env) kmsg.Request {
		r := kmsg.NewPtrCreateACLsRequest()
		r.Version = v
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:conformance", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		r.Creations = append(r.Creations, c)
		return r
	}
	del := func(v int16, _ *env) kmsg.Request {
		r := kmsg.NewPtrDeleteACLsRequest()
		r.Version = v
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		r.Filters = append(r.Filters, f)
		return r
	}
	describeDisabled := func(r kmsg.Response, _ *env) error {
		return want("request", r.(*kmsg.DescribeACLsResponse).ErrorCode, kerr.SecurityDisabled.Code)
	}
	createDisabled := func(r kmsg.Response, _ *env) error {
		resp := r.(*kmsg.CreateACLsResponse)
		if len(resp.Results) != 1 {
			return fmt.Errorf("%d results, want 1", len(resp.Results))
		}
		return want("creation", resp.Results[0].ErrorCode, kerr.SecurityDisabled.Code)
	}
	deleteDisabled := func(r kmsg.Response, _ *env) error {
		resp := r.(*kmsg.DeleteACLsResponse)
		if len(resp.Results) != 1 {
			return fmt.Errorf("%d results, want 1", len(resp.Results))
		}
		return want("filter", resp.Results[0].ErrorCode, kerr.SecurityDisabled.Code)
	}
	return []row{
		{29, lowest, "no authorizer", "AclApis.handleDescribeAcls: without an authorizer the answer is SECURITY_DISABLED (\"No Authorizer is configured.\")", describe, describeDisabled},
		{29, highest, "no authorizer", "AclApis.handleDescribeAcls, as at the lowest version", describe, describeDisabled},
		{30, lowest, "no authorizer", "AclApis.handleCreateAcls: without an authorizer every creation is SECURITY_DISABLED", create, createDisabled},
		{30, highest, "no authorizer", "AclApis.handleCreateAcls, as at the lowest version", create, createDisabled},
		{31, lowest, "no authorizer", "AclApis.handleDeleteAcls: without an authorizer every filter is SECURITY_DISABLED", del, deleteDisabled},
		{31, highest, "no authorizer", "AclApis.handleDeleteAcls, as at the lowest version", del, deleteDisabled},
	}
}

// quotaRows: the client quota APIs' refusals (nothing is changed).
func quotaRows() []row {
	describe := func(types ...string) func(v int16, _ *env) kmsg.Request {
		return func(v int16, _ *env) kmsg.Request {
			r := kmsg.NewPtrDescribeClientQuotasRequest()
			r.Version = v
			for _, t := range types {
				c := kmsg.NewDescribeClientQuotasRequestComponent()
				c.EntityType, c.MatchType = t, kmsg.QuotasMatchTypeAny
				r.Components = append(r.Components, c)
			}
			return r
		}
	}
	alter := func(key string, value float64) func(v int16, _ *env) kmsg.Request {
		return func(v int16, _ *env) kmsg.Request {
			r := kmsg.NewPtrAlterClientQuotasRequest()
			r.Version, r.ValidateOnly = v, true
			e := kmsg.NewAlterClientQuotasRequestEntry()
			en := kmsg.NewAlterClientQuotasRequestEntryEntity()
			en.Type, en.Name = "user", kmsg.StringPtr("conformance-user")
			e.Entity = append(e.Entity, en)
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key, op.Value = key, value
			e.Ops = append(e.Ops, op)
			r.Entries = append(r.Entries, e)
			return r
		}
	}
	describeRefused := func(r kmsg.Response, _ *env) error {
		return want("request", r.(*kmsg.DescribeClientQuotasResponse).ErrorCode, kerr.InvalidRequest.Code)
	}
	alterRefused := func(r kmsg.Response, _ *env) error {
		resp := r.(*kmsg.AlterClientQuotasResponse)
		if len(resp.Entries) != 1 {
			return fmt.Errorf("%d entries, want 1", len(resp.Entries))
		}
		return want("entry", resp.Entries[0].ErrorCode, kerr.InvalidRequest.Code)
	}
	return []row{
		{48, lowest, "ip with user", "ClientQuotasImage.describe: an ip component beside user or client-id is INVALID_REQUEST", describe("ip", "user"), describeRefused},
		{48, highest, "a type twice", "ClientQuotasImage.describe: an entity type named twice in the filter is INVALID_REQUEST", describe("user", "user"), describeRefused},
		{49, lowest, "unknown key", "ClientQuotaControlManager.validateQuotaKeyValue: a key the entity type does not define is INVALID_REQUEST", alter("bogus_rate", 1), alterRefused},
		{49, highest, "fractional byte rate", "ClientQuotaControlManager.validateQuotaKeyValue: producer_byte_rate is a LONG, so 1.5 is INVALID_REQUEST", alter("producer_byte_rate", 1.5), alterRefused},
	}
}

func alterReplicaLogDirs(v int16, dir, topic string) kmsg.Request {
	r := kmsg.NewPtrAlterReplicaLogDirsRequest()
	r.Version = v
	d := kmsg.NewAlterReplicaLogDirsRequestDir()
	d.Dir = dir
	t := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	t.Topic, t.Partitions = topic, []int32{0}
	d.Topics = append(d.Topics, t)
	r.Dirs = append(r.Dirs, d)
	return r
}

func alterLogDirsCode(r kmsg.Response, code int16) error {
	resp := r.(*kmsg.AlterReplicaLogDirsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("answer %+v, want one partition", resp.Topics)
	}
	return want("partition", resp.Topics[0].Partitions[0].ErrorCode, code)
}
