package invariants

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Recorder keeps every acknowledgement and failure of a run. Any goroutine
// may call it (franz-go calls Ack from its promise goroutines).
type Recorder struct {
	mu      sync.Mutex
	acks    []Ack
	failed  int
	lastErr error
}

// Add records one acknowledgement.
func (r *Recorder) Add(a Ack) {
	r.mu.Lock()
	r.acks = append(r.acks, a)
	r.mu.Unlock()
}

// Fail records a produce that ended in an error: the record may or may not
// be in the log.
func (r *Recorder) Fail(err error) {
	r.mu.Lock()
	r.failed++
	r.lastErr = err
	r.mu.Unlock()
}

// Acks returns a copy of the acknowledgements so far, in arrival order.
func (r *Recorder) Acks() []Ack {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.acks)
}

// Failed is the number of failed produces and the last error.
func (r *Recorder) Failed() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed, r.lastErr
}

// Count is the number of acknowledgements so far.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acks)
}

// CountSince is the number of acknowledgements for partition (every
// partition when it is negative) that arrived after t.
func (r *Recorder) CountSince(partition int32, t time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i := len(r.acks) - 1; i >= 0 && r.acks[i].At.After(t); i-- {
		if partition < 0 || r.acks[i].Partition == partition {
			n++
		}
	}
	return n
}

// ProducerConfig describes one producing client.
type ProducerConfig struct {
	Seeds      []string
	Topic      string
	Partitions int32  // records go round-robin to partitions 0..Partitions-1
	Name       string // the producer name in every value; no '/' or ';'
	Rate       int    // records per second; 0 means 200
	MaxRecords int    // stop after this many records; 0 means 1,000,000
	ValueSize  int    // bytes per value (at least the id); 0 means 64
	// Opts are added to the client's options after the defaults: an
	// idempotent, acks=all producer whose buffer holds about ten seconds
	// of records, so one stalled partition does not block the others
	// (franz-go's buffer limit is per client), and whose requests to a
	// frozen broker time out in seconds rather than franz-go's 20.
	Opts []kgo.Opt
}

// Producer writes uniquely valued records at a steady rate and records each
// acknowledgement in a Recorder. Start it with StartProducer, end it with
// Stop.
type Producer struct {
	cfg    ProducerConfig
	cl     *kgo.Client
	rec    *Recorder
	ctx    context.Context // records' context: canceled only by Stop's deadline
	cancel context.CancelFunc
	stop   chan struct{}
	done   chan struct{}
	sent   int

	stopOnce sync.Once
	stopErr  error
}

// StartProducer connects and starts producing.
func StartProducer(cfg ProducerConfig, rec *Recorder) (*Producer, error) {
	if cfg.Partitions < 1 {
		return nil, fmt.Errorf("invariants: producer %q: %d partitions", cfg.Name, cfg.Partitions)
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 200
	}
	if cfg.MaxRecords <= 0 {
		cfg.MaxRecords = 1_000_000
	}
	if cfg.ValueSize <= 0 {
		cfg.ValueSize = 64
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Seeds...),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(10 * cfg.Rate),
		kgo.ProduceRequestTimeout(5 * time.Second),
		kgo.RequestTimeoutOverhead(3 * time.Second),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.RetryTimeout(time.Minute),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	cl, err := newClient(append(opts, cfg.Opts...)...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Producer{cfg: cfg, cl: cl, rec: rec, ctx: ctx, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p, nil
}

func (p *Producer) run() {
	defer close(p.done)
	tick := time.NewTicker(time.Second / time.Duration(p.cfg.Rate))
	defer tick.Stop()
	seq := make([]int64, p.cfg.Partitions)
	for p.sent < p.cfg.MaxRecords {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		part := int32(p.sent % int(p.cfg.Partitions))
		id := ID{Producer: p.cfg.Name, Partition: part, Seq: seq[part]}
		seq[part]++
		p.sent++
		r := &kgo.Record{Partition: part, Key: []byte(p.cfg.Name), Value: EncodeValue(id, p.cfg.ValueSize)}
		p.cl.Produce(p.ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				p.rec.Fail(err)
				return
			}
			p.rec.Add(Ack{Record: Record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}, At: time.Now()})
		})
	}
}

// Stop ends producing, waits up to timeout for every record in flight to be
// acknowledged or failed, and closes the client. It returns the number of
// records handed to the client and an error if the flush did not finish in
// time (the records still in flight are failed, and may or may not be in
// the log). Calls after the first return the first one's answer.
func (p *Producer) Stop(timeout time.Duration) (int, error) {
	p.stopOnce.Do(func() { p.stopErr = p.stopOnceFn(timeout) })
	return p.sent, p.stopErr
}

