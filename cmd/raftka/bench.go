package main

// `raftka bench` measures a cluster the way kafka-producer-perf-test.sh and
// kafka-consumer-perf-test.sh do: produce, consume, and end-to-end latency
// at a fixed rate. Every run is bounded by --records and a time limit.
// Latency percentiles come from an HdrHistogram in microseconds.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

const mib = 1 << 20

// maxBenchTime bounds a run given only --records, so a stalled cluster
// cannot keep a benchmark (or make bench) running forever.
const maxBenchTime = 10 * time.Minute

func benchFlags(extra ...cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		bootstrapFlag(),
		&cli.StringFlag{Name: "topic", Usage: "topic to use (required)"},
		&cli.Int64Flag{Name: "records", Usage: "number of records (give this, --duration, or both)"},
		&cli.DurationFlag{Name: "duration", Usage: "how long to run (give this, --records, or both)"},
		&cli.IntFlag{Name: "record-size", Value: 100, Usage: "value size in bytes"},
		&cli.IntFlag{Name: "partitions", Usage: "create the topic with this many partitions if it is missing (0: the broker default)"},
		&cli.IntFlag{Name: "replication-factor", Value: -1, Usage: "replication factor when creating the topic (-1: the broker default)"},
		&cli.BoolFlag{Name: "json", Usage: "print the final result as one JSON object (progress goes to standard error)"},
	}, extra...)
}

func producerBenchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "acks", Value: "all", Usage: "all (-1), 1 or 0"},
		&cli.DurationFlag{Name: "linger", Value: 5 * time.Millisecond, Usage: "how long a batch waits for more records"},
		&cli.IntFlag{Name: "batch-max-bytes", Usage: "largest batch kgo builds per partition (0: kgo's default, 1 MiB)"},
		&cli.StringFlag{Name: "compression", Value: "none", Usage: "none, gzip, snappy, lz4 or zstd"},
	}
}

func init() {
	register(&cli.Command{
		Name:  "bench",
		Usage: "measure produce and consume throughput and latency (like kafka-producer-perf-test.sh)",
		Subcommands: []*cli.Command{
			{
				Name:  "produce",
				Usage: "produce records as fast as allowed and report records/s, MB/s and latency percentiles",
				Flags: benchFlags(append(producerBenchFlags(),
					&cli.Float64Flag{Name: "throughput", Value: -1, Usage: "records per second cap (-1: none)"},
					&cli.StringFlag{Name: "payload", Value: "text", Usage: "text: every record carries one random-text value; " +
						"events: records cycle through 4096 distinct JSON event values that compress about as application data does (for compressed runs)"},
					&cli.IntFlag{Name: "transaction-records", Usage: "produce in transactions of this many records, each committed before the next (0: no transactions; --throughput is ignored)"},
					&cli.StringFlag{Name: "transactional-id", Value: "raftka-bench", Usage: "with --transaction-records: the producer's transactional.id (with --transactional-producers above 1, each producer's id is it with -0, -1 ... appended)"},
					&cli.IntFlag{Name: "transactional-producers", Value: 1, Usage: "with --transaction-records: this many transactional producers at once, each with its own id, client and transactions one after the other; the figures are their sums"})...),
				Action: benchProduce,
			},
			{
				Name:  "consume",
				Usage: "read the topic from the beginning and report records/s and MB/s",
				Flags: benchFlags(&cli.DurationFlag{Name: "idle-timeout", Value: 10 * time.Second, Usage: "stop when no record arrived for this long"},
					&cli.StringFlag{Name: "isolation-level", Value: "read_uncommitted", Usage: "read_uncommitted or read_committed (stops at the last stable offset, skips aborted records)"}),
				Action: benchConsume,
			},
			{
				Name:  "e2e",
				Usage: "produce at a fixed rate with linger 0, consume in the same process, and report produce-to-consume latency",
				Flags: benchFlags(
					&cli.StringFlag{Name: "acks", Value: "all", Usage: "all (-1), 1 or 0"},
					&cli.Float64Flag{Name: "throughput", Value: 1000, Usage: "records per second (must be positive)"},
					&cli.StringFlag{Name: "compression", Value: "none", Usage: "none, gzip, snappy, lz4 or zstd"},
					&cli.DurationFlag{Name: "warmup", Value: time.Second, Usage: "produce and consume at the same rate for this long before measuring (0: measure from the first record)"},
				),
				Action: benchE2E,
			},
			benchCommitCommand(),
			benchTopicsCommand(),
			benchKfakeCommand(),
			benchConnectCommand(),
		},
	})
}

