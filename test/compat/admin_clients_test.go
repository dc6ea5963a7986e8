package compat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	gometrics "github.com/rcrowley/go-metrics"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/test/cluster"
)

func init() {
	// sarama's metrics start a process-wide ticker goroutine that never
	// ends, which the harness's leak check would report; no test reads them.
	gometrics.UseNilMetrics = true
}

// admins are the three Go clients' admin handles on one cluster.
type admins struct {
	c      *cluster.Cluster
	kadm   *kadm.Client
	kgo    *kgo.Client
	sarama sarama.ClusterAdmin
	kgoCl  *kafka.Client
}

// adminCase is one admin call of one client library and what Kafka 4.1
// answers it; kafka says where Kafka defines the answer (or which of the
// client's own integration tests expects it).
type adminCase struct {
	api, client string
	kafka       string
	run         func(ctx context.Context, a *admins, name string) error
}

const (
	admTopic = "admin-clients" // 2 partitions, 3 records in partition 0
	admGroup = "admin-clients-group"
)

// TestAdminClients runs kadm's, sarama's ClusterAdmin's and kafka-go's
// Client's call for every admin API raftka serves against one one-node
// cluster, each call in its own subtest with its own topics and groups.
func TestAdminClients(t *testing.T) {
	c := cluster.Start(t, cluster.Nodes(1))
	a := &admins{c: c}
	var err error
	a.kgo, err = kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.kgo.Close)
	a.kadm = kadm.NewClient(a.kgo)
	a.kadm.SetTimeoutMillis(30000)
	scfg := sarama.NewConfig()
	scfg.ClientID, scfg.Version = "raftka-admin-clients", sarama.V4_0_0_0
	scfg.Net.DialTimeout = 5 * time.Second
	scfg.Admin.Timeout = 30 * time.Second
	scfg.Metadata.Retry.Max, scfg.Metadata.Retry.Backoff = 40, 250*time.Millisecond
	tr := &kafka.Transport{ClientID: "raftka-admin-clients"}
	t.Cleanup(tr.CloseIdleConnections)
	a.kgoCl = &kafka.Client{Addr: kafka.TCP(c.Node(1).ClientAddr()), Timeout: 30 * time.Second, Transport: tr}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The node answers before its quorum has a controller; retry as a
	// client would until the first topic is created.
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		r, err := a.kadm.CreateTopic(ctx, 2, 1, nil, admTopic)
		if err == nil {
			err = r.Err
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			return true, ""
		}
		return false, err.Error()
	})
	// Rising timestamps, so the largest is the last record's (ListOffsets -3).
	base := time.Now().Add(-time.Minute)
	rec := make([]*kgo.Record, 3)
	for i := range rec {
		rec[i] = &kgo.Record{Topic: admTopic, Partition: 0, Value: []byte(strconv.Itoa(i)), Timestamp: base.Add(time.Duration(i) * time.Second)}
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	if err := pcl.ProduceSync(ctx, rec...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	a.sarama, err = sarama.NewClusterAdmin([]string{c.Node(1).ClientAddr()}, scfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.sarama.Close() })

	for i, ac := range adminCases() {
		t.Run(ac.api+"/"+ac.client, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// Names unique to the case, so cases never see each other's
			// topics and groups.
			name := fmt.Sprintf("adm-%d-%s", i, ac.client)
			if err := ac.run(ctx, a, name); err != nil {
				t.Errorf("%v\nKafka 4.1: %s", err, ac.kafka)
			}
		})
	}
}

// kafkaErr is a kerr error as every library's error compares to it.
func isKerr(err error, want *kerr.Error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, want) {
		return true
	}
	var se sarama.KError
	if errors.As(err, &se) && int16(se) == want.Code {
		return true
	}
	var te *sarama.TopicError
	if errors.As(err, &te) && int16(te.Err) == want.Code {
		return true
	}
	var pe *sarama.TopicPartitionError
	if errors.As(err, &pe) && int16(pe.Err) == want.Code {
		return true
	}
	var ke kafka.Error
	return errors.As(err, &ke) && int16(ke) == want.Code
}

func wantKerr(what string, err error, want *kerr.Error) error {
	if want == nil {
		if err != nil {
			return fmt.Errorf("%s: %v, want no error", what, err)
		}
		return nil
	}
	if !isKerr(err, want) {
		return fmt.Errorf("%s: %v, want %s", what, err, want.Message)
	}
	return nil
}

// createWith makes a topic for one case through kadm.
func (a *admins) create(ctx context.Context, name string, partitions int32) error {
	r, err := a.kadm.CreateTopic(ctx, partitions, 1, nil, name)
	if err == nil {
		err = r.Err
	}
	return err
}

func (a *admins) partitions(ctx context.Context, name string) (int, error) {
	md, err := a.kadm.Metadata(ctx, name)
	if err != nil {
		return 0, err
	}
	td, ok := md.Topics[name]
	if !ok || td.Err != nil {
		return 0, fmt.Errorf("topic %s: %v", name, td.Err)
	}
	return len(td.Partitions), nil
}

// commit commits offset 1 of admTopic/0 for a group with no members (a
// standalone commit, as the admin tools' offset reset does).
func (a *admins) commit(ctx context.Context, group string) error {
	os := kadm.Offsets{}
	os.AddOffset(admTopic, 0, 1, -1)
	return a.kadm.CommitAllOffsets(ctx, group, os)
}

func adminCases() []adminCase {
	return slices.Concat(topicCases(), configCases(), clusterCases(), groupCases(), scramCases())
}

