package storage

import (
	"cmp"
	"slices"
)

// cleanTxns follows the transactions through one pass of the cleaner over
// a run of batches in offset order (the dirty segments while the key map
// is built, or one group of segments while it is rewritten), as Kafka's
// CleanedTransactionMetadata does. It is given the aborted transactions
// that may have records in the run (from the .txnindex files) and says of
// each data batch whether it belongs to one (its records go, and none of
// its keys enter the key map), and of each marker whether the clean may
// remove it: an ABORT once the pass met no record of its transaction
// before it, a COMMIT likewise. The pass runs below the last stable
// offset, so every transaction it meets has ended.
//
// It also gathers the .txnindex entries of the rewritten run: those of the
// ABORT markers kept whose transaction still had records in the run (the
// pass removes them, but a reader of an older copy of the log may still
// need the range); an aborted transaction whose records are gone needs no
// entry, as in Kafka.
type cleanTxns struct {
	pending   []AbortedTxn // not yet begun in the run, by first offset
	aborted   map[int64]*abortedRun
	committed map[int64]bool // producers whose current transaction had a batch in the run
	index     []AbortedTxn
}

// abortedRun is an aborted transaction the pass is inside of.
type abortedRun struct {
	txn  AbortedTxn
	seen bool // a batch of it was met in the run
}

func newCleanTxns(aborted []AbortedTxn) *cleanTxns {
	p := slices.Clone(aborted)
	slices.SortStableFunc(p, func(a, b AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return &cleanTxns{pending: p, aborted: map[int64]*abortedRun{}, committed: map[int64]bool{}}
}

// begin moves the aborted transactions begun at or before offset into
// the ones the pass is inside of.
func (t *cleanTxns) begin(offset int64) {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= offset {
		a := t.pending[0]
		t.aborted[a.ProducerID] = &abortedRun{txn: a}
		t.pending = t.pending[1:]
	}
}

// onData is told of every data batch in order; it reports whether b
// belongs to an aborted transaction.
func (t *cleanTxns) onData(b Batch) bool {
	t.begin(b.LastOffset())
	if !b.Transactional() {
		return false
	}
	pid := b.ProducerID()
	if a := t.aborted[pid]; a != nil {
		a.seen = true
		return true
	}
	t.committed[pid] = true
	return false
}

// onControl is told of every control batch in order; it reports whether
// the batch is a marker the clean may remove (after its delete horizon).
// Control batches that are not transaction markers always stay.
func (t *cleanTxns) onControl(b Batch) bool {
	t.begin(b.LastOffset())
	m, ok, _ := b.TxnMarker()
	if !ok {
		return false
	}
	pid := b.ProducerID()
	switch m.Type {
	case ControlAbort:
		a := t.aborted[pid]
		delete(t.aborted, pid)
		if a != nil && a.seen {
			t.index = append(t.index, a.txn)
			return false
		}
		return true
	case ControlCommit:
		seen := t.committed[pid]
		delete(t.committed, pid)
		return !seen
	}
	return false
}
