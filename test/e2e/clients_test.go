package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	gometrics "github.com/rcrowley/go-metrics"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The three Go client libraries the issue names, each producing and
// consuming the same shape of data on one three-node cluster, then the
// offset, delete, auto-create and config paths with whichever client
// exposes them. Subtests run one after another: the machine is small and
// the cluster is shared.
func TestClientLibraries(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"),
		cluster.Override("auto.create.topics.enable", "true"))
	adm := kadm.NewClient(client(t, c))

	t.Run("franz-go", func(t *testing.T) { testFranzGoRoundTrip(t, c, adm) })
	t.Run("sarama", func(t *testing.T) { testSaramaRoundTrip(t, c, adm) })
	t.Run("kafka-go", func(t *testing.T) { testKafkaGoRoundTrip(t, c, adm) })
	t.Run("ListOffsetsByTime", func(t *testing.T) {
		// Uncompressed batches are searched record by record; compressed
		// ones (franz-go's default) must be too, after decompression.
		t.Run("uncompressed", func(t *testing.T) { testListOffsetsByTime(t, c, adm, kgo.NoCompression()) })
		t.Run("snappy", func(t *testing.T) { testListOffsetsByTime(t, c, adm, kgo.SnappyCompression()) })
	})
	t.Run("DeleteRecords", func(t *testing.T) { testDeleteRecords(t, c, adm) })
	t.Run("AutoCreateTopics", func(t *testing.T) { testAutoCreateTopics(t, c, adm) })
	t.Run("DeleteThenReadPartitions", func(t *testing.T) { testDeleteThenReadPartitions(t, c, adm) })
	t.Run("FinalizedFeatures", func(t *testing.T) { testFinalizedFeatures(t, c) })
	t.Run("SaramaBrokerConfigs", func(t *testing.T) { testSaramaBrokerConfigs(t, c) })
	t.Run("ConfigsRoundTrip", func(t *testing.T) { testConfigsRoundTrip(t, c, adm) })
}

const (
	roundTripRecords    = 10_000
	roundTripPartitions = 6
)

// header and record are the client-neutral form every library's records
// are converted to, so one comparison serves all three.
type header struct{ Key, Value string }

type record struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
	Headers   []header
	Timestamp int64 // milliseconds; only compared where a test sets it
}

// makeRecords builds n distinct records. Values vary in length, some
// headers are empty and some keys repeat within one record, because order
// and emptiness are where encoders go wrong.
func makeRecords(lib string, n int) []record {
	out := make([]record, n)
	for i := range out {
		hs := []header{{"lib", lib}, {"idx", strconv.Itoa(i)}}
		if i%5 == 0 {
			hs = append(hs, header{"empty", ""})
		}
		if i%7 == 0 {
			hs = append(hs, header{"idx", "again"})
		}
		out[i] = record{
			Partition: -1,
			Offset:    -1,
			Key:       fmt.Sprintf("%s-key-%05d", lib, i),
			Value:     fmt.Sprintf("%s value %d %s", lib, i, strings.Repeat(string(rune('a'+i%26)), i%300)),
			Headers:   hs,
		}
	}
	return out
}

// checkRoundTrip compares what a producer was told (partition and offset
// per record) with what a consumer read: the same set, no duplicates, no
// gaps, offsets dense from zero in every partition, every partition used.
func checkRoundTrip(t *testing.T, produced, consumed []record, partitions int32) {
	t.Helper()
	type at struct {
		p int32
		o int64
	}
	want := make(map[at]record, len(produced))
	perPart := make(map[int32][]int64)
	for _, r := range produced {
		if r.Partition < 0 || r.Offset < 0 {
			t.Fatalf("record %q was never acknowledged with a partition and offset", r.Key)
		}
		k := at{r.Partition, r.Offset}
		if prev, dup := want[k]; dup {
			t.Fatalf("producer was given %d/%d for both %q and %q", r.Partition, r.Offset, prev.Key, r.Key)
		}
		want[k] = r
		perPart[r.Partition] = append(perPart[r.Partition], r.Offset)
	}
	if int32(len(perPart)) != partitions {
		t.Errorf("records landed in %d of %d partitions", len(perPart), partitions)
	}
	for p, offs := range perPart {
		slices.Sort(offs)
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("partition %d: acknowledged offsets are not dense from 0: position %d holds %d", p, i, o)
			}
		}
	}
	seen := make(map[at]bool, len(consumed))
	for _, got := range consumed {
		k := at{got.Partition, got.Offset}
		if seen[k] {
			t.Fatalf("consumed %d/%d twice", got.Partition, got.Offset)
		}
		seen[k] = true
		exp, ok := want[k]
		if !ok {
			t.Fatalf("consumed %d/%d (key %q) which no producer was acknowledged for", got.Partition, got.Offset, got.Key)
		}
		if got.Key != exp.Key || got.Value != exp.Value {
			t.Fatalf("at %d/%d: consumed key %q value %.40q, produced key %q value %.40q",
				got.Partition, got.Offset, got.Key, got.Value, exp.Key, exp.Value)
		}
		if !slices.Equal(got.Headers, exp.Headers) {
			t.Fatalf("at %d/%d (%q): consumed headers %v, produced %v", got.Partition, got.Offset, got.Key, got.Headers, exp.Headers)
		}
	}
	if len(consumed) != len(produced) {
		t.Fatalf("consumed %d records, produced %d", len(consumed), len(produced))
	}
}

