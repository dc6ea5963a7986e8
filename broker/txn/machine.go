package txn

import (
	"slices"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The state machine of one transactional id, as pure functions of its
// recorded state (nil when the image has none), the request and the time:
// each returns the next state to record (nil: nothing to write) and the
// Kafka error code to answer with. They follow Kafka's
// TransactionCoordinator (handleInitProducerId, handleAddPartitions,
// handleEndTransaction, abortTimedOutTransactions) and
// TransactionMetadata's prepare* transitions; the durable states are
// written only through metadata.CheckTxnTransition's rule.

// maxEpoch is the last usable producer epoch: Kafka bumps to a new
// producer id when the epoch reaches Short.MaxValue - 1, so that a bump
// always fits.
const maxEpoch int16 = 32766

// Limits are the coordinator's configured bounds.
type Limits struct {
	// MaxTimeoutMs is transaction.max.timeout.ms.
	MaxTimeoutMs int32
	// IDExpirationMs is transactional.id.expiration.ms.
	IDExpirationMs int64
}

// InitInput is an InitProducerId with a transactional id.
type InitInput struct {
	TimeoutMs int32
	// ProducerID and ProducerEpoch are -1, or (KIP-360, v3+) the
	// producer's current ones, which must match the recorded state.
	ProducerID    int64
	ProducerEpoch int16
	// Version is the request's version: PRODUCER_FENCED exists from v4,
	// older clients get INVALID_PRODUCER_EPOCH.
	Version int16
}

// InitResult is what InitProducerId answers (after Next is recorded).
type InitResult struct {
	Code          int16
	ProducerID    int64
	ProducerEpoch int16
	// Next is the state to record before answering; nil when the answer
	// is immediate.
	Next *metadata.Transaction
	// NeedsMarkers: Next is a PrepareAbort of the open transaction (the
	// previous producer is fenced); the markers follow, and the client,
	// answered CONCURRENT_TRANSACTIONS, retries.
	NeedsMarkers bool
}

// fresh is the state of a new id.
func fresh(id string, pid int64, timeoutMs int32, now int64) *metadata.Transaction {
	return &metadata.Transaction{TransactionalID: id, ProducerID: pid, PrevProducerID: -1, ProducerEpoch: 0,
		LastProducerEpoch: -1, TimeoutMs: timeoutMs, State: metadata.TxnEmpty, TxnStartMs: -1, LastUpdateMs: now, NextProducerID: -1}
}

func fencedCode(version int16) int16 {
	if version >= 4 {
		return kerr.ProducerFenced.Code
	}
	return kerr.InvalidProducerEpoch.Code
}

// Init decides an InitProducerId. allocPID hands out a new producer id
// when one is needed (a new id, or an exhausted epoch), or the code to
// answer when none can be had.
func Init(id string, cur *metadata.Transaction, in InitInput, lim Limits, now int64, coordEpoch int32, allocPID func() (int64, int16)) InitResult {
	fail := func(code int16) InitResult { return InitResult{Code: code, ProducerID: -1, ProducerEpoch: -1} }
	if in.TimeoutMs <= 0 || in.TimeoutMs > lim.MaxTimeoutMs {
		return fail(kerr.InvalidTransactionTimeout.Code)
	}
	if cur == nil {
		pid, code := allocPID()
		if code != 0 {
			return fail(code)
		}
		next := fresh(id, pid, in.TimeoutMs, now)
		next.CoordinatorEpoch = coordEpoch
		return InitResult{ProducerID: pid, ProducerEpoch: 0, Next: next}
	}
	if in.ProducerID >= 0 {
		switch {
		case in.ProducerID == cur.ProducerID && in.ProducerEpoch == cur.ProducerEpoch:
			// the expected bump below
		case in.ProducerID == cur.ProducerID && in.ProducerEpoch == cur.LastProducerEpoch && stable(cur.State):
			// A retry of the bump that already happened.
			return InitResult{ProducerID: cur.ProducerID, ProducerEpoch: cur.ProducerEpoch}
		case in.ProducerID == cur.PrevProducerID && stable(cur.State) && cur.ProducerEpoch == 0:
			// A retry of the bump that moved to a new producer id.
			return InitResult{ProducerID: cur.ProducerID, ProducerEpoch: cur.ProducerEpoch}
		default:
			return fail(fencedCode(in.Version))
		}
	}
	switch cur.State {
	case metadata.TxnPrepareCommit, metadata.TxnPrepareAbort, metadata.TxnPrepareEpochFence, metadata.TxnDead:
		return fail(kerr.ConcurrentTransactions.Code)
	case metadata.TxnOngoing:
		// Fence the producer that has it open and abort it with the
		// bumped epoch; the client retries and gets that epoch once the
		// abort is complete.
		next := cloneTxn(cur)
		if cur.ProducerEpoch < maxEpoch {
			next.ProducerEpoch, next.LastProducerEpoch = cur.ProducerEpoch+1, cur.ProducerEpoch
		}
		next.State, next.LastUpdateMs, next.CoordinatorEpoch = metadata.TxnPrepareAbort, now, coordEpoch
		return InitResult{Code: kerr.ConcurrentTransactions.Code, ProducerID: -1, ProducerEpoch: -1, Next: next, NeedsMarkers: true}
	}
	// Empty, CompleteCommit, CompleteAbort: bump the epoch (or move to a
	// new producer id), open nothing.
	next := bump(cur, now, coordEpoch)
	if next.ProducerID != cur.ProducerID {
		pid, code := allocPID()
		if code != 0 {
			return fail(code)
		}
		next.ProducerID = pid
	}
	next.State, next.TimeoutMs, next.TxnStartMs, next.Partitions = metadata.TxnEmpty, in.TimeoutMs, -1, nil
	return InitResult{ProducerID: next.ProducerID, ProducerEpoch: next.ProducerEpoch, Next: next}
}

// bump is cur with the next epoch, or, when the epoch is exhausted, a
// placeholder new producer id (-1, for the caller to fill) at epoch 0.
func bump(cur *metadata.Transaction, now int64, coordEpoch int32) *metadata.Transaction {
	next := cloneTxn(cur)
	if cur.ProducerEpoch >= maxEpoch {
		next.PrevProducerID, next.ProducerID = cur.ProducerID, -1
		next.ProducerEpoch, next.LastProducerEpoch = 0, -1
	} else {
		next.ProducerEpoch, next.LastProducerEpoch = cur.ProducerEpoch+1, cur.ProducerEpoch
	}
	next.LastUpdateMs, next.CoordinatorEpoch = now, coordEpoch
	return next
}

func cloneTxn(t *metadata.Transaction) *metadata.Transaction {
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	return &c
}

// stable: no transaction open or ending.
func stable(s metadata.TxnState) bool {
	return s == metadata.TxnEmpty || s == metadata.TxnCompleteCommit || s == metadata.TxnCompleteAbort
}

// checkProducer is the producer id and epoch check of every transactional
// request but InitProducerId.
func checkProducer(cur *metadata.Transaction, pid int64, epoch int16) int16 {
	switch {
	case cur == nil || cur.State == metadata.TxnDead || cur.ProducerID != pid:
		return kerr.InvalidProducerIDMapping.Code
	case cur.ProducerEpoch != epoch:
		return kerr.ProducerFenced.Code
	}
	return 0
}

// AddPartitions decides an AddPartitionsToTxn (or AddOffsetsToTxn, whose
// partition is the group's coordinator slot): the partitions join the
// transaction, opening it if none is open.
func AddPartitions(cur *metadata.Transaction, pid int64, epoch int16, parts []metadata.TopicPartition, now int64, coordEpoch int32) (*metadata.Transaction, int16) {
	if code := checkProducer(cur, pid, epoch); code != 0 {
		return nil, code
	}
	switch cur.State {
	case metadata.TxnPrepareCommit, metadata.TxnPrepareAbort, metadata.TxnPrepareEpochFence:
		return nil, kerr.ConcurrentTransactions.Code
	}
	merged := slices.Clone(cur.Partitions)
	if cur.State != metadata.TxnOngoing {
		merged = nil
	}
	added := false
	for _, p := range parts {
		if !slices.Contains(merged, p) {
			merged = append(merged, p)
			added = true
		}
	}
	if cur.State == metadata.TxnOngoing && !added {
		return nil, 0
	}
	slices.SortFunc(merged, func(a, b metadata.TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition) - int(b.Partition)
	})
	next := cloneTxn(cur)
	next.Partitions, next.LastUpdateMs, next.CoordinatorEpoch = merged, now, coordEpoch
	if cur.State != metadata.TxnOngoing {
		next.State, next.TxnStartMs = metadata.TxnOngoing, now
	}
	return next, 0
}

