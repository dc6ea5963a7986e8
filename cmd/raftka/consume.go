package main

// `raftka consume` is kafka-console-consumer.sh: one output line per record,
// formatted as Kafka's DefaultMessageFormatter does.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "consume",
		Usage: "print records of a topic, one per line (like kafka-console-consumer.sh)",
		Description: "Runs until --max-messages records were printed, no record arrived for --timeout-ms, or\n" +
			"SIGINT/SIGTERM. With --group the consumer joins the group and commits the offsets of the\n" +
			"records it printed before it exits. With --share-group it is a member of that share group\n" +
			"(a queue, KIP-932; like kafka-console-share-consumer.sh): it acknowledges each record it\n" +
			"prints (--share-acknowledge: accept, release or reject) and releases what it received but\n" +
			"did not print. Where a new share group starts is its share.auto.offset.reset GROUP config.\n" +
			"The count goes to standard error at the end.",
		Flags: []cli.Flag{
			bootstrapFlag(),
			&cli.StringFlag{Name: "topic", Usage: "topic to consume (required)"},
			&cli.StringFlag{Name: "group", Usage: "consumer group to join; commits offsets"},
			&cli.StringFlag{Name: "group-protocol", Value: "classic", Usage: "with --group, the rebalance protocol (Kafka's group.protocol): classic, or consumer (KIP-848: the broker assigns)"},
			&cli.StringFlag{Name: "group-remote-assignor", Usage: "with --group-protocol consumer, the broker's assignor (Kafka's group.remote.assignor): uniform (the default) or range"},
			&cli.StringFlag{Name: "share-group", Usage: "share group to join: records are shared with its other members and acknowledged one by one"},
			&cli.StringFlag{Name: "share-acknowledge", Value: "accept", Usage: "with --share-group: how printed records are acknowledged (accept, release or reject)"},
			&cli.BoolFlag{Name: "from-beginning", Usage: "start at the earliest offset when there is no committed offset"},
			&cli.StringFlag{Name: "offset", Usage: "where to start: earliest, latest, or an offset (a number needs --partition)"},
			&cli.IntFlag{Name: "partition", Value: -1, Usage: "consume only this partition"},
			&cli.IntFlag{Name: "max-messages", Usage: "exit after this many records (0: no limit)"},
			&cli.IntFlag{Name: "timeout-ms", Usage: "exit when no record arrived for this many milliseconds (0: wait forever)"},
			&cli.StringFlag{Name: "isolation-level", Value: "read_uncommitted", Usage: "read_uncommitted or read_committed"},
			&cli.BoolFlag{Name: "print-key", Usage: "print the key before the value"},
			&cli.BoolFlag{Name: "print-headers", Usage: "print headers as k:v,k:v (NO_HEADERS when none)"},
			&cli.BoolFlag{Name: "print-timestamp", Usage: "print CreateTime:ms or LogAppendTime:ms"},
			&cli.BoolFlag{Name: "print-offset", Usage: "print Offset:n"},
			&cli.BoolFlag{Name: "print-partition", Usage: "print Partition:n"},
			&cli.StringFlag{Name: "key-separator", Aliases: []string{"separator"}, Value: `\t`, Usage: "text between the printed fields"},
			&cli.StringFlag{Name: "line-separator", Value: `\n`, Usage: "text after each record"},
			&cli.StringFlag{Name: "headers-separator", Value: ",", Usage: "text between headers"},
		},
		Action: consumeRecords,
	})
}

// recordFormatter prints a record in the field order of Kafka's
// DefaultMessageFormatter: timestamp, partition, offset, headers, key, value.
type recordFormatter struct {
	timestamp, partition, offset, headers, key bool
	keySep, lineSep, headersSep                string
}

func (f recordFormatter) write(w io.Writer, r *kgo.Record) error {
	var b strings.Builder
	if f.timestamp {
		kind := "CreateTime"
		if r.Attrs.TimestampType() == 1 {
			kind = "LogAppendTime"
		}
		b.WriteString(kind + ":" + strconv.FormatInt(r.Timestamp.UnixMilli(), 10) + f.keySep)
	}
	if f.partition {
		b.WriteString("Partition:" + strconv.Itoa(int(r.Partition)) + f.keySep)
	}
	if f.offset {
		b.WriteString("Offset:" + strconv.FormatInt(r.Offset, 10) + f.keySep)
	}
	if f.headers {
		if len(r.Headers) == 0 {
			b.WriteString("NO_HEADERS")
		}
		for i, h := range r.Headers {
			if i > 0 {
				b.WriteString(f.headersSep)
			}
			b.WriteString(h.Key + ":")
			if h.Value == nil {
				b.WriteString("null")
			} else {
				b.Write(h.Value)
			}
		}
		b.WriteString(f.keySep)
	}
	if f.key {
		writeNullable(&b, r.Key)
		b.WriteString(f.keySep)
	}
	writeNullable(&b, r.Value)
	b.WriteString(f.lineSep)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeNullable(b *strings.Builder, v []byte) {
	if v == nil {
		b.WriteString("null")
		return
	}
	b.Write(v)
}

// groupProtocolOpts turns Kafka's group.protocol and group.remote.assignor
// into franz-go options. franz-go joins a KIP-848 group only with
// ServerSideBalancer and a sticky or range balancer, and names the server
// assignor after the balancer: sticky asks for uniform, range for range.
func groupProtocolOpts(protocol, assignor string) ([]kgo.Opt, error) {
	switch strings.ToLower(protocol) {
	case "classic":
		if assignor != "" {
			return nil, errors.New("consume: --group-remote-assignor needs --group-protocol consumer")
		}
		return nil, nil
	case "consumer":
		switch strings.ToLower(assignor) {
		case "", "uniform":
			return []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())}, nil
		case "range":
			return []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer())}, nil
		}
		return nil, fmt.Errorf("consume: --group-remote-assignor %q: want uniform or range", assignor)
	}
	return nil, fmt.Errorf("consume: --group-protocol %q: want classic or consumer", protocol)
}

