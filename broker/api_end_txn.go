package broker

// EndTxn (key 26): v0-v5, as Kafka 4.1.
//
// Behaviour (Kafka's TransactionCoordinator.handleEndTransaction, classic
// protocol): an open transaction moves to PrepareCommit or PrepareAbort,
// answered once that is recorded; the coordinator then writes the markers
// to every partition and records CompleteCommit / CompleteAbort (a new
// AddPartitionsToTxn meanwhile is CONCURRENT_TRANSACTIONS). A retried
// commit (abort) of a completed commit (abort) succeeds again; the other
// order, or nothing open, is INVALID_TXN_STATE; NOT_COORDINATOR,
// INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
// before v2) as for AddPartitionsToTxn.
//
// Transaction version 2 (KIP-890; EndTxn v5+ while transaction.version 2
// is finalized, broker/txn EndV2): the Prepare* state bumps the producer
// epoch and the answer carries the producer id and epoch to continue
// with; an abort with nothing open bumps the epoch; a retry whose bump is
// recorded is answered as done.
//
// Version notes: v1 is v0; v2 answers PRODUCER_FENCED; v3 is flexible; v4
// may answer TRANSACTION_ABORTABLE; v5 is transaction version 2 (below v5
// the classic protocol, and ProducerID/ProducerEpoch are not in the
// answer).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 26, advertisedMin: 0, min: 0, max: 5, concurrent: true, handle: handleEndTxn})
}

func handleEndTxn(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !rc.authorize(opWrite, resTxnID, req.TransactionalID) {
		// KafkaApis.handleEndTxnRequest: WRITE on the transactional id.
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	txns := txnsOf(rc)
	if txns == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	if req.Version >= 5 && txnV2(rc) {
		pid, epoch, err := txns.EndTxnV2(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		resp.ErrorCode = errorCode(err)
		if err == nil {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
		return resp, nil
	}
	resp.ErrorCode = fencedCode(errorCode(txns.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)), req.Version, 2)
	return resp, nil
}