// endOffsets is one past the highest acknowledged offset per partition.
func endOffsets(recs []record) map[int32]int64 {
	ends := make(map[int32]int64)
	for _, r := range recs {
		ends[r.Partition] = max(ends[r.Partition], r.Offset+1)
	}
	return ends
}

// checkEndOffsets asks ListOffsets (latest) for every partition and wants
// exactly the ends the producer saw: nothing extra was appended.
func checkEndOffsets(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, want map[int32]int64) {
	t.Helper()
	listed, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("ListEndOffsets %s/%d: %v", o.Topic, o.Partition, o.Err)
			return
		}
		if o.Offset != want[o.Partition] {
			t.Errorf("ListEndOffsets %s/%d = %d, producer was acknowledged up to %d", o.Topic, o.Partition, o.Offset, want[o.Partition])
		}
	})
}

func seedAddrs(c *cluster.Cluster) []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.ClientAddr())
	}
	return out
}

// kgoWith is a franz-go client on every node with extra options.
func kgoWith(t testing.TB, c *cluster.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(seedAddrs(c)...), kgo.RetryTimeout(20 * time.Second)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func toKgoRecord(topic string, r record) *kgo.Record {
	kr := &kgo.Record{Topic: topic, Key: []byte(r.Key), Value: []byte(r.Value)}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
	}
	if r.Timestamp != 0 {
		kr.Timestamp = time.UnixMilli(r.Timestamp)
	}
	return kr
}

func fromKgoRecord(kr *kgo.Record) record {
	r := record{Partition: kr.Partition, Offset: kr.Offset, Key: string(kr.Key), Value: string(kr.Value), Timestamp: kr.Timestamp.UnixMilli()}
	for _, h := range kr.Headers {
		r.Headers = append(r.Headers, header{h.Key, string(h.Value)})
	}
	return r
}

// produceKgo sends recs with cl (partitioned by cl's partitioner unless a
// record's Partition is set and cl uses the manual partitioner) and fills
// in each record's partition and offset from its acknowledgement.
func produceKgo(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, recs []record, wantIdempotent bool) {
	t.Helper()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for i := range recs {
		kr := toKgoRecord(topic, recs[i])
		if recs[i].Partition >= 0 {
			kr.Partition = recs[i].Partition
		}
		wg.Add(1)
		cl.Produce(ctx, kr, func(kr *kgo.Record, err error) {
			defer wg.Done()
			if err == nil && wantIdempotent && kr.ProducerID < 0 {
				err = fmt.Errorf("record %q was produced without a producer id: the client did not use idempotence (is InitProducerId advertised?)", kr.Key)
			}
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("produce %q: %w", kr.Key, err)
				}
				mu.Unlock()
				return
			}
			recs[i].Partition, recs[i].Offset = kr.Partition, kr.Offset
			recs[i].Timestamp = kr.Timestamp.UnixMilli()
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
}

// consumeKgo reads every partition in ends from offset 0 up to its end
// with a direct (group-less) franz-go consumer.
func consumeKgo(t *testing.T, ctx context.Context, c *cluster.Cluster, topic string, ends map[int32]int64) []record {
	t.Helper()
	offsets := make(map[int32]kgo.Offset)
	var total int64
	for p, end := range ends {
		offsets[p] = kgo.NewOffset().At(0)
		total += end
	}
	cl := kgoWith(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond))
	var out []record
	for int64(len(out)) < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go consumer read %d of %d records before the deadline", len(out), total)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("franz-go fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(kr *kgo.Record) { out = append(out, fromKgoRecord(kr)) })
	}
	return out
}

