package broker

import (
	"bytes"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchReadCommitted: at every Fetch version with an isolation level
// (v4+), read_committed stops at the last stable offset and lists the
// aborted transactions in what it returns, read_uncommitted reads to the
// HW with a null list, and both answer the real LSO; ListOffsets latest
// under read_committed (v2+) answers the LSO.
func TestFetchReadCommitted(t *testing.T) {
	f := newPartFixture(t)
	id := f.topic("tx", nil, []int32{1})
	now := time.Now().UnixMilli()
	part, err := f.rm.Partition("tx", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Produce refuses transactional batches until the transaction
	// coordinator exists (INVALID_TXN_STATE), so this one goes to the
	// partition directly, as the produce path will once it verifies the
	// producer's transaction.
	txn := recordbatch.Batch{Transactional: true, BaseTimestamp: now, ProducerID: 77, ProducerEpoch: 3, BaseSequence: 0,
		Records: []recordbatch.Record{{Timestamp: now, Value: []byte("aborted-0")}, {Timestamp: now, OffsetDelta: 1, Value: []byte("aborted-1")}}}.Encode()
	if r := f.produce(9, -1, "tx", id, map[int32][]byte{0: bytes.Clone(txn)})[0]; r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("transactional produce: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(r.ErrorCode))
	}
	if _, _, err := part.AppendAsLeader(txn, -1); err != nil { // 0-1
		t.Fatal(err)
	}
	if r := f.produce(9, -1, "tx", id, map[int32][]byte{0: recordbatch.BuildValues(now, []byte("p"))})[0]; r.ErrorCode != 0 { // 2
		t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	fetch := func(v int16, iso int8) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := fetchReq(v, "tx", id, 0, 0)
		req.IsolationLevel = iso
		return onlyPartition(t, f.call(req).(*kmsg.FetchResponse))
	}
	latest := func(v int16, iso int8) int64 {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID, req.IsolationLevel = v, -1, iso
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "tx"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		p := f.call(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("ListOffsets v%d: %v", v, kerr.ErrorForCode(p.ErrorCode))
		}
		return p.Offset
	}
	maxFetch := defaultAPIs.lookup(1).max
	for v := int16(4); v <= maxFetch; v++ {
		p := fetch(v, replica.ReadCommitted)
		if p.ErrorCode != 0 || p.HighWatermark != 3 || p.LastStableOffset != 0 || len(p.RecordBatches) != 0 || p.AbortedTransactions == nil || len(p.AbortedTransactions) != 0 {
			t.Fatalf("v%d read_committed, transaction open at 0: %+v", v, p)
		}
		if p := fetch(v, replica.ReadUncommitted); p.LastStableOffset != 0 || p.HighWatermark != 3 || p.AbortedTransactions != nil || len(p.RecordBatches) == 0 {
			t.Fatalf("v%d read_uncommitted, transaction open at 0: LSO %d HW %d aborted %v, %d bytes", v, p.LastStableOffset, p.HighWatermark, p.AbortedTransactions, len(p.RecordBatches))
		}
	}
	for v := int16(2); v <= defaultAPIs.lookup(2).max; v++ {
		if lc, lu := latest(v, replica.ReadCommitted), latest(v, replica.ReadUncommitted); lc != 0 || lu != 3 {
			t.Fatalf("ListOffsets v%d latest: read_committed %d, read_uncommitted %d; want 0 and 3", v, lc, lu)
		}
	}

	if _, _, err := part.AppendMarker(storage.TxnMarker{ProducerID: 77, ProducerEpoch: 3, CoordinatorEpoch: 0, Type: storage.ControlAbort}, -1); err != nil {
		t.Fatal(err)
	}
	all := fetch(maxFetch, replica.ReadUncommitted).RecordBatches
	for v := int16(4); v <= maxFetch; v++ {
		p := fetch(v, replica.ReadCommitted)
		if p.HighWatermark != 4 || p.LastStableOffset != 4 || !bytes.Equal(p.RecordBatches, all) {
			t.Fatalf("v%d read_committed after the abort: HW %d LSO %d, %d bytes of %d", v, p.HighWatermark, p.LastStableOffset, len(p.RecordBatches), len(all))
		}
		if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 77 || p.AbortedTransactions[0].FirstOffset != 0 {
			t.Fatalf("v%d read_committed aborted transactions %+v, want producer 77 from 0", v, p.AbortedTransactions)
		}
	}
	if lc := latest(9, replica.ReadCommitted); lc != 4 {
		t.Fatalf("ListOffsets latest read_committed %d after the abort, want 4", lc)
	}
	// A client still cannot produce a control batch (a transactional one
	// is refused before, as above).
	ctl := recordbatch.Batch{Control: true, BaseTimestamp: now, ProducerID: 77, ProducerEpoch: 3, BaseSequence: -1,
		Records: []recordbatch.Record{{Timestamp: now, Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}}}}.Encode()
	if r := f.produce(9, -1, "tx", id, map[int32][]byte{0: ctl})[0]; r.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("a client's control batch: error %v, want INVALID_RECORD", kerr.ErrorForCode(r.ErrorCode))
	}
}
