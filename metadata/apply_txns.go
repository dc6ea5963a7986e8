package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Transaction state: what Kafka keeps in __transaction_state, one entry per
// transactional id, kept here in the image so that a coordinator taking a
// slot over finds every transaction where the last one left it. The
// transaction coordinator (broker/txn) decides every step; the controller
// and replay check only that a step is one Kafka's TransactionState allows
// (CheckTxnTransition), so a stale or confused writer cannot move a
// transaction backwards.

// TxnState is a transaction's state, with Kafka's ids (TransactionState.id,
// as __transaction_state stores them).
type TxnState int8

const (
	TxnEmpty             TxnState = 0
	TxnOngoing           TxnState = 1
	TxnPrepareCommit     TxnState = 2
	TxnPrepareAbort      TxnState = 3
	TxnCompleteCommit    TxnState = 4
	TxnCompleteAbort     TxnState = 5
	TxnDead              TxnState = 6
	TxnPrepareEpochFence TxnState = 7
)

// String is Kafka's state name, as DescribeTransactions and
// ListTransactions show it.
func (s TxnState) String() string {
	switch s {
	case TxnEmpty:
		return "Empty"
	case TxnOngoing:
		return "Ongoing"
	case TxnPrepareCommit:
		return "PrepareCommit"
	case TxnPrepareAbort:
		return "PrepareAbort"
	case TxnCompleteCommit:
		return "CompleteCommit"
	case TxnCompleteAbort:
		return "CompleteAbort"
	case TxnDead:
		return "Dead"
	case TxnPrepareEpochFence:
		return "PrepareEpochFence"
	}
	return fmt.Sprintf("TxnState(%d)", int8(s))
}

