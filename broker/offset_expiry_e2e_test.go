package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/raftka/raftka/raftfsm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsets.retention.minutes through real clients (KIP-211): a group that
// has been empty for longer than the retention loses its committed offsets
// (OffsetFetch answers -1), while a group whose member stays keeps those
// of the topic it subscribes to, although they were committed first; its
// offsets of a topic it does not subscribe to expire, as in Kafka.
func TestOffsetsOfEmptyGroupExpire(t *testing.T) {
	n := startNode(t, func(c *raftfsm.Config) {
		c.OffsetsRetention, c.OffsetsRetentionCheckInterval = 3*time.Second, 50*time.Millisecond
	})
	n.createTopic(t, "orders", 2)
	n.createTopic(t, "other", 2)
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
	other := map[string]map[int32]kgo.EpochOffset{"other": {0: {Epoch: -1, Offset: 7}, 1: {Epoch: -1, Offset: 8}}}
	var commitErr error
	active.CommitOffsetsSync(ctx, other, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if commitErr == nil && rp.ErrorCode != 0 {
					commitErr = fmt.Errorf("other-%d: error %d", rp.Partition, rp.ErrorCode)
				}
			}
		}
	})
	if commitErr != nil {
		t.Fatal(commitErr)
	}
	if got := fetchCommitted(t, ctx, n, "active", "other"); got != [2]int64{7, 8} {
		t.Fatalf("the active group's offsets of other: %v", got)
	}
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
	if got := fetchCommitted(t, ctx, n, "idle", "orders"); got[0]+got[1] != 10 {
		t.Fatalf("idle group committed %v, want 10 records' worth", got)
	}
	idle.Close() // LeaveGroup: the group is empty from now

	waitTB(t, "the idle group's offsets expired", func() bool {
		got := fetchCommitted(t, ctx, n, "idle", "orders")
		return got[0] == -1 && got[1] == -1
	})
	if got := fetchCommitted(t, ctx, n, "active", "orders"); got[0]+got[1] != 10 {
		t.Fatalf("the active group's offsets are %v after the idle group's expired; want them kept", got)
	}
	// Committed before the idle group became empty, so expired by now.
	if got := fetchCommitted(t, ctx, n, "active", "other"); got != [2]int64{-1, -1} {
		t.Fatalf("the active group's offsets of a topic it does not subscribe to are %v; want them expired", got)
	}
}

// fetchCommitted asks the group's coordinator for its committed offsets of
// partitions 0 and 1 of topic (-1 where there is none).
func fetchCommitted(t testing.TB, ctx context.Context, n *node, group, topic string) [2]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0, 1}
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
