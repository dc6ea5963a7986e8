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
// Version notes: v1 is v0; v2 answers PRODUCER_FENCED; v3 is flexible; v4
// may answer TRANSACTION_ABORTABLE; v5 (KIP-890 transaction version 2)
// returns the producer id and epoch, which here are the request's: the
// epoch is not bumped at EndTxn while transaction.version is not
// finalized, and clients use the classic protocol then.

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
	txns := txnsOf(rc)
	if txns == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.ErrorCode = fencedCode(errorCode(txns.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)), req.Version, 2)
	if resp.ErrorCode == 0 {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch
	}
	return resp, nil
}