// startOffset works out where consumption begins from --offset and
// --from-beginning, refusing Kafka's refused combinations.
func startOffset(c *cli.Context) (kgo.Offset, error) {
	group, partition := c.String("group"), c.Int("partition")
	if c.IsSet("offset") && group != "" {
		return kgo.Offset{}, errors.New("consume: --offset cannot be used with --group (the group's committed offsets decide)")
	}
	if partition >= 0 && group != "" {
		return kgo.Offset{}, errors.New("consume: --partition cannot be used with --group")
	}
	if group == "" && (c.IsSet("group-protocol") || c.IsSet("group-remote-assignor")) {
		return kgo.Offset{}, errors.New("consume: --group-protocol and --group-remote-assignor need --group")
	}
	if c.IsSet("offset") && c.Bool("from-beginning") {
		return kgo.Offset{}, errors.New("consume: give --offset or --from-beginning, not both")
	}
	switch o := strings.ToLower(c.String("offset")); {
	case o == "earliest" || (o == "" && c.Bool("from-beginning")):
		return kgo.NewOffset().AtStart(), nil
	case o == "latest" || o == "":
		return kgo.NewOffset().AtEnd(), nil
	default:
		n, err := strconv.ParseInt(o, 10, 64)
		if err != nil || n < 0 {
			return kgo.Offset{}, fmt.Errorf("consume: --offset %q: want earliest, latest or a non-negative offset", o)
		}
		if partition < 0 {
			return kgo.Offset{}, errors.New("consume: --offset with a number needs --partition")
		}
		return kgo.NewOffset().At(n), nil
	}
}

// shareAckStatus is --share-acknowledge.
func shareAckStatus(c *cli.Context) (kgo.AckStatus, error) {
	for _, f := range []string{"group", "offset", "partition", "from-beginning", "isolation-level"} {
		if c.IsSet(f) {
			return 0, fmt.Errorf("consume: --%s cannot be used with --share-group (the share group's GROUP configs decide)", f)
		}
	}
	switch strings.ToLower(c.String("share-acknowledge")) {
	case "accept":
		return kgo.AckAccept, nil
	case "release":
		return kgo.AckRelease, nil
	case "reject":
		return kgo.AckReject, nil
	}
	return 0, fmt.Errorf("consume: --share-acknowledge %q: want accept, release or reject", c.String("share-acknowledge"))
}

func consumeRecords(c *cli.Context) error {
	topic, err := requireTopic(c)
	if err != nil {
		return err
	}
	if c.String("share-group") != "" {
		return consumeShared(c, topic)
	}
	start, err := startOffset(c)
	if err != nil {
		return err
	}
	maxMessages, idle := c.Int("max-messages"), time.Duration(c.Int("timeout-ms"))*time.Millisecond
	if maxMessages < 0 || idle < 0 {
		return errors.New("consume: --max-messages and --timeout-ms must not be negative")
	}
	// Kafka's fetch.max.wait.ms default. kgo waits 5 s, longer than a
	// typical --timeout-ms: a partition assigned while a fetch is parked
	// would then look idle.
	opts := []kgo.Opt{kgo.FetchMaxWait(500 * time.Millisecond)}
	switch c.String("isolation-level") {
	case "read_uncommitted":
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	case "read_committed":
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	default:
		return fmt.Errorf("consume: --isolation-level %q: want read_uncommitted or read_committed", c.String("isolation-level"))
	}
	group := c.String("group")
	switch {
	case group != "":
		// Commit only what was printed: marks, not everything polled, so a
		// run stopped by --max-messages leaves the rest for the next one.
		opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(start), kgo.AutoCommitMarks())
		gopts, err := groupProtocolOpts(c.String("group-protocol"), c.String("group-remote-assignor"))
		if err != nil {
			return err
		}
		opts = append(opts, gopts...)
	case c.Int("partition") >= 0:
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {int32(c.Int("partition")): start}}))
	default:
		opts = append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(start))
	}
	f := formatterOf(c)
	cl, err := newClient(c, opts...)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	out := bufio.NewWriter(c.App.Writer)
	count, loopErr := consumeLoop(ctx, cl, f, out, maxMessages, idle, func(r *kgo.Record) {
		if group != "" {
			cl.MarkCommitRecords(r)
		}
	}, nil)
	if err := out.Flush(); err != nil && loopErr == nil {
		loopErr = err
	}
	if group != "" {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := cl.CommitMarkedOffsets(cctx); err != nil && loopErr == nil {
			loopErr = fmt.Errorf("consume: committing offsets of group %s: %w", group, err)
		}
		cancel()
	}
	cl.Close() // leaves the group
	fmt.Fprintf(c.App.ErrWriter, "Processed a total of %d messages\n", count)
	return loopErr
}

