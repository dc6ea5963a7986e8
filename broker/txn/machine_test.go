package txn

import (
	"slices"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

var lim = Limits{MaxTimeoutMs: 900000, IDExpirationMs: 1000000}

func state(s metadata.TxnState, pid int64, epoch int16, parts ...metadata.TopicPartition) *metadata.Transaction {
	t := &metadata.Transaction{TransactionalID: "t", ProducerID: pid, PrevProducerID: -1, ProducerEpoch: epoch,
		LastProducerEpoch: epoch - 1, TimeoutMs: 60000, State: s, Partitions: parts, TxnStartMs: -1, LastUpdateMs: 100, NextProducerID: -1}
	if s == metadata.TxnOngoing || s == metadata.TxnPrepareCommit || s == metadata.TxnPrepareAbort {
		t.TxnStartMs = 100
	}
	return t
}

func tp(topic string, p int32) metadata.TopicPartition {
	return metadata.TopicPartition{Topic: topic, Partition: p}
}

// Every next state a decision returns must be one the recorded-state rule
// accepts: the coordinator never asks the controller for a refused write.
func checkLegal(t *testing.T, cur, next *metadata.Transaction) {
	t.Helper()
	if next == nil {
		return
	}
	if err := metadata.CheckTxnTransition(cur, next); err != nil {
		t.Fatalf("decision %v -> %v is refused by the rule: %v", stateOf(cur), next.State, err)
	}
}

func stateOf(t *metadata.Transaction) string {
	if t == nil {
		return "none"
	}
	return t.State.String()
}

func TestInit(t *testing.T) {
	nextPID := int64(500)
	alloc := func() (int64, int16) { nextPID++; return nextPID, 0 }
	in := InitInput{TimeoutMs: 60000, ProducerID: -1, ProducerEpoch: -1, Version: 5}
	cases := []struct {
		name      string
		cur       *metadata.Transaction
		in        InitInput
		code      int16
		pid       int64 // -2: the allocated one
		epoch     int16
		nextState metadata.TxnState
		markers   bool
		noWrite   bool
	}{
		{"new id", nil, in, 0, -2, 0, metadata.TxnEmpty, false, false},
		{"empty bumps", state(metadata.TxnEmpty, 7, 3), in, 0, 7, 4, metadata.TxnEmpty, false, false},
		{"complete commit bumps", state(metadata.TxnCompleteCommit, 7, 3), in, 0, 7, 4, metadata.TxnEmpty, false, false},
		{"complete abort bumps", state(metadata.TxnCompleteAbort, 7, 3), in, 0, 7, 4, metadata.TxnEmpty, false, false},
		{"exhausted epoch moves to a new id", state(metadata.TxnCompleteAbort, 7, maxEpoch), in, 0, -2, 0, metadata.TxnEmpty, false, false},
		{"ongoing is fenced and aborted", state(metadata.TxnOngoing, 7, 3, tp("a", 0)), in, kerr.ConcurrentTransactions.Code, -1, -1, metadata.TxnPrepareAbort, true, false},
		{"prepare commit", state(metadata.TxnPrepareCommit, 7, 3), in, kerr.ConcurrentTransactions.Code, -1, -1, 0, false, true},
		{"prepare abort", state(metadata.TxnPrepareAbort, 7, 3), in, kerr.ConcurrentTransactions.Code, -1, -1, 0, false, true},
		{"zero timeout", nil, InitInput{TimeoutMs: 0, ProducerID: -1, ProducerEpoch: -1}, kerr.InvalidTransactionTimeout.Code, -1, -1, 0, false, true},
		{"timeout over the max", nil, InitInput{TimeoutMs: 900001, ProducerID: -1, ProducerEpoch: -1}, kerr.InvalidTransactionTimeout.Code, -1, -1, 0, false, true},
		{"KIP-360 current epoch bumps", state(metadata.TxnEmpty, 7, 3), InitInput{TimeoutMs: 1000, ProducerID: 7, ProducerEpoch: 3, Version: 4}, 0, 7, 4, metadata.TxnEmpty, false, false},
		{"KIP-360 retry of a bump", state(metadata.TxnEmpty, 7, 4), InitInput{TimeoutMs: 1000, ProducerID: 7, ProducerEpoch: 3, Version: 4}, 0, 7, 4, 0, false, true},
		{"KIP-360 zombie v4", state(metadata.TxnEmpty, 7, 9), InitInput{TimeoutMs: 1000, ProducerID: 7, ProducerEpoch: 3, Version: 4}, kerr.ProducerFenced.Code, -1, -1, 0, false, true},
		{"KIP-360 zombie v3", state(metadata.TxnEmpty, 7, 9), InitInput{TimeoutMs: 1000, ProducerID: 7, ProducerEpoch: 3, Version: 3}, kerr.InvalidProducerEpoch.Code, -1, -1, 0, false, true},
		{"KIP-360 foreign producer", state(metadata.TxnEmpty, 7, 9), InitInput{TimeoutMs: 1000, ProducerID: 8, ProducerEpoch: 9, Version: 5}, kerr.ProducerFenced.Code, -1, -1, 0, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := nextPID
			r := Init("t", c.cur, c.in, lim, 5000, 3, alloc)
			if r.Code != c.code {
				t.Fatalf("code %d, want %d", r.Code, c.code)
			}
			wantPID := c.pid
			if wantPID == -2 {
				if nextPID != before+1 {
					t.Fatal("no producer id allocated")
				}
				wantPID = nextPID
			}
			if r.ProducerID != wantPID || r.ProducerEpoch != c.epoch {
				t.Fatalf("answer %d/%d, want %d/%d", r.ProducerID, r.ProducerEpoch, wantPID, c.epoch)
			}
			if c.noWrite != (r.Next == nil) {
				t.Fatalf("next %+v", r.Next)
			}
			if r.Next != nil {
				checkLegal(t, c.cur, r.Next)
				if r.Next.State != c.nextState || r.NeedsMarkers != c.markers || r.Next.CoordinatorEpoch != 3 || r.Next.LastUpdateMs != 5000 {
					t.Fatalf("next %+v markers %v", r.Next, r.NeedsMarkers)
				}
				if c.markers && (r.Next.ProducerEpoch != c.cur.ProducerEpoch+1 || !slices.Equal(r.Next.Partitions, c.cur.Partitions)) {
					t.Fatalf("the fencing abort must bump the epoch and keep the partitions: %+v", r.Next)
				}
				if !c.markers && (r.Next.Partitions != nil || r.Next.TxnStartMs != -1 || r.Next.TimeoutMs != c.in.TimeoutMs) {
					t.Fatalf("an initialised id holds no transaction: %+v", r.Next)
				}
			}
		})
	}
	// No producer id to be had: the allocator's code.
	r := Init("t", nil, in, lim, 0, 0, func() (int64, int16) { return -1, kerr.CoordinatorLoadInProgress.Code })
	if r.Code != kerr.CoordinatorLoadInProgress.Code || r.Next != nil {
		t.Fatalf("%+v", r)
	}
}

