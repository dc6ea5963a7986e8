package broker

import (
	"context"
	"testing"
	"time"

	"github.com/raftka/raftka/raftfsm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsets.retention.minutes through real clients (KIP-211): a group that
// has been empty for longer than the retention loses its committed offsets
// (OffsetFetch answers -1), while a group whose member stays never does,
// although its offsets were committed first.
func TestOffsetsOfEmptyGroupExpire(t *testing.T) {
	n := startNode(t, func(c *raftfsm.Config) {
		c.OffsetsRetention, c.OffsetsRetentionCheckInterval = time.Second, 50*time.Millisecond
	})
	n.createTopic(t, "orders", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 4*testDeadline)
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic("orders"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 10 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// consumeAndCommit joins group, reads all ten records, and commits
	// where it stopped; the caller closes the client (leaving the group).
	consumeAndCommit := func(group string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.HeartbeatInterval(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 10; {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s: %d of 10 records before the deadline", group, got)
			}
			got += fs.NumRecords()
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	active := consumeAndCommit("active")
	defer active.Close()
	// The active member keeps heartbeating while the test waits.
	pollCtx, stopPolling := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			active.PollFetches(pollCtx)
		}
	}()
	defer func() { stopPolling(); <-polled }()

	idle := consumeAndCommit("idle")
	if got := fetchCommitted(t, ctx, n, "idle"); got[0]+got[1] != 10 {
		t.Fatalf("idle group committed %v, want 10 records' worth", got)
	}
	idle.Close() // LeaveGroup: the group is empty from now

	waitTB(t, "the idle group's offsets expired", func() bool {
		got := fetchCommitted(t, ctx, n, "idle")
		return got[0] == -1 && got[1] == -1
	})
	if got := fetchCommitted(t, ctx, n, "active"); got[0]+got[1] != 10 {
		t.Fatalf("the active group's offsets are %v after the idle group's expired; want them kept", got)
	}
}

// fetchCommitted asks the group's coordinator for its committed offsets of
// orders-0 and orders-1 (-1 where there is none).
func fetchCommitted(t testing.TB, ctx context.Context, n *node, group string) [2]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "orders", []int32{0, 1}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	out := [2]int64{-2, -2}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
		t.Fatalf("OffsetFetch %s: %+v", group, resp)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.Partition < 0 || p.Partition > 1 {
			t.Fatalf("OffsetFetch %s: %+v", group, p)
		}
		out[p.Partition] = p.Offset
	}
	return out
}