func topicCases() []adminCase {
	return []adminCase{
		{"CreateTopics", "kadm", "ControllerApis.createTopics / ReplicationControlManager.createTopics: created, then TOPIC_ALREADY_EXISTS for the same name (franz-go's kadm tests)",
			func(ctx context.Context, a *admins, name string) error {
				r, err := a.kadm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, name)
				if err != nil || r.Err != nil {
					return fmt.Errorf("create: %v %v", err, r.Err)
				}
				if r.NumPartitions != 3 || r.ReplicationFactor != 1 || r.ID == [16]byte{} {
					return fmt.Errorf("created %+v, want 3 partitions, factor 1 and a topic id", r)
				}
				// kadm's CreateTopic returns the topic's error as its own.
				_, err = a.kadm.CreateTopic(ctx, 3, 1, nil, name)
				return wantKerr("create again", err, kerr.TopicAlreadyExists)
			}},
		{"CreateTopics", "sarama", "ReplicationControlManager.createTopics: validate-only creates nothing; TOPIC_ALREADY_EXISTS on the second create (sarama's TestFuncAdminTopics)",
			func(ctx context.Context, a *admins, name string) error {
				d := &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}
				if err := a.sarama.CreateTopic(name, d, true); err != nil {
					return fmt.Errorf("validate only: %v", err)
				}
				if _, err := a.partitions(ctx, name); err == nil {
					return fmt.Errorf("validate-only create made the topic")
				}
				if err := a.sarama.CreateTopic(name, d, false); err != nil {
					return fmt.Errorf("create: %v", err)
				}
				return wantKerr("create again", a.sarama.CreateTopic(name, d, false), kerr.TopicAlreadyExists)
			}},
		{"CreateTopics", "kafka-go", "ReplicationControlManager.createTopics: per-topic errors; an invalid name is INVALID_TOPIC_EXCEPTION (Topic.validate)",
			func(ctx context.Context, a *admins, name string) error {
				r, err := a.kgoCl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
					{Topic: name, NumPartitions: 2, ReplicationFactor: 1},
					{Topic: "bad/" + name, NumPartitions: 1, ReplicationFactor: 1},
				}})
				if err != nil {
					return err
				}
				if err := wantKerr(name, r.Errors[name], nil); err != nil {
					return err
				}
				return wantKerr("bad name", r.Errors["bad/"+name], kerr.InvalidTopicException)
			}},
		{"DeleteTopics", "kadm", "ReplicationControlManager.deleteTopics: deleted; an absent name is UNKNOWN_TOPIC_OR_PARTITION",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				rs, err := a.kadm.DeleteTopics(ctx, name, name+"-absent")
				if err != nil {
					return err
				}
				if err := wantKerr("delete", rs[name].Err, nil); err != nil {
					return err
				}
				return wantKerr("delete absent", rs[name+"-absent"].Err, kerr.UnknownTopicOrPartition)
			}},
		{"DeleteTopics", "sarama", "ReplicationControlManager.deleteTopics: deleted, then UNKNOWN_TOPIC_OR_PARTITION (sarama's TestFuncAdminTopics)",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				if err := a.sarama.DeleteTopic(name); err != nil {
					return fmt.Errorf("delete: %v", err)
				}
				return wantKerr("delete again", a.sarama.DeleteTopic(name), kerr.UnknownTopicOrPartition)
			}},
		{"DeleteTopics", "kafka-go", "ReplicationControlManager.deleteTopics: deleted; the topic is gone from Metadata",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				r, err := a.kgoCl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{name}})
				if err != nil {
					return err
				}
				if err := wantKerr("delete", r.Errors[name], nil); err != nil {
					return err
				}
				md, err := a.kadm.Metadata(ctx, name)
				if err != nil {
					return err
				}
				return wantKerr("metadata after delete", md.Topics[name].Err, kerr.UnknownTopicOrPartition)
			}},
		{"CreatePartitions", "kadm", "ReplicationControlManager.createPartitions: raised to the count; a count not above the current is INVALID_PARTITIONS; validate-only changes nothing",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				rs, err := a.kadm.ValidateUpdatePartitions(ctx, 4, name)
				if err != nil || rs[name].Err != nil {
					return fmt.Errorf("validate: %v %v", err, rs[name].Err)
				}
				if n, err := a.partitions(ctx, name); err != nil || n != 1 {
					return fmt.Errorf("after validate-only: %d partitions (%v), want 1", n, err)
				}
				rs, err = a.kadm.UpdatePartitions(ctx, 3, name)
				if err != nil || rs[name].Err != nil {
					return fmt.Errorf("update: %v %v", err, rs[name].Err)
				}
				if n, err := a.partitions(ctx, name); err != nil || n != 3 {
					return fmt.Errorf("after update: %d partitions (%v), want 3", n, err)
				}
				rs, err = a.kadm.UpdatePartitions(ctx, 2, name)
				if err != nil {
					return err
				}
				return wantKerr("lower count", rs[name].Err, kerr.InvalidPartitions)
			}},
		{"CreatePartitions", "sarama", "ReplicationControlManager.createPartitions: raised; the same count again is INVALID_PARTITIONS (sarama's TestFuncAdminCreatePartitions)",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				if err := a.sarama.CreatePartitions(name, 2, nil, false); err != nil {
					return fmt.Errorf("create partitions: %v", err)
				}
				return wantKerr("same count", a.sarama.CreatePartitions(name, 2, nil, false), kerr.InvalidPartitions)
			}},
		{"CreatePartitions", "kafka-go", "ReplicationControlManager.createPartitions: raised; an absent topic is UNKNOWN_TOPIC_OR_PARTITION",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				r, err := a.kgoCl.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{
					{Name: name, Count: 3}, {Name: name + "-absent", Count: 3},
				}})
				if err != nil {
					return err
				}
				if err := wantKerr("create partitions", r.Errors[name], nil); err != nil {
					return err
				}
				if n, err := a.partitions(ctx, name); err != nil || n != 3 {
					return fmt.Errorf("%d partitions (%v), want 3", n, err)
				}
				return wantKerr("absent topic", r.Errors[name+"-absent"], kerr.UnknownTopicOrPartition)
			}},
		{"DeleteRecords", "kadm", "ReplicationManager.deleteRecords: the low watermark moves to the offset; ListOffsets earliest then answers it",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				if err := a.produce(ctx, name, 3); err != nil {
					return err
				}
				os := kadm.Offsets{}
				os.AddOffset(name, 0, 2, -1)
				rs, err := a.kadm.DeleteRecords(ctx, os)
				if err != nil {
					return err
				}
				r, _ := rs.Lookup(name, 0)
				if r.Err != nil || r.LowWatermark != 2 {
					return fmt.Errorf("delete records: low watermark %d %v, want 2", r.LowWatermark, r.Err)
				}
				return a.wantStart(ctx, name, 2)
			}},
		{"DeleteRecords", "sarama", "ReplicationManager.deleteRecords: offset past the high watermark is OFFSET_OUT_OF_RANGE (sarama's TestFuncAdminDeleteRecords deletes below it)",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				if err := a.produce(ctx, name, 3); err != nil {
					return err
				}
				if err := a.sarama.DeleteRecords(name, map[int32]int64{0: 1}); err != nil {
					return fmt.Errorf("delete records: %v", err)
				}
				if err := a.wantStart(ctx, name, 1); err != nil {
					return err
				}
				return wantKerr("past the high watermark", a.sarama.DeleteRecords(name, map[int32]int64{0: 10}), kerr.OffsetOutOfRange)
			}},
		{"ListOffsets", "kadm", "ReplicationManager.fetchOffset: earliest 0, latest 3, max timestamp (-3, KIP-734) the last record",
			func(ctx context.Context, a *admins, _ string) error {
				for _, c := range []struct {
					what string
					list func(context.Context, ...string) (kadm.ListedOffsets, error)
					want int64
				}{{"start", a.kadm.ListStartOffsets, 0}, {"end", a.kadm.ListEndOffsets, 3}, {"max timestamp", a.kadm.ListMaxTimestampOffsets, 2}} {
					lo, err := c.list(ctx, admTopic)
					if err != nil {
						return err
					}
					o, ok := lo.Lookup(admTopic, 0)
					if !ok || o.Err != nil || o.Offset != c.want {
						return fmt.Errorf("%s: %+v, want offset %d", c.what, o, c.want)
					}
				}
				return nil
			}},
		{"ListOffsets", "sarama", "ReplicationManager.fetchOffset: earliest 0 and latest 3; latest of an empty partition 0",
			func(ctx context.Context, a *admins, _ string) error {
				r, err := a.sarama.ListOffsets(map[string]map[int32]int64{admTopic: {0: sarama.OffsetOldest, 1: sarama.OffsetNewest}}, nil)
				if err != nil {
					return err
				}
				p0, p1 := r[admTopic][0], r[admTopic][1]
				if p0 == nil || p1 == nil || p0.Err != sarama.ErrNoError || p1.Err != sarama.ErrNoError || p0.Offset != 0 || p1.Offset != 0 {
					return fmt.Errorf("offsets %+v %+v, want 0 (earliest of 0) and 0 (latest of empty 1)", p0, p1)
				}
				r, err = a.sarama.ListOffsets(map[string]map[int32]int64{admTopic: {0: sarama.OffsetNewest}}, nil)
				if err != nil {
					return err
				}
				if p := r[admTopic][0]; p == nil || p.Err != sarama.ErrNoError || p.Offset != 3 {
					return fmt.Errorf("latest of 0: %+v, want 3", p)
				}
				return nil
			}},
		{"ListOffsets", "kafka-go", "ReplicationManager.fetchOffset: first 0, last 3 (kafka-go's TestClientListOffsets)",
			func(ctx context.Context, a *admins, _ string) error {
				r, err := a.kgoCl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
					admTopic: {kafka.FirstOffsetOf(0), kafka.LastOffsetOf(0)},
				}})
				if err != nil {
					return err
				}
				ps := r.Topics[admTopic]
				if len(ps) != 1 || ps[0].Error != nil || ps[0].FirstOffset != 0 || ps[0].LastOffset != 3 {
					return fmt.Errorf("offsets %+v, want first 0 last 3", ps)
				}
				return nil
			}},
		{"Metadata", "kadm", "KafkaApis.handleTopicMetadataRequest: every topic with its partitions, leader and replicas; internal topics only when asked",
			func(ctx context.Context, a *admins, _ string) error {
				td, err := a.kadm.ListTopics(ctx)
				if err != nil {
					return err
				}
				d, ok := td[admTopic]
				if !ok || d.Err != nil || len(d.Partitions) != 2 || d.IsInternal {
					return fmt.Errorf("%s: %+v", admTopic, d)
				}
				if td.Has("__consumer_offsets") {
					return fmt.Errorf("ListTopics lists the internal __consumer_offsets")
				}
				for _, p := range d.Partitions {
					if p.Leader != 1 || !slices.Equal(p.Replicas, []int32{1}) || !slices.Equal(p.ISR, []int32{1}) {
						return fmt.Errorf("partition %+v, want leader 1, replicas and ISR [1]", p)
					}
				}
				return nil
			}},
		{"Metadata", "sarama", "KafkaApis.handleTopicMetadataRequest: ListTopics gives partitions and replication factor; DescribeTopics of an absent topic is UNKNOWN_TOPIC_OR_PARTITION",
			func(ctx context.Context, a *admins, name string) error {
				ts, err := a.sarama.ListTopics()
				if err != nil {
					return err
				}
				if d, ok := ts[admTopic]; !ok || d.NumPartitions != 2 || d.ReplicationFactor != 1 {
					return fmt.Errorf("%s: %+v", admTopic, d)
				}
				md, err := a.sarama.DescribeTopics([]string{name + "-absent"})
				if err != nil {
					return err
				}
				if len(md) != 1 {
					return fmt.Errorf("%d topics, want 1", len(md))
				}
				return wantKerr("absent", md[0].Err, kerr.UnknownTopicOrPartition)
			}},
		{"Metadata", "kafka-go", "KafkaApis.handleTopicMetadataRequest: the broker, the controller and the topic's partitions",
			func(ctx context.Context, a *admins, _ string) error {
				r, err := a.kgoCl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{admTopic}})
				if err != nil {
					return err
				}
				if len(r.Brokers) != 1 || r.Brokers[0].ID != 1 || r.Controller.ID != 1 || r.ClusterID != a.c.ClusterID() {
					return fmt.Errorf("brokers %+v controller %+v cluster %q", r.Brokers, r.Controller, r.ClusterID)
				}
				if len(r.Topics) != 1 || r.Topics[0].Error != nil || len(r.Topics[0].Partitions) != 2 {
					return fmt.Errorf("topics %+v", r.Topics)
				}
				return nil
			}},
	}
}

