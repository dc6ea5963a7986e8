package raftfsm

import (
	"context"
	"fmt"
	"time"

	"github.com/raftka/raftka/broker/kafkacode"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transaction state the transaction coordinators (broker/txn) keep in the
// image. Kafka writes it to __transaction_state and has no KRaft message
// for it; a coordinator sends each write as an Envelope (the KRaft message
// brokers already wrap requests to the controller in) whose RequestData is
// one metadata record batch holding one Transaction or TxnOffsetCommit
// record (see doc.go, "Transaction state on the wire"). The controller
// checks the record with the rule replay applies
// (metadata.CheckTxnTransition, metadata.CheckTxnOffsetCommit) and records
// it; the coordinator owns every decision about the transaction. Writes
// queue on the controller loop like offset commits, so hundreds of
// concurrent transactions leave in one Raft entry.

// decideTxnWrite records a coordinator's transaction write: one
// Transaction or TxnOffsetCommit record, or a sequence of Transaction
// records of one id, each checked against the state the one before it
// leaves (a coordinator records a transaction's Complete* state and the
// next transaction's first step in one entry; see broker/txn's
// AddPartitions). All are recorded or none.
func decideTxnWrite(req *kmsg.EnvelopeRequest) decideFunc {
	recs, derr := metadata.DecodeRecords(req.RequestData)
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.EnvelopeResponse)
		if derr != nil || len(recs) == 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return decision{resp: resp}
		}
		if len(recs) > 1 {
			var cur *metadata.Transaction
			for i, rec := range recs {
				r, ok := rec.(*metadata.Transaction)
				if !ok || (i > 0 && r.TransactionalID != cur.TransactionalID) {
					resp.ErrorCode = kerr.InvalidRequest.Code
					return decision{resp: resp}
				}
				if i == 0 {
					if t, ok := img.Transaction(r.TransactionalID); ok {
						cur = &t
					}
				}
				if err := metadata.CheckTxnTransition(cur, r); err != nil {
					resp.ErrorCode = txnErrCode(err)
					return decision{resp: resp}
				}
				cur = r
			}
			return decision{recs: recs, resp: resp}
		}
		var err error
		switch r := recs[0].(type) {
		case *metadata.Transaction:
			var cur *metadata.Transaction
			if t, ok := img.Transaction(r.TransactionalID); ok {
				cur = &t
			}
			err = metadata.CheckTxnTransition(cur, r)
		case *metadata.TxnOffsetCommit:
			var cur *metadata.Transaction
			if t, ok := img.Transaction(r.TransactionalID); ok {
				cur = &t
			}
			err = metadata.CheckTxnOffsetCommit(cur, r)
		case *metadata.ConsumerGroup:
			var cur *metadata.ConsumerGroup
			if g, ok := img.ConsumerGroup(r.Group); ok {
				cur = &g
			}
			r.StateTimestampMs = now.UnixMilli()
			err = metadata.CheckConsumerGroupWriter(img, r)
			if err == nil {
				err = metadata.CheckConsumerGroup(cur, r)
			}
		case *metadata.ConsumerGroupDelta:
			var cur *metadata.ConsumerGroup
			if g, ok := img.ConsumerGroup(r.Group); ok {
				cur = &g
			}
			r.StateTimestampMs = now.UnixMilli()
			var next *metadata.ConsumerGroup
			if next, err = r.Merge(cur); err == nil {
				err = metadata.CheckConsumerGroupWriter(img, next)
			}
			if err == nil {
				err = metadata.CheckConsumerGroup(cur, next)
			}
		case *metadata.RemoveConsumerGroup:
			// Only an empty group turns classic: a coordinator that lost the
			// slot cannot erase the members its successor recorded.
			if g, ok := img.ConsumerGroup(r.Group); r.Group == "" || (ok && len(g.Members) > 0) {
				err = fmt.Errorf("%w: consumer group %q has members", metadata.ErrInvalidRequest, r.Group)
			}
		default:
			resp.ErrorCode = kerr.InvalidRequest.Code
			return decision{resp: resp}
		}
		if err != nil {
			resp.ErrorCode = txnErrCode(err)
			return decision{resp: resp}
		}
		return decision{recs: recs, resp: resp}
	}
}

// txnErrCode is the Kafka code of a transaction write the rules refuse
// (broker/kafkacode's table: INVALID_TXN_STATE, PRODUCER_FENCED,
// NOT_COORDINATOR, INVALID_REQUEST for a malformed record).
func txnErrCode(err error) int16 { return kafkacode.OfDecision(err) }

// WriteTxn records one transaction write (a *metadata.Transaction or
// *metadata.TxnOffsetCommit, or several *metadata.Transaction of one id
// in one Raft entry) and returns once this node's image has it. A
// write the rules refuse fails with its Kafka error: INVALID_TXN_STATE,
// PRODUCER_FENCED, or NOT_COORDINATOR for a coordinator whose slot epoch
// is older than the last writer's.
func (c *ControllerClient) WriteTxn(ctx context.Context, recs ...metadata.Record) (uint64, error) {
	return c.writeTxn(ctx, recs, true)
}

// WriteTxnNoWait is WriteTxn returning as soon as the controller has
// committed the write, without waiting for this node's image to apply it.
// A follower learns a commit with the leader's next AppendEntries, up to a
// heartbeat later when the log is idle; a transaction coordinator that
// knows what it wrote (broker/txn) need not wait for that, and three such
// writes per transaction otherwise cost three heartbeats.
func (c *ControllerClient) WriteTxnNoWait(ctx context.Context, recs ...metadata.Record) (uint64, error) {
	return c.writeTxn(ctx, recs, false)
}

// WriteConsumerGroup records a KIP-848 group's state (a
// *metadata.ConsumerGroup, the controller stamps StateTimestampMs), a
// change of it (*metadata.ConsumerGroupDelta: the changed members only,
// checked as the whole group it makes) or its removal
// (*metadata.RemoveConsumerGroup) and returns once this node's
// image has it. A coordinator whose slot epoch is older than the last
// writer's gets NOT_COORDINATOR; a state the rules refuse (two owners of a
// partition) INVALID_REQUEST. Writes share Raft entries as commits do.
func (c *ControllerClient) WriteConsumerGroup(ctx context.Context, rec metadata.Record) (uint64, error) {
	return c.writeTxn(ctx, []metadata.Record{rec}, true)
}

func (c *ControllerClient) writeTxn(ctx context.Context, recs []metadata.Record, wait bool) (uint64, error) {
	if len(recs) == 0 {
		return 0, fmt.Errorf("raftfsm: WriteTxn of nothing")
	}
	for _, rec := range recs {
		switch rec.(type) {
		case *metadata.Transaction:
		case *metadata.TxnOffsetCommit, *metadata.ConsumerGroup, *metadata.ConsumerGroupDelta, *metadata.RemoveConsumerGroup:
			if len(recs) > 1 {
				return 0, fmt.Errorf("raftfsm: WriteTxn of a %T with other records", rec)
			}
		default:
			return 0, fmt.Errorf("raftfsm: WriteTxn of a %T", rec)
		}
	}
	rec := recs[len(recs)-1]
	data, err := metadata.EncodeRecords(recs)
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrEnvelopeRequest()
	req.RequestData = data
	resp, index, err := c.request(ctx, req, wait)
	if err != nil {
		return 0, err
	}
	if code := resp.(*kmsg.EnvelopeResponse).ErrorCode; code != 0 {
		return index, fmt.Errorf("raftfsm: %v: %w", rec.Type(), kerr.ErrorForCode(code))
	}
	return index, nil
}