// franz-go: the default (idempotent) producer and a consumer from offsets.
func testFranzGoRoundTrip(t *testing.T, c *cluster.Cluster, adm *kadm.Client) {
	ctx := ctxFor(t, 120*time.Second)
	const topic = "clients-franz-go"
	if err := createTopic(ctx, adm, topic, roundTripPartitions, 3); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	cl := kgoWith(t, c, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	recs := makeRecords("franz-go", roundTripRecords)
	produceKgo(t, ctx, cl, topic, recs, true)
	got := consumeKgo(t, ctx, c, topic, endOffsets(recs))
	checkRoundTrip(t, recs, got, roundTripPartitions)
	checkEndOffsets(t, ctx, adm, topic, endOffsets(recs))
}

func init() {
	// sarama's metrics start a process-wide ticker goroutine that never
	// ends (go-metrics' meter arbiter), which the harness's leak check
	// reports; the tests read no sarama metrics.
	gometrics.UseNilMetrics = true
}

func saramaConfig(version sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "raftka-e2e-sarama"
	cfg.Version = version
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Metadata.Retry.Max = 20
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Max = 10
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	cfg.Producer.Partitioner = sarama.NewHashPartitioner
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 500 * time.Millisecond
	return cfg
}

// sarama: an idempotent async producer (InitProducerId through sarama's own
// path) and one partition consumer per partition, at Kafka 4.0's versions.
func testSaramaRoundTrip(t *testing.T, c *cluster.Cluster, adm *kadm.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic = "clients-sarama"
	if err := createTopic(ctx, adm, topic, roundTripPartitions, 3); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	cfg := saramaConfig(sarama.V4_0_0_0)
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	recs := makeRecords("sarama", roundTripRecords)

	prod, err := sarama.NewAsyncProducer(seedAddrs(c), cfg)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	sendDone := make(chan struct{})
	go func() {
		defer close(sendDone)
		for i, r := range recs {
			m := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(r.Key), Value: sarama.StringEncoder(r.Value), Metadata: i}
			for _, h := range r.Headers {
				m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: []byte(h.Value)})
			}
			select {
			case prod.Input() <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	var acked int
	var failure error
	for acked < len(recs) && failure == nil {
		select {
		case m := <-prod.Successes():
			i := m.Metadata.(int)
			recs[i].Partition, recs[i].Offset = m.Partition, m.Offset
			acked++
		case pe := <-prod.Errors():
			failure = fmt.Errorf("sarama produce %v: %w", pe.Msg.Key, pe.Err)
		case <-ctx.Done():
			failure = fmt.Errorf("sarama producer acknowledged %d of %d records before the deadline", acked, len(recs))
		}
	}
	if failure != nil {
		// Stop the sender, then drain both result channels until sarama
		// closes them, so no goroutine outlives the test.
		cancel()
		<-sendDone
		prod.AsyncClose()
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for range prod.Errors() {
			}
		}()
		for range prod.Successes() {
		}
		<-drained
		t.Fatal(failure)
	}
	<-sendDone
	if err := prod.Close(); err != nil {
		t.Fatalf("sarama producer close: %v", err)
	}

	cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer ccancel()
	cons, err := sarama.NewConsumer(seedAddrs(c), saramaConfig(sarama.V4_0_0_0))
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer cons.Close()
	var got []record
	for p, end := range endOffsets(recs) {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama ConsumePartition %d: %v", p, err)
		}
		for n := int64(0); n < end; {
			select {
			case m := <-pc.Messages():
				r := record{Partition: m.Partition, Offset: m.Offset, Key: string(m.Key), Value: string(m.Value)}
				for _, h := range m.Headers {
					r.Headers = append(r.Headers, header{string(h.Key), string(h.Value)})
				}
				got = append(got, r)
				n++
			case err := <-pc.Errors():
				pc.AsyncClose()
				t.Fatalf("sarama consume partition %d: %v", p, err)
			case <-cctx.Done():
				pc.AsyncClose()
				t.Fatalf("sarama consumer read %d of %d records of partition %d before the deadline", n, end, p)
			}
		}
		if err := pc.Close(); err != nil {
			t.Fatalf("sarama partition consumer %d close: %v", p, err)
		}
	}
	checkRoundTrip(t, recs, got, roundTripPartitions)
	checkEndOffsets(t, cctx, adm, topic, endOffsets(recs))
}