// benchPlan is what every bench subcommand checks first.
type benchPlan struct {
	topic      string
	records    int64         // math.MaxInt64 when only --duration was given
	duration   time.Duration // the run's time bound; see start
	deadline   time.Time     // set by start
	recordSize int
	json       bool
	out        io.Writer // final result
	progress   io.Writer // per-second lines
}

// start fixes the deadline once setup (topic creation, connections) is
// done, so --duration measures load, not setup.
func (p *benchPlan) start() time.Time {
	now := time.Now()
	p.deadline = now.Add(p.duration)
	return now
}

func newBenchPlan(c *cli.Context) (benchPlan, error) {
	topic, err := requireTopic(c)
	if err != nil {
		return benchPlan{}, err
	}
	p := benchPlan{topic: topic, records: c.Int64("records"), recordSize: c.Int("record-size"), json: c.Bool("json"), out: c.App.Writer, progress: c.App.Writer}
	d := c.Duration("duration")
	switch {
	case p.records < 0 || d < 0:
		return p, fmt.Errorf("%s: --records and --duration must not be negative", c.Command.FullName())
	case p.records == 0 && d == 0:
		return p, fmt.Errorf("%s: give --records or --duration", c.Command.FullName())
	case p.records == 0:
		p.records = math.MaxInt64
	}
	if d == 0 || d > maxBenchTime {
		d = maxBenchTime
	}
	p.duration = d
	if p.recordSize < 0 || p.recordSize > 64*mib {
		return p, fmt.Errorf("%s: --record-size %d: want 0 to %d bytes", c.Command.FullName(), p.recordSize, 64*mib)
	}
	if p.json {
		p.progress = c.App.ErrWriter
	}
	return p, nil
}

// ensureTopic creates the topic when it is missing and waits until every
// partition has a leader, so the first records do not measure topic
// creation. It asks with plain Metadata requests: kadm's lookups go through
// kgo's metadata cache, which may keep a "no such topic" answer for 5 s.
func ensureTopic(ctx context.Context, cl *kgo.Client, topic string, partitions, rf int, notes io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	md, err := fetchMetadata(ctx, cl, []string{topic})
	if err != nil {
		return fmt.Errorf("looking up topic %s: %w", topic, err)
	}
	if len(md.Topics) == 1 && md.Topics[0].ErrorCode == 0 {
		if n := len(md.Topics[0].Partitions); partitions > 0 && n != partitions {
			fmt.Fprintf(notes, "topic %s exists with %d partitions; --partitions %d ignored\n", topic, n, partitions)
		}
	} else {
		p := int32(partitions)
		if p <= 0 {
			p = -1
		}
		// kadm returns the topic's error as err too. TOPIC_ALREADY_EXISTS is
		// no failure: the broker asked may not have applied a creation (by
		// another client, moments ago) that the controller already knows.
		resp, err := kadm.NewClient(cl).CreateTopic(ctx, p, int16(rf), nil, topic)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			if resp.ErrMessage != "" {
				return fmt.Errorf("creating topic %s: %w: %s", topic, err, resp.ErrMessage)
			}
			return fmt.Errorf("creating topic %s: %w", topic, err)
		}
	}
	for {
		md, err := fetchMetadata(ctx, cl, []string{topic})
		if err == nil && len(md.Topics) == 1 && allLed(md.Topics[0]) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s has no leader for every partition after 30s", topic)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func allLed(t kmsg.MetadataResponseTopic) bool {
	if t.ErrorCode != 0 || len(t.Partitions) == 0 {
		return false
	}
	for _, p := range t.Partitions {
		if p.Leader < 0 || p.ErrorCode != 0 {
			return false
		}
	}
	return true
}

