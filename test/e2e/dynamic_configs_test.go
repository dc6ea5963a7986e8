package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A dynamic broker config reaches the running cleaner (issue 19), as in
// Kafka, where log.cleaner.backoff.ms is a LogCleaner reconfigurable: the
// node starts with log.cleaner.backoff.ms an hour, so its cleaner thread,
// having found nothing at start-up, sleeps through every write to a
// compacted topic. sarama's ClusterAdmin (as its own admin test does)
// then sets the key to 100 ms on broker 1: DescribeConfigs shows the value
// as DYNAMIC_BROKER_CONFIG over the file's STATIC_BROKER_CONFIG, and the
// cleaner compacts the topic within seconds. After a restart the value is
// still there (it is in the Raft metadata) and still used: new dirty data
// is compacted again, which the hour from server.properties would not do.
func TestDynamicCleanerBackoff(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(1), cluster.LogLevel("info"),
		cluster.Override("log.cleaner.backoff.ms", "3600000"))
	ctx := ctxFor(t, 3*time.Minute)
	cl := client(t, c)
	adm := kadm.NewClient(cl)
	const topic = "dyn-clean"
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             kadm.StringPtr("4096"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	const keys, perRound = 10, 2000
	produce := func(round int) {
		t.Helper()
		recs := make([]*kgo.Record, perRound)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i%keys)), Value: []byte(fmt.Sprintf("round %d value %d %s", round, i, strings.Repeat("x", 60)))}
		}
		// In small batches, so the records fill many segments: the
		// cleaner leaves the active one alone.
		for i := 0; i < len(recs); i += 20 {
			if err := cl.ProduceSync(ctx, recs[i:i+20]...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}
	// count reads the partition from its start to its end offset.
	count := func() int {
		t.Helper()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		end := ends[topic][0].Offset
		rd, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		n := 0
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		for {
			fs := rd.PollFetches(rctx)
			if err := rctx.Err(); err != nil {
				t.Fatalf("reading the topic: %v after %d records", err, n)
			}
			last := int64(-1)
			fs.EachRecord(func(r *kgo.Record) { n++; last = r.Offset })
			if last >= end-1 {
				return n
			}
		}
	}
	produce(0)
	if n := count(); n != perRound {
		t.Fatalf("%d records before the change, want all %d (the cleaner sleeps an hour)", n, perRound)
	}

	sadm, err := sarama.NewClusterAdmin(seedAddrs(c), saramaConfig(sarama.V4_0_0_0))
	if err != nil {
		t.Fatalf("sarama admin: %v", err)
	}
	defer sadm.Close()
	v := "100"
	if err := sadm.IncrementalAlterConfig(sarama.BrokerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{
		"log.cleaner.backoff.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v},
	}, false); err != nil {
		t.Fatalf("altering log.cleaner.backoff.ms: %v", err)
	}
	describe := func(sadm sarama.ClusterAdmin) {
		t.Helper()
		results, err := sadm.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: "1", ConfigNames: []string{"log.cleaner.backoff.ms"}}}, sarama.DescribeConfigsOptions{IncludeSynonyms: true})
		if err != nil || len(results) != 1 || results[0].ErrorCode != 0 || len(results[0].Configs) != 1 {
			t.Fatalf("DescribeConfigs: %v %+v", err, results)
		}
		e := results[0].Configs[0]
		var syn []string
		for _, s := range e.Synonyms {
			syn = append(syn, s.Source.String()+"="+s.ConfigValue)
		}
		if e.Value != "100" || e.Source != sarama.SourceDynamicBroker || e.ReadOnly ||
			strings.Join(syn, ",") != "DynamicBroker=100,StaticBroker=3600000,Default=15000" {
			t.Fatalf("log.cleaner.backoff.ms = %q source %v read-only %v, synonyms %v", e.Value, e.Source, e.ReadOnly, syn)
		}
	}
	describe(sadm)
	cleaned := func(what string) {
		t.Helper()
		cluster.WaitFor(t, time.Minute, func() (bool, string) {
			n := count()
			return n < perRound/4, fmt.Sprintf("%d records", n)
		})
		if !strings.Contains(c.Node(1).Logs(), "log cleaner reconfigured") {
			t.Fatalf("%s: no reconfiguration in the node's log", what)
		}
	}
	cleaned("after the change")

	c.Node(1).Restart()
	// A new admin: the old one's connection ended with the node.
	sadm2, err := sarama.NewClusterAdmin(seedAddrs(c), saramaConfig(sarama.V4_0_0_0))
	if err != nil {
		t.Fatalf("sarama admin: %v", err)
	}
	defer sadm2.Close()
	describe(sadm2)
	produce(1)
	cleaned("after the restart")
}
