package e2e

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Durable mode (log.flush.interval.messages=1, the broker default behind
// flush.messages) across a crash of the whole cluster: an idempotent
// acks=all producer writes to an RF=3 topic, every node is killed with
// SIGKILL at once mid-stream, the three restart, and every record
// acknowledged before or after is read back exactly once. (What a power
// cut would take from the page cache is the storage crash test's,
// TestDurableCrashPowerCut; this one runs the recovery and the durable
// replication path on real processes.)
func TestDurableWholeClusterKill9(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"), cluster.Override("log.flush.interval.messages", "1"))
	ctx := ctxFor(t, 180*time.Second)
	adm := kadm.NewClient(client(t, c))
	const topic, records = "durable-kill", 40_000
	if err := createTopic(ctx, adm, topic, 3, 3); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	cl := kgoWith(t, c, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(2*time.Millisecond),
		kgo.MaxBufferedRecords(500), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(150*time.Second))
	acked := make([]bool, records)
	var (
		ackCount atomic.Int64
		mu       sync.Mutex
		failures []error
		wg       sync.WaitGroup
	)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := range records {
			if i%50 == 49 {
				// At most 10,000 records/s, so the kill lands mid-stream.
				time.Sleep(5 * time.Millisecond)
			}
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Partition: int32(i % 3), Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Errorf("record %s: %w", r.Value, err))
					mu.Unlock()
					return
				}
				acked[i] = true
				ackCount.Add(1)
			})
		}
		wg.Wait()
	}()
	cluster.WaitFor(t, 90*time.Second, func() (bool, string) {
		n := ackCount.Load()
		return n >= records/10, fmt.Sprintf("%d records acknowledged before the kill", n)
	})
	atKill := ackCount.Load()
	if atKill == records {
		t.Fatal("every record was acknowledged before the kill: nothing was in flight")
	}
	for _, n := range c.Nodes() {
		n.Kill()
	}
	// Together: no node is ready before a quorum of them runs.
	c.StartAll()
	select {
	case <-produced:
	case <-ctx.Done():
		t.Fatalf("producer still had %d records unacknowledged at the deadline", int64(records)-ackCount.Load())
	}
	if len(failures) > 0 {
		t.Errorf("%d of %d records failed across the whole-cluster kill, first: %v", len(failures), records, failures[0])
	}
	dups, lost := readBackOnce(t, ctx, c, adm, topic, acked, true)
	t.Logf("killed all three nodes at %d acknowledgements: %d records, %d failed, %d duplicate copies, %d acknowledged but missing",
		atKill, records, len(failures), dups, lost)
	if dups != 0 || lost != 0 {
		t.Errorf("durable mode across a whole-cluster kill: %d duplicate records, %d acknowledged records lost", dups, lost)
	}
}
