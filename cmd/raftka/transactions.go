package main

// `raftka transactions` is kafka-transactions.sh over plain Kafka requests
// (ListTransactions, DescribeTransactions, DescribeProducers,
// WriteTxnMarkers, through kadm), so it works against raftka and Kafka
// alike: list the transactional ids, describe one, show a partition's
// producers, and abort a hanging transaction on a partition (an ABORT
// marker written to its leader, for a producer found by the first offset
// of its open transaction or named by id, epoch and coordinator epoch).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

func init() {
	partitionFlags := []cli.Flag{
		&cli.StringFlag{Name: "topic", Usage: "the topic of the partition"},
		&cli.IntFlag{Name: "partition", Value: -1, Usage: "the partition"},
	}
	register(&cli.Command{
		Name:  "transactions",
		Usage: "list, describe and abort transactions (like kafka-transactions.sh)",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list transactional ids with their coordinator, producer id and state",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					&cli.StringSliceFlag{Name: "state", Usage: "only these states (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, PrepareEpochFence; repeatable)"},
					&cli.Int64SliceFlag{Name: "producer-id", Usage: "only these producer ids (repeatable)"},
				},
				Action: transactionsList,
			},
			{
				Name:  "describe",
				Usage: "describe a transactional id's current transaction",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					&cli.StringFlag{Name: "transactional-id", Usage: "the transactional id"},
				},
				Action: transactionsDescribe,
			},
			{
				Name:   "describe-producers",
				Usage:  "show the producers of a partition (its leader's producer state)",
				Flags:  append([]cli.Flag{bootstrapFlag(), requestTimeoutFlag()}, partitionFlags...),
				Action: transactionsDescribeProducers,
			},
			{
				Name:  "abort",
				Usage: "abort a hanging transaction on a partition by writing an ABORT marker to its leader",
				Flags: append([]cli.Flag{bootstrapFlag(), requestTimeoutFlag(),
					&cli.Int64Flag{Name: "start-offset", Value: -1, Usage: "the first offset of the transaction to abort (its producer is found with DescribeProducers)"},
					&cli.Int64Flag{Name: "producer-id", Value: -1, Usage: "instead of --start-offset: the producer id"},
					&cli.IntFlag{Name: "producer-epoch", Value: -1, Usage: "with --producer-id: its epoch"},
					&cli.IntFlag{Name: "coordinator-epoch", Value: -1, Usage: "with --producer-id: the coordinator epoch for the marker"},
				}, partitionFlags...),
				Action: transactionsAbort,
			},
		},
	})
}

func adminOf(c *cli.Context, fn func(ctx context.Context, adm *kadm.Client) error) error {
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error { return fn(ctx, kadm.NewClient(cl)) })
}

func transactionsList(c *cli.Context) error {
	return adminOf(c, func(ctx context.Context, adm *kadm.Client) error {
		list, err := adm.ListTransactions(ctx, c.Int64Slice("producer-id"), c.StringSlice("state"))
		if err != nil {
			return requestError(c, "ListTransactions", err)
		}
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TransactionalId\tCoordinator\tProducerId\tTransactionState")
		for _, t := range list.Sorted() {
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", t.TxnID, t.Coordinator, t.ProducerID, t.State)
		}
		return w.Flush()
	})
}

func transactionsDescribe(c *cli.Context) error {
	id := c.String("transactional-id")
	if id == "" {
		return errors.New("--transactional-id is required")
	}
	return adminOf(c, func(ctx context.Context, adm *kadm.Client) error {
		desc, err := adm.DescribeTransactions(ctx, id)
		if err != nil {
			return requestError(c, "DescribeTransactions", err)
		}
		d, ok := desc[id]
		if !ok {
			return fmt.Errorf("no answer for transactional id %q", id)
		}
		if d.Err != nil {
			return fmt.Errorf("transactional id %q: %w", id, d.Err)
		}
		start, duration := "None", "None"
		if d.StartTimestamp >= 0 {
			start = fmt.Sprint(d.StartTimestamp)
			duration = fmt.Sprint(time.Now().UnixMilli() - d.StartTimestamp)
		}
		var parts []string
		for topic, ps := range d.Topics {
			for p := range ps {
				parts = append(parts, fmt.Sprintf("%s-%d", topic, p))
			}
		}
		slices.Sort(parts)
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions")
		fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", d.Coordinator, d.TxnID, d.ProducerID, d.ProducerEpoch, d.State, d.TimeoutMillis, start, duration, strings.Join(parts, ","))
		return w.Flush()
	})
}