// kafka-go: Client.Produce per partition (it answers with the base offset,
// which kafka.Writer does not), partitioned by kafka-go's own hash
// balancer; read back with a partition Reader each, and additionally with
// a group Reader when the cluster advertises the classic group APIs.
func testKafkaGoRoundTrip(t *testing.T, c *cluster.Cluster, adm *kadm.Client) {
	ctx := ctxFor(t, 120*time.Second)
	const topic = "clients-kafka-go"
	if err := createTopic(ctx, adm, topic, roundTripPartitions, 3); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	recs := makeRecords("kafka-go", roundTripRecords)
	parts := make([]int, roundTripPartitions)
	for i := range parts {
		parts[i] = i
	}
	var bal kafka.Hash
	byPart := make(map[int][]int) // partition -> indexes into recs
	for i, r := range recs {
		p := bal.Balance(kafka.Message{Key: []byte(r.Key)}, parts...)
		byPart[p] = append(byPart[p], i)
	}
	kc := &kafka.Client{Addr: kafka.TCP(seedAddrs(c)...), Timeout: 30 * time.Second, Transport: kafkaGoTransport(t)}
	const chunk = 500
	for p, idxs := range byPart {
		for len(idxs) > 0 {
			n := min(chunk, len(idxs))
			batch := idxs[:n]
			idxs = idxs[n:]
			// kafka.Bytes are readers, spent by an attempt: a retry needs
			// fresh ones.
			fresh := func() []kafka.Record {
				krs := make([]kafka.Record, 0, n)
				for _, i := range batch {
					kr := kafka.Record{Key: kafka.NewBytes([]byte(recs[i].Key)), Value: kafka.NewBytes([]byte(recs[i].Value))}
					for _, h := range recs[i].Headers {
						kr.Headers = append(kr.Headers, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
					}
					krs = append(krs, kr)
				}
				return krs
			}
			var resp *kafka.ProduceResponse
			var err error
			// A leader can still be settling right after CreateTopics;
			// kafka-go's Client does not retry, so retry here.
			cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
				resp, err = kc.Produce(ctx, &kafka.ProduceRequest{
					Topic: topic, Partition: p, RequiredAcks: kafka.RequireAll,
					Records: kafka.NewRecordReader(fresh()...),
				})
				if err == nil && resp.Error != nil && isRetriable(resp.Error) {
					t.Logf("kafka-go produce to partition %d: %v (retrying)", p, resp.Error)
					return false, resp.Error.Error()
				}
				// The broker kafka-go asked for metadata may not have
				// applied the creation yet; Kafka's brokers answer that
				// UNKNOWN_TOPIC_OR_PARTITION too, and kafka-go's Client
				// then fails with "topic not found" until it refreshes.
				if err != nil && strings.Contains(err.Error(), "topic not found") {
					t.Logf("kafka-go produce to partition %d: %v (retrying)", p, err)
					return false, err.Error()
				}
				return true, ""
			})
			if err != nil {
				t.Fatalf("kafka-go produce to partition %d: %v", p, err)
			}
			if resp.Error != nil || len(resp.RecordErrors) > 0 {
				t.Fatalf("kafka-go produce to partition %d: %v %v", p, resp.Error, resp.RecordErrors)
			}
			for j, i := range batch {
				recs[i].Partition, recs[i].Offset = int32(p), resp.BaseOffset+int64(j)
			}
		}
	}

	ends := endOffsets(recs)
	// What franz-go reads tells a bad write from a bad kafka-go fetch.
	t.Run("franz-go-reads-it", func(t *testing.T) {
		checkRoundTrip(t, recs, consumeKgo(t, ctx, c, topic, ends), roundTripPartitions)
	})
	var got []record
	for p, end := range ends {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers: seedAddrs(c), Topic: topic, Partition: int(p),
			MinBytes: 1, MaxBytes: 4 << 20, MaxWait: 500 * time.Millisecond,
		})
		if err := r.SetOffset(0); err != nil {
			r.Close()
			t.Fatalf("kafka-go SetOffset: %v", err)
		}
		for n := int64(0); n < end; n++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("kafka-go read partition %d after %d of %d records: %v", p, n, end, err)
			}
			got = append(got, fromKafkaGo(m))
		}
		if err := r.Close(); err != nil {
			t.Fatalf("kafka-go reader close: %v", err)
		}
	}
	checkRoundTrip(t, recs, got, roundTripPartitions)
	checkEndOffsets(t, ctx, adm, topic, ends)

	if !groupsAdvertised(t, ctx, c) {
		t.Logf("classic consumer group APIs are not all advertised; kafka-go group Reader not exercised")
		return
	}
	gr := kafka.NewReader(kafka.ReaderConfig{
		Brokers: seedAddrs(c), Topic: topic, GroupID: "kafka-go-" + topic,
		StartOffset: kafka.FirstOffset, MinBytes: 1, MaxBytes: 4 << 20, MaxWait: 500 * time.Millisecond,
		HeartbeatInterval: 500 * time.Millisecond, SessionTimeout: 6 * time.Second,
	})
	defer gr.Close()
	got = got[:0]
	last := make(map[int]kafka.Message)
	for len(got) < len(recs) {
		m, err := gr.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go group reader after %d of %d records: %v", len(got), len(recs), err)
		}
		got = append(got, fromKafkaGo(m))
		last[m.Partition] = m
	}
	checkRoundTrip(t, recs, got, roundTripPartitions)
	var commits []kafka.Message
	for _, m := range last {
		commits = append(commits, m)
	}
	if err := gr.CommitMessages(ctx, commits...); err != nil {
		t.Fatalf("kafka-go commit: %v", err)
	}
	committed, err := adm.FetchOffsets(ctx, "kafka-go-"+topic)
	if err != nil {
		t.Fatalf("OffsetFetch for the kafka-go group: %v", err)
	}
	for p, end := range ends {
		o, ok := committed.Lookup(topic, p)
		if !ok || o.Err != nil || o.At != end {
			t.Errorf("kafka-go group committed %+v for partition %d, want %d", o, p, end)
		}
	}
}

// kafkaGoTransport is a kafka-go Transport of the test's own: the default
// one is process-wide and keeps its connection goroutines forever, which
// the harness's leak check rightly reports.
func kafkaGoTransport(t *testing.T) *kafka.Transport {
	tr := &kafka.Transport{ClientID: "raftka-e2e-kafka-go"}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func fromKafkaGo(m kafka.Message) record {
	r := record{Partition: int32(m.Partition), Offset: m.Offset, Key: string(m.Key), Value: string(m.Value), Timestamp: m.Time.UnixMilli()}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, header{h.Key, string(h.Value)})
	}
	return r
}

