package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/test/cluster"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A topic with compression.type=zstd (issue 11) stores zstd batches
// whatever its producers sent: franz-go uncompressed, gzip, snappy and lz4,
// sarama gzip, kcat snappy and uncompressed. Every replica's segment files
// hold zstd batches only (the leader recompresses; followers copy its
// bytes), and consumers of the four client families read every record.
func testTopicCodec(t *testing.T, c *cluster.Cluster, adm *kadm.Client) {
	ctx := ctxFor(t, 120*time.Second)
	const topic, parts, perProducer = "stored-zstd", 3, 200
	resp, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"compression.type": kadm.StringPtr("zstd")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	want := map[string]string{}
	for _, codec := range []struct {
		name string
		c    kgo.CompressionCodec
	}{{"none", kgo.NoCompression()}, {"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()}, {"lz4", kgo.Lz4Compression()}} {
		recs := makeRecords("franz-go-"+codec.name, perProducer)
		produceKgo(t, ctx, kgoWith(t, c, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec.c),
			kgo.ProducerLinger(10*time.Millisecond)), topic, recs, true)
		for _, r := range recs {
			want[r.Key] = r.Value
		}
	}
	cfg := saramaConfig(sarama.V4_0_0_0)
	cfg.Producer.Compression = sarama.CompressionGZIP
	sp, err := sarama.NewSyncProducer(seedAddrs(c), cfg)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	var msgs []*sarama.ProducerMessage
	for _, r := range makeRecords("sarama-gzip", perProducer) {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(r.Key), Value: sarama.StringEncoder(r.Value)})
		want[r.Key] = r.Value
	}
	err = sp.SendMessages(msgs)
	_ = sp.Close()
	if err != nil {
		t.Fatalf("sarama produce: %v", err)
	}
	kcat, kcatMissing := findKcat()
	if kcatMissing == "" {
		for _, codec := range []string{"snappy", "none"} {
			var in strings.Builder
			for i := range perProducer {
				k, v := fmt.Sprintf("kcat-%s-%04d", codec, i), fmt.Sprintf("kcat value %d %s", i, strings.Repeat("q", i%90))
				fmt.Fprintf(&in, "%s:%s\n", k, v)
				want[k] = v
			}
			cmd := exec.CommandContext(ctx, kcat, "-b", c.Bootstrap(), "-P", "-t", topic, "-K:", "-z", codec,
				"-X", "acks=all", "-X", "linger.ms=10")
			cmd.Stdin = strings.NewReader(in.String())
			if out, err := cmd.CombinedOutput(); err != nil || bytes.Contains(bytes.ToLower(out), []byte("error")) {
				t.Fatalf("kcat -P -z %s: %v\n%s", codec, err, out)
			}
		}
	}
	ends := listEnds(t, ctx, adm, topic)
	var total int64
	for _, e := range ends {
		total += e
	}
	if total != int64(len(want)) {
		t.Fatalf("end offsets sum to %d, %d records were produced", total, len(want))
	}

	// Every replica's files: once each holds the whole partition, every
	// batch in them is zstd.
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		for _, n := range c.Nodes() {
			for p := range int32(parts) {
				codecs, next, err := storedCodecs(n.DataDir(), fmt.Sprintf("%s-%d", topic, p))
				if err != nil {
					return false, fmt.Sprintf("node %d: %v", n.ID(), err)
				}
				if next < ends[p] {
					return false, fmt.Sprintf("node %d holds %s-%d up to %d of %d", n.ID(), topic, p, next, ends[p])
				}
				for codec, batches := range codecs {
					if codec != storage.CompressionZstd {
						t.Fatalf("node %d stores %d %s batches in %s-%d (compression.type=zstd)", n.ID(), batches, codec, topic, p)
					}
				}
			}
		}
		return true, ""
	})

	check := func(who string, got map[string]string) { t.Helper(); requireTable(t, who, got, want) }
	got := map[string]string{}
	for _, r := range consumeKgo(t, ctx, c, topic, ends) {
		got[r.Key] = r.Value
	}
	check("franz-go", got)
	check("sarama", consumeSarama(t, c, topic, ends))
	check("kafka-go", consumeKafkaGo(t, ctx, c, topic, ends))
	if kcatMissing == "" {
		check("kcat", consumeKcat(t, ctx, kcat, c, topic, total))
	} else {
		missingTool(t, kcatMissing)
	}
}

// storedCodecs counts the batches of each codec in the segment files of
// partition directory part under dataDir, and returns the offset after
// the last batch.
func storedCodecs(dataDir, part string) (map[storage.Compression]int, int64, error) {
	var dir string
	err := filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == part {
			dir = p
		}
		return nil
	})
	if err != nil || dir == "" {
		return nil, 0, fmt.Errorf("no %s directory (%v)", part, err)
	}
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, 0, err
	}
	codecs, next := map[storage.Compression]int{}, int64(0)
	for _, seg := range segs {
		data, err := os.ReadFile(seg)
		if err != nil {
			return nil, 0, err
		}
		for len(data) > 0 {
			size, err := storage.BatchSize(data)
			if err != nil || size > len(data) {
				break // a batch being written: read again later
			}
			b := storage.Batch(data[:size])
			codecs[b.Compression()]++
			next = max(next, b.NextOffset())
			data = data[size:]
		}
	}
	return codecs, next, nil
}

// consumeKafkaGo reads every partition to its end with kafka-go.
func consumeKafkaGo(t *testing.T, ctx context.Context, c *cluster.Cluster, topic string, ends map[int32]int64) map[string]string {
	t.Helper()
	got := map[string]string{}
	for p, end := range ends {
		if end == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers: seedAddrs(c), Topic: topic, Partition: int(p),
			MinBytes: 1, MaxBytes: 4 << 20, MaxWait: 500 * time.Millisecond,
		})
		if err := r.SetOffset(0); err != nil {
			r.Close()
			t.Fatalf("kafka-go SetOffset: %v", err)
		}
		for n := int64(0); n < end; {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("kafka-go read %s/%d at %d of %d: %v", topic, p, n, end, err)
			}
			got[string(m.Key)] = string(m.Value)
			n = m.Offset + 1
		}
		if err := r.Close(); err != nil {
			t.Fatalf("kafka-go reader close: %v", err)
		}
	}
	return got
}