func partitionOf(c *cli.Context) (string, int32, error) {
	topic, p := c.String("topic"), c.Int("partition")
	if topic == "" || p < 0 {
		return "", 0, errors.New("--topic and --partition are required")
	}
	return topic, int32(p), nil
}

func describeProducers(ctx context.Context, c *cli.Context, adm *kadm.Client, topic string, p int32) (kadm.DescribedProducersPartition, error) {
	ds, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {p: {}}})
	if err != nil {
		return kadm.DescribedProducersPartition{}, requestError(c, "DescribeProducers", err)
	}
	var out kadm.DescribedProducersPartition
	found := false
	ds.EachPartition(func(d kadm.DescribedProducersPartition) {
		if d.Topic == topic && d.Partition == p {
			out, found = d, true
		}
	})
	if !found {
		return out, fmt.Errorf("no answer for %s-%d", topic, p)
	}
	if out.Err != nil {
		return out, fmt.Errorf("%s-%d: %w", topic, p, out.Err)
	}
	return out, nil
}

func transactionsDescribeProducers(c *cli.Context) error {
	topic, p, err := partitionOf(c)
	if err != nil {
		return err
	}
	return adminOf(c, func(ctx context.Context, adm *kadm.Client) error {
		d, err := describeProducers(ctx, c, adm, topic, p)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\tCurrentTransactionStartOffset")
		for _, pr := range d.ActiveProducers.Sorted() {
			start := "None"
			if pr.CurrentTxnStartOffset >= 0 {
				start = fmt.Sprint(pr.CurrentTxnStartOffset)
			}
			fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%d\t%s\n", pr.ProducerID, pr.ProducerEpoch, pr.CoordinatorEpoch, pr.LastSequence, pr.LastTimestamp, start)
		}
		return w.Flush()
	})
}

func transactionsAbort(c *cli.Context) error {
	topic, p, err := partitionOf(c)
	if err != nil {
		return err
	}
	start, pid := c.Int64("start-offset"), c.Int64("producer-id")
	if (start < 0) == (pid < 0) {
		return errors.New("give either --start-offset or --producer-id (with --producer-epoch and --coordinator-epoch)")
	}
	return adminOf(c, func(ctx context.Context, adm *kadm.Client) error {
		m := kadm.TxnMarkers{ProducerID: pid, ProducerEpoch: int16(c.Int("producer-epoch")), CoordinatorEpoch: int32(c.Int("coordinator-epoch")),
			Topics: kadm.TopicsSet{topic: {p: {}}}}
		if start >= 0 {
			d, err := describeProducers(ctx, c, adm, topic, p)
			if err != nil {
				return err
			}
			i := slices.IndexFunc(d.ActiveProducers.Sorted(), func(pr kadm.DescribedProducer) bool { return pr.CurrentTxnStartOffset == start })
			if i < 0 {
				return fmt.Errorf("%s-%d has no open transaction starting at offset %d", topic, p, start)
			}
			pr := d.ActiveProducers.Sorted()[i]
			m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch = pr.ProducerID, pr.ProducerEpoch, pr.CoordinatorEpoch
			if m.CoordinatorEpoch < 0 {
				// No marker seen yet: as kafka-transactions.sh, epoch 0.
				m.CoordinatorEpoch = 0
			}
		} else if m.ProducerEpoch < 0 || m.CoordinatorEpoch < 0 {
			return errors.New("--producer-id needs --producer-epoch and --coordinator-epoch")
		}
		resps, err := adm.WriteTxnMarkers(ctx, m)
		if err != nil {
			return requestError(c, "WriteTxnMarkers", err)
		}
		var failed error
		resps.EachPartition(func(r kadm.TxnMarkersPartitionResponse) {
			if r.Err != nil && failed == nil {
				failed = fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, r.Err)
			}
		})
		if failed != nil {
			return failed
		}
		fmt.Fprintf(c.App.Writer, "Aborted the transaction of producer %d (epoch %d) on %s-%d\n", m.ProducerID, m.ProducerEpoch, topic, p)
		return nil
	})
}
