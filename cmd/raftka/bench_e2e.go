package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// e2eTimestampBytes is the send time, nanoseconds since the epoch, at the
// start of every e2e record value. Producer and consumer share this process
// and so the clock.
const e2eTimestampBytes = 8

// e2eDrainTime bounds the wait for the last records after producing stops.
const e2eDrainTime = 10 * time.Second

func benchE2E(c *cli.Context) error {
	plan, err := newBenchPlan(c)
	if err != nil {
		return err
	}
	rate := c.Float64("throughput")
	if rate <= 0 || math.IsInf(rate, 0) || math.IsNaN(rate) {
		return fmt.Errorf("bench e2e: --throughput %v: want a positive records/s rate", rate)
	}
	if plan.recordSize < e2eTimestampBytes {
		plan.recordSize = e2eTimestampBytes
	}
	// Linger 0: every record goes out as soon as it can, which is what an
	// end-to-end latency figure is about.
	opts, err := producerOpts(c.String("acks"), c.String("compression"), 0, false)
	if err != nil {
		return err
	}
	prod, err := newClient(c, append(opts, kgo.DefaultProduceTopic(plan.topic))...)
	if err != nil {
		return err
	}
	defer prod.Close()
	ctx, stop := signalContext(c.Context)
	defer stop()
	if err := ensureTopic(ctx, prod, plan.topic, c.Int("partitions"), c.Int("replication-factor"), c.App.ErrWriter); err != nil {
		return err
	}
	// Start the consumer at the current end of every partition, looked up
	// before producing, so it sees exactly this run's records.
	ends, err := endOffsets(ctx, prod, plan.topic)
	if err != nil {
		return err
	}
	cons, err := newClient(c, kgo.ConsumePartitions(ends), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer cons.Close()

	prodStats, e2e := newLatencyStats(), newLatencyStats()
	stopProgress := everySecond(func(window time.Duration) {
		n, _, avg, mx := e2e.takeWindow()
		fmt.Fprintf(plan.progress, "%d records received, %.1f records/sec, %.2f ms avg end-to-end latency, %.2f ms max.\n", n, float64(n)/window.Seconds(), avg, mx)
	})
	defer stopProgress()

	// The consumer runs until it saw every acknowledged record, or the
	// producer is done and nothing came for e2eDrainTime.
	//
	// Records sent before measureFrom are the warm-up: the first records of
	// a run pay for connections, producer id, metadata and fetch sessions,
	// a cost of starting the client rather than of the path being
	// measured (benchmark harnesses such as OpenMessaging's warm up too).
	// They are consumed and counted for the drain but not measured.
	var (
		wg          sync.WaitGroup
		mu          sync.Mutex
		produced    int64 = -1 // acknowledged count, known once producing ends
		drainFrom   time.Time
		measureFrom atomic.Int64 // UnixNano; records sent before it are warm-up
		warmAcked   atomic.Int64
	)
	measureFrom.Store(math.MaxInt64)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var got int64
		for ctx.Err() == nil {
			mu.Lock()
			want, from := produced, drainFrom
			mu.Unlock()
			if want >= 0 && (got >= want || time.Since(from) > e2eDrainTime) {
				return
			}
			pctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
			fetches := cons.PollFetches(pctx)
			cancel()
			now := time.Now()
			fetches.EachRecord(func(r *kgo.Record) {
				if len(r.Value) < e2eTimestampBytes {
					e2e.record(0, 0, fmt.Errorf("record at %s-%d@%d is not from this run: %d-byte value", r.Topic, r.Partition, r.Offset, len(r.Value)))
					return
				}
				sent := int64(binary.BigEndian.Uint64(r.Value))
				got++
				if sent < measureFrom.Load() {
					return
				}
				e2e.record(now.Sub(time.Unix(0, sent)), len(r.Value), nil)
				if want >= 0 {
					mu.Lock()
					drainFrom = now
					mu.Unlock()
				}
			})
		}
	}()

	send := func(done func(r *kgo.Record, at time.Time, err error)) {
		v := make([]byte, plan.recordSize)
		at := time.Now()
		binary.BigEndian.PutUint64(v, uint64(at.UnixNano()))
		prod.Produce(ctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) { done(r, at, err) })
	}
	if warmup := c.Duration("warmup"); warmup > 0 {
		wstart := time.Now()
		wend := wstart.Add(warmup)
		wpace := pacer{start: wstart, rate: rate}
		for n := int64(0); ctx.Err() == nil && time.Now().Before(wend); n++ {
			if !wpace.wait(ctx, n, wend) {
				break
			}
			send(func(_ *kgo.Record, _ time.Time, err error) {
				if err == nil {
					warmAcked.Add(1)
				}
			})
		}
	}
	start := plan.start()
	measureFrom.Store(start.UnixNano())
	pace := pacer{start: start, rate: rate}
	var sent int64
	for sent < plan.records && ctx.Err() == nil && time.Now().Before(plan.deadline) {
		if !pace.wait(ctx, sent, plan.deadline) {
			break
		}
		send(func(r *kgo.Record, at time.Time, err error) {
			prodStats.record(time.Since(at), len(r.Value), err)
		})
		sent++
	}
	// The rate is over the sending window; the drain below is not load.
	sendTime := time.Since(start)
	fctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	flushErr := prod.Flush(fctx)
	cancel()
	prodStats.mu.Lock()
	acked := prodStats.count
	prodStats.mu.Unlock()
	mu.Lock()
	produced, drainFrom = acked+warmAcked.Load(), time.Now()
	mu.Unlock()
	wg.Wait()
	stopProgress()

	res := benchResult{Mode: "e2e", Topic: plan.topic, RecordSize: plan.recordSize}
	prodStats.mu.Lock()
	res.Errors = prodStats.errors
	res.LatAvgMs, res.LatP50Ms, res.LatP99Ms, res.LatP999Ms, res.LatMaxMs = percentiles(prodStats.hist)
	firstProdErr := prodStats.firstErr
	prodStats.mu.Unlock()
	e2e.mu.Lock()
	res.Records, res.Bytes = e2e.count, e2e.bytes
	res.E2EAvgMs, res.E2EP50Ms, res.E2EP99Ms, res.E2EP999Ms, res.E2EMaxMs = percentiles(e2e.hist)
	foreign := e2e.firstErr
	e2e.mu.Unlock()
	res.rates(sendTime)

	var runErr error
	switch {
	case flushErr != nil:
		runErr = fmt.Errorf("bench e2e: records still unacknowledged after 60s: %w", flushErr)
	case res.Errors > 0:
		runErr = fmt.Errorf("bench e2e: %d of %d records failed to produce; first error: %w", res.Errors, sent, firstProdErr)
	case foreign != nil:
		runErr = fmt.Errorf("bench e2e: %w (use a topic of its own)", foreign)
	case res.Records < acked:
		runErr = fmt.Errorf("bench e2e: only %d of %d acknowledged records were consumed within %s", res.Records, acked, e2eDrainTime)
	}
	if err := plan.report(res, fmt.Sprintf("%d records, %.1f records/sec, end-to-end latency %.2f ms avg, %.2f ms 50th, %.2f ms 99th, %.2f ms 99.9th, %.2f ms max; produce latency %.2f ms 50th, %.2f ms 99th.",
		res.Records, res.RecordsPerSec, res.E2EAvgMs, res.E2EP50Ms, res.E2EP99Ms, res.E2EP999Ms, res.E2EMaxMs, res.LatP50Ms, res.LatP99Ms)); err != nil {
		return err
	}
	return runErr
}

// endOffsets returns the end offset of every partition of topic, retried
// briefly because a just-created topic may not be known to every broker.
func endOffsets(ctx context.Context, cl *kgo.Client, topic string) (map[string]map[int32]kgo.Offset, error) {
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		listed, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = listed.Error()
		}
		if err == nil {
			out := map[string]map[int32]kgo.Offset{topic: {}}
			listed.Each(func(o kadm.ListedOffset) { out[topic][o.Partition] = kgo.NewOffset().At(o.Offset) })
			if len(out[topic]) > 0 {
				return out, nil
			}
			err = errors.New("no partitions")
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("listing end offsets of %s: %w", topic, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