func TestAddPartitions(t *testing.T) {
	cases := []struct {
		name  string
		cur   *metadata.Transaction
		pid   int64
		epoch int16
		add   []metadata.TopicPartition
		code  int16
		parts []metadata.TopicPartition // nil: no write
	}{
		{"opens from empty", state(metadata.TxnEmpty, 7, 1), 7, 1, []metadata.TopicPartition{tp("b", 1), tp("a", 2)}, 0, []metadata.TopicPartition{tp("a", 2), tp("b", 1)}},
		{"opens from complete commit", state(metadata.TxnCompleteCommit, 7, 1), 7, 1, []metadata.TopicPartition{tp("a", 0)}, 0, []metadata.TopicPartition{tp("a", 0)}},
		{"opens from complete abort", state(metadata.TxnCompleteAbort, 7, 1), 7, 1, []metadata.TopicPartition{tp("a", 0)}, 0, []metadata.TopicPartition{tp("a", 0)}},
		{"grows an ongoing one", state(metadata.TxnOngoing, 7, 1, tp("a", 0)), 7, 1, []metadata.TopicPartition{tp("a", 1), tp("a", 0)}, 0, []metadata.TopicPartition{tp("a", 0), tp("a", 1)}},
		{"already in", state(metadata.TxnOngoing, 7, 1, tp("a", 0)), 7, 1, []metadata.TopicPartition{tp("a", 0)}, 0, nil},
		{"unknown id", nil, 7, 1, []metadata.TopicPartition{tp("a", 0)}, kerr.InvalidProducerIDMapping.Code, nil},
		{"other producer", state(metadata.TxnOngoing, 7, 1), 8, 1, []metadata.TopicPartition{tp("a", 0)}, kerr.InvalidProducerIDMapping.Code, nil},
		{"old epoch", state(metadata.TxnOngoing, 7, 2), 7, 1, []metadata.TopicPartition{tp("a", 0)}, kerr.ProducerFenced.Code, nil},
		{"prepare commit", state(metadata.TxnPrepareCommit, 7, 1), 7, 1, []metadata.TopicPartition{tp("a", 0)}, kerr.ConcurrentTransactions.Code, nil},
		{"prepare abort", state(metadata.TxnPrepareAbort, 7, 1), 7, 1, []metadata.TopicPartition{tp("a", 0)}, kerr.ConcurrentTransactions.Code, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next, code := AddPartitions(c.cur, c.pid, c.epoch, c.add, 9000, 2)
			if code != c.code {
				t.Fatalf("code %d, want %d", code, c.code)
			}
			if (next == nil) != (c.parts == nil) {
				t.Fatalf("next %+v", next)
			}
			if next == nil {
				return
			}
			checkLegal(t, c.cur, next)
			if next.State != metadata.TxnOngoing || !slices.Equal(next.Partitions, c.parts) {
				t.Fatalf("next %+v", next)
			}
			wantStart := int64(9000)
			if c.cur.State == metadata.TxnOngoing {
				wantStart = c.cur.TxnStartMs
			}
			if next.TxnStartMs != wantStart {
				t.Fatalf("start %d, want %d", next.TxnStartMs, wantStart)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	cur := state(metadata.TxnOngoing, 7, 1, tp("a", 0))
	got := Verify(cur, 7, 1, []metadata.TopicPartition{tp("a", 0), tp("a", 1)})
	if !slices.Equal(got, []int16{0, kerr.InvalidTxnState.Code}) {
		t.Fatalf("%v", got)
	}
	got = Verify(cur, 7, 0, []metadata.TopicPartition{tp("a", 0)})
	if !slices.Equal(got, []int16{kerr.ProducerFenced.Code}) {
		t.Fatalf("%v", got)
	}
	got = Verify(state(metadata.TxnPrepareCommit, 7, 1, tp("a", 0)), 7, 1, []metadata.TopicPartition{tp("a", 0)})
	if !slices.Equal(got, []int16{kerr.InvalidTxnState.Code}) {
		t.Fatalf("a late produce into an ending transaction: %v", got)
	}
}

func TestEnd(t *testing.T) {
	cases := []struct {
		name   string
		cur    *metadata.Transaction
		epoch  int16
		commit bool
		code   int16
		next   metadata.TxnState // -1: no write
	}{
		{"commit", state(metadata.TxnOngoing, 7, 1, tp("a", 0)), 1, true, 0, metadata.TxnPrepareCommit},
		{"abort", state(metadata.TxnOngoing, 7, 1, tp("a", 0)), 1, false, 0, metadata.TxnPrepareAbort},
		{"retried commit", state(metadata.TxnCompleteCommit, 7, 1), 1, true, 0, -1},
		{"retried abort", state(metadata.TxnCompleteAbort, 7, 1), 1, false, 0, -1},
		{"abort after commit", state(metadata.TxnCompleteCommit, 7, 1), 1, false, kerr.InvalidTxnState.Code, -1},
		{"commit after abort", state(metadata.TxnCompleteAbort, 7, 1), 1, true, kerr.InvalidTxnState.Code, -1},
		{"commit while committing", state(metadata.TxnPrepareCommit, 7, 1), 1, true, kerr.ConcurrentTransactions.Code, -1},
		{"abort while committing", state(metadata.TxnPrepareCommit, 7, 1), 1, false, kerr.InvalidTxnState.Code, -1},
		{"abort while aborting", state(metadata.TxnPrepareAbort, 7, 1), 1, false, kerr.ConcurrentTransactions.Code, -1},
		{"commit while aborting", state(metadata.TxnPrepareAbort, 7, 1), 1, true, kerr.InvalidTxnState.Code, -1},
		{"nothing open", state(metadata.TxnEmpty, 7, 1), 1, true, kerr.InvalidTxnState.Code, -1},
		{"fenced", state(metadata.TxnOngoing, 7, 2), 1, true, kerr.ProducerFenced.Code, -1},
		{"unknown", nil, 1, true, kerr.InvalidProducerIDMapping.Code, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next, code := End(c.cur, 7, c.epoch, c.commit, 9000, 2)
			if code != c.code {
				t.Fatalf("code %d, want %d", code, c.code)
			}
			if c.next < 0 {
				if next != nil {
					t.Fatalf("next %+v", next)
				}
				return
			}
			checkLegal(t, c.cur, next)
			if next.State != c.next || !slices.Equal(next.Partitions, c.cur.Partitions) {
				t.Fatalf("next %+v", next)
			}
		})
	}
}

func TestComplete(t *testing.T) {
	for _, c := range []struct {
		from, to metadata.TxnState
	}{{metadata.TxnPrepareCommit, metadata.TxnCompleteCommit}, {metadata.TxnPrepareAbort, metadata.TxnCompleteAbort}} {
		cur := state(c.from, 7, 1, tp("a", 0))
		next := Complete(cur, 9000, 4)
		checkLegal(t, cur, next)
		if next.State != c.to || next.Partitions != nil || next.CoordinatorEpoch != 4 {
			t.Fatalf("%v: %+v", c.from, next)
		}
	}
	for _, s := range []metadata.TxnState{metadata.TxnEmpty, metadata.TxnOngoing, metadata.TxnCompleteCommit, metadata.TxnCompleteAbort} {
		if next := Complete(state(s, 7, 1), 9000, 4); next != nil {
			t.Fatalf("%v completed to %+v", s, next)
		}
	}
}

// Timeouts and expiry with a fake clock: the times are parameters.
func TestExpire(t *testing.T) {
	open := state(metadata.TxnOngoing, 7, 1, tp("a", 0)) // started at 100, 60 s timeout
	if next := Expire(open, lim, 100+60000, 2); next != nil {
		t.Fatalf("expired at its deadline: %+v", next)
	}
	next := Expire(open, lim, 100+60001, 2)
	checkLegal(t, open, next)
	if next.State != metadata.TxnPrepareAbort || next.ProducerEpoch != 2 || next.LastProducerEpoch != 1 {
		t.Fatalf("timed out: %+v", next)
	}
	// The fenced producer's next request fails.
	if _, code := End(next, 7, 1, true, 0, 2); code != kerr.ProducerFenced.Code {
		t.Fatalf("the timed-out producer's EndTxn: %d", code)
	}
	for _, s := range []metadata.TxnState{metadata.TxnEmpty, metadata.TxnCompleteCommit, metadata.TxnCompleteAbort} {
		idle := state(s, 7, 1) // last update at 100
		if next := Expire(idle, lim, 100+lim.IDExpirationMs, 2); next != nil {
			t.Fatalf("%v expired early", s)
		}
		next := Expire(idle, lim, 101+lim.IDExpirationMs, 2)
		checkLegal(t, idle, next)
		if next.State != metadata.TxnDead {
			t.Fatalf("%v: %+v", s, next)
		}
	}
	for _, s := range []metadata.TxnState{metadata.TxnPrepareCommit, metadata.TxnPrepareAbort} {
		if next := Expire(state(s, 7, 1), lim, 1<<50, 2); next != nil {
			t.Fatalf("%v expired: %+v", s, next)
		}
	}
}

func TestSlotMatchesKafka(t *testing.T) {
	// Kafka: Utils.abs("my-txn".hashCode()) % 50; "my-txn".hashCode() is
	// -1061187895, masked 1086295753, % 50 = 3.
	if got := Slot("my-txn", 50); got != 3 {
		t.Fatalf("slot %d", got)
	}
}

// Transaction version 2: the Prepare* state bumps the epoch and the answer
// carries it; a retry with the epoch before the bump is done; an abort
// with nothing open bumps the epoch; the last usable epoch moves the
// producer to a new id at Complete*.
func TestEndV2(t *testing.T) {
	alloc := func() (int64, int16) { return 900, 0 }
	open := state(metadata.TxnOngoing, 7, 4, tp("a", 0))
	r := EndV2(open, 7, 4, true, 9000, 2, alloc)
	checkLegal(t, open, r.Next)
	if r.Code != 0 || r.Next.State != metadata.TxnPrepareCommit || r.Next.ProducerEpoch != 5 || r.Next.LastProducerEpoch != 4 ||
		r.ProducerID != 7 || r.ProducerEpoch != 5 || r.Next.TxnVersion != 2 || !slices.Equal(r.Next.Partitions, open.Partitions) {
		t.Fatalf("commit: %+v next %+v", r, r.Next)
	}
	done := Complete(r.Next, 9001, 2)
	checkLegal(t, r.Next, done)
	for _, c := range []struct {
		name   string
		cur    *metadata.Transaction
		epoch  int16
		commit bool
		code   int16
		write  bool
	}{
		{"retried commit, prepared", r.Next, 4, true, 0, false},
		{"retried commit, complete", done, 4, true, 0, false},
		{"retried as an abort", done, 4, false, kerr.InvalidTxnState.Code, false},
		{"commit with nothing open", done, 5, true, kerr.InvalidTxnState.Code, false},
		{"empty abort", done, 5, false, 0, true},
		{"while completing", r.Next, 5, false, kerr.ConcurrentTransactions.Code, false},
		{"zombie epoch", done, 3, true, kerr.ProducerFenced.Code, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := EndV2(c.cur, 7, c.epoch, c.commit, 9002, 2, alloc)
			if got.Code != c.code || (got.Next != nil) != c.write {
				t.Fatalf("%+v", got)
			}
			if c.code == 0 && !c.write && (got.ProducerID != 7 || got.ProducerEpoch != 5) {
				t.Fatalf("retry answered %d/%d, want 7/5", got.ProducerID, got.ProducerEpoch)
			}
			if got.Next != nil {
				checkLegal(t, c.cur, got.Next)
				if got.Next.State != metadata.TxnPrepareAbort || got.Next.ProducerEpoch != 6 || got.Next.Partitions != nil {
					t.Fatalf("empty abort next %+v", got.Next)
				}
			}
		})
	}
	if r := EndV2(nil, 7, 0, true, 0, 0, alloc); r.Code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("unknown id: %+v", r)
	}
	// The last usable epoch: a new producer id from Complete* on.
	last := state(metadata.TxnOngoing, 7, maxEpoch-1, tp("a", 0))
	r = EndV2(last, 7, maxEpoch-1, false, 9000, 2, alloc)
	checkLegal(t, last, r.Next)
	if r.Next.NextProducerID != 900 || r.ProducerID != 900 || r.ProducerEpoch != 0 || r.Next.ProducerID != 7 || r.Next.ProducerEpoch != maxEpoch {
		t.Fatalf("overflow: %+v next %+v", r, r.Next)
	}
	moved := Complete(r.Next, 9001, 2)
	checkLegal(t, r.Next, moved)
	if moved.ProducerID != 900 || moved.ProducerEpoch != 0 || moved.PrevProducerID != 7 || moved.NextProducerID != -1 {
		t.Fatalf("moved %+v", moved)
	}
	if got := EndV2(moved, 7, maxEpoch-1, false, 9002, 2, alloc); got.Code != 0 || got.ProducerID != 900 || got.ProducerEpoch != 0 {
		t.Fatalf("retry across the move: %+v", got)
	}
}
