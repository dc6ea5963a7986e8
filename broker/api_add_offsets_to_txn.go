package broker

// AddOffsetsToTxn (key 25): v0-v4, as Kafka 4.1.
//
// Behaviour (Kafka's TransactionCoordinator.handleAddPartitions with the
// group's __consumer_offsets partition): the group's coordinator slot joins
// the producer's transaction, so the offsets it then commits with
// TxnOffsetCommit are part of it. Errors as AddPartitionsToTxn's:
// NOT_COORDINATOR, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v2), CONCURRENT_TRANSACTIONS; an empty
// group id is INVALID_GROUP_ID.
//
// Version notes: v1 is v0; v2 answers PRODUCER_FENCED; v3 is flexible; v4
// may answer TRANSACTION_ABORTABLE (transaction version 2, not answered).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 25, advertisedMin: 0, min: 0, max: 4, concurrent: true, handle: handleAddOffsetsToTxn})
}

func handleAddOffsetsToTxn(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	txns := txnsOf(rc)
	switch {
	case !rc.authorize(opWrite, resTxnID, req.TransactionalID):
		// KafkaApis: WRITE on the transactional id, then READ on the group.
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case !rc.authorize(opRead, resGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	case txns == nil:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
	default:
		resp.ErrorCode = fencedCode(errorCode(txns.AddOffsets(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)), req.Version, 2)
	}
	return resp, nil
}