// Verify answers the broker-side check of KIP-890 (AddPartitionsToTxn v4+
// with VerifyOnly): a partition leader asks whether the producer's open
// transaction includes a partition before it appends the producer's
// first transactional batch there. The answer is per partition; a
// producer problem answers every partition with the same code.
func Verify(cur *metadata.Transaction, pid int64, epoch int16, parts []metadata.TopicPartition) []int16 {
	codes := make([]int16, len(parts))
	code := checkProducer(cur, pid, epoch)
	for i, p := range parts {
		switch {
		case code != 0:
			codes[i] = code
		case cur.State != metadata.TxnOngoing || !slices.Contains(cur.Partitions, p):
			codes[i] = kerr.InvalidTxnState.Code
		}
	}
	return codes
}

// End decides an EndTxn. The answer waits for Next to be recorded; the
// markers then follow (Next is PrepareCommit or PrepareAbort).
func End(cur *metadata.Transaction, pid int64, epoch int16, commit bool, now int64, coordEpoch int32) (*metadata.Transaction, int16) {
	if code := checkProducer(cur, pid, epoch); code != 0 {
		return nil, code
	}
	switch cur.State {
	case metadata.TxnOngoing:
		next := cloneTxn(cur)
		next.State, next.LastUpdateMs, next.CoordinatorEpoch = metadata.TxnPrepareAbort, now, coordEpoch
		if commit {
			next.State = metadata.TxnPrepareCommit
		}
		return next, 0
	case metadata.TxnCompleteCommit:
		// A retried commit is answered as done; an abort of a committed
		// transaction cannot be.
		if commit {
			return nil, 0
		}
	case metadata.TxnCompleteAbort:
		if !commit {
			return nil, 0
		}
	case metadata.TxnPrepareCommit:
		if commit {
			return nil, kerr.ConcurrentTransactions.Code
		}
	case metadata.TxnPrepareAbort:
		if !commit {
			return nil, kerr.ConcurrentTransactions.Code
		}
	}
	return nil, kerr.InvalidTxnState.Code
}

