package broker

// OffsetCommit (key 8): v2-v9, as Kafka 4.1 (KIP-896 removed v0 and v1).
//
// Behaviour:
//   - The group's coordinator checks the member and generation (a negative
//     generation to an Empty group is a standalone commit, as kafka's
//     assign-and-commit consumers and admin tools send), then, before the
//     group can change, commits the offsets through the controller into
//     the Raft image (the controller stamps the commit time); concurrent
//     commits from every group leave in one Raft entry. The answer comes
//     after the commit is applied here, so an OffsetFetch that follows
//     reads it.
//   - Per partition: UNKNOWN_TOPIC_OR_PARTITION for a topic or partition the
//     image does not have (UNKNOWN_TOPIC_ID at v10), OFFSET_METADATA_TOO_LARGE
//     for metadata over offset.metadata.max.bytes (4096); the metadata string
//     is stored and returned by OffsetFetch as sent (null as "").
//   - Group errors (NOT_COORDINATOR, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
//     REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID, ...) go on every partition.
//
// Version notes: v2-v4 RetentionTimeMillis (ignored since Kafka 2.1 too);
// v6 LeaderEpoch; v7 InstanceID; v8 flexible; v9 KIP-848 member epochs
// (classic groups only here). v10 (topics by id) is a Kafka 4.2 version:
// the handler knows it, but it is not advertised or accepted, because
// Kafka 4.1's OffsetCommitRequest.json stops at v9 and raftka answers as 4.1.

import (
	"context"

	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetMetadataMaxBytes is Kafka's offset.metadata.max.bytes default.
const offsetMetadataMaxBytes = 4096

func init() {
	// Not concurrent: two commits on one connection apply in order.
	register(apiEntry{key: 8, advertisedMin: 2, min: 2, max: 9, handle: handleOffsetCommit})
}

func handleOffsetCommit(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	// codes[i][j] answers req.Topics[i].Partitions[j]; pending marks those
	// that wait for the group's verdict.
	type slot struct{ i, j int }
	codes := make([][]int16, len(req.Topics))
	var pending []slot
	var offsets []metadata.OffsetCommit

	groups := groupsOf(rc)
	md := rc.conn.srv.deps.Metadata
	// As KafkaApis: READ on the group first (the whole request), then
	// READ on each topic (TOPIC_AUTHORIZATION_FAILED per partition), and
	// only then what the coordinator says.
	groupReadable := rc.authorize(opRead, resGroup, req.Group)
	groupErr := int16(0)
	switch {
	case !groupReadable:
		groupErr = kerr.GroupAuthorizationFailed.Code
	case groups == nil || md == nil:
		groupErr = kerr.CoordinatorNotAvailable.Code
	case req.Group == "":
		groupErr = kerr.InvalidGroupID.Code
	case isShareGroup(rc, req.Group):
		groupErr = kerr.GroupIDNotFound.Code // ShareGroup.validateOffsetCommit: "not a consumer group"
	}
	var img *metadata.Image
	if md != nil {
		img, _ = md.Current()
	}
	if groupErr == 0 {
		groupErr = errorCode(groups.Ownership(img, req.Group))
	}
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
		name, known, unknownCode := t.Topic, false, kerr.UnknownTopicOrPartition.Code
		var nparts int
		if img != nil {
			var ti metadata.TopicImage
			if req.Version >= 10 {
				ti, known = img.TopicByID(t.TopicID)
				unknownCode = kerr.UnknownTopicID.Code
				name = ti.Name
			} else {
				ti, known = img.Topic(name)
			}
			nparts = len(ti.Partitions)
		}
		// READ on the topic before its existence, except for an id that
		// names no topic: there is no name to authorize.
		readable := !groupReadable || (req.Version >= 10 && !known) || rc.authorize(opRead, resTopic, name)
		for j, p := range t.Partitions {
			switch {
			case !groupReadable:
				codes[i][j] = groupErr
			case !readable:
				codes[i][j] = kerr.TopicAuthorizationFailed.Code
			case groupErr != 0:
				codes[i][j] = groupErr
			case !known:
				codes[i][j] = unknownCode
			case p.Partition < 0 || int(p.Partition) >= nparts:
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case p.Metadata != nil && len(*p.Metadata) > offsetMetadataMaxBytes:
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
			default:
				epoch := p.LeaderEpoch
				if req.Version < 6 {
					epoch = -1
				}
				offsets = append(offsets, metadata.OffsetCommit{
					Topic: name, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: epoch,
					Metadata: derefOr(p.Metadata, ""),
				})
				pending = append(pending, slot{i, j})
			}
		}
	}
	if groupErr == 0 {
		err := groups.Commit(ctx, group.CommitRequest{
			Group: req.Group, MemberID: req.MemberID, InstanceID: derefOr(req.InstanceID, ""),
			Generation: req.Generation, Offsets: offsets, Version: req.Version,
		})
		code := errorCode(err)
		for _, s := range pending {
			codes[s.i][s.j] = code
		}
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
