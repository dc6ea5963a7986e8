package e2e

import (
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteRecords answers as Kafka's delayed DeleteRecords: once every
// replica on a live broker has moved its log start offset to the offset
// (the low watermark), as followers report in their fetches. A frozen
// follower (SIGSTOP: alive in the metadata for the long session timeout
// here, but silent) holds the answer back until the request's timeout,
// REQUEST_TIMED_OUT; once it runs again the same request is answered with
// the low watermark.
func TestDeleteRecordsWaitsForFollowers(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"),
		cluster.Override("broker.session.timeout.ms", "60000"))
	ctx := ctxFor(t, 120*time.Second)
	const topic = "delete-records-wait"
	adm := kadm.NewClient(client(t, c))
	if err := createTopic(ctx, adm, topic, 1, 3); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	prod := client(t, c)
	for i := range 100 {
		r := &kgo.Record{Topic: topic, Value: []byte{byte(i)}}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil || topics[topic].Err != nil {
		t.Fatalf("metadata: %v %v", err, topics[topic].Err)
	}
	leader := topics[topic].Partitions[0].Leader
	controller, err := quorumLeader(ctx, client(t, c))
	if err != nil {
		t.Fatal(err)
	}
	var frozen *cluster.Node
	for _, n := range c.Nodes() {
		if n.ID() != leader && n.ID() != controller {
			frozen = n
			break
		}
	}
	// Talk to the partition leader only: the frozen node answers nothing.
	cl := client(t, c, c.Node(leader))
	deleteTo := func(offset int64, timeout time.Duration) kmsg.DeleteRecordsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.TimeoutMillis = int32(timeout.Milliseconds())
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("DeleteRecords: %v %+v", err, resp)
		}
		return resp.Topics[0].Partitions[0]
	}

	// Everyone running: answered with the low watermark.
	if r := deleteTo(20, 30*time.Second); r.ErrorCode != 0 || r.LowWatermark != 20 {
		t.Fatalf("DeleteRecords to 20 with every replica running: %+v", r)
	}

	frozen.Stop()
	t.Cleanup(frozen.Cont) // if a check below fails while it is frozen
	r := deleteTo(40, time.Second)
	if r.ErrorCode != kerr.RequestTimedOut.Code || r.LowWatermark != 20 {
		t.Fatalf("DeleteRecords to 40 with node %d frozen: %+v, want REQUEST_TIMED_OUT and low watermark 20", frozen.ID(), r)
	}
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, topic)
	if o, ok := starts.Lookup(topic, 0); err != nil || !ok || o.Offset != 40 {
		t.Fatalf("leader's log start after the timed-out deletion: %+v %v, want 40", o, err)
	}

	frozen.Cont()
	if r := deleteTo(40, 30*time.Second); r.ErrorCode != 0 || r.LowWatermark != 40 {
		t.Fatalf("DeleteRecords to 40 after node %d runs again: %+v", frozen.ID(), r)
	}
}