func (a *admins) produce(ctx context.Context, name string, n int) error {
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: name, Value: []byte(strconv.Itoa(i))}
	}
	return a.kgo.ProduceSync(ctx, rs...).FirstErr()
}

func (a *admins) wantStart(ctx context.Context, name string, want int64) error {
	lo, err := a.kadm.ListStartOffsets(ctx, name)
	if err != nil {
		return err
	}
	o, _ := lo.Lookup(name, 0)
	if o.Err != nil || o.Offset != want {
		return fmt.Errorf("start offset %d %v, want %d", o.Offset, o.Err, want)
	}
	return nil
}

func configCases() []adminCase {
	return []adminCase{
		{"DescribeConfigs", "kadm", "ConfigHelper.describeConfigs: a topic's retention.ms at its default (DEFAULT_CONFIG source, 604800000); a broker's named key present with its value",
			func(ctx context.Context, a *admins, _ string) error {
				rc, err := a.kadm.DescribeTopicConfigs(ctx, admTopic)
				if err != nil {
					return err
				}
				r, err := rc.On(admTopic, nil)
				if err != nil || r.Err != nil {
					return fmt.Errorf("describe %s: %v %v", admTopic, err, r.Err)
				}
				v, ok := configValue(r.Configs, "retention.ms")
				if !ok || v.MaybeValue() != "604800000" {
					return fmt.Errorf("retention.ms %+v, want 604800000", v)
				}
				rc, err = a.kadm.DescribeBrokerConfigs(ctx, 1)
				if err != nil {
					return err
				}
				r, err = rc.On("1", nil)
				if err != nil || r.Err != nil {
					return fmt.Errorf("describe broker 1: %v %v", err, r.Err)
				}
				if _, ok := configValue(r.Configs, "num.partitions"); !ok {
					return fmt.Errorf("broker 1 lacks num.partitions among %d keys", len(r.Configs))
				}
				return nil
			}},
		{"DescribeConfigs", "sarama", "ConfigHelper.describeConfigs: one entry per named key; log.cleaner.backoff.ms on broker 1 is 15000 (sarama's TestFuncAdminDescribeConfig asks for it)",
			func(ctx context.Context, a *admins, _ string) error {
				es, err := a.saramaDescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource, Name: "1", ConfigNames: []string{"log.cleaner.backoff.ms"}})
				if err != nil {
					return err
				}
				if len(es) != 1 || es[0].Name != "log.cleaner.backoff.ms" || es[0].Value != "15000" {
					return fmt.Errorf("entries %+v, want log.cleaner.backoff.ms=15000", es)
				}
				es, err = a.saramaDescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: admTopic, ConfigNames: []string{"cleanup.policy"}})
				if err != nil {
					return err
				}
				if len(es) != 1 || es[0].Value != "delete" || es[0].Source != sarama.SourceDefault {
					return fmt.Errorf("entries %+v, want cleanup.policy=delete from the default", es)
				}
				return nil
			}},
		{"DescribeConfigs", "kafka-go", "ConfigHelper.describeConfigs: an absent topic is UNKNOWN_TOPIC_OR_PARTITION in its resource",
			func(ctx context.Context, a *admins, name string) error {
				r, err := a.kgoCl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
					{ResourceType: kafka.ResourceTypeTopic, ResourceName: admTopic, ConfigNames: []string{"max.message.bytes"}},
					{ResourceType: kafka.ResourceTypeTopic, ResourceName: name + "-absent"},
				}})
				if err != nil {
					return err
				}
				if len(r.Resources) != 2 {
					return fmt.Errorf("%d resources, want 2", len(r.Resources))
				}
				for _, res := range r.Resources {
					if res.ResourceName == admTopic {
						if res.Error != nil || len(res.ConfigEntries) != 1 || res.ConfigEntries[0].ConfigValue != "1048588" {
							return fmt.Errorf("%s: %+v, want max.message.bytes=1048588", admTopic, res)
						}
						continue
					}
					if err := wantKerr("absent topic", res.Error, kerr.UnknownTopicOrPartition); err != nil {
						return err
					}
				}
				return nil
			}},
		{"AlterConfigs", "kadm", "ConfigurationControlManager.legacyAlterConfigs: the resource's dynamic configs are replaced; the value then described with source DYNAMIC_TOPIC_CONFIG",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				rs, err := a.kadm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("120000")}}, name)
				if err != nil || len(rs) != 1 || rs[0].Err != nil {
					return fmt.Errorf("alter: %v %+v", err, rs)
				}
				return a.wantTopicConfig(ctx, name, "retention.ms", "120000")
			}},
		{"AlterConfigs", "sarama", "ConfigurationControlManager.legacyAlterConfigs: set; validate-only changes nothing (sarama's TestFuncAdminAlterConfig)",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				if err := a.sarama.AlterConfig(sarama.TopicResource, name, map[string]*string{"retention.ms": strPtr("1000")}, true); err != nil {
					return fmt.Errorf("validate only: %v", err)
				}
				if err := a.wantTopicConfig(ctx, name, "retention.ms", "604800000"); err != nil {
					return fmt.Errorf("after validate-only: %v", err)
				}
				if err := a.sarama.AlterConfig(sarama.TopicResource, name, map[string]*string{"retention.ms": strPtr("1000")}, false); err != nil {
					return fmt.Errorf("alter: %v", err)
				}
				return a.wantTopicConfig(ctx, name, "retention.ms", "1000")
			}},
		{"AlterConfigs", "kafka-go", "ConfigurationControlManager.legacyAlterConfigs: set; an absent topic is UNKNOWN_TOPIC_OR_PARTITION",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				r, err := a.kgoCl.AlterConfigs(ctx, &kafka.AlterConfigsRequest{Resources: []kafka.AlterConfigRequestResource{
					{ResourceType: kafka.ResourceTypeTopic, ResourceName: name, Configs: []kafka.AlterConfigRequestConfig{{Name: "segment.ms", Value: "7200000"}}},
				}})
				if err != nil {
					return err
				}
				for res, err := range r.Errors {
					if err != nil {
						return fmt.Errorf("%s: %v", res.Name, err)
					}
				}
				return a.wantTopicConfig(ctx, name, "segment.ms", "7200000")
			}},
		{"IncrementalAlterConfigs", "kadm", "ConfigurationControlManager.incrementalAlterConfigs: SET then DELETE returns the key to its default; an unknown key is INVALID_CONFIG",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				rs, err := a.kadm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.bytes", Value: kadm.StringPtr("1048576")}}, name)
				if err != nil || len(rs) != 1 || rs[0].Err != nil {
					return fmt.Errorf("set: %v %+v", err, rs)
				}
				if err := a.wantTopicConfig(ctx, name, "retention.bytes", "1048576"); err != nil {
					return err
				}
				rs, err = a.kadm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.bytes"}}, name)
				if err != nil || len(rs) != 1 || rs[0].Err != nil {
					return fmt.Errorf("delete: %v %+v", err, rs)
				}
				if err := a.wantTopicConfig(ctx, name, "retention.bytes", "-1"); err != nil {
					return err
				}
				rs, err = a.kadm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "no.such.key", Value: kadm.StringPtr("1")}}, name)
				if err != nil || len(rs) != 1 {
					return fmt.Errorf("unknown key: %v %+v", err, rs)
				}
				return wantKerr("unknown key", rs[0].Err, kerr.InvalidConfig)
			}},
		{"IncrementalAlterConfigs", "sarama", "ConfigurationControlManager.incrementalAlterConfigs: set on a topic (sarama's TestFuncAdminIncrementalAlterConfig); log.cleaner.backoff.ms set on broker 1 as a dynamic broker config (a LogCleaner reconfigurable, LogCleaner.ReconfigurableConfigs) and described DYNAMIC_BROKER_CONFIG, then deleted; a broker key that is not dynamic is refused: INVALID_REQUEST, \"Cannot update these configs dynamically\", naming it (ConfigAdminManager.validateBrokerConfigChange, KAFKA-13609), the value unchanged",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				err := a.sarama.IncrementalAlterConfig(sarama.TopicResource, name, map[string]sarama.IncrementalAlterConfigsEntry{
					"delete.retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: strPtr("3600000")},
				}, false)
				if err != nil {
					return fmt.Errorf("set: %v", err)
				}
				if err := a.wantTopicConfig(ctx, name, "delete.retention.ms", "3600000"); err != nil {
					return err
				}
				// sarama's own admin test describes then alters this key on
				// broker 1; Kafka updates it dynamically, and so does raftka.
				err = a.sarama.IncrementalAlterConfig(sarama.BrokerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{
					"log.cleaner.backoff.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: strPtr("20000")},
				}, false)
				if err != nil {
					return fmt.Errorf("set log.cleaner.backoff.ms on broker 1: %v", err)
				}
				es, err := a.saramaDescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource, Name: "1", ConfigNames: []string{"log.cleaner.backoff.ms"}})
				if err != nil || len(es) != 1 || es[0].Value != "20000" || es[0].Source != sarama.SourceDynamicBroker || es[0].ReadOnly {
					return fmt.Errorf("after the set: %v %+v, want 20000 from DYNAMIC_BROKER_CONFIG, writable", err, es)
				}
				// Back to the default, for the other subtests.
				err = a.sarama.IncrementalAlterConfig(sarama.BrokerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{
					"log.cleaner.backoff.ms": {Operation: sarama.IncrementalAlterConfigsOperationDelete},
				}, false)
				if err != nil {
					return fmt.Errorf("delete log.cleaner.backoff.ms on broker 1: %v", err)
				}
				err = a.sarama.IncrementalAlterConfig(sarama.BrokerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{
					"log.cleaner.enable": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: strPtr("false")},
				}, false)
				if err := wantKerr("static broker key", err, kerr.InvalidRequest); err != nil {
					return err
				}
				if !strings.Contains(err.Error(), "Cannot update these configs dynamically: log.cleaner.enable") {
					return fmt.Errorf("refusal %q does not name the key", err)
				}
				es, err = a.saramaDescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource, Name: "1", ConfigNames: []string{"log.cleaner.backoff.ms", "log.cleaner.enable"}})
				if err != nil || len(es) != 2 || es[0].Value != "15000" || es[0].Source != sarama.SourceDefault || es[1].Value != "true" {
					return fmt.Errorf("after the delete and the refusal: %v %+v, want 15000 and true", err, es)
				}
				return nil
			}},
		{"IncrementalAlterConfigs", "kafka-go", "ConfigurationControlManager.incrementalAlterConfigs: set on a topic; APPEND to a list key adds to it",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 1); err != nil {
					return err
				}
				r, err := a.kgoCl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{
					{ResourceType: kafka.ResourceTypeTopic, ResourceName: name, Configs: []kafka.IncrementalAlterConfigsRequestConfig{
						{Name: "cleanup.policy", Value: "compact", ConfigOperation: kafka.ConfigOperationAppend},
					}},
				}})
				if err != nil {
					return err
				}
				for _, res := range r.Resources {
					if res.Error != nil {
						return fmt.Errorf("%s: %v", res.ResourceName, res.Error)
					}
				}
				return a.wantTopicConfig(ctx, name, "cleanup.policy", "delete,compact")
			}},
		{"DescribeTopicPartitions", "franz-go", "DescribeTopicPartitionsRequestHandler and KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse: a 5-partition topic paged 2 partitions at a time by NextCursor gives every partition once, in order, as Metadata describes it (leader, epoch, replicas, ISR), ELR lists empty, every topic operation authorized; Kafka 4.x's Admin.describeTopics pages the same way",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.create(ctx, name, 5); err != nil {
					return err
				}
				md, err := a.kadm.Metadata(ctx, name)
				if err != nil {
					return err
				}
				want := md.Topics[name].Partitions
				var cursor *kmsg.DescribeTopicPartitionsRequestCursor
				var got []kmsg.DescribeTopicPartitionsResponseTopicPartition
				for page := 0; page < 10; page++ {
					req := kmsg.NewPtrDescribeTopicPartitionsRequest()
					rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
					rt.Topic = name
					req.Topics, req.ResponsePartitionLimit, req.Cursor = []kmsg.DescribeTopicPartitionsRequestTopic{rt}, 2, cursor
					resp, err := req.RequestWith(ctx, a.kgo)
					if err != nil {
						return err
					}
					if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
						return fmt.Errorf("page %d: %+v", page, resp.Topics)
					}
					t := resp.Topics[0]
					const allTopicOps = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
					if t.TopicID != md.Topics[name].ID || t.AuthorizedOperations != allTopicOps {
						return fmt.Errorf("page %d: topic id %x ops %d", page, t.TopicID, t.AuthorizedOperations)
					}
					got = append(got, t.Partitions...)
					if resp.NextCursor == nil {
						break
					}
					if len(t.Partitions) != 2 || resp.NextCursor.Topic != name || resp.NextCursor.Partition != int32(len(got)) {
						return fmt.Errorf("page %d: %d partitions, next cursor %+v", page, len(t.Partitions), resp.NextCursor)
					}
					cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: name, Partition: resp.NextCursor.Partition}
				}
				if len(got) != 5 || len(want) != 5 {
					return fmt.Errorf("%d partitions paged, Metadata has %d, want 5", len(got), len(want))
				}
				for i, p := range got {
					w := want[int32(i)]
					if p.Partition != int32(i) || p.LeaderID != w.Leader || p.LeaderEpoch != w.LeaderEpoch ||
						fmt.Sprint(p.Replicas, p.ISR) != fmt.Sprint(w.Replicas, w.ISR) ||
						p.EligibleLeaderReplicas == nil || len(p.EligibleLeaderReplicas) != 0 || len(p.LastKnownELR) != 0 || len(p.OfflineReplicas) != 0 {
						return fmt.Errorf("partition %d: %+v, Metadata says %+v", i, p, w)
					}
				}
				return nil
			}},
	}
}