// Complete is the state recorded once every marker of a Prepare* state is
// written (nil for any other state).
func Complete(cur *metadata.Transaction, now int64, coordEpoch int32) *metadata.Transaction {
	if cur == nil {
		return nil
	}
	next := cloneTxn(cur)
	switch cur.State {
	case metadata.TxnPrepareCommit:
		next.State = metadata.TxnCompleteCommit
	case metadata.TxnPrepareAbort:
		next.State = metadata.TxnCompleteAbort
	default:
		return nil
	}
	next.Partitions, next.LastUpdateMs, next.CoordinatorEpoch = nil, now, max(coordEpoch, cur.CoordinatorEpoch)
	if cur.NextProducerID >= 0 {
		// Transaction version 2 used the last epoch: the producer goes on
		// with the id chosen at Prepare*.
		next.PrevProducerID, next.ProducerID = cur.ProducerID, cur.NextProducerID
		next.ProducerEpoch, next.LastProducerEpoch, next.NextProducerID = 0, -1, -1
	}
	return next
}

// EndResult is what an EndTxn of transaction version 2 answers: the
// producer id and epoch the client continues with.
type EndResult struct {
	Next          *metadata.Transaction
	Code          int16
	ProducerID    int64
	ProducerEpoch int16
}

// EndV2 decides an EndTxn of transaction version 2 (KIP-890, EndTxn v5+
// with transaction.version 2 finalized): as End, but the Prepare* state
// bumps the epoch (the markers carry it, so a late batch of the ended
// transaction, at the old epoch, cannot land in the next one), the answer
// is the bumped epoch, and an abort with nothing open is allowed (it bumps
// the epoch and writes no marker). A retry whose bump is already recorded
// (the epoch before it) is answered as done. Once the bump reaches the
// last usable epoch, allocPID gives the producer id the Complete* state
// moves to, and the answer is that id at epoch 0.
func EndV2(cur *metadata.Transaction, pid int64, epoch int16, commit bool, now int64, coordEpoch int32, allocPID func() (int64, int16)) EndResult {
	fail := func(code int16) EndResult { return EndResult{Code: code, ProducerID: -1, ProducerEpoch: -1} }
	if cur == nil || cur.State == metadata.TxnDead {
		return fail(kerr.InvalidProducerIDMapping.Code)
	}
	current := func() EndResult {
		if cur.NextProducerID >= 0 {
			return EndResult{ProducerID: cur.NextProducerID, ProducerEpoch: 0}
		}
		return EndResult{ProducerID: cur.ProducerID, ProducerEpoch: cur.ProducerEpoch}
	}
	retry := false
	switch {
	case pid == cur.ProducerID && epoch == cur.ProducerEpoch:
	case pid == cur.ProducerID && cur.LastProducerEpoch >= 0 && epoch == cur.LastProducerEpoch && epoch+1 == cur.ProducerEpoch:
		retry = true
	case pid == cur.PrevProducerID && cur.ProducerEpoch == 0 && stable(cur.State):
		// Retry of the EndTxn that moved the producer to a new id.
		retry = true
	case pid != cur.ProducerID:
		return fail(kerr.InvalidProducerIDMapping.Code)
	default:
		return fail(kerr.ProducerFenced.Code)
	}
	if retry {
		if (commit && (cur.State == metadata.TxnPrepareCommit || cur.State == metadata.TxnCompleteCommit)) ||
			(!commit && (cur.State == metadata.TxnPrepareAbort || cur.State == metadata.TxnCompleteAbort)) {
			return current()
		}
		return fail(kerr.InvalidTxnState.Code)
	}
	switch cur.State {
	case metadata.TxnOngoing:
	case metadata.TxnEmpty, metadata.TxnCompleteCommit, metadata.TxnCompleteAbort:
		if commit {
			return fail(kerr.InvalidTxnState.Code)
		}
	case metadata.TxnPrepareCommit, metadata.TxnPrepareAbort:
		return fail(kerr.ConcurrentTransactions.Code)
	default:
		return fail(kerr.InvalidTxnState.Code)
	}
	next := cloneTxn(cur)
	next.State = metadata.TxnPrepareAbort
	if commit {
		next.State = metadata.TxnPrepareCommit
	}
	if cur.State != metadata.TxnOngoing {
		next.Partitions, next.TxnStartMs = nil, -1
	}
	next.ProducerEpoch, next.LastProducerEpoch, next.NextProducerID = cur.ProducerEpoch+1, cur.ProducerEpoch, -1
	next.LastUpdateMs, next.CoordinatorEpoch, next.TxnVersion = now, coordEpoch, 2
	r := EndResult{Next: next, ProducerID: next.ProducerID, ProducerEpoch: next.ProducerEpoch}
	if next.ProducerEpoch >= maxEpoch {
		npid, code := allocPID()
		if code != 0 {
			return fail(code)
		}
		next.NextProducerID = npid
		r.ProducerID, r.ProducerEpoch = npid, 0
	}
	return r
}

