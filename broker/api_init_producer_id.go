package broker

// InitProducerId (key 22): v0-v5, as Kafka 4.2, for idempotent producers.
// Advertising it is what makes franz-go, librdkafka and the Java client
// produce idempotently (kgo silently drops idempotence without it); the
// per-partition sequence and epoch checks belong to Produce.
//
// Behaviour (Kafka's KafkaApis.handleInitProducerIdRequest and
// TransactionCoordinator.handleInitProducerId):
//   - TransactionalID null: a fresh producer id with epoch 0, from this
//     broker's block of ids (producer_ids.go), whatever ProducerID and
//     ProducerEpoch say. Kafka does exactly this for a producer without a
//     transactional id: it keeps no state for such ids, so there is nothing
//     to bump an epoch on; a KIP-360 client recovering from
//     UNKNOWN_PRODUCER_ID or an exhausted epoch simply continues with the
//     new id. (The Java client bumps an idempotent producer's epoch
//     locally, without asking the broker.)
//   - ProducerID and ProducerEpoch (v3+) must both be -1 or both be set:
//     otherwise INVALID_REQUEST.
//   - No block available within producerIDWait (controller unreachable,
//     broker not registered yet): COORDINATOR_LOAD_IN_PROGRESS, which every
//     client retries, as Kafka answers while its next block is on the way.
//   - TransactionalID set: the transaction coordinator of the id's slot
//     (broker/txn, Init): NOT_COORDINATOR elsewhere; the epoch bumped (or a
//     new producer id once it is exhausted), a previous producer fenced;
//     an open transaction is aborted first with the bumped epoch (the call
//     waits for the abort's markers, up to 2 s, and answers the epoch after
//     it; CONCURRENT_TRANSACTIONS, which clients retry, when that is not
//     enough, as Kafka answers at once);
//     INVALID_TRANSACTION_TIMEOUT for a timeout outside
//     (0, transaction.max.timeout.ms]; with ProducerID/ProducerEpoch
//     (KIP-360) that do not match the recorded ones PRODUCER_FENCED (v4+)
//     or INVALID_PRODUCER_EPOCH. An empty TransactionalID is
//     INVALID_REQUEST, as in Kafka.
//
// Version notes: v1 is v0; v2 is flexible; v3 adds ProducerID and
// ProducerEpoch (KIP-360); v4 adds PRODUCER_FENCED for transactional ids,
// v5 TRANSACTION_ABORTABLE (not answered: it belongs to transaction
// version 2, which raftka does not finalize).

import (
	"context"

	"github.com/raftka/raftka/broker/txn"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           22,
		advertisedMin: 0, min: 0, max: 5,
		// The client waits for its id before producing with it, so nothing
		// later on the connection depends on this request's side effects.
		concurrent: true,
		handle:     handleInitProducerID,
	})
}

func handleInitProducerID(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1

	switch {
	case req.TransactionalID != nil && *req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	case req.TransactionalID != nil && !rc.authorize(opWrite, resTxnID, *req.TransactionalID):
		// A transactional producer needs WRITE on its transactional id
		// (KafkaApis.handleInitProducerIdRequest).
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case req.TransactionalID == nil && !rc.authorizeCluster(opIdempotentWrite) && !rc.authorizeByResourceType(opWrite, resTopic):
		// An idempotent producer needs IDEMPOTENT_WRITE on the cluster or
		// WRITE on some topic (KafkaApis, KIP-679).
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	case (req.ProducerID == -1) != (req.ProducerEpoch == -1):
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	case req.TransactionalID != nil:
		txns := txnsOf(rc)
		if txns == nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
		pid, epoch, err := txns.InitProducerID(ctx, *req.TransactionalID, txn.InitInput{
			TimeoutMs: req.TransactionTimeoutMillis, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch, Version: req.Version,
		})
		if err != nil {
			resp.ErrorCode = errorCode(err)
			return resp, nil
		}
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
		return resp, nil
	}

	id, err := rc.conn.srv.nextProducerID(ctx)
	if err != nil {
		rc.conn.srv.log.Debug().Err(err).Msg("InitProducerId: no producer id yet")
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