func isRetriable(err error) bool {
	var ke kafka.Error
	return errors.As(err, &ke) && ke.Temporary()
}

// groupsAdvertised reports whether every node advertises the classic
// consumer group APIs (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, OffsetCommit, OffsetFetch).
func groupsAdvertised(t *testing.T, ctx context.Context, c *cluster.Cluster) bool {
	t.Helper()
	for _, n := range c.Nodes() {
		keys, err := cluster.ApiVersions(ctx, n.ClientAddr())
		if err != nil {
			t.Fatalf("ApiVersions on node %d: %v", n.ID(), err)
		}
		have := make(map[int16]bool)
		for _, k := range keys {
			have[k.ApiKey] = true
		}
		for _, k := range []int16{8, 9, 10, 11, 12, 13, 14} {
			if !have[k] {
				return false
			}
		}
	}
	return true
}

// ListOffsets by timestamp: records with chosen CreateTimes, asked for by
// franz-go (kadm), sarama and kafka-go at several times, plus the
// max-timestamp (-3) query. The answer is the first offset whose timestamp
// is at or after the time asked.
func testListOffsetsByTime(t *testing.T, c *cluster.Cluster, adm *kadm.Client, codec kgo.CompressionCodec) {
	ctx := ctxFor(t, 60*time.Second)
	topic := "list-offsets-by-time-" + strings.ReplaceAll(strings.ToLower(t.Name()[strings.LastIndex(t.Name(), "/")+1:]), "_", "-")
	const parts = 2
	if err := createTopic(ctx, adm, topic, parts, 3); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	base := time.Now().Add(-time.Hour).UnixMilli()
	recs := makeRecords("by-time", 200)
	for i := range recs {
		recs[i].Partition = int32(i % parts)
		recs[i].Timestamp = base + int64(i)*10
	}
	// Records of one partition go out in order in several batches, so the
	// answer must come from the time index across batches, not one batch.
	cl := kgoWith(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(25),
		kgo.ProducerBatchCompression(codec))
	produceKgo(t, ctx, cl, topic, recs, true)

	expect := func(p int32, ms int64) (int64, bool) {
		var best int64 = -1
		for _, r := range recs {
			if r.Partition == p && r.Timestamp >= ms && (best < 0 || r.Offset < best) {
				best = r.Offset
			}
		}
		return best, best >= 0
	}
	ends := endOffsets(recs)
	times := []int64{base - 1000, base, base + 255, base + 1000, base + 1990, base + 5000}

	sc, err := sarama.NewClient(seedAddrs(c), saramaConfig(sarama.DefaultVersion))
	if err != nil {
		t.Fatalf("sarama client: %v", err)
	}
	defer sc.Close()

	for _, ms := range times {
		listed, err := adm.ListOffsetsAfterMilli(ctx, ms, topic)
		if err != nil {
			t.Fatalf("ListOffsetsAfterMilli(%d): %v", ms-base, err)
		}
		for p := int32(0); p < parts; p++ {
			want, found := expect(p, ms)
			o, ok := listed.Lookup(topic, p)
			if !ok || o.Err != nil {
				t.Fatalf("kadm ListOffsetsAfterMilli(base%+d) partition %d: %+v", ms-base, p, o)
			}
			kadmWant := want
			if !found {
				kadmWant = ends[p] // kadm substitutes the end offset for Kafka's -1
			}
			if o.Offset != kadmWant {
				t.Errorf("kadm ListOffsetsAfterMilli(base%+d) partition %d = %d, want %d", ms-base, p, o.Offset, kadmWant)
			}
			if found && o.Timestamp != recs[int(want)*parts+int(p)].Timestamp {
				t.Errorf("kadm ListOffsetsAfterMilli(base%+d) partition %d: timestamp %d, want %d", ms-base, p, o.Timestamp, recs[int(want)*parts+int(p)].Timestamp)
			}

			got, err := sc.GetOffset(topic, p, ms)
			if err != nil {
				t.Fatalf("sarama GetOffset(base%+d) partition %d: %v", ms-base, p, err)
			}
			if got != want {
				t.Errorf("sarama GetOffset(base%+d) partition %d = %d, want %d", ms-base, p, got, want)
			}

			conn, err := kafka.DialLeader(ctx, "tcp", c.Node(1).ClientAddr(), topic, int(p))
			if err != nil {
				t.Fatalf("kafka-go DialLeader partition %d: %v", p, err)
			}
			kgOff, err := conn.ReadOffset(time.UnixMilli(ms))
			conn.Close()
			if err != nil {
				t.Fatalf("kafka-go ReadOffset(base%+d) partition %d: %v", ms-base, p, err)
			}
			if kgOff != want {
				t.Errorf("kafka-go ReadOffset(base%+d) partition %d = %d, want %d", ms-base, p, kgOff, want)
			}
		}
	}

	// -3: the offset of the record with the largest timestamp.
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < parts; p++ {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -3, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ListOffsets max timestamp: %v", err)
	}
	for _, tp := range resp.Topics {
		for _, pp := range tp.Partitions {
			if err := kerr.ErrorForCode(pp.ErrorCode); err != nil {
				t.Errorf("ListOffsets max timestamp partition %d: %v", pp.Partition, err)
				continue
			}
			wantOff := ends[pp.Partition] - 1
			wantTS := recs[int(wantOff)*parts+int(pp.Partition)].Timestamp
			if pp.Offset != wantOff || pp.Timestamp != wantTS {
				t.Errorf("ListOffsets max timestamp partition %d = offset %d ts %d, want %d ts %d", pp.Partition, pp.Offset, pp.Timestamp, wantOff, wantTS)
			}
		}
	}
}

