package replica

import (
	"context"
	"strings"
	"testing"
	"time"
)

// BenchmarkProduceAcksAll measures acks=all appends of 1 KiB batches on a
// three-broker in-memory cluster, one producer waiting for each ack (the
// latency-bound case: every batch costs a follower fetch round).
func BenchmarkProduceAcksAll(b *testing.B) {
	c := newCluster(b, clusterOpts{n: 3})
	c.createTopic("bench", 2, 1, 2, 3)
	p := c.partition(1, "bench")
	value := strings.Repeat("x", 1000)
	b.SetBytes(1024)
	b.ResetTimer()
	for range b.N {
		_, ack, err := p.AppendAsLeader(batchOf(value), -1)
		if err != nil {
			b.Fatal(err)
		}
		if err := ack.Wait(context.Background(), 10*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProduceAcksAllParallel is the throughput case: many producers in
// flight, so one follower fetch round carries many batches.
func BenchmarkProduceAcksAllParallel(b *testing.B) {
	c := newCluster(b, clusterOpts{n: 3})
	c.createTopic("bench", 2, 1, 2, 3)
	p := c.partition(1, "bench")
	value := strings.Repeat("x", 1000)
	b.SetBytes(1024)
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, ack, err := p.AppendAsLeader(batchOf(value), -1)
			if err != nil {
				b.Error(err)
				return
			}
			if err := ack.Wait(context.Background(), 10*time.Second); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
