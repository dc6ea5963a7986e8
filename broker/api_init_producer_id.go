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
//   - TransactionalID set: raftka has no transaction coordinator, so the
//     answer is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which the Java
//     client, librdkafka and kgo all treat as fatal for the transactional
//     producer: it fails at once with a clear error instead of retrying a
//     coordinator that will never come (COORDINATOR_NOT_AVAILABLE would
//     make them retry until their timeouts). An empty TransactionalID is
//     INVALID_REQUEST, as in Kafka. Nothing advertises transactions:
//     ApiVersions lists no transactional API and no transaction.version
//     feature.
//
// Version notes: v1 is v0; v2 is flexible; v3 adds ProducerID and
// ProducerEpoch (KIP-360); v4 adds PRODUCER_FENCED for transactional ids,
// v5 TRANSACTION_ABORTABLE; neither can occur here.

import (
	"context"

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
	case req.TransactionalID != nil:
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case !rc.authorizeCluster(opIdempotentWrite) && !rc.authorizeByResourceType(opWrite, resTopic):
		// An idempotent producer needs IDEMPOTENT_WRITE on the cluster or
		// WRITE on some topic (KafkaApis, KIP-679).
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	case (req.ProducerID == -1) != (req.ProducerEpoch == -1):
		resp.ErrorCode = kerr.InvalidRequest.Code
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