// DeleteRecords moves the log start offset: ListOffsets earliest answers
// it (through all three clients), reads start there, reads below it are
// out of range, and deleting beyond the high watermark is refused.
func testDeleteRecords(t *testing.T, c *cluster.Cluster, adm *kadm.Client) {
	ctx := ctxFor(t, 60*time.Second)
	const topic = "delete-records"
	if err := createTopic(ctx, adm, topic, 2, 3); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	recs := makeRecords("delete", 200)
	for i := range recs {
		recs[i].Partition = int32(i % 2)
	}
	cl := kgoWith(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceKgo(t, ctx, cl, topic, recs, true)

	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 40})
	offs.Add(kadm.Offset{Topic: topic, Partition: 1, At: -1}) // -1: up to the high watermark
	res, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatalf("DeleteRecords: %v", err)
	}
	for p, want := range map[int32]int64{0: 40, 1: 100} {
		r, ok := res.Lookup(topic, p)
		if !ok || r.Err != nil || r.LowWatermark != want {
			t.Errorf("DeleteRecords partition %d: %+v, want low watermark %d", p, r, want)
		}
	}

	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListStartOffsets: %v", err)
	}
	for p, want := range map[int32]int64{0: 40, 1: 100} {
		if o, ok := starts.Lookup(topic, p); !ok || o.Err != nil || o.Offset != want {
			t.Errorf("ListStartOffsets partition %d: %+v, want %d", p, o, want)
		}
	}
	sc, err := sarama.NewClient(seedAddrs(c), saramaConfig(sarama.V4_0_0_0))
	if err != nil {
		t.Fatalf("sarama client: %v", err)
	}
	defer sc.Close()
	if o, err := sc.GetOffset(topic, 0, sarama.OffsetOldest); err != nil || o != 40 {
		t.Errorf("sarama earliest offset of partition 0 = %d (%v), want 40", o, err)
	}
	conn, err := kafka.DialLeader(ctx, "tcp", c.Node(2).ClientAddr(), topic, 0)
	if err != nil {
		t.Fatalf("kafka-go DialLeader: %v", err)
	}
	first, err := conn.ReadFirstOffset()
	conn.Close()
	if err != nil || first != 40 {
		t.Errorf("kafka-go first offset of partition 0 = %d (%v), want 40", first, err)
	}

	// A reader from the earliest offset gets record 40 (the 81st produced).
	rd := kgoWith(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(500*time.Millisecond))
	var got []record
	for len(got) < 60 {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 60 remaining records of partition 0", len(got))
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch after DeleteRecords: %v", err) })
		fs.EachRecord(func(kr *kgo.Record) { got = append(got, fromKgoRecord(kr)) })
	}
	if got[0].Offset != 40 || got[0].Key != recs[80].Key {
		t.Errorf("first record after DeleteRecords: offset %d key %q, want 40 %q", got[0].Offset, got[0].Key, recs[80].Key)
	}

	// Fetch below the log start offset: OFFSET_OUT_OF_RANGE.
	if code := fetchErrorAt(t, ctx, c, cl, topic, 0, 10); code != kerr.OffsetOutOfRange.Code {
		t.Errorf("Fetch at offset 10 after deleting to 40: error %v, want OFFSET_OUT_OF_RANGE", kerr.ErrorForCode(code))
	}
	// Beyond the high watermark: refused, start offset unchanged.
	var beyond kadm.Offsets
	beyond.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1000})
	res, err = adm.DeleteRecords(ctx, beyond)
	if err != nil {
		t.Fatalf("DeleteRecords beyond HW: %v", err)
	}
	if r, _ := res.Lookup(topic, 0); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Errorf("DeleteRecords beyond the high watermark: %+v, want OFFSET_OUT_OF_RANGE", r)
	}
}

// fetchErrorAt sends one Fetch for topic/partition at offset and returns
// the partition's error code (kgo routes it to the leader).
func fetchErrorAt(t *testing.T, ctx context.Context, c *cluster.Cluster, cl *kgo.Client, topic string, partition int32, offset int64) int16 {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12 // by name; v13+ would need the topic id
	req.ReplicaID = -1
	req.MaxWaitMillis = 100
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = partition, offset, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// Sent by hand to the leader: kgo would raise the version to one
	// that names topics by id.
	leader := partitionLeader(t, ctx, cl, topic, partition)
	raw, err := invariants.RawRequest(ctx, c.Node(leader).ClientAddr(), req)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	resp := raw.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	for _, tp := range resp.Topics {
		for _, pp := range tp.Partitions {
			if pp.Partition == partition {
				return pp.ErrorCode
			}
		}
	}
	t.Fatalf("Fetch response has no partition %d", partition)
	return 0
}