// consumeLoop polls until maxMessages (0: unbounded), an idle gap of idle
// (0: none), or ctx ends. Fetch errors other than the end of the context
// are reported on the way and do not stop the loop: kgo retries them.
//
// printed runs for each record printed; unprinted, when set, for each
// record polled but not printed (past maxMessages).
func consumeLoop(ctx context.Context, cl *kgo.Client, f recordFormatter, out *bufio.Writer, maxMessages int, idle time.Duration,
	printed, unprinted func(*kgo.Record)) (int, error) {
	count := 0
	for maxMessages == 0 || count < maxMessages {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if idle > 0 {
			pollCtx, cancel = context.WithTimeout(ctx, idle)
		}
		// Flush what was printed before blocking, so a reader of a pipe
		// sees records as they come.
		if err := out.Flush(); err != nil {
			cancel()
			return count, err
		}
		fetches := cl.PollRecords(pollCtx, maxMessages-count)
		cancel()
		var stopped bool
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, kgo.ErrClientClosed) {
				stopped = true
				continue
			}
			logger.Warn().Str("topic", fe.Topic).Int32("partition", fe.Partition).Err(fe.Err).Msg("fetch error")
		}
		var werr error
		fetches.EachRecord(func(r *kgo.Record) {
			if werr != nil || (maxMessages > 0 && count >= maxMessages) {
				if unprinted != nil {
					unprinted(r)
				}
				return
			}
			if werr = f.write(out, r); werr != nil {
				if unprinted != nil {
					unprinted(r)
				}
				return
			}
			count++
			printed(r)
		})
		if werr != nil {
			return count, fmt.Errorf("consume: writing output: %w", werr)
		}
		if stopped || ctx.Err() != nil || pollCtx.Err() != nil && fetches.NumRecords() == 0 {
			return count, nil
		}
	}
	return count, nil
}

func formatterOf(c *cli.Context) recordFormatter {
	return recordFormatter{
		timestamp: c.Bool("print-timestamp"), partition: c.Bool("print-partition"), offset: c.Bool("print-offset"),
		headers: c.Bool("print-headers"), key: c.Bool("print-key"),
		keySep: unescape(c.String("key-separator")), lineSep: unescape(c.String("line-separator")), headersSep: unescape(c.String("headers-separator")),
	}
}

// consumeShared is consume --share-group: a share group member that
// acknowledges each record it prints and releases the ones it does not.
func consumeShared(c *cli.Context, topic string) error {
	status, err := shareAckStatus(c)
	if err != nil {
		return err
	}
	maxMessages, idle := c.Int("max-messages"), time.Duration(c.Int("timeout-ms"))*time.Millisecond
	if maxMessages < 0 || idle < 0 {
		return errors.New("consume: --max-messages and --timeout-ms must not be negative")
	}
	group := c.String("share-group")
	var ackErr error
	var mu sync.Mutex
	opts := []kgo.Opt{kgo.FetchMaxWait(500 * time.Millisecond), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			for _, r := range rs {
				if r.Err != nil {
					logger.Warn().Str("topic", r.Topic).Int32("partition", r.Partition).Err(r.Err).Msg("acknowledgement failed")
					mu.Lock()
					ackErr = r.Err
					mu.Unlock()
				}
			}
		})}
	if maxMessages > 0 {
		opts = append(opts, kgo.ShareMaxRecords(int32(min(maxMessages, 500))))
	}
	cl, err := newClient(c, opts...)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	out := bufio.NewWriter(c.App.Writer)
	count, loopErr := consumeLoop(ctx, cl, formatterOf(c), out, maxMessages, idle,
		func(r *kgo.Record) { r.Ack(status) }, func(r *kgo.Record) { r.Ack(kgo.AckRelease) })
	if err := out.Flush(); err != nil && loopErr == nil {
		loopErr = err
	}
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := cl.FlushAcks(fctx); err != nil && loopErr == nil {
		loopErr = fmt.Errorf("consume: acknowledging to share group %s: %w", group, err)
	}
	cancel()
	cl.Close() // leaves the share group
	mu.Lock()
	if ackErr != nil && loopErr == nil {
		loopErr = fmt.Errorf("consume: share group %s refused an acknowledgement: %w", group, ackErr)
	}
	mu.Unlock()
	fmt.Fprintf(c.App.ErrWriter, "Processed a total of %d messages\n", count)
	return loopErr
}