// latencyStats accumulates latencies for the whole run (an HdrHistogram)
// and for the current progress window. Callbacks from kgo's goroutines and
// the progress printer share it, hence the mutex.
type latencyStats struct {
	mu       sync.Mutex
	hist     *hdrhistogram.Histogram
	count    int64
	bytes    int64
	errors   int64
	firstErr error
	win      struct{ count, bytes, latSum, latMax int64 }
	gaps     ackGaps
}

// ackGaps keeps the longest silence between consecutive successful
// acknowledgements, across the run and within any one partition. A leader
// failover shows up here: the partitions it led stop acknowledging until a
// new leader answers, and once kgo's buffer is full of their records the
// other partitions stop too. Memory is one timestamp per partition.
type ackGaps struct {
	last     time.Time
	longest  time.Duration
	partLast []time.Time // indexed by partition
	partLong time.Duration
}

// maxGapPartitions bounds partLast: partitions above it still count for the
// overall gap but are not tracked one by one.
const maxGapPartitions = 1 << 16

// observe notes an acknowledgement at now. Callers pass non-decreasing
// times (latencyStats reads the clock under its lock); an earlier time is
// ignored rather than counted as a negative gap.
func (g *ackGaps) observe(now time.Time, partition int32) {
	if !g.last.IsZero() {
		if now.Before(g.last) {
			return
		}
		g.longest = max(g.longest, now.Sub(g.last))
	}
	g.last = now
	if partition < 0 || partition >= maxGapPartitions {
		return
	}
	if int(partition) >= len(g.partLast) {
		g.partLast = append(g.partLast, make([]time.Time, int(partition)+1-len(g.partLast))...)
	}
	if prev := g.partLast[partition]; !prev.IsZero() {
		g.partLong = max(g.partLong, now.Sub(prev))
	}
	g.partLast[partition] = now
}

func newLatencyStats() *latencyStats {
	// 1 µs to 10 minutes with three significant digits.
	return &latencyStats{hist: hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)}
}

func (s *latencyStats) record(lat time.Duration, n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(lat, n, err)
}

// recordAck is record for a produce acknowledgement from partition; a
// successful one also feeds the gaps between acknowledgements.
func (s *latencyStats) recordAck(lat time.Duration, n int, partition int32, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.gaps.observe(time.Now(), partition)
	}
	s.add(lat, n, err)
}

// add needs s.mu held.
func (s *latencyStats) add(lat time.Duration, n int, err error) {
	if err != nil {
		s.errors++
		if s.firstErr == nil {
			s.firstErr = err
		}
		return
	}
	us := max(lat.Microseconds(), 1)
	// Only a latency past the histogram's 10-minute top fails; no run lasts
	// that long, so dropping it loses nothing.
	_ = s.hist.RecordValue(us)
	s.count++
	s.bytes += int64(n)
	s.win.count++
	s.win.bytes += int64(n)
	s.win.latSum += us
	s.win.latMax = max(s.win.latMax, us)
}

// takeWindow returns and resets the progress window.
func (s *latencyStats) takeWindow() (count, bytes int64, avgMs, maxMs float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.win
	s.win = struct{ count, bytes, latSum, latMax int64 }{}
	if w.count > 0 {
		avgMs = float64(w.latSum) / float64(w.count) / 1000
	}
	return w.count, w.bytes, avgMs, float64(w.latMax) / 1000
}

// everySecond calls fn once a second until the returned stop is called;
// stop waits for the goroutine, so the caller's final line comes last, and
// may be called more than once.
func everySecond(fn func(elapsed time.Duration)) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				fn(now.Sub(last))
				last = now
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }); <-exited }
}

