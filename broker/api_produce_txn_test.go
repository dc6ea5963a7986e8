package broker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/txn"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// countingTxns is a transaction coordinator on this node that records the
// verification calls and refuses the partitions in refuse.
type countingTxns struct {
	mu     sync.Mutex
	calls  [][]metadata.TopicPartition
	refuse map[metadata.TopicPartition]bool
}

var errNotInTest = errors.New("not used by this test")

func (c *countingTxns) Ownership(*metadata.Image, string) error { return nil }
func (c *countingTxns) Transaction(string) (metadata.Transaction, bool) {
	return metadata.Transaction{}, false
}
func (c *countingTxns) Locate(context.Context, string) (int32, error) { return 1, nil }
func (c *countingTxns) InitProducerID(context.Context, string, txn.InitInput) (int64, int16, error) {
	return 0, 0, errNotInTest
}
func (c *countingTxns) AddPartitions(context.Context, string, int64, int16, []metadata.TopicPartition) error {
	return errNotInTest
}
func (c *countingTxns) AddOffsets(context.Context, string, int64, int16, string) error {
	return errNotInTest
}
func (c *countingTxns) Verify(_ context.Context, _ string, _ int64, _ int16, parts []metadata.TopicPartition) ([]int16, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, slices.Clone(parts))
	codes := make([]int16, len(parts))
	for i, p := range parts {
		if c.refuse[p] {
			codes[i] = kerr.InvalidTxnState.Code
		}
	}
	return codes, nil
}
func (c *countingTxns) EndTxn(context.Context, string, int64, int16, bool) error { return errNotInTest }
func (c *countingTxns) EndTxnV2(context.Context, string, int64, int16, bool) (int64, int16, error) {
	return 0, 0, errNotInTest
}
func (c *countingTxns) CommitOffsets(context.Context, string, int64, int16, string, []metadata.OffsetCommit) error {
	return errNotInTest
}

// The transactional partitions of one produce request are verified with
// one coordinator call (each call is a Raft write when the leader adds
// them); each partition is answered by its own verdict and a refused one
// is not appended.
func TestProduceVerifiesTransactionOnce(t *testing.T) {
	f := newPartFixture(t)
	ct := &countingTxns{refuse: map[metadata.TopicPartition]bool{{Topic: "tx", Partition: 1}: true}}
	f.srv.deps.Txns = ct
	f.topic("tx", nil, []int32{1}, []int32{1}, []int32{1})
	now := time.Now().UnixMilli()
	batch := func(v string) []byte {
		return recordbatch.Batch{Transactional: true, ProducerID: 7, BaseTimestamp: now, Records: []recordbatch.Record{{Value: []byte(v)}}}.Encode()
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 11, 1, 5000, kmsg.StringPtr("tx-id")
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "tx"
	for p := int32(0); p < 3; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch("v")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := f.call(req).(*kmsg.ProduceResponse)
	want := map[int32]int16{0: 0, 1: kerr.InvalidTxnState.Code, 2: 0}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != want[p.Partition] {
			t.Fatalf("partition %d: %v, want %v", p.Partition, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(want[p.Partition]))
		}
	}
	ct.mu.Lock()
	calls := slices.Clone(ct.calls)
	ct.mu.Unlock()
	if len(calls) != 1 || len(calls[0]) != 3 {
		t.Fatalf("verification calls %v, want one of the three partitions", calls)
	}
	for p, leo := range map[int32]int64{0: 1, 1: 0, 2: 1} {
		part, err := f.rm.Partition("tx", p)
		if err != nil {
			t.Fatal(err)
		}
		if got := part.Log().LogEndOffset(); got != leo {
			t.Fatalf("partition %d: log end offset %d, want %d", p, got, leo)
		}
	}
	// The open transactions need no second verification.
	f.call(req)
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if len(ct.calls) != 2 || len(ct.calls[1]) != 1 || ct.calls[1][0].Partition != 1 {
		t.Fatalf("second request's calls %v, want one for partition 1 only", ct.calls[1:])
	}
}
