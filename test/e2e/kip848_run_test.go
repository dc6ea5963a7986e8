package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// run848 is what the KIP-848 runs under load share (the churn and the
// rolling upgrades): three nodes with short consumer-group timers, a topic,
// and a producer writing total records meanwhile, bounded in count and
// time, whose end waitCommitted waits for.
type run848 struct {
	c         *cluster.Cluster
	ctx       context.Context
	cl        *kgo.Client
	adm       *kadm.Client
	bootstrap string // the member processes' seeds, ";"-separated
	topic     string
	parts     int
	total     int
	prodDone  chan error
}

// start848Run starts the cluster (consumer sessions of session ms,
// heartbeats every 500 ms, and opts), creates topic with parts partitions
// and starts the producer: total records, a pause after every tenth.
func start848Run(t *testing.T, topic string, parts, total int, pause time.Duration, session string, opts ...cluster.Opt) *run848 {
	t.Helper()
	opts = append([]cluster.Opt{cluster.Nodes(3),
		cluster.Override("group.consumer.session.timeout.ms", session),
		cluster.Override("group.consumer.min.session.timeout.ms", "6000"),
		cluster.Override("group.consumer.heartbeat.interval.ms", "500"),
		cluster.Override("group.consumer.min.heartbeat.interval.ms", "500"),
	}, opts...)
	r := &run848{c: cluster.Start(t, opts...), ctx: ctxFor(t, 5*time.Minute), topic: topic, parts: parts, total: total, prodDone: make(chan error, 1)}
	r.cl = client(t, r.c)
	r.adm = kadm.NewClient(r.cl)
	createAndWait(t, r.ctx, r.c, r.adm, topic, int32(parts))
	var seeds []string
	for _, n := range r.c.Nodes() {
		seeds = append(seeds, n.ClientAddr())
	}
	r.bootstrap = strings.Join(seeds, ";")

	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(100), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	ctx := r.ctx
	go func() {
		for i := range total {
			if ctx.Err() != nil {
				r.prodDone <- ctx.Err()
				return
			}
			prod.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte("v")}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
			if i%10 == 0 {
				time.Sleep(pause)
			}
		}
		r.prodDone <- prod.Flush(ctx)
	}()
	return r
}

// waitCommitted waits for the producer to finish and for group's commits
// to reach the end of every partition, and returns the ends.
func (r *run848) waitCommitted(t *testing.T, group string) map[int32]int64 {
	t.Helper()
	if err := <-r.prodDone; err != nil {
		t.Fatalf("producer: %v", err)
	}
	ends := map[int32]int64{}
	cluster.WaitFor(t, 90*time.Second, func() (bool, string) {
		lo, err := r.adm.ListEndOffsets(r.ctx, r.topic)
		if err != nil {
			return false, err.Error()
		}
		fo, err := r.adm.FetchOffsets(r.ctx, group)
		if err != nil {
			return false, err.Error()
		}
		sum := int64(0)
		for p := range int32(r.parts) {
			end, _ := lo.Lookup(r.topic, p)
			committed, _ := fo.Lookup(r.topic, p)
			ends[p] = end.Offset
			sum += end.Offset
			if committed.At != end.Offset {
				return false, fmt.Sprintf("partition %d committed %d, end %d", p, committed.At, end.Offset)
			}
		}
		return sum == int64(r.total), fmt.Sprintf("%d records in the logs, want %d", sum, r.total)
	})
	return ends
}
