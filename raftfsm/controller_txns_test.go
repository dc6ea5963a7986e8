package raftfsm

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

func testTxn(id string, state metadata.TxnState, epoch int16) *metadata.Transaction {
	return &metadata.Transaction{TransactionalID: id, ProducerID: 7, PrevProducerID: -1, ProducerEpoch: epoch,
		LastProducerEpoch: -1, TimeoutMs: 60000, State: state, TxnStartMs: -1}
}

// Transaction writes through the controller RPC: read-your-writes, the
// transition rule enforced with Kafka's codes, nothing stored when refused,
// and concurrent writes coalesced.
func TestWriteTxnThroughController(t *testing.T) {
	tc := startCluster(t, 1, nil)
	n := tc.nodes[tc.leader(10*time.Second)]
	ctx := ctxT(t, 20*time.Second)
	c := n.Client()
	if _, err := c.WriteTxn(ctx, testTxn("a", metadata.TxnEmpty, 0)); err != nil {
		t.Fatal(err)
	}
	if got, ok := func() (metadata.Transaction, bool) { img, _ := n.Current(); return img.Transaction("a") }(); !ok || got.State != metadata.TxnEmpty {
		t.Fatalf("after the write: %+v %v", got, ok)
	}
	_, err := c.WriteTxn(ctx, testTxn("a", metadata.TxnCompleteCommit, 0))
	if !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("Empty -> CompleteCommit: %v", err)
	}
	if _, err := c.WriteTxn(ctx, testTxn("a", metadata.TxnEmpty, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteTxn(ctx, testTxn("a", metadata.TxnOngoing, 0)); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("older epoch: %v", err)
	}
	oc := &metadata.TxnOffsetCommit{TransactionalID: "a", ProducerID: 7, ProducerEpoch: 1, Group: "g",
		Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 5, LeaderEpoch: -1}}}
	if _, err := c.WriteTxn(ctx, oc); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("offsets into an Empty transaction: %v", err)
	}
	img, _ := n.Current()
	if got, _ := img.Transaction("a"); got.State != metadata.TxnEmpty || got.ProducerEpoch != 1 {
		t.Fatalf("refused writes changed the state: %+v", got)
	}

	_, before := n.Current()
	var wg sync.WaitGroup
	errs := make([]error, 100)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.WriteTxn(ctx, testTxn(string(rune('A'+i%26))+string(rune('a'+i/26)), metadata.TxnEmpty, 0))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	img, after := n.Current()
	if len(img.Transactions()) != 101 {
		t.Fatalf("%d transactions", len(img.Transactions()))
	}
	// Coalesced: far fewer Raft entries than writes.
	if after-before >= 100 {
		t.Fatalf("100 writes took %d entries", after-before)
	}
}

// Several Transaction records of one id in one write: each is checked
// against the state the one before it leaves, and all are recorded in one
// Raft entry or none.
func TestWriteTxnSequence(t *testing.T) {
	tc := startCluster(t, 1, nil)
	n := tc.nodes[tc.leader(10*time.Second)]
	ctx := ctxT(t, 20*time.Second)
	c := n.Client()
	if _, err := c.WriteTxn(ctx, testTxn("s", metadata.TxnEmpty, 0), testTxn("s", metadata.TxnOngoing, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteTxn(ctx, testTxn("s", metadata.TxnPrepareCommit, 0)); err != nil {
		t.Fatal(err)
	}
	_, before := n.Current()
	if _, err := c.WriteTxn(ctx, testTxn("s", metadata.TxnCompleteCommit, 0), testTxn("s", metadata.TxnOngoing, 0)); err != nil {
		t.Fatal(err)
	}
	img, after := n.Current()
	if got, _ := img.Transaction("s"); got.State != metadata.TxnOngoing || after-before != 1 {
		t.Fatalf("after Complete+Ongoing: %+v in %d entries", got, after-before)
	}
	// The second step is invalid from the first (Ongoing -> CompleteCommit):
	// nothing of the write is recorded.
	_, err := c.WriteTxn(ctx, testTxn("s", metadata.TxnPrepareAbort, 0), testTxn("s", metadata.TxnCompleteCommit, 0))
	if !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("PrepareAbort then CompleteCommit: %v", err)
	}
	if _, err := c.WriteTxn(ctx, testTxn("s", metadata.TxnPrepareAbort, 0), testTxn("other", metadata.TxnEmpty, 0)); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("two ids in one write: %v", err)
	}
	img, _ = n.Current()
	if got, _ := img.Transaction("s"); got.State != metadata.TxnOngoing {
		t.Fatalf("refused writes changed the state: %+v", got)
	}
	if _, ok := img.Transaction("other"); ok {
		t.Fatal("a refused write recorded another id")
	}
}
