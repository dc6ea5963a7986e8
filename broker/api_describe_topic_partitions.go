package broker

// DescribeTopicPartitions (key 75): v0, the only version Kafka 4.1 serves
// (KIP-966). Kafka 4.x's admin client describes topics with it.
//
// Behaviour (Kafka's DescribeTopicPartitionsRequestHandler and
// KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse), answered
// from this broker's image for the listener the request came in on:
//   - No topics named: every topic at or after the cursor's name; unknown
//     names cannot occur. Topics named: those at or after the cursor's name,
//     each once; an unknown one is UNKNOWN_TOPIC_OR_PARTITION, an invalid
//     name INVALID_TOPIC_EXCEPTION, with no partitions.
//   - Topics are answered in name order, partitions in index order, the
//     cursor's topic from the cursor's partition, the others from 0, up to
//     max(min(ResponsePartitionLimit, max.request.partition.size.limit),
//     1) partitions (the key's Kafka default, 2000: raftka has no such
//     key). A topic cut short sets NextCursor to its first partition left
//     out; a topic reached with the budget spent sets NextCursor to its
//     partition 0 and is left out.
//   - A cursor naming a topic the request does not list, or a negative
//     cursor partition, is INVALID_REQUEST for every topic of the request,
//     as DescribeTopicPartitionsRequest.getErrorResponse answers.
//   - Per partition: the leader when its broker is registered with this
//     listener, else -1; replicas and ISR as recorded; offline replicas are
//     those on brokers gone, fenced or without this listener; eligible
//     leader replicas and the last known ELR as recorded (KIP-966; empty
//     lists, never null, with eligible.leader.replicas.version 0).
//   - Authorization (DescribeTopicPartitionsRequestHandler): a topic needs
//     DESCRIBE. With no topics named, the ones without it are left out;
//     a named one without it is TOPIC_AUTHORIZATION_FAILED, with no
//     partitions, after the answered topics and outside the partition
//     budget, whether it exists or not (its existence is not disclosed).
//   - TopicAuthorizedOperations always: the topic operations the
//     principal may perform (every one with no authorizer).

import (
	"context"
	"slices"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           75,
		advertisedMin: 0, min: 0, max: 0,
		concurrent: true, // reads one image, no side effects
		handle:     handleDescribeTopicPartitions,
	})
}

// maxRequestPartitionSizeLimit is Kafka's max.request.partition.size.limit
// default; raftka does not offer the key.
const maxRequestPartitionSizeLimit = 2000

func handleDescribeTopicPartitions(_ context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeTopicPartitionsRequest)
	img := metadata.NewImage()
	if rc.conn.srv.deps.Metadata != nil {
		img, _ = rc.conn.srv.deps.Metadata.Current()
	}
	access := topicAccess{
		describe: func(name string) bool { return rc.authorize(opDescribe, resTopic, name) },
		ops:      func(name string) int32 { return rc.authorizedOps(resTopic, name) },
	}
	return describeTopicPartitions(img, rc.conn.listener, req, access), nil
}

// topicAccess is what the principal may do with a topic; the zero value
// allows everything (no authorizer).
type topicAccess struct {
	describe func(name string) bool
	ops      func(name string) int32
}

func (a topicAccess) canDescribe(name string) bool { return a.describe == nil || a.describe(name) }

func (a topicAccess) opsOf(name string) int32 {
	if a.ops == nil {
		return topicOps
	}
	return a.ops(name)
}

