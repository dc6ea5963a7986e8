package main

// `raftka bench commit` measures consumer offset commits (issue 18, P7):
// OffsetCommit requests of --partitions-per-commit partitions each, for
// --groups groups (spread over the coordinators), from --concurrency
// workers with one request in flight each (on --clients clients), either
// as fast as they go (partition offsets committed per second) or at a
// fixed --throughput of requests per second (the OffsetCommit latency
// percentiles). Commits are a standalone consumer's:
// generation -1 and no member, as kadm.CommitOffsets sends, for groups with
// no members.

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func benchCommitCommand() *cli.Command {
	return &cli.Command{
		Name:  "commit",
		Usage: "commit consumer offsets (OffsetCommit) and report partition offsets committed/s and commit latency",
		Flags: []cli.Flag{
			bootstrapFlag(),
			&cli.StringFlag{Name: "topic", Usage: "topic whose partitions the commits name (created if missing; required)"},
			&cli.IntFlag{Name: "partitions", Value: 100, Usage: "create the topic with this many partitions if it is missing"},
			&cli.IntFlag{Name: "replication-factor", Value: -1, Usage: "replication factor when creating the topic (-1: the broker default)"},
			&cli.IntFlag{Name: "partitions-per-commit", Value: 100, Usage: "partition offsets in each OffsetCommit (at most the topic's partitions)"},
			&cli.IntFlag{Name: "groups", Value: 16, Usage: "groups committed to (their coordinators spread over the nodes); worker n commits to group n mod --groups"},
			&cli.StringFlag{Name: "group-prefix", Value: "raftka-bench-commit", Usage: "groups are named <prefix>-<n>"},
			&cli.IntFlag{Name: "concurrency", Value: 16, Usage: "workers, each with one OffsetCommit in flight"},
			&cli.IntFlag{Name: "clients", Value: 1, Usage: "clients the workers are spread over, each with its own connections (--concurrency: one per worker, as that many consumers would commit)"},
			&cli.Float64Flag{Name: "throughput", Value: -1, Usage: "OffsetCommit requests per second (-1: as fast as --concurrency allows)"},
			&cli.Int64Flag{Name: "commits", Usage: "number of OffsetCommit requests (give this, --duration, or both)"},
			&cli.DurationFlag{Name: "duration", Usage: "how long to run (give this, --commits, or both)"},
			&cli.BoolFlag{Name: "json", Usage: "print the final result as one JSON object (progress goes to standard error)"},
		},
		Action: benchCommit,
	}
}

func benchCommit(c *cli.Context) error {
	topic, err := requireTopic(c)
	if err != nil {
		return err
	}
	commits, d := c.Int64("commits"), c.Duration("duration")
	switch {
	case commits < 0 || d < 0:
		return errors.New("bench commit: --commits and --duration must not be negative")
	case commits == 0 && d == 0:
		return errors.New("bench commit: give --commits or --duration")
	case commits == 0:
		commits = math.MaxInt64
	}
	if d == 0 || d > maxBenchTime {
		d = maxBenchTime
	}
	perCommit, groups, conc, clients := c.Int("partitions-per-commit"), c.Int("groups"), c.Int("concurrency"), c.Int("clients")
	if perCommit < 1 || groups < 1 || conc < 1 || clients < 1 {
		return errors.New("bench commit: --partitions-per-commit, --groups, --concurrency and --clients must be at least 1")
	}
	rate := c.Float64("throughput")
	plan := benchPlan{topic: topic, json: c.Bool("json"), out: c.App.Writer, progress: c.App.Writer}
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
	if err := ensureTopic(ctx, cl, topic, c.Int("partitions"), c.Int("replication-factor"), c.App.ErrWriter); err != nil {
		return err
	}
	md, err := fetchMetadata(ctx, cl, []string{topic})
	if err != nil {
		return fmt.Errorf("bench commit: looking up %s: %w", topic, err)
	}
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 {
		return fmt.Errorf("bench commit: topic %s is not served", topic)
	}
	topicID := md.Topics[0].TopicID
	perCommit = min(perCommit, len(md.Topics[0].Partitions))
	// A broker answers one connection's OffsetCommits one at a time, in
	// order, as Kafka does: workers sharing a client queue behind each
	// other on its connection to their coordinator, which is not what
	// that many consumers, each with its own connection, would see.
	cls := []*kgo.Client{cl}
	for range min(clients, conc) - 1 {
		more, err := newClient(c)
		if err != nil {
			return err
		}
		defer more.Close()
		cls = append(cls, more)
	}

	// Worker w commits to group w mod --groups, one request in flight,
	// reused (only the offsets change). A coordinator writes one group's
	// commits in order, so more workers than groups only queue.
	newRequest := func(g int) *kmsg.OffsetCommitRequest {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group = fmt.Sprintf("%s-%d", c.String("group-prefix"), g)
		req.Generation = -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		for p := range perCommit {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.LeaderEpoch = int32(p), -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	}

	stats := newLatencyStats()
	stopProgress := everySecond(func(window time.Duration) {
		n, _, avg, mx := stats.takeWindow()
		fmt.Fprintf(plan.progress, "%d commits, %.1f commits/sec, %.0f partition offsets/sec, %.2f ms avg latency, %.2f ms max.\n",
			n, float64(n)/window.Seconds(), float64(n)*float64(perCommit)/window.Seconds(), avg, mx)
	})
	defer stopProgress()

	start := time.Now()
	deadline := start.Add(d)
	pace := pacer{start: start, rate: rate}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		req := newRequest(w % groups)
		cl := cls[w%len(cls)]
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= commits || time.Now().After(deadline) || !pace.wait(ctx, i, deadline) {
					return
				}
				for j := range req.Topics[0].Partitions {
					req.Topics[0].Partitions[j].Offset = i
				}
				at := time.Now()
				resp, err := req.RequestWith(ctx, cl)
				if err == nil {
					err = offsetCommitError(resp)
				}
				stats.record(time.Since(at), perCommit, err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()

	res := benchResult{Mode: "commit", Topic: topic}
	stats.mu.Lock()
	res.Records, res.Errors = stats.count, stats.errors
	res.OffsetsPerCommit = perCommit
	res.LatAvgMs, res.LatP50Ms, res.LatP99Ms, res.LatP999Ms, res.LatMaxMs = percentiles(stats.hist)
	firstErr := stats.firstErr
	stats.mu.Unlock()
	res.rates(elapsed)
	res.CommitsPerSec = res.RecordsPerSec
	res.OffsetsPerSec = res.RecordsPerSec * float64(perCommit)
	res.RecordsPerSec, res.MBPerSec = 0, 0
	if err := plan.report(res, fmt.Sprintf("%d commits of %d partition offsets, %.1f commits/sec, %.0f partition offsets/sec, latency %.2f ms avg, %.2f ms 50th, %.2f ms 99th, %.2f ms 99.9th, %.2f ms max.",
		res.Records, perCommit, res.CommitsPerSec, res.OffsetsPerSec, res.LatAvgMs, res.LatP50Ms, res.LatP99Ms, res.LatP999Ms, res.LatMaxMs)); err != nil {
		return err
	}
	if res.Errors > 0 {
		return fmt.Errorf("bench commit: %d of %d commits failed; first error: %w", res.Errors, res.Errors+res.Records, firstErr)
	}
	return nil
}

// offsetCommitError is the first error an OffsetCommit answer carries for a
// partition.
func offsetCommitError(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}
