package e2e

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/test/cluster"
)

// kafka-go's own TestConn "DeleteTopics" case: create two topics on a
// connection, delete them, and read their partitions through Metadata v6
// (which allows auto-creation). Kafka answers at once without partitions and
// creates the topics in the background, so the read finds none; a broker
// that waited for the re-creation would return the new topics' partitions.
func testDeleteThenReadPartitions(t *testing.T, c *cluster.Cluster, adm *kadm.Client) {
	ctx := ctxFor(t, 60*time.Second)
	const anchor = "delete-then-read-anchor"
	if err := createTopic(ctx, adm, anchor, 1, 3); err != nil {
		t.Fatalf("create %s: %v", anchor, err)
	}
	// As in kafka-go's tests, the connection is dialled for another topic:
	// errors of topics other than the connection's own are not returned.
	conn, err := kafka.DialLeader(ctx, "tcp", c.Node(1).ClientAddr(), anchor, 0)
	if err != nil {
		t.Fatalf("kafka-go DialLeader: %v", err)
	}
	defer conn.Close()
	topic1, topic2 := "delete-then-read-1", "delete-then-read-2"
	if err := conn.CreateTopics(
		kafka.TopicConfig{Topic: topic1, NumPartitions: 1, ReplicationFactor: 1},
		kafka.TopicConfig{Topic: topic2, NumPartitions: 1, ReplicationFactor: 1},
	); err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := conn.DeleteTopics(topic1, topic2); err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	partitions, err := conn.ReadPartitions(topic1, topic2)
	if err != nil {
		t.Fatalf("ReadPartitions: %v", err)
	}
	if len(partitions) != 0 {
		t.Fatalf("ReadPartitions after DeleteTopics returned %v, want none", partitions)
	}

	// The raw answer: UNKNOWN_TOPIC_OR_PARTITION with no partitions; the
	// topic then appears in the background and a retry finds it.
	kcl := client(t, c, c.Node(2))
	const fresh = "delete-then-read-fresh"
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(fresh)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(ctx, kcl)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || len(resp.Topics[0].Partitions) != 0 {
		t.Fatalf("first Metadata for an auto-created topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION and no partitions", resp.Topics)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		resp, err := req.RequestWith(ctx, kcl)
		if err != nil {
			return false, err.Error()
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 {
			return false, "topic not created yet"
		}
		return true, ""
	})
}

// Every node's ApiVersions lists metadata.version, share.version (Kafka
// 4.2 finalizes it on a new cluster) and transaction.version as finalized at the levels the binary serves, with the metadata offset as
// the epoch, and nothing that would switch a client to a protocol raftka
// does not serve (group.version 1 would make kgo use KIP-848).
func testFinalizedFeatures(t *testing.T, c *cluster.Cluster) {
	ctx := ctxFor(t, 30*time.Second)
	for _, n := range c.Nodes() {
		kcl := client(t, c, n)
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raftka-e2e", "1"
		resp, err := req.RequestWith(ctx, kcl)
		if err != nil {
			t.Fatalf("ApiVersions: %v", err)
		}
		if resp.FinalizedFeaturesEpoch <= 0 {
			t.Errorf("%s: finalized features epoch %d", n.ClientAddr(), resp.FinalizedFeaturesEpoch)
		}
		if ff := resp.FinalizedFeatures; len(ff) != 3 || ff[0].Name != "metadata.version" || ff[0].MaxVersionLevel != 28 || ff[0].MinVersionLevel != 28 ||
			ff[1].Name != "share.version" || ff[1].MaxVersionLevel != 1 || ff[1].MinVersionLevel != 1 ||
			ff[2].Name != "transaction.version" || ff[2].MaxVersionLevel != 2 || ff[2].MinVersionLevel != 2 {
			t.Errorf("%s: finalized features %+v, want metadata.version 28 (0.2-IV0), share.version 1 and transaction.version 2", n.ClientAddr(), ff)
		}
	}
}

// sarama's functional admin test describes log.cleaner.backoff.ms on broker
// 1 and expects exactly one entry with a number; Kafka answers one entry per
// key asked for. A Kafka key raftka does not apply is then refused when
// altered, with INVALID_CONFIG, rather than stored and ignored.
func testSaramaBrokerConfigs(t *testing.T, c *cluster.Cluster) {
	sadm, err := sarama.NewClusterAdmin(seedAddrs(c), saramaConfig(sarama.V4_0_0_0))
	if err != nil {
		t.Fatalf("sarama admin: %v", err)
	}
	defer sadm.Close()
	for _, name := range []string{"log.cleaner.backoff.ms", "num.io.threads"} {
		results, err := sadm.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: "1", ConfigNames: []string{name}}}, sarama.DescribeConfigsOptions{})
		if err != nil || len(results) != 1 || results[0].ErrorCode != 0 {
			t.Fatalf("DescribeConfigs %s: %v %+v", name, err, results)
		}
		res := results[0].Configs
		if len(res) != 1 || res[0].Name != name {
			t.Fatalf("DescribeConfigs %s: %+v, want one entry", name, res)
		}
		if _, err := strconv.Atoi(res[0].Value); err != nil {
			t.Errorf("%s = %q, want a number", name, res[0].Value)
		}
	}
	v := "4"
	err = sadm.IncrementalAlterConfig(sarama.BrokerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{
		"num.io.threads": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v},
	}, false)
	if !errors.Is(err, sarama.ErrInvalidConfig) || !strings.Contains(err.Error(), "num.io.threads") {
		t.Fatalf("altering num.io.threads: %v, want INVALID_CONFIG naming the key", err)
	}
}