func partitionLeader(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partition int32) int32 {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	for _, tp := range resp.Topics {
		for _, pp := range tp.Partitions {
			if pp.Partition == partition && pp.ErrorCode == 0 {
				return pp.Leader
			}
		}
	}
	t.Fatalf("no leader for %s/%d in Metadata", topic, partition)
	return -1
}

// Auto topic creation: with auto.create.topics.enable=true a Metadata
// request that allows it creates the topic (num.partitions, the default
// replication factor); one that does not allow it does not. Each client
// produces to a topic nobody created and its record can be read back.
func testAutoCreateTopics(t *testing.T, c *cluster.Cluster, adm *kadm.Client) {
	ctx := ctxFor(t, 60*time.Second)

	// franz-go: only with AllowAutoTopicCreation.
	kcl := kgoWith(t, c, kgo.AllowAutoTopicCreation())
	if err := kcl.ProduceSync(ctx, &kgo.Record{Topic: "auto-franz-go", Key: []byte("k"), Value: []byte("franz-go")}).FirstErr(); err != nil {
		t.Fatalf("franz-go produce to a new topic: %v", err)
	}

	// sarama: Metadata.AllowAutoTopicCreation is on by default.
	sp, err := sarama.NewSyncProducer(seedAddrs(c), saramaConfig(sarama.DefaultVersion))
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	if _, _, err := sp.SendMessage(&sarama.ProducerMessage{Topic: "auto-sarama", Key: sarama.StringEncoder("k"), Value: sarama.StringEncoder("sarama")}); err != nil {
		sp.Close()
		t.Fatalf("sarama produce to a new topic: %v", err)
	}
	sp.Close()

	// kafka-go: Writer with AllowAutoTopicCreation.
	w := &kafka.Writer{Addr: kafka.TCP(seedAddrs(c)...), Transport: kafkaGoTransport(t), AllowAutoTopicCreation: true, RequiredAcks: kafka.RequireAll,
		BatchTimeout: 10 * time.Millisecond, MaxAttempts: 20, WriteBackoffMin: 100 * time.Millisecond, WriteBackoffMax: time.Second}
	// Kafka answers the first Metadata for a new topic with
	// UNKNOWN_TOPIC_OR_PARTITION while it creates it, and the Writer returns
	// that error; kafka-go's own testWriterAutoCreateTopic retries the write.
	for range 20 {
		err = w.WriteMessages(ctx, kafka.Message{Topic: "auto-kafka-go", Key: []byte("k"), Value: []byte("kafka-go")})
		if !errors.Is(err, kafka.UnknownTopicOrPartition) && !errors.Is(err, kafka.LeaderNotAvailable) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("kafka-go produce to a new topic: %v", err)
	}

	// A Metadata request that does not allow creation leaves the name alone.
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto-not-allowed")
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(ctx, kcl)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("Metadata without auto-create for a missing topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION", resp.Topics)
	}

	details, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	if details.Has("auto-not-allowed") {
		t.Errorf("a Metadata request with AllowAutoTopicCreation=false created the topic")
	}
	for lib, topic := range map[string]string{"franz-go": "auto-franz-go", "sarama": "auto-sarama", "kafka-go": "auto-kafka-go"} {
		td, ok := details[topic]
		if !ok {
			t.Errorf("%s: topic %s was not created", lib, topic)
			continue
		}
		if len(td.Partitions) != 1 { // num.partitions=1 in the harness
			t.Errorf("%s: auto-created %s has %d partitions, want num.partitions=1", lib, topic, len(td.Partitions))
		}
		for _, pd := range td.Partitions {
			if len(pd.Replicas) != 3 {
				t.Errorf("%s: auto-created %s/%d has replicas %v, want default.replication.factor=3", lib, topic, pd.Partition, pd.Replicas)
			}
		}
		got := consumeKgo(t, ctx, c, topic, map[int32]int64{0: 1})
		if got[0].Offset != 0 || got[0].Key != "k" || got[0].Value != lib {
			t.Errorf("%s: read back %+v from %s", lib, got[0], topic)
		}
	}
}