// benchResult is the final figure of any bench run; fields a mode does not
// measure are left out of the JSON. It stays flat so scripts can read it
// without a JSON parser.
type benchResult struct {
	Mode          string  `json:"mode"`
	Topic         string  `json:"topic"`
	Records       int64   `json:"records"`
	Errors        int64   `json:"errors"`
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
	RecordSize    int     `json:"record_size"`
	LatAvgMs      float64 `json:"latency_avg_ms,omitempty"`
	LatP50Ms      float64 `json:"latency_p50_ms,omitempty"`
	LatP99Ms      float64 `json:"latency_p99_ms,omitempty"`
	LatP999Ms     float64 `json:"latency_p999_ms,omitempty"`
	LatMaxMs      float64 `json:"latency_max_ms,omitempty"`
	E2EAvgMs      float64 `json:"e2e_avg_ms,omitempty"`
	E2EP50Ms      float64 `json:"e2e_p50_ms,omitempty"`
	E2EP99Ms      float64 `json:"e2e_p99_ms,omitempty"`
	E2EP999Ms     float64 `json:"e2e_p999_ms,omitempty"`
	E2EMaxMs      float64 `json:"e2e_max_ms,omitempty"`
	// Produce only: the longest time without a successful acknowledgement
	// between two of them, overall and within one partition.
	MaxAckGapMs          float64 `json:"max_ack_gap_ms,omitempty"`
	MaxPartitionAckGapMs float64 `json:"max_partition_ack_gap_ms,omitempty"`
	// Transactional produce only: committed transactions, their rate, and
	// the EndTxn (commit) latency.
	Transactions int64   `json:"transactions,omitempty"`
	TxnPerSec    float64 `json:"transactions_per_sec,omitempty"`
	EndTxnP50Ms  float64 `json:"end_txn_p50_ms,omitempty"`
	EndTxnP99Ms  float64 `json:"end_txn_p99_ms,omitempty"`
	// Commit only (records counts the OffsetCommit requests; latency is
	// theirs): partition offsets per request, requests and offsets per
	// second.
	OffsetsPerCommit int     `json:"offsets_per_commit,omitempty"`
	CommitsPerSec    float64 `json:"commits_per_sec,omitempty"`
	OffsetsPerSec    float64 `json:"offsets_per_sec,omitempty"`
	// Topics only (records counts the topics created; latency is the
	// CreateTopics requests').
	TopicsPerSec float64 `json:"topics_per_sec,omitempty"`
}

func durationMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (r *benchResult) rates(elapsed time.Duration) {
	r.Seconds = elapsed.Seconds()
	if r.Seconds > 0 {
		r.RecordsPerSec = float64(r.Records) / r.Seconds
		r.MBPerSec = float64(r.Bytes) / mib / r.Seconds
	}
}

// percentiles reads avg, p50, p99, p99.9 and max in milliseconds.
func percentiles(h *hdrhistogram.Histogram) (avg, p50, p99, p999, mx float64) {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return h.Mean() / 1000, ms(h.ValueAtQuantile(50)), ms(h.ValueAtQuantile(99)), ms(h.ValueAtQuantile(99.9)), ms(h.Max())
}

