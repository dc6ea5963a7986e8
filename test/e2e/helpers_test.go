package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// client returns a franz-go client seeded with the given nodes (every node
// of c when none are named), closed when the test ends.
func client(t testing.TB, c *cluster.Cluster, nodes ...*cluster.Node) *kgo.Client {
	t.Helper()
	if len(nodes) == 0 {
		nodes = c.Nodes()
	}
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.ClientAddr())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// quorumLeader asks the cluster (any node, forwarded to the active
// controller) who leads the metadata quorum.
func quorumLeader(ctx context.Context, cl *kgo.Client) (int32, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	topic := kmsg.NewDescribeQuorumRequestTopic()
	topic.Topic = "__cluster_metadata"
	part := kmsg.NewDescribeQuorumRequestTopicPartition()
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("DescribeQuorum answered error %d with %d topics", resp.ErrorCode, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID < 0 {
		return -1, fmt.Errorf("DescribeQuorum: partition error %d, leader %d", p.ErrorCode, p.LeaderID)
	}
	return p.LeaderID, nil
}

// nodeMetadata asks one node directly (not any broker the client picks) for
// its view of every topic, so tests can compare the nodes' images.
func nodeMetadata(ctx context.Context, n *cluster.Node) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp, err := invariants.RawRequest(ctx, n.ClientAddr(), req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// topicIDs is one node's topic name -> id.
func topicIDs(ctx context.Context, n *cluster.Node) (map[string][16]byte, error) {
	resp, err := nodeMetadata(ctx, n)
	if err != nil {
		return nil, err
	}
	ids := make(map[string][16]byte, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if _, dup := ids[*t.Topic]; dup {
			return nil, fmt.Errorf("node %d lists topic %q twice", n.ID(), *t.Topic)
		}
		ids[*t.Topic] = t.TopicID
	}
	return ids, nil
}

// metric scrapes one value from a node's /metrics.
func metric(n *cluster.Node, name string) (float64, error) {
	hc := http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + n.MetricsAddr() + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") {
			return strconv.ParseFloat(strings.TrimSpace(line[len(name):]), 64)
		}
	}
	return 0, fmt.Errorf("node %d: metric %s not found", n.ID(), name)
}

func createTopic(ctx context.Context, adm *kadm.Client, name string, partitions int32, rf int16) error {
	resp, err := adm.CreateTopic(ctx, partitions, rf, nil, name)
	if err != nil {
		return err
	}
	return resp.Err
}

// kgoClient is client for goroutines that must not call t.Fatal.
func kgoClient(c *cluster.Cluster) (*kgo.Client, error) {
	var seeds []string
	for _, n := range c.Nodes() {
		seeds = append(seeds, n.ClientAddr())
	}
	return kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(10*time.Second))
}

// seedTopic creates topic (partitions, RF rf) on c and produces n records
// with the value "x" to it, failing the test on any error.
func seedTopic(ctx context.Context, t *testing.T, c *cluster.Cluster, adm *kadm.Client, topic string, partitions int32, rf int16, n int) {
	t.Helper()
	if err := createTopic(ctx, adm, topic, partitions, rf); err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}
