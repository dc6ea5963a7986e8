package replica

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
)

func txnBatchOf(pid int64, seq int32, values ...string) []byte {
	rs := make([]recordbatch.Record, len(values))
	now := time.Now().UnixMilli()
	for i, v := range values {
		rs[i] = recordbatch.Record{Timestamp: now, OffsetDelta: int32(i), Value: []byte(v)}
	}
	return recordbatch.Batch{Transactional: true, BaseTimestamp: now, ProducerID: pid, BaseSequence: seq, Records: rs}.Encode()
}

func waitAck(t *testing.T, ack *Ack) {
	t.Helper()
	if err := ack.Wait(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestTransactionsAcrossReplicas: transactional batches and markers
// replicate byte for byte; a read_committed consumer reads up to the LSO
// with the aborted transactions, ListOffsets answers the LSO, and the
// followers compute the same LSO and .txnindex.
func TestTransactionsAcrossReplicas(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 3})
	c.createTopic("tx", 1, 1, 2, 3)
	p := c.partition(1, "tx")
	consumer := func(iso int8) ReadResult {
		r := p.Read(ReadRequest{Offset: 0, MaxBytes: 1 << 20, Isolation: iso, ReplicaID: -1, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		return r
	}
	latest := func(iso int8) int64 {
		lo, err := p.ListOffsets(-1, LatestTimestamp, iso)
		if err != nil {
			t.Fatal(err)
		}
		return lo.Offset
	}

	if _, err := produce(t, c, 1, "tx", -1, "plain-0"); err != nil {
		t.Fatal(err)
	}
	if r := consumer(ReadCommitted); r.LastStableOffset != 1 || r.HighWatermark != 1 || len(r.AbortedTransactions) != 0 || r.AbortedTransactions == nil {
		t.Fatalf("no transactions: %+v", r)
	}
	_, ack, err := p.AppendAsLeader(txnBatchOf(7, 0, "t7-a", "t7-b"), -1) // 1-2
	if err != nil {
		t.Fatal(err)
	}
	waitAck(t, ack)
	if _, err := produce(t, c, 1, "tx", -1, "plain-3"); err != nil { // 3
		t.Fatal(err)
	}
	rc, ru := consumer(ReadCommitted), consumer(ReadUncommitted)
	if rc.LastStableOffset != 1 || ru.LastStableOffset != 1 || rc.HighWatermark != 4 {
		t.Fatalf("open transaction at 1: read_committed LSO %d HW %d, read_uncommitted LSO %d", rc.LastStableOffset, rc.HighWatermark, ru.LastStableOffset)
	}
	if want := logBytes(t, p.Log(), 1); rc.Region.Len != int64(len(want)) {
		t.Fatalf("read_committed read %d bytes, want the %d below the LSO", rc.Region.Len, len(want))
	}
	if want := logBytes(t, p.Log(), 4); ru.Region.Len != int64(len(want)) || ru.AbortedTransactions != nil {
		t.Fatalf("read_uncommitted read %d bytes (want %d), aborted %v", ru.Region.Len, len(want), ru.AbortedTransactions)
	}
	if lc, lu := latest(ReadCommitted), latest(ReadUncommitted); lc != 1 || lu != 4 {
		t.Fatalf("ListOffsets latest: read_committed %d, read_uncommitted %d; want 1 and 4", lc, lu)
	}
	if lo, err := p.ListOffsets(-1, MaxTimestamp, ReadCommitted); err != nil || lo.Offset >= 1 {
		t.Fatalf("ListOffsets max timestamp under read_committed answered %+v, %v: past the LSO", lo, err)
	}

	res, ack, err := p.AppendMarker(storage.TxnMarker{ProducerID: 7, CoordinatorEpoch: 2, Type: storage.ControlAbort}, -1) // 4
	if err != nil {
		t.Fatal(err)
	}
	waitAck(t, ack)
	if res.BaseOffset != 4 {
		t.Fatalf("marker at %d, want 4", res.BaseOffset)
	}
	want := []storage.AbortedTxn{{ProducerID: 7, FirstOffset: 1, LastOffset: 4, LastStableOffset: 5}}
	if rc := consumer(ReadCommitted); rc.LastStableOffset != 5 || !reflect.DeepEqual(rc.AbortedTransactions, want) {
		t.Fatalf("after the abort: LSO %d, aborted %+v", rc.LastStableOffset, rc.AbortedTransactions)
	}
	if lc := latest(ReadCommitted); lc != 5 {
		t.Fatalf("ListOffsets latest read_committed %d, want 5", lc)
	}
	if _, _, err := p.AppendMarker(storage.TxnMarker{ProducerID: 7, CoordinatorEpoch: 1, Type: storage.ControlCommit}, -1); !errors.Is(err, storage.ErrTransactionCoordinatorFenced) {
		t.Fatalf("marker from an older coordinator epoch: %v", err)
	}
	waitFor(t, "followers to learn the HW", func() bool {
		return c.partition(2, "tx").Log().HighWatermark() == 5 && c.partition(3, "tx").Log().HighWatermark() == 5
	})
	c.sameBelow("tx", 5, 1, 2, 3)
	for _, id := range []int32{2, 3} {
		l := c.partition(id, "tx").Log()
		got, err := l.AbortedTransactions(0, 5)
		if err != nil || !reflect.DeepEqual(got, want) || l.LastStableOffset() != 5 {
			t.Fatalf("broker %d: LSO %d, aborted %+v, %v", id, l.LastStableOffset(), got, err)
		}
	}
	if _, _, err := c.partition(2, "tx").AppendMarker(storage.TxnMarker{ProducerID: 7, CoordinatorEpoch: 3}, -1); err == nil {
		t.Fatal("a follower appended a marker")
	}
}