func (p benchPlan) report(r benchResult, human string) error {
	if p.json {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.out, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintln(p.out, human)
	return err
}

// payload is the value every produce-bench record carries. Like Kafka's
// perf test it is random printable text, so compression has something
// realistic but not trivial to work on.
func payload(n int) []byte {
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return b
}

// eventPayloads are n distinct values of size bytes each: JSON events
// whose field names and vocabulary repeat and whose ids, times and numbers
// vary, as application events and logs do. A batch of them compresses a
// few times with lz4 or zstd, where copies of one random value (payload)
// compress across records to almost nothing, which would make a
// compressed produce bench measure a workload no one has.
func eventPayloads(size, n int) [][]byte {
	rng := rand.New(rand.NewPCG(uint64(size), uint64(n)))
	events := []string{"page_view", "add_to_cart", "checkout", "login", "search", "logout", "refund", "profile_update"}
	pages := []string{"/", "/cart", "/search?q=shoes", "/product/8842", "/account", "/checkout/payment", "/help"}
	statuses := []int{200, 200, 200, 201, 304, 404, 500}
	out := make([][]byte, n)
	for i := range out {
		var v []byte
		for len(v) < size {
			v = fmt.Appendf(v, `{"ts":%d,"user_id":%d,"session":"%016x","event":"%s","page":"%s","latency_ms":%d,"status":%d},`,
				1_700_000_000_000+rng.Int64N(1e9), rng.IntN(1_000_000), rng.Uint64(), events[rng.IntN(len(events))],
				pages[rng.IntN(len(pages))], rng.IntN(3000), statuses[rng.IntN(len(statuses))])
		}
		out[i] = v[:size]
	}
	return out
}

// pacer spaces sends to a records-per-second target; a zero or negative
// rate does not wait.
type pacer struct {
	start time.Time
	rate  float64
}

// wait sleeps until record i is due, or until ctx ends or deadline passes;
// it reports whether the caller should go on.
func (p pacer) wait(ctx context.Context, i int64, deadline time.Time) bool {
	if p.rate <= 0 {
		return true
	}
	due := p.start.Add(time.Duration(float64(i) / p.rate * float64(time.Second)))
	if due.After(deadline) {
		return false
	}
	d := time.Until(due)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func benchProduce(c *cli.Context) error {
	plan, err := newBenchPlan(c)
	if err != nil {
		return err
	}
	opts, err := producerOpts(c.String("acks"), c.String("compression"), c.Duration("linger"), false)
	if err != nil {
		return err
	}
	if n := c.Int("batch-max-bytes"); n != 0 {
		if n < 1024 || n > 256*mib {
			return fmt.Errorf("bench produce: --batch-max-bytes %d: want 1024 to %d", n, 256*mib)
		}
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(n)))
	}
	var values [][]byte
	switch c.String("payload") {
	case "text":
		values = [][]byte{payload(plan.recordSize)}
	case "events":
		values = eventPayloads(plan.recordSize, 4096)
	default:
		return fmt.Errorf("bench produce: --payload %q: want text or events", c.String("payload"))
	}
	opts = append(opts, kgo.DefaultProduceTopic(plan.topic))
	perTxn := c.Int("transaction-records")
	if perTxn < 0 {
		return fmt.Errorf("bench produce: --transaction-records %d: want 0 (no transactions) or more", perTxn)
	}
	nTxn := c.Int("transactional-producers")
	if perTxn > 0 {
		if c.String("acks") != "all" && c.String("acks") != "-1" {
			return errors.New("bench produce: transactions need --acks all")
		}
		if nTxn < 1 || nTxn > 1024 {
			return fmt.Errorf("bench produce: --transactional-producers %d: want 1 to 1024", nTxn)
		}
	}
	txnID := func(i int) string {
		if nTxn == 1 {
			return c.String("transactional-id")
		}
		return fmt.Sprintf("%s-%d", c.String("transactional-id"), i)
	}
	clOpts := opts
	if perTxn > 0 {
		clOpts = append(clOpts[:len(clOpts):len(clOpts)], kgo.TransactionalID(txnID(0)))
	}
	cl, err := newClient(c, clOpts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, stop := signalContext(c.Context)
	defer stop()
	if err := ensureTopic(ctx, cl, plan.topic, c.Int("partitions"), c.Int("replication-factor"), c.App.ErrWriter); err != nil {
		return err
	}
	if perTxn > 0 {
		producers := []*kgo.Client{cl}
		for i := 1; i < nTxn; i++ {
			pc, err := newClient(c, append(opts[:len(opts):len(opts)], kgo.TransactionalID(txnID(i)))...)
			if err != nil {
				return err
			}
			defer pc.Close()
			producers = append(producers, pc)
		}
		res, err := runTxnProduce(ctx, producers, plan, values, perTxn)
		if rerr := plan.report(res, fmt.Sprintf("%d records sent in %d transactions, %.1f records/sec (%.2f MB/sec), %.1f transactions/sec, EndTxn %.2f ms 50th, %.2f ms 99th.",
			res.Records, res.Transactions, res.RecordsPerSec, res.MBPerSec, res.TxnPerSec, res.EndTxnP50Ms, res.EndTxnP99Ms)); err == nil {
			err = rerr
		}
		return err
	}
	res, err := runProduce(ctx, cl, plan, values, c.Float64("throughput"))
	if rerr := plan.report(res, fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %.2f ms 50th, %.2f ms 99th, %.2f ms 99.9th, %.2f ms max ack gap (%.2f ms in one partition).",
		res.Records, res.RecordsPerSec, res.MBPerSec, res.LatAvgMs, res.LatMaxMs, res.LatP50Ms, res.LatP99Ms, res.LatP999Ms, res.MaxAckGapMs, res.MaxPartitionAckGapMs)); err == nil {
		err = rerr
	}
	return err
}

