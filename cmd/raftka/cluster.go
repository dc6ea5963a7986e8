package main

// `raftka cluster status` and `raftka cluster id`: the metadata quorum and
// the brokers, read over the Kafka protocol as kafka-metadata-quorum.sh
// (describe --status / --replication) and kafka-cluster.sh (cluster-id) do:
// DescribeQuorum, which kgo sends to the controller Metadata names and any
// raftka broker forwards to the Raft leader, and DescribeCluster, whose
// raftka tagged fields carry each broker's epoch, fenced and
// controlled-shutdown state.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/raftka/raftka/broker"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func init() {
	flags := func() []cli.Flag { return []cli.Flag{bootstrapFlag(), bootstrapControllerFlag(), requestTimeoutFlag()} }
	register(&cli.Command{
		Name:  "cluster",
		Usage: "inspect the cluster: metadata quorum, brokers, cluster id; add and remove controllers",
		Subcommands: append([]*cli.Command{
			{
				Name:   "status",
				Usage:  "print the Raft quorum (leader, term, commit index, voters and non-voters with lag) and the brokers",
				Flags:  flags(),
				Action: clusterStatus,
			},
			{
				Name:   "id",
				Usage:  "print the cluster id, as kafka-cluster.sh cluster-id",
				Flags:  flags(),
				Action: clusterID,
			},
			{
				Name:   "unregister",
				Usage:  "remove a broker that is gone for good from the cluster, as kafka-cluster.sh unregister (drain it first: its replicas stay listed)",
				Flags:  append(flags(), &cli.IntFlag{Name: "id", Value: -1, Usage: "the broker id to unregister"}),
				Action: clusterUnregister,
			},
			{
				Name:   "watch",
				Usage:  "watch cluster health and throughput, refreshing (raftka top)",
				Flags:  topFlags(),
				Action: runTop,
			},
		}, quorumCommands()...),
	})
}

func clusterStatus(c *cli.Context) error {
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("request-timeout"))
	defer cancel()
	quorum, err := describeQuorum(ctx, requestor(c, cl))
	if err != nil {
		return requestError(c, "describe quorum", err)
	}
	cluster, err := describeCluster(ctx, requestor(c, cl), bootstrapController(c) != "")
	if err != nil {
		return requestError(c, "describe cluster", err)
	}
	return printStatus(c.App.Writer, quorum, cluster, time.Now())
}

func clusterID(c *cli.Context) error {
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("request-timeout"))
	defer cancel()
	cluster, err := describeCluster(ctx, requestor(c, cl), bootstrapController(c) != "")
	if err != nil {
		return requestError(c, "describe cluster", err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Cluster ID: %s\n", cluster.ClusterID)
	return err
}

func clusterUnregister(c *cli.Context) error {
	id := c.Int("id")
	if id < 0 {
		return errors.New("cluster unregister: --id N is required")
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("request-timeout"))
	defer cancel()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = int32(id)
	resp, err := req.RequestWith(ctx, requestor(c, cl))
	if err == nil {
		err = responseError(resp.ErrorCode, resp.ErrorMessage)
	}
	if err != nil {
		return requestError(c, fmt.Sprintf("unregister broker %d", id), err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Broker %d is no longer registered.\n", id)
	return err
}

const metadataTopic = "__cluster_metadata"

func describeQuorum(ctx context.Context, cl kmsg.Requestor) (*kmsg.DescribeQuorumResponse, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = metadataTopic
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := responseError(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, errors.New("the answer does not describe exactly one metadata log partition")
	}
	p := resp.Topics[0].Partitions[0]
	if err := responseError(p.ErrorCode, p.ErrorMessage); err != nil {
		return nil, err
	}
	return resp, nil
}

// describeCluster asks a broker for the brokers, or with controllers a
// controller for the controllers (KIP-919's CONTROLLER endpoint type).
func describeCluster(ctx context.Context, cl kmsg.Requestor, controllers bool) (*kmsg.DescribeClusterResponse, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	if controllers {
		req.EndpointType = 2
	}
	req.IncludeFencedBrokers = true
	// At versions without IncludeFencedBrokers a raftka broker reads the
	// same wish from its tag; other brokers skip it.
	req.UnknownTags.Set(broker.TagIncludeFencedBrokers, []byte{1})
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := responseError(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	return resp, nil
}

// printStatus writes the quorum and the brokers as tables. now is when the
// answers arrived, for the "last contact" ages.
func printStatus(w io.Writer, quorum *kmsg.DescribeQuorumResponse, cluster *kmsg.DescribeClusterResponse, now time.Time) error {
	p := quorum.Topics[0].Partitions[0]
	var b strings.Builder
	fmt.Fprintf(&b, "Cluster ID:    %s\n", cluster.ClusterID)
	fmt.Fprintf(&b, "Raft leader:   %s\n", idOrNone(p.LeaderID))
	fmt.Fprintf(&b, "Term:          %d\n", p.LeaderEpoch)
	fmt.Fprintf(&b, "Commit index:  %d (high watermark)\n", p.HighWatermark)

	addrs := map[int32]string{}
	for _, n := range quorum.Nodes {
		if len(n.Listeners) > 0 {
			l := n.Listeners[0]
			addrs[n.NodeID] = hostPort(l.Host, int32(l.Port))
		}
	}
	b.WriteString("\nMetadata quorum:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tADDRESS\tLOG END\tLAG\tLAST CONTACT")
	row := func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState, role string) {
		if r.ReplicaID == p.LeaderID {
			role = "leader"
		}
		addr := addrs[r.ReplicaID]
		if addr == "" {
			addr = "-"
		}
		applied, lag := "-", "-"
		if r.LogEndOffset >= 0 {
			applied = strconv.FormatInt(r.LogEndOffset, 10)
			lag = strconv.FormatInt(max(p.HighWatermark-r.LogEndOffset, 0), 10)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.ReplicaID, role, addr, applied, lag, age(r.LastFetchTimestamp, now))
	}
	for _, r := range p.CurrentVoters {
		row(r, "follower")
	}
	for _, r := range p.Observers {
		row(r, "observer")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if cluster.EndpointType == 2 {
		// From --bootstrap-controller: the answer lists the controllers,
		// which the quorum table above already shows; brokers are a
		// broker's to list.
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("\nBrokers:\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tHOST:PORT\tRACK\tEPOCH\tFENCED\tSHUTTING DOWN")
	for _, br := range cluster.Brokers {
		x := broker.ReadBrokerExtensions(br)
		rack := "-"
		if br.Rack != nil && *br.Rack != "" {
			rack = *br.Rack
		}
		epoch := "-"
		if x.Epoch >= 0 {
			epoch = strconv.FormatInt(x.Epoch, 10)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", br.NodeID, hostPort(br.Host, br.Port), rack, epoch, yesNo(x.Fenced), yesNo(x.ShuttingDown))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func idOrNone(id int32) string {
	if id < 0 {
		return "none"
	}
	return strconv.Itoa(int(id))
}

func hostPort(host string, port int32) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(port))
}

// age renders a millisecond timestamp as time before now; -1 is unknown.
func age(ms int64, now time.Time) string {
	if ms < 0 {
		return "-"
	}
	d := max(now.Sub(time.UnixMilli(ms)), 0)
	return d.Round(time.Millisecond).String() + " ago"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
