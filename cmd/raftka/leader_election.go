package main

// `raftka leader-election` is kafka-leader-election.sh: one ElectLeaders
// request, answered per partition.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "leader-election",
		Usage: "move partition leadership to the preferred replica, or elect an out-of-sync one (like kafka-leader-election.sh)",
		Flags: []cli.Flag{
			bootstrapFlag(), requestTimeoutFlag(),
			&cli.StringFlag{Name: "election-type", Usage: "PREFERRED (back to the first replica) or UNCLEAN (any live replica; may lose acknowledged records)"},
			&cli.StringFlag{Name: "topic", Usage: "topic of the partition to elect (with --partition)"},
			&cli.IntFlag{Name: "partition", Value: -1, Usage: "partition to elect (with --topic)"},
			&cli.BoolFlag{Name: "all-topic-partitions", Usage: "elect every partition of every topic"},
		},
		Action: leaderElection,
	})
}

func leaderElection(c *cli.Context) error {
	req := kmsg.NewPtrElectLeadersRequest()
	req.TimeoutMillis = timeoutMillis(c)
	typ := strings.ToUpper(c.String("election-type"))
	switch typ {
	case "PREFERRED":
		req.ElectionType = 0
	case "UNCLEAN":
		req.ElectionType = 1
	case "":
		return errors.New("leader-election: --election-type is required (PREFERRED or UNCLEAN)")
	default:
		return fmt.Errorf("leader-election: --election-type %q: want PREFERRED or UNCLEAN", c.String("election-type"))
	}
	topic, partition, all := c.String("topic"), c.Int("partition"), c.Bool("all-topic-partitions")
	switch {
	case all && (topic != "" || partition >= 0):
		return errors.New("leader-election: --all-topic-partitions cannot be used with --topic or --partition")
	case all:
		req.Topics = nil // null means every partition
	case topic == "" || partition < 0:
		return errors.New("leader-election: give --topic and --partition, or --all-topic-partitions")
	default:
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic = topic
		rt.Partitions = []int32{int32(partition)}
		req.Topics = []kmsg.ElectLeadersRequestTopic{rt}
	}
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return requestError(c, "leader election", err)
		}
		if err := responseError(resp.ErrorCode, nil); err != nil {
			return fmt.Errorf("leader election (%s): %w", typ, err)
		}
		var done, notNeeded, failed []string
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				name := fmt.Sprintf("%s-%d", t.Topic, p.Partition)
				switch {
				case p.ErrorCode == 0:
					done = append(done, name)
				case p.ErrorCode == kerr.ElectionNotNeeded.Code:
					notNeeded = append(notNeeded, name)
				default:
					failed = append(failed, name+": "+responseError(p.ErrorCode, p.ErrorMessage).Error())
				}
			}
		}
		for _, s := range [][]string{done, notNeeded, failed} {
			sort.Strings(s)
		}
		w := c.App.Writer
		if len(done)+len(notNeeded)+len(failed) == 0 {
			fmt.Fprintf(w, "Leader election (%s): the controller reported no partitions.\n", typ)
		}
		if len(done) > 0 {
			fmt.Fprintf(w, "Successfully completed leader election (%s) for partitions %s\n", typ, strings.Join(done, ", "))
		}
		if len(notNeeded) > 0 {
			fmt.Fprintf(w, "Valid replica already elected for partitions %s\n", strings.Join(notNeeded, ", "))
		}
		if len(failed) > 0 {
			fmt.Fprintf(w, "Error completing leader election (%s) for partitions:\n", typ)
			for _, f := range failed {
				fmt.Fprintf(w, "%s\n", f)
			}
			return fmt.Errorf("leader election (%s) failed for %d partitions", typ, len(failed))
		}
		return nil
	})
}
