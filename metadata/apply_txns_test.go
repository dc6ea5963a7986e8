package metadata

import (
	"errors"
	"testing"
)

func txn(state TxnState, pid int64, epoch int16) *Transaction {
	return &Transaction{TransactionalID: "t", ProducerID: pid, PrevProducerID: -1, ProducerEpoch: epoch, LastProducerEpoch: -1,
		TimeoutMs: 60000, State: state, TxnStartMs: -1}
}

func TestCheckTxnTransition(t *testing.T) {
	all := []TxnState{TxnEmpty, TxnOngoing, TxnPrepareCommit, TxnPrepareAbort, TxnCompleteCommit, TxnCompleteAbort, TxnDead, TxnPrepareEpochFence}
	// Kafka's TransactionState.validPreviousStates, written out.
	allowed := map[TxnState][]TxnState{
		TxnEmpty:             {TxnEmpty, TxnCompleteCommit, TxnCompleteAbort},
		TxnOngoing:           {TxnOngoing, TxnEmpty, TxnCompleteCommit, TxnCompleteAbort},
		TxnPrepareCommit:     {TxnOngoing},
		TxnPrepareAbort:      {TxnOngoing, TxnPrepareEpochFence, TxnEmpty, TxnCompleteCommit, TxnCompleteAbort},
		TxnCompleteCommit:    {TxnPrepareCommit},
		TxnCompleteAbort:     {TxnPrepareAbort},
		TxnDead:              {TxnEmpty, TxnCompleteAbort, TxnCompleteCommit},
		TxnPrepareEpochFence: {TxnOngoing},
	}
	for _, to := range all {
		ok := map[TxnState]bool{}
		for _, from := range allowed[to] {
			ok[from] = true
		}
		for _, from := range all {
			err := CheckTxnTransition(txn(from, 5, 1), txn(to, 5, 1))
			if ok[from] != (err == nil) {
				t.Errorf("%v -> %v: %v", from, to, err)
			}
			if err != nil && !errors.Is(err, ErrInvalidTxnState) {
				t.Errorf("%v -> %v: %v is not ErrInvalidTxnState", from, to, err)
			}
		}
		// An unknown id takes any state.
		if err := CheckTxnTransition(nil, txn(to, 5, 1)); err != nil {
			t.Errorf("nil -> %v: %v", to, err)
		}
	}

	cases := []struct {
		name      string
		cur, next *Transaction
		want      error
	}{
		{"epoch bump", txn(TxnEmpty, 5, 1), txn(TxnEmpty, 5, 2), nil},
		{"older epoch", txn(TxnOngoing, 5, 3), txn(TxnOngoing, 5, 2), ErrProducerFenced},
		{"new producer id naming the old", txn(TxnCompleteCommit, 5, 32766), func() *Transaction { x := txn(TxnOngoing, 6, 0); x.PrevProducerID = 5; return x }(), nil},
		{"new producer id, fresh", txn(TxnCompleteAbort, 5, 3), txn(TxnEmpty, 9, 0), nil},
		{"foreign producer id", txn(TxnOngoing, 5, 3), txn(TxnPrepareCommit, 9, 0), ErrProducerFenced},
		{"stale coordinator", func() *Transaction { x := txn(TxnOngoing, 5, 1); x.CoordinatorEpoch = 4; return x }(), func() *Transaction { x := txn(TxnPrepareCommit, 5, 1); x.CoordinatorEpoch = 3; return x }(), ErrTxnCoordinatorFenced},
		{"no id", nil, &Transaction{ProducerID: 1, TimeoutMs: 1}, ErrInvalidRecord},
		{"negative producer", nil, txn(TxnEmpty, -1, 0), ErrInvalidRecord},
		{"zero timeout", nil, func() *Transaction { x := txn(TxnEmpty, 1, 0); x.TimeoutMs = 0; return x }(), ErrInvalidRecord},
		{"unknown state", nil, txn(TxnState(8), 1, 0), ErrInvalidRecord},
		{"unsorted partitions", nil, func() *Transaction {
			x := txn(TxnOngoing, 1, 0)
			x.Partitions = []TopicPartition{{"b", 0}, {"a", 0}}
			return x
		}(), ErrInvalidRecord},
		{"duplicate partitions", nil, func() *Transaction {
			x := txn(TxnOngoing, 1, 0)
			x.Partitions = []TopicPartition{{"a", 0}, {"a", 0}}
			return x
		}(), ErrInvalidRecord},
		{"negative partition", nil, func() *Transaction { x := txn(TxnOngoing, 1, 0); x.Partitions = []TopicPartition{{"a", -1}}; return x }(), ErrInvalidRecord},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckTxnTransition(c.cur, c.next)
			if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

// A transaction's offsets stay pending until it commits, then become the
// group's committed offsets with the commit's time; an abort drops them.
func TestApplyTxnOffsets(t *testing.T) {
	open := txn(TxnOngoing, 5, 1)
	open.Partitions = []TopicPartition{{"__consumer_offsets", 3}, {"out", 0}}
	oc := &TxnOffsetCommit{TransactionalID: "t", ProducerID: 5, ProducerEpoch: 1, Group: "g",
		Offsets: []OffsetCommit{{Topic: "in", Partition: 0, Offset: 10, LeaderEpoch: 2, Metadata: "m"}}}
	img, d := NewImage().Apply([]Record{txn(TxnEmpty, 5, 1), open, oc})
	if len(d.Skipped) != 0 {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	if _, ok := img.Offset("g", "in", 0); ok {
		t.Fatal("a pending offset is visible")
	}
	if !img.HasPendingTxnOffset("g", "in", 0) || img.HasPendingTxnOffset("g", "in", 1) {
		t.Fatal("HasPendingTxnOffset wrong")
	}
	if len(d.TxnsChanged) != 1 || d.TxnsChanged[0] != "t" {
		t.Fatalf("TxnsChanged %v", d.TxnsChanged)
	}
	rebuilt, rd := NewImage().Apply(img.Records())
	if len(rd.Skipped) != 0 || !rebuilt.Equal(img) {
		t.Fatalf("records do not rebuild the image: %+v", rd.Skipped)
	}

	// Wrong epoch, closed transaction: refused, nothing stored.
	stale := *oc
	stale.ProducerEpoch = 0
	if _, d := img.Apply([]Record{&stale}); len(d.Skipped) != 1 || !errors.Is(d.Skipped[0].Err, ErrProducerFenced) {
		t.Fatalf("stale epoch: %+v", d.Skipped)
	}

	prep := *open
	prep.State = TxnPrepareCommit
	img2, _ := img.Apply([]Record{&prep})
	// A snapshot taken in PrepareCommit rebuilds with its offsets.
	rebuilt, rd = NewImage().Apply(img2.Records())
	if len(rd.Skipped) != 0 || !rebuilt.Equal(img2) {
		t.Fatalf("records do not rebuild the prepared image: %+v", rd.Skipped)
	}
	if _, d := img2.Apply([]Record{oc}); len(d.Skipped) != 1 || !errors.Is(d.Skipped[0].Err, ErrInvalidTxnState) {
		t.Fatalf("offsets into a prepared transaction: %+v", d.Skipped)
	}
	done := prep
	done.State, done.Partitions, done.LastUpdateMs = TxnCompleteCommit, nil, 1234
	committed, d := img2.Apply([]Record{&done})
	o, ok := committed.Offset("g", "in", 0)
	if !ok || o.Offset != 10 || o.LeaderEpoch != 2 || o.Metadata != "m" || o.CommitTimeMs != 1234 {
		t.Fatalf("committed offset %+v %v", o, ok)
	}
	if committed.HasPendingTxnOffset("g", "in", 0) {
		t.Fatal("still pending after the commit")
	}
	if len(d.OffsetsCommitted) != 1 {
		t.Fatalf("OffsetsCommitted %v", d.OffsetsCommitted)
	}

	abort := prep
	abort.State = TxnPrepareAbort
	aborted, _ := img.Apply([]Record{&abort, func() *Transaction { x := abort; x.State = TxnCompleteAbort; return &x }()})
	if _, ok := aborted.Offset("g", "in", 0); ok || aborted.HasPendingTxnOffset("g", "in", 0) {
		t.Fatal("an aborted offset survived")
	}

	dead := *txn(TxnDead, 5, 1)
	gone, d := aborted.Apply([]Record{&dead})
	if _, ok := gone.Transaction("t"); ok || len(d.TxnsChanged) != 1 {
		t.Fatalf("Dead did not remove the id: %v", d.TxnsChanged)
	}
}