// runProduce sends up to plan.records records before plan.deadline, their
// values cycling through values, and waits for every acknowledgement, at
// most a minute past the sends.
func runProduce(ctx context.Context, cl *kgo.Client, plan benchPlan, values [][]byte, rate float64) (benchResult, error) {
	stats := newLatencyStats()
	start := plan.start()
	stopProgress := everySecond(func(window time.Duration) {
		n, b, avg, mx := stats.takeWindow()
		s := window.Seconds()
		fmt.Fprintf(plan.progress, "%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.\n",
			n, float64(n)/s, float64(b)/mib/s, avg, mx)
	})
	pace := pacer{start: start, rate: rate}
	var sent int64
	for sent < plan.records && ctx.Err() == nil && time.Now().Before(plan.deadline) {
		if !pace.wait(ctx, sent, plan.deadline) {
			break
		}
		at := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: values[sent%int64(len(values))]}, func(r *kgo.Record, err error) {
			stats.recordAck(time.Since(at), len(r.Value)+len(r.Key), r.Partition, err)
		})
		sent++
	}
	fctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	flushErr := cl.Flush(fctx)
	cancel()
	elapsed := time.Since(start)
	stopProgress()

	stats.mu.Lock()
	defer stats.mu.Unlock()
	res := benchResult{Mode: "produce", Topic: plan.topic, Records: stats.count, Errors: stats.errors, Bytes: stats.bytes, RecordSize: plan.recordSize}
	res.rates(elapsed)
	res.LatAvgMs, res.LatP50Ms, res.LatP99Ms, res.LatP999Ms, res.LatMaxMs = percentiles(stats.hist)
	res.MaxAckGapMs = durationMs(stats.gaps.longest)
	res.MaxPartitionAckGapMs = durationMs(stats.gaps.partLong)
	switch {
	case flushErr != nil:
		return res, fmt.Errorf("bench produce: %d records still unacknowledged after 60s: %w", sent-stats.count-stats.errors, flushErr)
	case stats.errors > 0:
		return res, fmt.Errorf("bench produce: %d of %d records failed; first error: %w", stats.errors, sent, stats.firstErr)
	}
	return res, nil
}

// runTxnProduce sends transactions of perTxn records, each producer
// committing one before it begins the next (a transactional producer has
// one open at a time), the producers at once, until plan.records (over
// all of them) or plan.deadline; the EndTxn latency is the commit's, from
// the flush of its records to its answer.
func runTxnProduce(ctx context.Context, producers []*kgo.Client, plan benchPlan, values [][]byte, perTxn int) (benchResult, error) {
	stats := newLatencyStats()
	ends := newLatencyStats()
	start := plan.start()
	stopProgress := everySecond(func(window time.Duration) {
		n, b, _, _ := stats.takeWindow()
		s := window.Seconds()
		fmt.Fprintf(plan.progress, "%d records sent, %.1f records/sec (%.2f MB/sec).\n", n, float64(n)/s, float64(b)/mib/s)
	})
	var (
		sent, txns atomic.Int64
		errMu      sync.Mutex
		runErr     error
		wg         sync.WaitGroup
	)
	fail := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		if runErr == nil {
			runErr = fmt.Errorf("bench produce: transaction %d: %w", txns.Load()+1, err)
		}
	}
	failed := func() bool {
		errMu.Lock()
		defer errMu.Unlock()
		return runErr != nil
	}
	for _, cl := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed() && ctx.Err() == nil && time.Now().Before(plan.deadline) {
				first := sent.Add(int64(perTxn)) - int64(perTxn)
				if first >= plan.records {
					return
				}
				if err := cl.BeginTransaction(); err != nil {
					fail(err)
					return
				}
				for k := range int64(perTxn) {
					at := time.Now()
					cl.Produce(ctx, &kgo.Record{Value: values[(first+k)%int64(len(values))]}, func(r *kgo.Record, err error) {
						stats.recordAck(time.Since(at), len(r.Value)+len(r.Key), r.Partition, err)
					})
				}
				if err := cl.Flush(ctx); err != nil {
					fail(err)
					return
				}
				at := time.Now()
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					fail(err)
					return
				}
				ends.record(time.Since(at), 0, nil)
				txns.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()
	stats.mu.Lock()
	defer stats.mu.Unlock()
	res := benchResult{Mode: "produce", Topic: plan.topic, Records: stats.count, Errors: stats.errors, Bytes: stats.bytes, RecordSize: plan.recordSize, Transactions: txns.Load()}
	res.rates(elapsed)
	if res.Seconds > 0 {
		res.TxnPerSec = float64(res.Transactions) / res.Seconds
	}
	res.LatAvgMs, res.LatP50Ms, res.LatP99Ms, res.LatP999Ms, res.LatMaxMs = percentiles(stats.hist)
	ends.mu.Lock()
	_, res.EndTxnP50Ms, res.EndTxnP99Ms, _, _ = percentiles(ends.hist)
	ends.mu.Unlock()
	switch {
	case runErr != nil:
		return res, runErr
	case stats.errors > 0:
		return res, fmt.Errorf("bench produce: %d of %d records failed; first error: %w", stats.errors, stats.count+stats.errors, stats.firstErr)
	}
	return res, nil
}

