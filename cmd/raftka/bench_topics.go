package main

// `raftka bench topics` measures topic creation (issue 18, P6): --count
// topics named <prefix>-<n>, one CreateTopics request each, from
// --concurrency workers, reporting topics created per second and the
// CreateTopics latency; the topics are deleted afterwards unless --keep.

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func benchTopicsCommand() *cli.Command {
	return &cli.Command{
		Name:  "topics",
		Usage: "create topics, one CreateTopics request each, and report topics created/s and the request latency",
		Flags: []cli.Flag{
			bootstrapFlag(),
			&cli.IntFlag{Name: "count", Value: 200, Usage: "topics to create"},
			&cli.StringFlag{Name: "prefix", Value: "raftka-bench-topic", Usage: "topics are named <prefix>-<n>"},
			&cli.IntFlag{Name: "partitions", Value: 6, Usage: "partitions of each topic"},
			&cli.IntFlag{Name: "replication-factor", Value: -1, Usage: "replication factor (-1: the broker default)"},
			&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "workers, each with one CreateTopics in flight"},
			&cli.BoolFlag{Name: "keep", Usage: "leave the topics (by default they are deleted after the run)"},
			&cli.BoolFlag{Name: "json", Usage: "print the final result as one JSON object (progress goes to standard error)"},
		},
		Action: benchTopics,
	}
}

func benchTopics(c *cli.Context) error {
	count, conc, parts := c.Int("count"), c.Int("concurrency"), c.Int("partitions")
	if count < 1 || conc < 1 || parts < 1 {
		return errors.New("bench topics: --count, --concurrency and --partitions must be at least 1")
	}
	if count > 100_000 {
		return errors.New("bench topics: --count is at most 100000")
	}
	plan := benchPlan{json: c.Bool("json"), out: c.App.Writer, progress: c.App.Writer}
	if plan.json {
		plan.progress = c.App.ErrWriter
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, stop := signalContext(c.Context)
	defer stop()
	prefix := c.String("prefix")
	name := func(i int) string { return fmt.Sprintf("%s-%d", prefix, i) }

	stats := newLatencyStats()
	stopProgress := everySecond(func(window time.Duration) {
		n, _, avg, mx := stats.takeWindow()
		fmt.Fprintf(plan.progress, "%d topics created, %.1f topics/sec, %.2f ms avg latency, %.2f ms max.\n", n, float64(n)/window.Seconds(), avg, mx)
	})
	defer stopProgress()

	start := time.Now()
	deadline := start.Add(maxBenchTime)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) {
				i := int(next.Add(1) - 1)
				if i >= count {
					return
				}
				req := kmsg.NewPtrCreateTopicsRequest()
				req.TimeoutMillis = 30_000
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name(i), int32(parts), int16(c.Int("replication-factor"))
				req.Topics = append(req.Topics, rt)
				at := time.Now()
				resp, err := req.RequestWith(ctx, cl)
				if err == nil && len(resp.Topics) == 1 {
					err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
				}
				if err != nil {
					err = fmt.Errorf("creating %s: %w", name(i), err)
				}
				stats.record(time.Since(at), 0, err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()

	res := benchResult{Mode: "topics"}
	stats.mu.Lock()
	res.Records, res.Errors = stats.count, stats.errors
	res.LatAvgMs, res.LatP50Ms, res.LatP99Ms, res.LatP999Ms, res.LatMaxMs = percentiles(stats.hist)
	firstErr := stats.firstErr
	stats.mu.Unlock()
	res.rates(elapsed)
	res.TopicsPerSec, res.RecordsPerSec, res.MBPerSec = res.RecordsPerSec, 0, 0

	if !c.Bool("keep") {
		names := make([]string, count)
		for i := range names {
			names[i] = name(i)
		}
		adm := kadm.NewClient(cl)
		for len(names) > 0 && ctx.Err() == nil {
			n := min(len(names), 100)
			if _, err := adm.DeleteTopics(ctx, names[:n]...); err != nil {
				fmt.Fprintf(c.App.ErrWriter, "bench topics: deleting the topics: %v\n", err)
				break
			}
			names = names[n:]
		}
	}
	if err := plan.report(res, fmt.Sprintf("%d topics of %d partitions created, %.1f topics/sec, CreateTopics latency %.2f ms avg, %.2f ms 50th, %.2f ms 99th, %.2f ms max.",
		res.Records, parts, res.TopicsPerSec, res.LatAvgMs, res.LatP50Ms, res.LatP99Ms, res.LatMaxMs)); err != nil {
		return err
	}
	if res.Errors > 0 {
		return fmt.Errorf("bench topics: %d of %d creations failed; first error: %w", res.Errors, count, firstErr)
	}
	return nil
}