// TxnStateByName maps Kafka's state names (ListTransactions' StateFilters).
func TxnStateByName(name string) (TxnState, bool) {
	for s := TxnEmpty; s <= TxnPrepareEpochFence; s++ {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// validPrevious is Kafka's TransactionState.validPreviousStates.
func (s TxnState) validPrevious(prev TxnState) bool {
	switch s {
	case TxnEmpty:
		return prev == TxnEmpty || prev == TxnCompleteCommit || prev == TxnCompleteAbort
	case TxnOngoing:
		return prev == TxnOngoing || prev == TxnEmpty || prev == TxnCompleteCommit || prev == TxnCompleteAbort
	case TxnPrepareCommit:
		return prev == TxnOngoing
	case TxnPrepareAbort:
		// From Empty or Complete*: transaction version 2's abort with
		// nothing open, which bumps the epoch (KIP-890).
		return prev == TxnOngoing || prev == TxnPrepareEpochFence || prev == TxnEmpty || prev == TxnCompleteCommit || prev == TxnCompleteAbort
	case TxnCompleteCommit:
		return prev == TxnPrepareCommit
	case TxnCompleteAbort:
		return prev == TxnPrepareAbort
	case TxnDead:
		return prev == TxnEmpty || prev == TxnCompleteAbort || prev == TxnCompleteCommit
	case TxnPrepareEpochFence:
		return prev == TxnOngoing
	}
	return false
}

// Transaction is one transactional id's whole state (Kafka's
// TransactionLogValue): written by its coordinator at every step, so a
// record replaces the previous state whole. State Dead removes the id
// (transactional.id.expiration.ms).
type Transaction struct {
	TransactionalID string
	ProducerID      int64
	// PrevProducerID is the producer id before the last change of id
	// (epoch exhaustion), -1 when none: a retried InitProducerId from the
	// previous id is recognised with it.
	PrevProducerID int64
	ProducerEpoch  int16
	// LastProducerEpoch is the epoch before the last bump, -1 when none
	// (a retried InitProducerId with it gets the current one).
	LastProducerEpoch int16
	TimeoutMs         int32
	State             TxnState
	// Partitions are the partitions in the transaction, sorted; the
	// __consumer_offsets slot of a group whose offsets it commits is one.
	Partitions   []TopicPartition
	TxnStartMs   int64 // -1 when no transaction is open
	LastUpdateMs int64
	// CoordinatorEpoch is the leader epoch of the coordinator slot when
	// the coordinator wrote the state; it never goes down, so a
	// coordinator that lost the slot cannot overwrite its successor.
	CoordinatorEpoch int32
	// TxnVersion is the client's transaction version (KIP-890): 0 or 1
	// for the classic protocol, 2 for the epoch bump at every EndTxn.
	TxnVersion int8
	// NextProducerID is, in a Prepare* state of transaction version 2
	// whose bumped epoch is the last usable one, the producer id the
	// Complete* state moves to (at epoch 0); -1 otherwise.
	NextProducerID int64
}

// TxnOffsetCommit holds a group's offsets committed in a transaction
// (TxnOffsetCommit): pending in the transaction until it completes, then
// stored as the group's committed offsets (CompleteCommit) or dropped
// (CompleteAbort). The producer id and epoch must be the transaction's and
// the transaction open (Ongoing).
type TxnOffsetCommit struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Group           string
	Offsets         []OffsetCommit
}

// txnImage is one transactional id in the image.
type txnImage struct {
	txn Transaction
	// pending: group -> partition -> offset, until the transaction ends.
	pending map[string]map[TopicPartition]OffsetAndMetadata
}

func (t *txnImage) equal(o *txnImage) bool {
	return t.txn.equal(&o.txn) && maps.EqualFunc(t.pending, o.pending, func(a, b map[TopicPartition]OffsetAndMetadata) bool { return maps.Equal(a, b) })
}

func (t *Transaction) equal(o *Transaction) bool {
	return t.TransactionalID == o.TransactionalID && t.ProducerID == o.ProducerID && t.PrevProducerID == o.PrevProducerID &&
		t.ProducerEpoch == o.ProducerEpoch && t.LastProducerEpoch == o.LastProducerEpoch && t.TimeoutMs == o.TimeoutMs &&
		t.State == o.State && t.TxnStartMs == o.TxnStartMs && t.LastUpdateMs == o.LastUpdateMs &&
		t.CoordinatorEpoch == o.CoordinatorEpoch && t.TxnVersion == o.TxnVersion && t.NextProducerID == o.NextProducerID &&
		slices.Equal(t.Partitions, o.Partitions)
}

// CheckTxnTransition is the rule every write of a transaction's state obeys,
// checked by the controller before it records one and by replay again (a
// record that breaks it is skipped): a well-formed state, a coordinator
// epoch that does not go down, a producer epoch that does not go down for
// the same producer id (a new producer id must name the old one as
// PrevProducerID, or start Empty), and a state change Kafka's
// TransactionState allows. cur is the recorded state, nil for an id the
// image does not hold: such an id may take any state (a snapshot's records
// restore ids as they were; a coordinator only ever creates one Empty).
// Errors wrap ErrInvalidRecord, ErrTxnCoordinatorFenced, ErrProducerFenced
// or ErrInvalidTxnState.
func CheckTxnTransition(cur *Transaction, next *Transaction) error {
	switch {
	case next.TransactionalID == "":
		return invalid("transaction without a transactional id")
	case next.ProducerID < 0 || next.ProducerEpoch < 0:
		return invalid("transaction %q with producer %d epoch %d", next.TransactionalID, next.ProducerID, next.ProducerEpoch)
	case next.State < TxnEmpty || next.State > TxnPrepareEpochFence:
		return invalid("transaction %q in unknown state %d", next.TransactionalID, next.State)
	case next.TimeoutMs <= 0:
		return invalid("transaction %q with timeout %d ms", next.TransactionalID, next.TimeoutMs)
	}
	for i, tp := range next.Partitions {
		if tp.Topic == "" || tp.Partition < 0 {
			return invalid("transaction %q partition %q %d", next.TransactionalID, tp.Topic, tp.Partition)
		}
		if i > 0 && cmpTopicPartition(next.Partitions[i-1], tp) >= 0 {
			return invalid("transaction %q partitions not sorted and unique at %s-%d", next.TransactionalID, tp.Topic, tp.Partition)
		}
	}
	if cur == nil {
		return nil
	}
	if next.CoordinatorEpoch < cur.CoordinatorEpoch {
		return fmt.Errorf("%w: transaction %q written by coordinator epoch %d, recorded %d", ErrTxnCoordinatorFenced, next.TransactionalID, next.CoordinatorEpoch, cur.CoordinatorEpoch)
	}
	if next.ProducerID == cur.ProducerID {
		if next.ProducerEpoch < cur.ProducerEpoch {
			return fmt.Errorf("%w: transaction %q producer %d epoch %d, recorded %d", ErrProducerFenced, next.TransactionalID, next.ProducerID, next.ProducerEpoch, cur.ProducerEpoch)
		}
	} else if next.PrevProducerID != cur.ProducerID && next.State != TxnEmpty {
		return fmt.Errorf("%w: transaction %q producer %d, recorded %d", ErrProducerFenced, next.TransactionalID, next.ProducerID, cur.ProducerID)
	}
	if !next.State.validPrevious(cur.State) {
		return fmt.Errorf("%w: transaction %q from %v to %v", ErrInvalidTxnState, next.TransactionalID, cur.State, next.State)
	}
	return nil
}

// CheckTxnOffsetCommit is what pending offsets need: a group, offsets
// CheckOffsetCommit accepts, and an open transaction (Ongoing) of that
// producer id and epoch; t is the transaction's recorded state, nil when
// the image has none. The controller checks it before recording, replay
// again. Errors wrap ErrInvalidRecord, ErrProducerFenced or
// ErrInvalidTxnState.
func CheckTxnOffsetCommit(t *Transaction, r *TxnOffsetCommit) error {
	if r.Group == "" {
		return invalid("transactional offset commit without a group")
	}
	for _, o := range r.Offsets {
		if err := CheckOffsetCommit(o); err != nil {
			return err
		}
	}
	switch {
	case t == nil:
		return fmt.Errorf("%w: no transaction %q", ErrInvalidTxnState, r.TransactionalID)
	case t.ProducerID != r.ProducerID || t.ProducerEpoch != r.ProducerEpoch:
		return fmt.Errorf("%w: transaction %q is producer %d epoch %d, offsets from %d epoch %d", ErrProducerFenced, r.TransactionalID, t.ProducerID, t.ProducerEpoch, r.ProducerID, r.ProducerEpoch)
	case t.State != TxnOngoing:
		return fmt.Errorf("%w: transaction %q is %v", ErrInvalidTxnState, r.TransactionalID, t.State)
	}
	return nil
}

func cmpTopicPartition(a, b TopicPartition) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Transaction returns a transactional id's state. Partitions is shared with
// the image.
func (img *Image) Transaction(id string) (Transaction, bool) {
	t, ok := img.txns.get(id, hashString(id))
	if !ok {
		return Transaction{}, false
	}
	return t.txn, true
}

// Transactions returns every transactional id's state, sorted by id.
func (img *Image) Transactions() []Transaction {
	out := make([]Transaction, 0, img.txns.len())
	img.txns.each(func(_ string, t *txnImage) { out = append(out, t.txn) })
	slices.SortFunc(out, func(a, b Transaction) int { return strings.Compare(a.TransactionalID, b.TransactionalID) })
	return out
}

// TxnPendingOffsets returns the offsets a transaction holds for groups, by
// group (a fresh map; nil when none).
func (img *Image) TxnPendingOffsets(id string) map[string]map[TopicPartition]OffsetAndMetadata {
	t, ok := img.txns.get(id, hashString(id))
	if !ok || len(t.pending) == 0 {
		return nil
	}
	out := make(map[string]map[TopicPartition]OffsetAndMetadata, len(t.pending))
	for g, m := range t.pending {
		out[g] = maps.Clone(m)
	}
	return out
}

// HasPendingTxnOffset reports whether an open transaction holds an offset
// of the group for the partition (OffsetFetch with require_stable answers
// UNSTABLE_OFFSET_COMMIT then).
func (img *Image) HasPendingTxnOffset(group, topic string, partition int32) bool {
	found := false
	img.txns.each(func(_ string, t *txnImage) {
		if !found {
			_, found = t.pending[group][TopicPartition{topic, partition}]
		}
	})
	return found
}

// txnApplier replays Transaction and TxnOffsetCommit records. A commit
// moves the transaction's pending offsets into the groups through the
// group applier, in the same batch.
type txnApplier struct {
	img     *Image
	txns    *shardBuilder[string, *txnImage]
	groups  *groupApplier
	owned   map[string]bool
	touched map[string]bool
}

func newTxnApplier(img *Image, groups *groupApplier) txnApplier {
	return txnApplier{img: img, txns: newShardBuilder(&img.txns), groups: groups}
}

func (a *txnApplier) own(id string) *txnImage {
	h := hashString(id)
	t, ok := a.txns.get(id, h)
	if !a.owned[id] {
		c := &txnImage{}
		if ok {
			c.txn = t.txn
			if len(t.pending) > 0 {
				c.pending = make(map[string]map[TopicPartition]OffsetAndMetadata, len(t.pending))
				for g, m := range t.pending {
					c.pending[g] = maps.Clone(m)
				}
			}
		}
		t = c
		a.txns.set(id, h, t)
		mark(&a.owned, id)
	}
	return t
}

func (a *txnApplier) transaction(r *Transaction) error {
	var cur *Transaction
	if t, ok := a.txns.get(r.TransactionalID, hashString(r.TransactionalID)); ok {
		cur = &t.txn
	}
	if err := CheckTxnTransition(cur, r); err != nil {
		return err
	}
	mark(&a.touched, r.TransactionalID)
	if r.State == TxnDead {
		a.txns.del(r.TransactionalID, hashString(r.TransactionalID))
		delete(a.owned, r.TransactionalID)
		return nil
	}
	t := a.own(r.TransactionalID)
	pending := t.pending
	t.txn = *r
	t.txn.Partitions = slices.Clone(r.Partitions)
	switch r.State {
	case TxnCompleteCommit:
		for _, g := range slices.Sorted(maps.Keys(pending)) {
			co := &CommitOffsets{Group: g}
			for tp, o := range pending[g] {
				co.Offsets = append(co.Offsets, OffsetCommit{Topic: tp.Topic, Partition: tp.Partition, Offset: o.Offset,
					LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimeMs: r.LastUpdateMs})
			}
			slices.SortFunc(co.Offsets, func(x, y OffsetCommit) int {
				return cmpTopicPartition(TopicPartition{x.Topic, x.Partition}, TopicPartition{y.Topic, y.Partition})
			})
			// Checked when they became pending: this cannot fail.
			_ = a.groups.commitOffsets(co)
		}
		t.pending = nil
	case TxnCompleteAbort, TxnEmpty:
		t.pending = nil
	}
	return nil
}

func (a *txnApplier) offsetCommit(r *TxnOffsetCommit) error {
	var cur *Transaction
	if t, ok := a.txns.get(r.TransactionalID, hashString(r.TransactionalID)); ok {
		cur = &t.txn
	}
	if err := CheckTxnOffsetCommit(cur, r); err != nil {
		return err
	}
	if len(r.Offsets) == 0 {
		return nil
	}
	t := a.own(r.TransactionalID)
	if t.pending == nil {
		t.pending = make(map[string]map[TopicPartition]OffsetAndMetadata)
	}
	m := t.pending[r.Group]
	if m == nil {
		m = make(map[TopicPartition]OffsetAndMetadata, len(r.Offsets))
		t.pending[r.Group] = m
	}
	for _, o := range r.Offsets {
		m[TopicPartition{o.Topic, o.Partition}] = OffsetAndMetadata{Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimeMs: o.CommitTimeMs}
	}
	mark(&a.touched, r.TransactionalID)
	return nil
}

func (a *txnApplier) seal() { a.img.txns = a.txns.build() }

// diff fills d.TxnsChanged.
func (a *txnApplier) diff(old, next *Image, d *Delta) {
	for id := range a.touched {
		o, oldOK := old.txns.get(id, hashString(id))
		n, newOK := next.txns.get(id, hashString(id))
		if oldOK != newOK || (oldOK && !o.equal(n)) {
			d.TxnsChanged = append(d.TxnsChanged, id)
		}
	}
	slices.Sort(d.TxnsChanged)
}

// txnRecords is the image's transactions as records (snapshots). A
// transaction holding offsets is written Ongoing first, then its offsets,
// then its state, so replay takes each record under the rules it was
// first written under.
func (img *Image) txnRecords() []Record {
	var recs []Record
	ids := make([]string, 0, img.txns.len())
	img.txns.each(func(id string, _ *txnImage) { ids = append(ids, id) })
	slices.Sort(ids)
	for _, id := range ids {
		t, _ := img.txns.get(id, hashString(id))
		rec := t.txn
		rec.Partitions = slices.Clone(t.txn.Partitions)
		if len(t.pending) > 0 {
			open := rec
			open.State = TxnOngoing
			recs = append(recs, &open)
			for _, g := range slices.Sorted(maps.Keys(t.pending)) {
				oc := &TxnOffsetCommit{TransactionalID: id, ProducerID: rec.ProducerID, ProducerEpoch: rec.ProducerEpoch, Group: g}
				for tp, o := range t.pending[g] {
					oc.Offsets = append(oc.Offsets, OffsetCommit{Topic: tp.Topic, Partition: tp.Partition, Offset: o.Offset,
						LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimeMs: o.CommitTimeMs})
				}
				slices.SortFunc(oc.Offsets, func(x, y OffsetCommit) int {
					return cmpTopicPartition(TopicPartition{x.Topic, x.Partition}, TopicPartition{y.Topic, y.Partition})
				})
				recs = append(recs, oc)
			}
			if rec.State == TxnOngoing {
				continue
			}
		}
		r := rec
		recs = append(recs, &r)
	}
	return recs
}