func configValue(cs []kadm.Config, key string) (kadm.Config, bool) {
	for _, c := range cs {
		if c.Key == key {
			return c, true
		}
	}
	return kadm.Config{}, false
}

func (a *admins) wantTopicConfig(ctx context.Context, name, key, want string) error {
	rc, err := a.kadm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		return err
	}
	r, err := rc.On(name, nil)
	if err != nil || r.Err != nil {
		return fmt.Errorf("describe %s: %v %v", name, err, r.Err)
	}
	c, ok := configValue(r.Configs, key)
	if !ok || c.MaybeValue() != want {
		return fmt.Errorf("%s=%q (listed %v), want %q", key, c.MaybeValue(), ok, want)
	}
	return nil
}

func clusterCases() []adminCase {
	return []adminCase{
		{"Metadata(cluster)", "sarama", "KafkaApis.handleTopicMetadataRequest (sarama's DescribeCluster uses Metadata): broker 1, controller 1",
			func(ctx context.Context, a *admins, _ string) error {
				bs, ctrl, err := a.sarama.DescribeCluster()
				if err != nil {
					return err
				}
				if len(bs) != 1 || bs[0].ID() != 1 || ctrl != 1 {
					return fmt.Errorf("%d brokers, controller %d, want broker 1 controlling", len(bs), ctrl)
				}
				return nil
			}},
		{"Metadata(cluster)", "kadm", "KafkaApis.handleTopicMetadataRequest (kadm.BrokerMetadata): the cluster id and broker 1 as controller",
			func(ctx context.Context, a *admins, _ string) error {
				md, err := a.kadm.BrokerMetadata(ctx)
				if err != nil {
					return err
				}
				if md.Cluster != a.c.ClusterID() || md.Controller != 1 || len(md.Brokers) != 1 || md.Brokers[0].NodeID != 1 {
					return fmt.Errorf("cluster %q controller %d brokers %+v", md.Cluster, md.Controller, md.Brokers)
				}
				return nil
			}},
		{"DescribeLogDirs", "kadm", "ReplicaManager.describeLogDirs: one dir, the topic's partitions with their sizes, lag 0 on a lone leader",
			func(ctx context.Context, a *admins, _ string) error {
				all, err := a.kadm.DescribeAllLogDirs(ctx, kadm.TopicsSet{admTopic: {0: {}, 1: {}}})
				if err != nil {
					return err
				}
				dirs, ok := all[1]
				if !ok || len(dirs) == 0 {
					return fmt.Errorf("broker 1 dirs: %+v", all)
				}
				seen := 0
				for _, d := range dirs {
					if d.Err != nil {
						return fmt.Errorf("dir %s: %v", d.Dir, d.Err)
					}
					for _, ps := range d.Topics {
						for _, p := range ps {
							if p.Topic != admTopic {
								return fmt.Errorf("topic %s not asked for", p.Topic)
							}
							if p.OffsetLag != 0 || (p.Partition == 0 && p.Size <= 0) {
								return fmt.Errorf("%s/%d: size %d lag %d", p.Topic, p.Partition, p.Size, p.OffsetLag)
							}
							seen++
						}
					}
				}
				if seen != 2 {
					return fmt.Errorf("%d partitions described, want 2", seen)
				}
				return nil
			}},
		{"DescribeLogDirs", "sarama", "ReplicaManager.describeLogDirs: every dir of broker 1 with its topics (sarama's TestFuncAdminDescribeLogDirs)",
			func(ctx context.Context, a *admins, _ string) error {
				m, err := a.sarama.DescribeLogDirs([]int32{1})
				if err != nil {
					return err
				}
				dirs := m[1]
				if len(dirs) == 0 {
					return fmt.Errorf("no dirs for broker 1")
				}
				for _, d := range dirs {
					if d.ErrorCode != sarama.ErrNoError || d.Path == "" {
						return fmt.Errorf("dir %q: %v", d.Path, d.ErrorCode)
					}
					for _, tp := range d.Topics {
						if tp.Topic == admTopic {
							return nil
						}
					}
				}
				return fmt.Errorf("%s not in broker 1's dirs", admTopic)
			}},
		{"ElectLeaders", "kadm", "ReplicationControlManager.electLeaders: the preferred replica already leads: ELECTION_NOT_NEEDED per partition",
			func(ctx context.Context, a *admins, _ string) error {
				rs, err := a.kadm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{admTopic: {0: {}}})
				if err != nil {
					return err
				}
				r, ok := rs[admTopic][0]
				if !ok {
					return fmt.Errorf("no result for %s/0: %+v", admTopic, rs)
				}
				return wantKerr("elect", r.Err, kerr.ElectionNotNeeded)
			}},
		{"ElectLeaders", "sarama", "ReplicationControlManager.electLeaders: ELECTION_NOT_NEEDED; an absent partition is UNKNOWN_TOPIC_OR_PARTITION",
			func(ctx context.Context, a *admins, _ string) error {
				r, err := a.sarama.ElectLeaders(sarama.PreferredElection, map[string][]int32{admTopic: {0, 7}})
				if err != nil {
					return err
				}
				p0, p7 := r[admTopic][0], r[admTopic][7]
				if p0 == nil || p7 == nil {
					return fmt.Errorf("results %+v", r)
				}
				if int16(p0.ErrorCode) != kerr.ElectionNotNeeded.Code || int16(p7.ErrorCode) != kerr.UnknownTopicOrPartition.Code {
					return fmt.Errorf("partition 0 %v, 7 %v; want ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_OR_PARTITION", p0.ErrorCode, p7.ErrorCode)
				}
				return nil
			}},
		{"ElectLeaders", "kafka-go", "ReplicationControlManager.electLeaders: ELECTION_NOT_NEEDED per partition",
			func(ctx context.Context, a *admins, _ string) error {
				r, err := a.kgoCl.ElectLeaders(ctx, &kafka.ElectLeadersRequest{Topic: admTopic, Partitions: []int{0}})
				if err != nil {
					return err
				}
				if r.Error != nil || len(r.PartitionResults) != 1 {
					return fmt.Errorf("%v %+v", r.Error, r.PartitionResults)
				}
				return wantKerr("elect", r.PartitionResults[0].Error, kerr.ElectionNotNeeded)
			}},
	}
}