func (p *Producer) stopOnceFn(timeout time.Duration) error {
	close(p.stop)
	timer := time.AfterFunc(timeout, p.cancel) // unblocks a Produce waiting for buffer space
	defer timer.Stop()
	<-p.done
	fctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := p.cl.Flush(fctx)
	p.cancel()
	p.cl.Close()
	if err != nil {
		return fmt.Errorf("invariants: producer %q: flush: %w", p.cfg.Name, err)
	}
	return nil
}

// Consumer reads every partition of a topic from the start, without a
// group, as the records reach the high watermark, and keeps what it read.
type Consumer struct {
	cl     *kgo.Client
	mu     sync.Mutex
	recs   []Record
	next   map[int32]int64 // the offset after the last record read, per partition
	errs   []error
	cancel context.CancelFunc
	done   chan struct{}
}

// StartConsumer starts reading topic from the earliest offsets.
func StartConsumer(seeds []string, topic string, opts ...kgo.Opt) (*Consumer, error) {
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RetryTimeout(time.Minute),
	}
	cl, err := newClient(append(base, opts...)...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Consumer{cl: cl, next: map[int32]int64{}, cancel: cancel, done: make(chan struct{})}
	go c.run(ctx)
	return c, nil
}

func (c *Consumer) run(ctx context.Context) {
	defer close(c.done)
	for ctx.Err() == nil {
		fs := c.cl.PollFetches(ctx)
		c.mu.Lock()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) && len(c.errs) < 100 {
				c.errs = append(c.errs, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			c.recs = append(c.recs, Record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
			c.next[r.Partition] = max(c.next[r.Partition], r.Offset+1)
		})
		c.mu.Unlock()
	}
}

// Records returns a copy of every record read so far, in arrival order (a
// position read twice appears twice; Check counts it once if the bytes agree).
func (c *Consumer) Records() []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recs)
}

// Errors returns the fetch errors seen (franz-go retries them).
func (c *Consumer) Errors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errs)
}

// Reached reports whether the consumer has read up to every end offset
// given, and the partitions it has not.
func (c *Consumer) Reached(ends map[int32]int64) (bool, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var behind []string
	for _, p := range slices.Sorted(maps.Keys(ends)) {
		if c.next[p] < ends[p] {
			behind = append(behind, fmt.Sprintf("p%d at %d of %d", p, c.next[p], ends[p]))
		}
	}
	return len(behind) == 0, fmt.Sprint(behind)
}

// Close stops the consumer and waits for its goroutine.
func (c *Consumer) Close() {
	c.cancel()
	<-c.done
	c.cl.Close()
}

// EndOffsets asks for the high watermark and log start of every partition
// of topic.
func EndOffsets(ctx context.Context, seeds []string, topic string) (start, end map[int32]int64, err error) {
	cl, err := newClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	collect := func(l kadm.ListedOffsets, err error) (map[int32]int64, error) {
		if err != nil {
			return nil, err
		}
		if err := l.Error(); err != nil {
			return nil, err
		}
		m := map[int32]int64{}
		for _, o := range l[topic] {
			m[o.Partition] = o.Offset
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("invariants: no offsets listed for topic %s", topic)
		}
		return m, nil
	}
	if start, err = collect(adm.ListStartOffsets(ctx, topic)); err != nil {
		return nil, nil, fmt.Errorf("invariants: list start offsets: %w", err)
	}
	if end, err = collect(adm.ListEndOffsets(ctx, topic)); err != nil {
		return nil, nil, fmt.Errorf("invariants: list end offsets: %w", err)
	}
	return start, end, nil
}

// ReadAll reads every partition of topic from its log start to the high
// watermark as it stands when ReadAll begins: the complete read Check
// needs once producers have stopped.
func ReadAll(ctx context.Context, seeds []string, topic string) ([]Record, error) {
	start, end, err := EndOffsets(ctx, seeds, topic)
	if err != nil {
		return nil, err
	}
	offsets := map[int32]kgo.Offset{}
	for p, s := range start {
		if end[p] > s {
			offsets[p] = kgo.NewOffset().At(s)
		}
	}
	if len(offsets) == 0 {
		return nil, nil
	}
	cl, err := newClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RetryTimeout(30*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	next := maps.Clone(start)
	var recs []Record
	var fetchErrs []error
	done := func() bool {
		for p, e := range end {
			if next[p] < e {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return recs, fmt.Errorf("invariants: reading %s: read up to %v of %v: %w (fetch errors: %v)", topic, next, end, err, fetchErrs)
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if len(fetchErrs) < 10 {
				fetchErrs = append(fetchErrs, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end[r.Partition] {
				return // written after the end offsets were taken
			}
			recs = append(recs, Record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
		})
	}
	return recs, nil
}