// Configs: set at creation, incrementally altered and deleted, replaced
// by a legacy AlterConfigs, and enforced (max.message.bytes), with sarama
// describing the same values kadm does.
func testConfigsRoundTrip(t *testing.T, c *cluster.Cluster, adm *kadm.Client) {
	ctx := ctxFor(t, 60*time.Second)
	const topic = "configs-round-trip"
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"retention.ms": kadm.StringPtr("3600000"), "cleanup.policy": kadm.StringPtr("delete")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s with configs: %v %v", topic, err, resp.Err)
	}

	// A node other than the controller may not have applied the new topic
	// yet and answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka's brokers do;
	// expectCfg waits through that.
	describe := func() (map[string]kadm.Config, error) {
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return nil, err
		}
		rc, err := rcs.On(topic, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			return nil, err
		}
		out := make(map[string]kadm.Config)
		for _, cfg := range rc.Configs {
			out[cfg.Key] = cfg
		}
		return out, nil
	}
	expectCfg := func(step, key, value string, dynamic bool) {
		t.Helper()
		// Describe reads the metadata image, which every node applies on its
		// own schedule after the controller commits: wait for it.
		var last string
		cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
			cfgs, err := describe()
			if err != nil {
				last = fmt.Sprintf("%s: DescribeTopicConfigs: %v", step, err)
				return false, last
			}
			cfg, ok := cfgs[key]
			if !ok {
				last = fmt.Sprintf("%s: %s missing from DescribeConfigs", step, key)
				return false, last
			}
			isDyn := cfg.Source == kmsg.ConfigSourceDynamicTopicConfig
			last = fmt.Sprintf("%s: %s = %v (source %v), want %q dynamic=%v", step, key, kadm.StringPtr(cfg.MaybeValue()), cfg.Source, value, dynamic)
			return cfg.MaybeValue() == value && isDyn == dynamic, last
		})
	}
	expectCfg("after create", "retention.ms", "3600000", true)
	expectCfg("after create", "cleanup.policy", "delete", true)
	expectCfg("after create", "max.message.bytes", "1048588", false)

	alter := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("7200000")},
		{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr("2048")},
	}
	ares, err := adm.AlterTopicConfigs(ctx, alter, topic)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	for _, r := range ares {
		if r.Err != nil {
			t.Fatalf("IncrementalAlterConfigs %s: %v %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	expectCfg("after incremental set", "retention.ms", "7200000", true)
	expectCfg("after incremental set", "max.message.bytes", "2048", true)

	// sarama's DescribeConfigs sees the same, once the broker it asks has
	// applied the change (as expectCfg, it may ask another node).
	sadm, err := sarama.NewClusterAdmin(seedAddrs(c), saramaConfig(sarama.V4_0_0_0))
	if err != nil {
		t.Fatalf("sarama admin: %v", err)
	}
	cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
		results, err := sadm.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: topic}},
			sarama.DescribeConfigsOptions{IncludeSynonyms: true, IncludeDocumentation: true})
		if err != nil {
			return false, fmt.Sprintf("sarama DescribeConfigs: %v", err)
		}
		if len(results) != 1 || results[0].ErrorCode != sarama.ErrNoError {
			return false, fmt.Sprintf("sarama DescribeConfigs: %+v", results)
		}
		for _, e := range results[0].Configs {
			if e.Name == "retention.ms" {
				return e.Value == "7200000" && e.Source == sarama.SourceTopic,
					fmt.Sprintf("sarama sees retention.ms = %q source %v, want 7200000 from the topic", e.Value, e.Source)
			}
		}
		return false, "sarama DescribeConfigs lists no retention.ms"
	})
	sadm.Close()

	// The new limit is enforced by the partition leader once its image has
	// it: a 4 KiB record is refused, a small one still accepted.
	cl := kgoWith(t, c, kgo.DefaultProduceTopic(topic))
	// Random bytes: franz-go compresses, and zeros would shrink below the
	// limit.
	big := make([]byte, 4096)
	prng := rand.New(rand.NewPCG(4, 4096))
	for i := range big {
		big[i] = byte(prng.Uint32())
	}
	cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
		err := cl.ProduceSync(ctx, &kgo.Record{Value: big}).FirstErr()
		return errors.Is(err, kerr.MessageTooLarge), fmt.Sprintf("4 KiB record with max.message.bytes=2048: %v", err)
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("small")}).FirstErr(); err != nil {
		t.Errorf("small record after lowering max.message.bytes: %v", err)
	}

	// DELETE goes back to the broker's value (log.retention.hours=168).
	ares, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, topic)
	if err != nil || ares[0].Err != nil {
		t.Fatalf("IncrementalAlterConfigs delete: %v %v", err, ares)
	}
	expectCfg("after delete", "retention.ms", "604800000", false)
	expectCfg("after delete", "max.message.bytes", "2048", true)

	// Legacy AlterConfigs replaces the whole set.
	sres, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: kadm.StringPtr("600000")}}, topic)
	if err != nil || sres[0].Err != nil {
		t.Fatalf("AlterConfigs: %v %v", err, sres)
	}
	expectCfg("after legacy alter", "segment.ms", "600000", true)
	expectCfg("after legacy alter", "max.message.bytes", "1048588", false)
	expectCfg("after legacy alter", "cleanup.policy", "delete", false)

	// An unknown key and a bad value are refused and change nothing.
	bad, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("soon")}}, topic)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs bad value: %v", err)
	}
	if bad[0].Err == nil {
		t.Errorf("retention.ms=soon was accepted")
	}
	expectCfg("after a refused alter", "segment.ms", "600000", true)
}