func groupCases() []adminCase {
	return []adminCase{
		{"OffsetCommit+OffsetFetch", "kadm", "GroupCoordinatorService.commitOffsets / fetchOffsets: a standalone commit is read back with its metadata and leader epoch",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				rs, err := a.kadm.FetchOffsets(ctx, name)
				if err != nil {
					return err
				}
				o, ok := rs.Lookup(admTopic, 0)
				if !ok || o.Err != nil || o.At != 1 {
					return fmt.Errorf("fetched %+v, want offset 1", o)
				}
				return nil
			}},
		{"OffsetCommit+OffsetFetch", "sarama", "GroupCoordinatorService.fetchOffsets: a partition without a commit is -1 with no error (sarama's ListConsumerGroupOffsets)",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				r, err := a.sarama.ListConsumerGroupOffsets(name, map[string][]int32{admTopic: {0, 1}})
				if err != nil {
					return err
				}
				b0, b1 := r.GetBlock(admTopic, 0), r.GetBlock(admTopic, 1)
				if b0 == nil || b1 == nil || b0.Err != sarama.ErrNoError || b0.Offset != 1 || b1.Err != sarama.ErrNoError || b1.Offset != -1 {
					return fmt.Errorf("blocks %+v %+v, want 1 and -1", b0, b1)
				}
				return nil
			}},
		{"OffsetFetch(several groups)", "kadm", "OffsetFetch v8+ (KIP-709): GroupCoordinatorService.fetchAllOffsets answers each group of one request on its own; a group without commits has none and no error",
			func(ctx context.Context, a *admins, name string) error {
				os := kadm.Offsets{}
				os.AddOffset(admTopic, 1, 0, -1)
				if err := a.commit(ctx, name+"-a"); err != nil {
					return err
				}
				if err := a.kadm.CommitAllOffsets(ctx, name+"-b", os); err != nil {
					return err
				}
				rs := a.kadm.FetchManyOffsets(ctx, name+"-a", name+"-b", name+"-absent")
				if err := rs.Error(); err != nil {
					return err
				}
				ra, rb, rn := rs[name+"-a"], rs[name+"-b"], rs[name+"-absent"]
				oa, okA := ra.Fetched.Lookup(admTopic, 0)
				ob, okB := rb.Fetched.Lookup(admTopic, 1)
				if !okA || oa.At != 1 || !okB || ob.At != 0 {
					return fmt.Errorf("a: %+v, b: %+v; want %s-0 at 1 and %s-1 at 0", ra.Fetched, rb.Fetched, admTopic, admTopic)
				}
				if _, ok := rb.Fetched.Lookup(admTopic, 0); ok {
					return fmt.Errorf("b shows a's commit: %+v", rb.Fetched)
				}
				if len(rn.Fetched) != 0 || rn.Err != nil {
					return fmt.Errorf("absent group: %+v, want no offsets and no error", rn)
				}
				return nil
			}},
		{"OffsetFetch", "kafka-go", "OffsetMetadataManager.fetchOffsets: the commit, and -1 with no error for a partition without one",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				r, err := a.kgoCl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: name, Topics: map[string][]int{admTopic: {0, 1}}})
				if err != nil {
					return err
				}
				if r.Error != nil {
					return r.Error
				}
				got := map[int]int64{}
				for _, p := range r.Topics[admTopic] {
					if p.Error != nil {
						return fmt.Errorf("partition %d: %v", p.Partition, p.Error)
					}
					got[p.Partition] = p.CommittedOffset
				}
				if len(got) != 2 || got[0] != 1 || got[1] != -1 {
					return fmt.Errorf("fetched %v, want 0 at 1 and 1 at -1", got)
				}
				return nil
			}},
		{"ListGroups(filters)", "kadm", "GroupMetadataManager.listGroups: the states and types filters are case-insensitive (KIP-518, KIP-1043); a simple group is an Empty classic group",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				for _, f := range []struct {
					types, states []string
					listed        bool
				}{
					{[]string{"CLASSIC"}, []string{"empty"}, true},
					{[]string{"classic"}, nil, true},
					{nil, []string{"Empty", "Stable"}, true},
					{[]string{"consumer"}, nil, false},
					{[]string{"share"}, nil, false},
					{nil, []string{"Stable"}, false},
					{[]string{"classic"}, []string{"NoSuchState"}, false},
				} {
					gs, err := a.kadm.ListGroupsByType(ctx, f.types, f.states...)
					if err != nil {
						return err
					}
					g, ok := gs[name]
					if ok != f.listed || ok && (g.GroupType != "classic" || g.State != "Empty") {
						return fmt.Errorf("types %v states %v: %+v (listed %v), want listed %v", f.types, f.states, g, ok, f.listed)
					}
				}
				return nil
			}},
		{"ListGroups", "kadm", "OffsetMetadataManager.validateOffsetCommit: a standalone commit creates a simple classic group; ClassicGroup.asListedGroup: Empty, type classic, protocol type \"\" (none)",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				gs, err := a.kadm.ListGroups(ctx)
				if err != nil {
					return err
				}
				g, ok := gs[name]
				if !ok || g.State != "Empty" || g.GroupType != "classic" || g.ProtocolType != "" {
					return fmt.Errorf("group %+v (listed %v), want Empty classic without a protocol type", g, ok)
				}
				return nil
			}},
		{"ListGroups", "sarama", "ClassicGroup.asListedGroup: a simple group is listed with protocol type \"\" (none)",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				gs, err := a.sarama.ListConsumerGroups()
				if err != nil {
					return err
				}
				if pt, ok := gs[name]; !ok || pt != "" {
					return fmt.Errorf("group %s: %q (listed %v), want listed with no protocol type", name, pt, ok)
				}
				return nil
			}},
		{"ListGroups", "kafka-go", "GroupCoordinatorService.listGroups: the group listed with its coordinator",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				r, err := a.kgoCl.ListGroups(ctx, &kafka.ListGroupsRequest{})
				if err != nil {
					return err
				}
				if r.Error != nil {
					return r.Error
				}
				for _, g := range r.Groups {
					if g.GroupID == name {
						if g.Coordinator != 1 {
							return fmt.Errorf("coordinator %d, want 1", g.Coordinator)
						}
						return nil
					}
				}
				return fmt.Errorf("group %s not listed", name)
			}},
		{"DescribeGroups", "kadm", "GroupMetadataManager.describeGroups: a simple group is Empty without members; an absent group is Dead, with GROUP_ID_NOT_FOUND from v6 (KIP-1043; kadm asks at v6)",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				ds, err := a.kadm.DescribeGroups(ctx, name, name+"-absent")
				if err != nil {
					return err
				}
				d, da := ds[name], ds[name+"-absent"]
				if d.Err != nil || d.State != "Empty" || len(d.Members) != 0 {
					return fmt.Errorf("%s: %+v, want Empty without members", name, d)
				}
				if da.State != "Dead" {
					return fmt.Errorf("absent: state %q, want Dead", da.State)
				}
				return wantKerr("absent", da.Err, kerr.GroupIDNotFound)
			}},
		{"DescribeGroups", "sarama", "GroupMetadataManager.describeGroups: a simple group is Empty with no protocol type and no members",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				ds, err := a.sarama.DescribeConsumerGroups([]string{name})
				if err != nil {
					return err
				}
				if len(ds) != 1 || ds[0].Err != sarama.ErrNoError || ds[0].State != "Empty" || ds[0].ProtocolType != "" || len(ds[0].Members) != 0 {
					return fmt.Errorf("%d groups, first %+v, want one Empty group", len(ds), ds[0])
				}
				return nil
			}},
		{"DescribeGroups", "kafka-go", "GroupMetadataManager.describeGroups: Empty, no members",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				r, err := a.kgoCl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{name}})
				if err != nil {
					return err
				}
				if len(r.Groups) != 1 || r.Groups[0].Error != nil || r.Groups[0].GroupState != "Empty" || len(r.Groups[0].Members) != 0 {
					return fmt.Errorf("%+v, want one Empty group", r.Groups)
				}
				return nil
			}},
		{"DeleteGroups", "kadm", "GroupCoordinatorService.deleteGroups: an Empty group is deleted with its offsets; an absent one is GROUP_ID_NOT_FOUND",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				rs, err := a.kadm.DeleteGroups(ctx, name, name+"-absent")
				if err != nil {
					return err
				}
				if err := wantKerr("delete", rs[name].Err, nil); err != nil {
					return err
				}
				if err := wantKerr("delete absent", rs[name+"-absent"].Err, kerr.GroupIDNotFound); err != nil {
					return err
				}
				fo, err := a.kadm.FetchOffsets(ctx, name)
				if err != nil {
					return err
				}
				if o, ok := fo.Lookup(admTopic, 0); ok && o.At >= 0 {
					return fmt.Errorf("offset %d survives the group's deletion", o.At)
				}
				return nil
			}},
		{"DeleteGroups", "sarama", "GroupCoordinatorService.deleteGroups: deleted, then GROUP_ID_NOT_FOUND (sarama's TestFuncAdminDeleteConsumerGroup)",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				if err := a.sarama.DeleteConsumerGroup(name); err != nil {
					return fmt.Errorf("delete: %v", err)
				}
				return wantKerr("delete again", a.sarama.DeleteConsumerGroup(name), kerr.GroupIDNotFound)
			}},
		{"DeleteGroups", "kafka-go", "GroupCoordinatorService.deleteGroups: deleted (kafka-go's TestClientDeleteGroups)",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				r, err := a.kgoCl.DeleteGroups(ctx, &kafka.DeleteGroupsRequest{GroupIDs: []string{name}})
				if err != nil {
					return err
				}
				if err := wantKerr("delete", r.Errors[name], nil); err != nil {
					return err
				}
				gs, err := a.kadm.DescribeGroups(ctx, name)
				if err != nil {
					return err
				}
				if gs[name].State != "Dead" {
					return fmt.Errorf("after delete: state %q, want Dead", gs[name].State)
				}
				return nil
			}},
		{"OffsetDelete", "kadm", "GroupMetadataManager.deleteOffsets: an Empty group's offset is deleted",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				rs, err := a.kadm.DeleteOffsets(ctx, name, kadm.TopicsSet{admTopic: {0: {}}})
				if err != nil {
					return err
				}
				if err := rs.Error(); err != nil {
					return fmt.Errorf("delete offsets: %v", err)
				}
				fo, err := a.kadm.FetchOffsets(ctx, name)
				if err != nil {
					return err
				}
				if o, ok := fo.Lookup(admTopic, 0); ok && o.At >= 0 {
					return fmt.Errorf("offset %d survives", o.At)
				}
				return nil
			}},
		{"OffsetDelete", "sarama", "GroupMetadataManager.deleteOffsets: deleted; an absent group is GROUP_ID_NOT_FOUND",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				if err := a.sarama.DeleteConsumerGroupOffset(name, admTopic, 0); err != nil {
					return fmt.Errorf("delete: %v", err)
				}
				return wantKerr("absent group", a.sarama.DeleteConsumerGroupOffset(name+"-absent", admTopic, 0), kerr.GroupIDNotFound)
			}},
		{"OffsetDelete", "kafka-go", "GroupMetadataManager.deleteOffsets: deleted per partition (kafka-go's TestClientOffsetDelete)",
			func(ctx context.Context, a *admins, name string) error {
				if err := a.commit(ctx, name); err != nil {
					return err
				}
				r, err := a.kgoCl.OffsetDelete(ctx, &kafka.OffsetDeleteRequest{GroupID: name, Topics: map[string][]int{admTopic: {0}}})
				if err != nil {
					return err
				}
				if r.Error != nil {
					return r.Error
				}
				ps := r.Topics[admTopic]
				if len(ps) != 1 || ps[0].Error != nil {
					return fmt.Errorf("partitions %+v", ps)
				}
				return nil
			}},
	}
}

