package broker

// TxnOffsetCommit (key 28): v0-v5, as Kafka 4.1.
//
// Behaviour (Kafka's GroupCoordinator.handleTxnCommitOffsets): sent to the
// group's coordinator. The offsets are held pending in the producer's open
// transaction (a TxnOffsetCommit record in the image) and become the
// group's committed offsets when the transaction's CompleteCommit is
// recorded, or are dropped when it aborts; until then OffsetFetch with
// RequireStable answers UNSTABLE_OFFSET_COMMIT for them. Errors:
// NOT_COORDINATOR (another broker coordinates the group), INVALID_GROUP_ID,
// UNKNOWN_TOPIC_OR_PARTITION per partition of an unknown topic, and for
// the whole request the member check of v3+ when a member or generation
// is given (KIP-447: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
// FENCED_INSTANCE_ID, as for OffsetCommit), for a KIP-848 consumer group
// the member epoch as Kafka's ConsumerGroup.validateOffsetCommit
// (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH; no
// OffsetCommit-v9 rule; a commit without a member only while the group is
// empty), PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v3) for another producer epoch, and
// INVALID_TXN_STATE when no transaction is open.
//
// The member check and the write are one step, as under Kafka's group
// lock: the write runs on the group's loop right after the check
// (group.CommitRequest.Write), so no rebalance comes between them.
//
// Authorization (KafkaApis.handleTxnOffsetCommitRequest): WRITE on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the
// group (GROUP_AUTHORIZATION_FAILED), both for every partition, then READ
// on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
//
// Version notes: v1 is v0; v2 adds LeaderEpoch; v3 is flexible and adds
// the member fields (KIP-447) and PRODUCER_FENCED; v4/v5 may answer
// TRANSACTION_ABORTABLE (transaction version 2, not answered).

import (
	"context"

	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 28, advertisedMin: 0, min: 0, max: 5, concurrent: true, handle: handleTxnOffsetCommit})
}

func handleTxnOffsetCommit(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	codes := make([][]int16, len(req.Topics))
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
	}
	all := func(code int16) {
		for i := range codes {
			for j := range codes[i] {
				if codes[i][j] == 0 {
					codes[i][j] = code
				}
			}
		}
	}
	txns, groups, md := txnsOf(rc), groupsOf(rc), rc.conn.srv.deps.Metadata
	switch {
	case !rc.authorize(opWrite, resTxnID, req.TransactionalID):
		// KafkaApis: WRITE on the transactional id, READ on the group, then
		// READ on each topic.
		all(kerr.TransactionalIDAuthorizationFailed.Code)
	case !rc.authorize(opRead, resGroup, req.Group):
		all(kerr.GroupAuthorizationFailed.Code)
	case txns == nil || groups == nil || md == nil:
		all(kerr.CoordinatorNotAvailable.Code)
	case req.Group == "":
		all(kerr.InvalidGroupID.Code)
	default:
		img, _ := md.Current()
		if err := groups.Ownership(img, req.Group); err != nil {
			all(errorCode(err))
			break
		}
		var offsets []metadata.OffsetCommit
		for i, t := range req.Topics {
			ti, ok := img.Topic(t.Topic)
			readable := rc.authorize(opRead, resTopic, t.Topic)
			for j, p := range t.Partitions {
				if !readable {
					codes[i][j] = kerr.TopicAuthorizationFailed.Code
					continue
				}
				if _, pok := ti.Partition(p.Partition); !ok || !pok {
					codes[i][j] = kerr.UnknownTopicOrPartition.Code
					continue
				}
				le := int32(-1)
				if req.Version >= 2 {
					le = p.LeaderEpoch
				}
				offsets = append(offsets, metadata.OffsetCommit{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: le, Metadata: derefOr(p.Metadata, "")})
			}
		}
		write := func(ctx context.Context) error {
			return txns.CommitOffsets(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, offsets)
		}
		_, consumer := img.ConsumerGroup(req.Group)
		switch {
		case consumer || req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil:
			// The member check and the write in one step on the group's
			// loop; a commit without offsets writes nothing. A consumer
			// group checks every commit (one without a member is refused
			// while the group has members), a classic group only one that
			// names a member or generation, as Kafka.
			cr := group.CommitRequest{Group: req.Group, MemberID: req.MemberID, InstanceID: derefOr(req.InstanceID, ""), Generation: req.Generation, Transactional: true}
			if len(offsets) > 0 {
				cr.Write = write
			}
			if err := groups.Commit(ctx, cr); err != nil {
				all(fencedCode(errorCode(err), req.Version, 3))
			}
		case len(offsets) > 0:
			all(fencedCode(errorCode(write(ctx)), req.Version, 3))
		}
	}
	for i, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