// Expire is the coordinator's periodic decision for one id: an open
// transaction past its timeout is aborted with the epoch bumped, so the
// producer is fenced (Kafka's abortTimedOutTransactions); an idle id
// past transactional.id.expiration.ms is removed (Dead). Nil when
// nothing is due.
func Expire(cur *metadata.Transaction, lim Limits, now int64, coordEpoch int32) *metadata.Transaction {
	switch cur.State {
	case metadata.TxnOngoing:
		if now <= cur.TxnStartMs+int64(cur.TimeoutMs) {
			return nil
		}
		next := cloneTxn(cur)
		if cur.ProducerEpoch < maxEpoch {
			next.ProducerEpoch, next.LastProducerEpoch = cur.ProducerEpoch+1, cur.ProducerEpoch
		}
		next.State, next.LastUpdateMs, next.CoordinatorEpoch = metadata.TxnPrepareAbort, now, coordEpoch
		return next
	case metadata.TxnEmpty, metadata.TxnCompleteCommit, metadata.TxnCompleteAbort:
		if now-cur.LastUpdateMs <= lim.IDExpirationMs {
			return nil
		}
		next := cloneTxn(cur)
		next.State, next.LastUpdateMs, next.CoordinatorEpoch = metadata.TxnDead, now, coordEpoch
		return next
	}
	return nil
}