func scramCases() []adminCase {
	salt, salted := []byte("0123456789abcdef"), make([]byte, 32)
	for i := range salted {
		salted[i] = byte(i)
	}
	return []adminCase{
		{"AlterUserScramCredentials+Describe", "kadm", "ScramControlManager.alterCredentials, ScramImage.describe: an upserted credential is described with its mechanism and iterations; an absent user is RESOURCE_NOT_FOUND",
			func(ctx context.Context, a *admins, name string) error {
				rs, err := a.kadm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: name, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "secret"}})
				if err != nil {
					return err
				}
				if err := rs.Error(); err != nil {
					return fmt.Errorf("upsert: %v", err)
				}
				ds, err := a.kadm.DescribeUserSCRAMs(ctx, name, name+"-absent")
				if err != nil {
					return err
				}
				d := ds[name]
				if d.Err != nil || len(d.CredInfos) != 1 || d.CredInfos[0].Mechanism != kadm.ScramSha256 || d.CredInfos[0].Iterations != 4096 {
					return fmt.Errorf("%s: %+v", name, d)
				}
				return wantKerr("absent user", ds[name+"-absent"].Err, kerr.ResourceNotFound)
			}},
		{"AlterUserScramCredentials+Describe", "sarama", "ScramControlManager.alterCredentials: upsert then delete; deleting again is RESOURCE_NOT_FOUND (sarama's TestFuncAdminScramCredentials)",
			func(ctx context.Context, a *admins, name string) error {
				rs, err := a.sarama.UpsertUserScramCredentials([]sarama.AlterUserScramCredentialsUpsert{{Name: name, Mechanism: sarama.SCRAM_MECHANISM_SHA_512, Iterations: 8192, Salt: salt, Password: []byte("secret")}})
				if err != nil || len(rs) != 1 || rs[0].ErrorCode != sarama.ErrNoError {
					return fmt.Errorf("upsert: %v %+v", err, rs)
				}
				ds, err := a.sarama.DescribeUserScramCredentials([]string{name})
				if err != nil || len(ds) != 1 || ds[0].ErrorCode != sarama.ErrNoError || len(ds[0].CredentialInfos) != 1 || ds[0].CredentialInfos[0].Iterations != 8192 {
					return fmt.Errorf("describe: %v %+v", err, ds)
				}
				del := []sarama.AlterUserScramCredentialsDelete{{Name: name, Mechanism: sarama.SCRAM_MECHANISM_SHA_512}}
				if rs, err = a.sarama.DeleteUserScramCredentials(del); err != nil || len(rs) != 1 || rs[0].ErrorCode != sarama.ErrNoError {
					return fmt.Errorf("delete: %v %+v", err, rs)
				}
				rs, err = a.sarama.DeleteUserScramCredentials(del)
				if err != nil || len(rs) != 1 {
					return fmt.Errorf("delete again: %v %+v", err, rs)
				}
				if int16(rs[0].ErrorCode) != kerr.ResourceNotFound.Code {
					return fmt.Errorf("delete again: %v, want RESOURCE_NOT_FOUND", rs[0].ErrorCode)
				}
				return nil
			}},
		{"AlterUserScramCredentials+Describe", "kafka-go", "ScramControlManager.alterCredentials: upserted, then described (kafka-go's TestAlterUserScramCredentials)",
			func(ctx context.Context, a *admins, name string) error {
				r, err := a.kgoCl.AlterUserScramCredentials(ctx, &kafka.AlterUserScramCredentialsRequest{Upsertions: []kafka.UserScramCredentialsUpsertion{
					{Name: name, Mechanism: kafka.ScramMechanismSha256, Iterations: 15000, Salt: salt, SaltedPassword: salted},
				}})
				if err != nil || len(r.Results) != 1 || r.Results[0].Error != nil {
					return fmt.Errorf("upsert: %v %+v", err, r)
				}
				d, err := a.kgoCl.DescribeUserScramCredentials(ctx, &kafka.DescribeUserScramCredentialsRequest{Users: []kafka.UserScramCredentialsUser{{Name: name}}})
				if err != nil {
					return err
				}
				if d.Error != nil || len(d.Results) != 1 || d.Results[0].Error != nil || len(d.Results[0].CredentialInfos) != 1 || d.Results[0].CredentialInfos[0].Iterations != 15000 {
					return fmt.Errorf("describe: %v %+v", d.Error, d.Results)
				}
				return nil
			}},
	}
}

func strPtr(s string) *string { return &s }

// saramaDescribeConfig is sarama's DescribeConfigs for one resource, its
// error code as the error.
func (a *admins) saramaDescribeConfig(r sarama.ConfigResource) ([]sarama.ConfigEntry, error) {
	rs, err := a.sarama.DescribeConfigs([]*sarama.ConfigResource{&r}, sarama.DescribeConfigsOptions{})
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("%d resources, want 1", len(rs))
	}
	if rs[0].ErrorCode != sarama.ErrNoError {
		return nil, fmt.Errorf("%w: %s", rs[0].ErrorCode, rs[0].ErrorMsg)
	}
	return rs[0].Configs, nil
}
