package main

// `raftka produce` is kafka-console-producer.sh: one record per input line.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// maxLineBytes bounds one input line; a record this big is already far
// over any broker's default max.message.bytes.
const maxLineBytes = 16 << 20

func init() {
	register(&cli.Command{
		Name:  "produce",
		Usage: "send each line of standard input as a record (like kafka-console-producer.sh)",
		Description: "Reads lines until end of input, waits until every record is acknowledged, and exits\n" +
			"non-zero if any record failed. The producer is idempotent unless --disable-idempotence\n" +
			"or --acks other than all (as the Java producer, idempotence needs acks=all).",
		Flags: []cli.Flag{
			bootstrapFlag(),
			&cli.StringFlag{Name: "topic", Usage: "topic to produce to (required)"},
			&cli.BoolFlag{Name: "parse-key", Usage: "split each line at the first --key-separator into key and value"},
			&cli.StringFlag{Name: "key-separator", Value: `\t`, Usage: "separator between key and value; giving it turns on --parse-key"},
			&cli.StringFlag{Name: "acks", Value: "all", Usage: "acknowledgements to wait for: all (-1), 1 or 0"},
			&cli.DurationFlag{Name: "linger", Value: 5 * time.Millisecond, Usage: "how long a batch waits for more records"},
			&cli.StringFlag{Name: "compression", Value: "none", Usage: "batch compression: none, gzip, snappy, lz4 or zstd"},
			&cli.IntFlag{Name: "partition", Value: -1, Usage: "send every record to this partition (default: by key, or spread when there is no key)"},
			&pairsFlag{Name: "header", Usage: "header key=value added to every record (repeatable)"},
			&cli.BoolFlag{Name: "disable-idempotence", Usage: "turn off the idempotent producer"},
			&cli.DurationFlag{Name: "delivery-timeout", Value: 2 * time.Minute, Usage: "give up on a record not acknowledged after this long (Kafka's delivery.timeout.ms)"},
		},
		Action: produceLines,
	})
}

// lineParser turns an input line into a record.
type lineParser struct {
	parseKey  bool
	separator string
	headers   []kgo.RecordHeader
	partition int32
}

func (p lineParser) record(line string, lineNo int) (*kgo.Record, error) {
	r := &kgo.Record{Headers: p.headers, Partition: p.partition}
	if p.parseKey {
		k, v, ok := strings.Cut(line, p.separator)
		if !ok {
			return nil, fmt.Errorf("line %d: no key separator %q found (--parse-key is on)", lineNo, p.separator)
		}
		r.Key, r.Value = []byte(k), []byte(v)
	} else {
		r.Value = []byte(line)
	}
	return r, nil
}

// producerOpts are the kgo options shared by produce and the bench
// producers.
func producerOpts(acksFlag, compression string, linger time.Duration, disableIdempotence bool) ([]kgo.Opt, error) {
	acks, all, err := parseAcks(acksFlag)
	if err != nil {
		return nil, err
	}
	codec, err := parseCompression(compression)
	if err != nil {
		return nil, err
	}
	if linger < 0 {
		return nil, fmt.Errorf("--linger %s: must not be negative", linger)
	}
	opts := []kgo.Opt{kgo.RequiredAcks(acks), kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(linger)}
	// kgo refuses idempotence without acks=all; the Java producer quietly
	// drops it in that case, and so do we.
	if disableIdempotence || !all {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	return opts, nil
}

func produceLines(c *cli.Context) error {
	topic, err := requireTopic(c)
	if err != nil {
		return err
	}
	opts, err := producerOpts(c.String("acks"), c.String("compression"), c.Duration("linger"), c.Bool("disable-idempotence"))
	if err != nil {
		return err
	}
	p := lineParser{
		parseKey:  c.Bool("parse-key") || c.IsSet("key-separator"),
		separator: unescape(c.String("key-separator")),
		partition: int32(c.Int("partition")),
	}
	if p.parseKey && p.separator == "" {
		return errors.New("produce: --key-separator must not be empty")
	}
	if p.partition < -1 {
		return fmt.Errorf("produce: --partition %d: want a partition number", p.partition)
	}
	if p.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	for _, kv := range pairsOf(c, "header").pairs() {
		p.headers = append(p.headers, kgo.RecordHeader{Key: kv[0], Value: []byte(kv[1])})
	}
	// Kafka's producer lets the broker auto-create a missing topic (when the
	// broker allows it); kgo does not unless asked.
	opts = append(opts, kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(c.Duration("delivery-timeout")), kgo.AllowAutoTopicCreation())
	cl, err := newClient(c, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	var (
		sent, failed atomic.Int64
		firstErrOnce sync.Once
		firstErr     error
	)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
			firstErrOnce.Do(func() { firstErr = err })
		}
	}
	ctx := c.Context
	readErr := readLines(c.App.Reader, func(line string, n int) error {
		r, err := p.record(line, n)
		if err != nil {
			return err
		}
		sent.Add(1)
		cl.Produce(ctx, r, done)
		return nil
	})
	// Flush returns when every callback has run: each record either got its
	// acknowledgement or failed after --delivery-timeout.
	if err := cl.Flush(ctx); err != nil && readErr == nil {
		readErr = err
	}
	if n := failed.Load(); n > 0 {
		err := fmt.Errorf("produce: %d of %d records failed; first error: %w", n, sent.Load(), firstErr)
		return errors.Join(err, readErr)
	}
	if readErr != nil {
		return fmt.Errorf("produce: stopped after %d records: %w", sent.Load(), readErr)
	}
	return nil
}

// readLines calls fn for every line of r without its line ending, the last
// line included even without a final newline.
func readLines(r io.Reader, fn func(line string, lineNo int) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	n := 0
	for sc.Scan() {
		n++
		if err := fn(strings.TrimSuffix(sc.Text(), "\r"), n); err != nil {
			return err
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("line %d is longer than %d bytes", n+1, maxLineBytes)
	}
	return sc.Err()
}