func describeTopicPartitions(img *metadata.Image, listener string, req *kmsg.DescribeTopicPartitionsRequest, access topicAccess) *kmsg.DescribeTopicPartitionsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	all := len(req.Topics) == 0
	from := ""
	if req.Cursor != nil {
		from = req.Cursor.Topic
	}
	var names []string
	if all {
		for _, n := range img.TopicNames() {
			if n >= from {
				names = append(names, n)
			}
		}
	} else {
		for _, t := range req.Topics {
			if t.Topic >= from && !slices.Contains(names, t.Topic) {
				names = append(names, t.Topic)
			}
		}
		if req.Cursor != nil && !slices.Contains(names, req.Cursor.Topic) {
			return describeTopicPartitionsError(req, kerr.InvalidRequest.Code)
		}
	}
	if req.Cursor != nil && req.Cursor.Partition < 0 {
		return describeTopicPartitionsError(req, kerr.InvalidRequest.Code)
	}
	slices.Sort(names)
	var refused []kmsg.DescribeTopicPartitionsResponseTopic
	names = slices.DeleteFunc(names, func(name string) bool {
		if access.canDescribe(name) {
			return false
		}
		if !all {
			rt := describeTopicPartitionsUnknown(name)
			rt.ErrorCode, rt.IsInternal = kerr.TopicAuthorizationFailed.Code, false
			rt.AuthorizedOperations = access.opsOf(name)
			refused = append(refused, rt)
		}
		return true
	})

	remaining := max(min(int(req.ResponsePartitionLimit), maxRequestPartitionSizeLimit), 1)
	for _, name := range names {
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		t, ok := img.Topic(name)
		if !ok {
			if !all {
				resp.Topics = append(resp.Topics, describeTopicPartitionsUnknown(name))
			}
			continue
		}
		start := 0
		if req.Cursor != nil && name == req.Cursor.Topic {
			start = int(req.Cursor.Partition)
		}
		end := min(len(t.Partitions), start+remaining)
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic, rt.TopicID, rt.IsInternal = kmsg.StringPtr(t.Name), t.ID, internalTopics[t.Name]
		rt.AuthorizedOperations = access.opsOf(t.Name)
		rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		for i := start; i < end; i++ {
			rt.Partitions = append(rt.Partitions, describedPartition(img, listener, t.Partitions[i]))
		}
		resp.Topics = append(resp.Topics, rt)
		if end < len(t.Partitions) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: int32(end)}
			break
		}
		remaining -= len(rt.Partitions)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp
}

// describedPartition is one partition as KRaftMetadataCache describes it.
func describedPartition(img *metadata.Image, listener string, p metadata.PartitionRegistration) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	dp.Partition, dp.LeaderEpoch = p.Partition, p.LeaderEpoch
	dp.LeaderID = -1
	if b, ok := img.Broker(p.Leader); ok {
		if _, has := b.Endpoint(listener); has {
			dp.LeaderID = p.Leader
		}
	}
	// Slices from the image are shared; kmsg only reads them.
	dp.Replicas, dp.ISR = p.Replicas, p.ISR
	if dp.Replicas == nil {
		dp.Replicas = []int32{}
	}
	if dp.ISR == nil {
		dp.ISR = []int32{}
	}
	dp.EligibleLeaderReplicas, dp.LastKnownELR = p.ELR, p.LastKnownELR
	if dp.EligibleLeaderReplicas == nil {
		dp.EligibleLeaderReplicas = []int32{}
	}
	if dp.LastKnownELR == nil {
		dp.LastKnownELR = []int32{}
	}
	dp.OfflineReplicas = []int32{}
	for _, r := range p.Replicas {
		b, ok := img.Broker(r)
		if !ok || b.Fenced {
			dp.OfflineReplicas = append(dp.OfflineReplicas, r)
			continue
		}
		if _, has := b.Endpoint(listener); !has {
			dp.OfflineReplicas = append(dp.OfflineReplicas, r)
		}
	}
	return dp
}

func describeTopicPartitionsUnknown(name string) kmsg.DescribeTopicPartitionsResponseTopic {
	rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	rt.Topic, rt.IsInternal = kmsg.StringPtr(name), internalTopics[name]
	rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
	if metadata.ValidateTopicName(name) != nil {
		rt.ErrorCode = kerr.InvalidTopicException.Code
	}
	rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
	return rt
}

// describeTopicPartitionsError answers every topic of the request with
// code, as DescribeTopicPartitionsRequest.getErrorResponse: repeated names
// repeated, not internal, no partitions, no cursor.
func describeTopicPartitionsError(req *kmsg.DescribeTopicPartitionsRequest, code int16) *kmsg.DescribeTopicPartitionsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = kmsg.StringPtr(t.Topic), code
		rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
