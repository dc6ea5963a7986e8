package main

// `raftka cluster describe --status | --replication`: kafka-metadata-quorum.sh
// describe's two views of DescribeQuorum, in its layout, so runbooks that
// read them (a voter's directory id for remove-controller, the followers'
// lag) apply as written.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func describeCommand() *cli.Command {
	return &cli.Command{
		Name:  "describe",
		Usage: "describe the metadata quorum as kafka-metadata-quorum.sh describe: --status or --replication",
		Flags: []cli.Flag{bootstrapFlag(), requestTimeoutFlag(),
			&cli.BoolFlag{Name: "status", Usage: "the quorum's leader, epoch, high watermark, lag, voters and observers"},
			&cli.BoolFlag{Name: "replication", Usage: "one row per voter and observer: directory id, log end offset, lag, last fetch and caught-up times"},
		},
		Action: clusterDescribe,
	}
}

func clusterDescribe(c *cli.Context) error {
	if c.Bool("status") == c.Bool("replication") {
		return errors.New("cluster describe: give exactly one of --status and --replication")
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("request-timeout"))
	defer cancel()
	quorum, err := describeQuorum(ctx, cl)
	if err != nil {
		return requestError(c, "describe quorum", err)
	}
	if c.Bool("replication") {
		return printReplication(c.App.Writer, quorum)
	}
	cluster, err := describeCluster(ctx, cl, false)
	if err != nil {
		return requestError(c, "describe cluster", err)
	}
	return printQuorumStatus(c.App.Writer, cluster.ClusterID, quorum, time.Now())
}

// dirID is a directory id as Kafka prints a Uuid: base64url, no padding.
func dirID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// printQuorumStatus is kafka-metadata-quorum.sh describe --status.
func printQuorumStatus(w io.Writer, clusterID string, q *kmsg.DescribeQuorumResponse, now time.Time) error {
	p := q.Topics[0].Partitions[0]
	var maxLag, maxLagMs int64 = 0, -1
	var leaderTs int64 = -1
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			leaderTs = v.LastCaughtUpTimestamp
		}
	}
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			continue
		}
		if v.LogEndOffset >= 0 {
			maxLag = max(maxLag, p.HighWatermark-v.LogEndOffset)
		}
		if v.LastCaughtUpTimestamp >= 0 && leaderTs >= 0 {
			maxLagMs = max(maxLagMs, leaderTs-v.LastCaughtUpTimestamp)
		}
	}
	if maxLagMs < 0 && len(p.CurrentVoters) > 0 {
		maxLagMs = 0
	}
	endpoints := map[int32][]string{}
	for _, n := range q.Nodes {
		for _, l := range n.Listeners {
			endpoints[n.NodeID] = append(endpoints[n.NodeID], fmt.Sprintf("%q", l.Name+"://"+hostPort(l.Host, int32(l.Port))))
		}
	}
	member := func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState, withEndpoints bool) string {
		s := fmt.Sprintf(`{"id": %d, "directoryId": %q`, r.ReplicaID, dirID(r.ReplicaDirectoryID))
		if withEndpoints {
			s += fmt.Sprintf(`, "endpoints": [%s]`, strings.Join(endpoints[r.ReplicaID], ", "))
		}
		return s + "}"
	}
	var voters, observers []string
	for _, v := range p.CurrentVoters {
		voters = append(voters, member(v, true))
	}
	for _, o := range p.Observers {
		observers = append(observers, member(o, false))
	}
	_, err := fmt.Fprintf(w, "ClusterId:              %s\nLeaderId:               %d\nLeaderEpoch:            %d\nHighWatermark:          %d\nMaxFollowerLag:         %d\nMaxFollowerLagTimeMs:   %d\nCurrentVoters:          [%s]\nCurrentObservers:       [%s]\n",
		clusterID, p.LeaderID, p.LeaderEpoch, p.HighWatermark, maxLag, maxLagMs, strings.Join(voters, ", "), strings.Join(observers, ", "))
	return err
}

// printReplication is kafka-metadata-quorum.sh describe --replication.
func printReplication(w io.Writer, q *kmsg.DescribeQuorumResponse) error {
	p := q.Topics[0].Partitions[0]
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NodeId\tDirectoryId\tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus")
	row := func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState, status string) {
		if r.ReplicaID == p.LeaderID {
			status = "Leader"
		}
		lag := int64(0)
		if r.LogEndOffset >= 0 {
			lag = max(p.HighWatermark-r.LogEndOffset, 0)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%s\n", r.ReplicaID, dirID(r.ReplicaDirectoryID), r.LogEndOffset, lag, r.LastFetchTimestamp, r.LastCaughtUpTimestamp, status)
	}
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			row(v, "Leader")
		}
	}
	for _, v := range p.CurrentVoters {
		if v.ReplicaID != p.LeaderID {
			row(v, "Follower")
		}
	}
	for _, o := range p.Observers {
		row(o, "Observer")
	}
	return tw.Flush()
}