func benchConsume(c *cli.Context) error {
	plan, err := newBenchPlan(c)
	if err != nil {
		return err
	}
	idle := c.Duration("idle-timeout")
	if idle <= 0 {
		return errors.New("bench consume: --idle-timeout must be positive")
	}
	iso := kgo.ReadUncommitted()
	switch c.String("isolation-level") {
	case "read_uncommitted":
	case "read_committed":
		iso = kgo.ReadCommitted()
	default:
		return fmt.Errorf("bench consume: --isolation-level %q: want read_uncommitted or read_committed", c.String("isolation-level"))
	}
	cl, err := newClient(c, kgo.ConsumeTopics(plan.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchIsolationLevel(iso))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, stop := signalContext(c.Context)
	defer stop()

	var mu sync.Mutex
	var winCount, winBytes int64
	stopProgress := everySecond(func(window time.Duration) {
		mu.Lock()
		n, b := winCount, winBytes
		winCount, winBytes = 0, 0
		mu.Unlock()
		s := window.Seconds()
		fmt.Fprintf(plan.progress, "%d records consumed, %.1f records/sec (%.2f MB/sec).\n", n, float64(n)/s, float64(b)/mib/s)
	})
	start := plan.start()
	res := benchResult{Mode: "consume", Topic: plan.topic, RecordSize: plan.recordSize}
	last := start
	for res.Records < plan.records && ctx.Err() == nil && time.Now().Before(plan.deadline) {
		pctx, cancel := context.WithDeadline(ctx, minTime(plan.deadline, time.Now().Add(idle)))
		fetches := cl.PollRecords(pctx, int(min(plan.records-res.Records, 1<<20)))
		cancel()
		var n, b int64
		fetches.EachRecord(func(r *kgo.Record) { n++; b += int64(len(r.Value) + len(r.Key)) })
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				logger.Warn().Str("topic", fe.Topic).Int32("partition", fe.Partition).Err(fe.Err).Msg("fetch error")
			}
		}
		if n == 0 {
			if pctx.Err() != nil && time.Since(last) >= idle {
				break
			}
			continue
		}
		last = time.Now()
		res.Records += n
		res.Bytes += b
		mu.Lock()
		winCount += n
		winBytes += b
		mu.Unlock()
	}
	stopProgress()
	// The rate counts up to the last record: time spent waiting for records
	// that never came is not throughput.
	res.rates(last.Sub(start))
	var shortErr error
	if plan.records != math.MaxInt64 && res.Records < plan.records {
		shortErr = fmt.Errorf("bench consume: only %d of %d records arrived (idle for %s or out of time)", res.Records, plan.records, idle)
	}
	if err := plan.report(res, fmt.Sprintf("%d records consumed, %.1f records/sec (%.2f MB/sec) in %.2f s.", res.Records, res.RecordsPerSec, res.MBPerSec, res.Seconds)); err != nil {
		return err
	}
	return shortErr
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
