package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Compressed produce on three nodes (issue 20). Valid batches of every
// codec from franz-go, sarama and kcat are accepted and read back by every
// client family; hand-made batches whose header and CRC are valid but
// whose compressed records are not (garbage, truncated streams, the wrong
// record count, overlong varints, a gzip bomb, compressed bytes that are
// not records, keyless records on a compacted topic) are refused with
// Kafka's code at acks=1 and acks=all, append nothing, leave the
// connection usable, and the partition stays readable to its end.
func TestCompressedProduce(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	adm := kadm.NewClient(client(t, c))
	t.Run("clients", func(t *testing.T) { testCompressedClients(t, c, adm) })
	t.Run("refused", func(t *testing.T) { testCompressedRefused(t, c, adm) })
	t.Run("topic-codec", func(t *testing.T) { testTopicCodec(t, c, adm) })
}

// The codecs by their names in each client.
var e2eCodecs = []struct {
	name   string
	kgo    kgo.CompressionCodec
	sarama sarama.CompressionCodec
}{
	{"gzip", kgo.GzipCompression(), sarama.CompressionGZIP},
	{"snappy", kgo.SnappyCompression(), sarama.CompressionSnappy},
	{"lz4", kgo.Lz4Compression(), sarama.CompressionLZ4},
	{"zstd", kgo.ZstdCompression(), sarama.CompressionZSTD},
}

func testCompressedClients(t *testing.T, c *cluster.Cluster, adm *kadm.Client) {
	kcat, kcatMissing := findKcat()
	const perClient, parts = 300, 3
	for _, codec := range e2eCodecs {
		t.Run(codec.name, func(t *testing.T) {
			ctx := ctxFor(t, 120*time.Second)
			topic := "compressed-" + codec.name
			if err := createTopic(ctx, adm, topic, parts, 3); err != nil {
				t.Fatalf("create %s: %v", topic, err)
			}
			want := map[string]string{}
			// franz-go, linger so batches hold many records.
			recs := makeRecords("franz-go-"+codec.name, perClient)
			produceKgo(t, ctx, kgoWith(t, c, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec.kgo),
				kgo.ProducerLinger(20*time.Millisecond)), topic, recs, true)
			for _, r := range recs {
				want[r.Key] = r.Value
			}
			// sarama: one SendMessages call is one batch per partition.
			cfg := saramaConfig(sarama.V4_0_0_0)
			cfg.Producer.Compression = codec.sarama
			sp, err := sarama.NewSyncProducer(seedAddrs(c), cfg)
			if err != nil {
				t.Fatalf("sarama producer: %v", err)
			}
			var msgs []*sarama.ProducerMessage
			for _, r := range makeRecords("sarama-"+codec.name, perClient) {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(r.Key), Value: sarama.StringEncoder(r.Value)})
				want[r.Key] = r.Value
			}
			err = sp.SendMessages(msgs)
			_ = sp.Close()
			if err != nil {
				t.Fatalf("sarama %s produce: %v", codec.name, err)
			}
			if kcatMissing == "" {
				var in strings.Builder
				for i := range perClient {
					k, v := fmt.Sprintf("kcat-%s-%04d", codec.name, i), fmt.Sprintf("kcat value %d %s", i, strings.Repeat("z", i%120))
					fmt.Fprintf(&in, "%s:%s\n", k, v)
					want[k] = v
				}
				cmd := exec.CommandContext(ctx, kcat, "-b", c.Bootstrap(), "-P", "-t", topic, "-K:", "-z", codec.name,
					"-X", "acks=all", "-X", "linger.ms=20")
				cmd.Stdin = strings.NewReader(in.String())
				if out, err := cmd.CombinedOutput(); err != nil || bytes.Contains(bytes.ToLower(out), []byte("error")) {
					t.Fatalf("kcat -P -z %s: %v\n%s", codec.name, err, out)
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
			check := func(who string, got map[string]string) { t.Helper(); requireTable(t, who, got, want) }
			got := map[string]string{}
			for _, r := range consumeKgo(t, ctx, c, topic, ends) {
				got[r.Key] = r.Value
			}
			check("franz-go", got)
			check("sarama", consumeSarama(t, c, topic, ends))
			if kcatMissing == "" {
				check("kcat", consumeKcat(t, ctx, kcat, c, topic, total))
			}
		})
	}
	if kcatMissing != "" {
		missingTool(t, kcatMissing)
	}
}

func listEnds(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	listed, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets %s: %v", topic, err)
	}
	ends := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("ListEndOffsets %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		ends[o.Partition] = o.Offset
	})
	return ends
}

// consumeSarama reads every partition to its end with sarama.
func consumeSarama(t *testing.T, c *cluster.Cluster, topic string, ends map[int32]int64) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cons, err := sarama.NewConsumer(seedAddrs(c), saramaConfig(sarama.V4_0_0_0))
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer cons.Close()
	got := map[string]string{}
	for p, end := range ends {
		if end == 0 {
			continue
		}
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama ConsumePartition %d: %v", p, err)
		}
		for n := int64(0); n < end; {
			select {
			case m := <-pc.Messages():
				got[string(m.Key)] = string(m.Value)
				n = m.Offset + 1
			case err := <-pc.Errors():
				pc.AsyncClose()
				t.Fatalf("sarama consume %s/%d: %v", topic, p, err)
			case <-ctx.Done():
				pc.AsyncClose()
				t.Fatalf("sarama read %s/%d to %d of %d before the deadline", topic, p, n, end)
			}
		}
		if err := pc.Close(); err != nil {
			t.Fatalf("sarama partition consumer %d close: %v", p, err)
		}
	}
	return got
}

// consumeKcat reads the topic from the beginning to its end with kcat.
func consumeKcat(t *testing.T, ctx context.Context, kcat string, c *cluster.Cluster, topic string, total int64) map[string]string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "timeout", "60", kcat, "-b", c.Bootstrap(), "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k\t%s\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat -C %s: %v", topic, err)
	}
	got := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for _, l := range lines {
		k, v, _ := strings.Cut(l, "\t")
		got[k] = v
	}
	if int64(len(lines)) != total {
		t.Fatalf("kcat read %d records, want %d", len(lines), total)
	}
	return got
}

// Codec attribute values of a v2 batch.
const (
	attrGzip   = 1
	attrSnappy = 2
	attrLZ4    = 3
	attrZstd   = 4
)

// encodeRecords is n records as a v2 batch holds them, key nil where
// keyless, with an optional broken record appended by the caller.
func encodeRecords(n int, keyless bool) []byte {
	var recs []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte("k" + strconv.Itoa(i)), Value: []byte(strings.Repeat("compressible value ", 8))}
		if keyless && i > 0 {
			r.Key = nil
		}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	return recs
}

// compressWith compresses data as the clients do for codec.
func compressWith(t testing.TB, codec int16, data []byte) []byte {
	var buf bytes.Buffer
	switch codec {
	case attrGzip:
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(data)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case attrSnappy:
		return s2.EncodeSnappy(nil, data)
	case attrLZ4:
		w := lz4.NewWriter(&buf)
		_, _ = w.Write(data)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case attrZstd:
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(data, nil)
	}
	return buf.Bytes()
}

// compressedBatch is a v2 batch of count records whose records section is
// payload under codec, with a correct length and CRC: what a broker that
// checks headers only accepts.
func compressedBatch(codec int16, count int32, payload []byte) []byte {
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: codec, LastOffsetDelta: count - 1,
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: count, Records: payload,
	}
	b.Length = int32(49 + len(payload))
	enc := b.AppendTo(nil)
	binary.BigEndian.PutUint32(enc[17:21], crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)))
	return enc
}

// gzipBomb is one record whose 100 MiB value of zeros gzips to about
// 100 KiB, written in pieces so the test does not hold it.
func gzipBomb(t testing.TB) []byte {
	const valueLen = 100 << 20
	var hdr []byte
	hdr = append(hdr, 0)                     // attributes
	hdr = binary.AppendVarint(hdr, 0)        // timestamp delta
	hdr = binary.AppendVarint(hdr, 0)        // offset delta
	hdr = binary.AppendVarint(hdr, 1)        // key length
	hdr = append(hdr, 'k')                   // key
	hdr = binary.AppendVarint(hdr, valueLen) // value length
	rec := binary.AppendVarint(nil, int64(len(hdr)+valueLen+1))
	rec = append(rec, hdr...)
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(rec)
	zeros := make([]byte, 1<<20)
	for range valueLen >> 20 {
		_, _ = w.Write(zeros)
	}
	_, _ = w.Write([]byte{0}) // no headers
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type badBatch struct {
	name  string
	batch []byte
	code  int16
}

func badBatches(t testing.TB) []badBatch {
	var out []badBatch
	recs := encodeRecords(10, false)
	for _, codec := range []struct {
		name string
		attr int16
	}{{"gzip", attrGzip}, {"snappy", attrSnappy}, {"lz4", attrLZ4}, {"zstd", attrZstd}} {
		comp := compressWith(t, codec.attr, recs)
		garbage := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x42}, 40)
		out = append(out,
			badBatch{codec.name + " garbage", compressedBatch(codec.attr, 10, garbage), kerr.CorruptMessage.Code},
			badBatch{codec.name + " truncated", compressedBatch(codec.attr, 10, comp[:len(comp)/2]), kerr.CorruptMessage.Code},
			badBatch{codec.name + " count too high", compressedBatch(codec.attr, 11, comp), kerr.InvalidRecord.Code},
			badBatch{codec.name + " not records", compressedBatch(codec.attr, 1, compressWith(t, codec.attr, []byte("plain text that is no record batch"))), kerr.CorruptMessage.Code},
			badBatch{codec.name + " overlong varint", compressedBatch(codec.attr, 1, compressWith(t, codec.attr,
				append([]byte{0x8c, 0x80, 0x80, 0x80, 0x80, 0x00}, encodeRecords(1, false)[1:]...))), kerr.CorruptMessage.Code},
		)
	}
	out = append(out, badBatch{"gzip bomb", compressedBatch(attrGzip, 1, gzipBomb(t)), kerr.MessageTooLarge.Code})
	return out
}

// produceOn sends one Produce of batch to topic/0 at acks on conn and
// returns the partition's answer.
func produceOn(t *testing.T, conn net.Conn, corr int32, topic string, acks int16, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	got, err := produceExchange(conn, corr, topic, 0, acks, batch)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// produceExchange is produceOn for any partition, for goroutines: it
// returns errors rather than failing the test.
func produceExchange(conn net.Conn, corr int32, topic string, partition int32, acks int16, batch []byte) (kmsg.ProduceResponseTopicPartition, error) {
	var none kmsg.ProduceResponseTopicPartition
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 11, acks, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, bytes.Clone(batch)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raftka-e2e-corrupt"))
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write(f.AppendRequest(nil, req, corr)); err != nil {
		return none, fmt.Errorf("write produce: %v", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return none, fmt.Errorf("read produce answer (the connection must stay usable): %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return none, fmt.Errorf("read produce answer: %v", err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return none, fmt.Errorf("correlation %d, want %d", got, corr)
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if err := resp.ReadFrom(body[5:]); err != nil { // correlation id, empty header tags
		return none, fmt.Errorf("decode produce answer: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return none, fmt.Errorf("produce answer %+v", resp)
	}
	return resp.Topics[0].Partitions[0], nil
}

func testCompressedRefused(t *testing.T, c *cluster.Cluster, adm *kadm.Client) {
	ctx := ctxFor(t, 180*time.Second)
	const topic, compacted = "compressed-refused", "compressed-refused-compact"
	if err := createTopic(ctx, adm, topic, 1, 3); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, compacted)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", compacted, err, resp.Err)
	}
	cl := kgoWith(t, c, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	recs := makeRecords("before", 50)
	produceKgo(t, ctx, cl, topic, recs, true)
	leader := c.Node(partitionLeader(t, ctx, cl, topic, 0))
	cleader := c.Node(partitionLeader(t, ctx, cl, compacted, 0))
	end := listEnds(t, ctx, adm, topic)[0]

	conn, err := net.DialTimeout("tcp", leader.ClientAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	corr := int32(0)
	good := compressedBatch(attrLZ4, 3, compressWith(t, attrLZ4, encodeRecords(3, false)))
	refused := 0
	for _, bb := range badBatches(t) {
		for _, acks := range []int16{1, -1} {
			corr++
			got := produceOn(t, conn, corr, topic, acks, bb.batch)
			if got.ErrorCode != bb.code || got.BaseOffset != -1 {
				t.Errorf("%s at acks=%d: code %d (%v) base %d, want %d", bb.name, acks, got.ErrorCode, got.ErrorMessage, got.BaseOffset, bb.code)
			}
			refused++
			if e := listEnds(t, ctx, adm, topic)[0]; e != end {
				t.Fatalf("%s at acks=%d: end offset %d, was %d: a refused batch was appended", bb.name, acks, e, end)
			}
		}
		// The same connection still takes a valid batch.
		corr++
		if got := produceOn(t, conn, corr, topic, -1, good); got.ErrorCode != 0 || got.BaseOffset != end {
			t.Fatalf("valid batch after %s: code %d at %d, want 0 at %d", bb.name, got.ErrorCode, got.BaseOffset, end)
		}
		end += 3
	}

	cconn, err := net.DialTimeout("tcp", cleader.ClientAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer cconn.Close()
	keyless := compressedBatch(attrLZ4, 4, compressWith(t, attrLZ4, encodeRecords(4, true)))
	for _, acks := range []int16{1, -1} {
		corr++
		got := produceOn(t, cconn, corr, compacted, acks, keyless)
		if got.ErrorCode != kerr.InvalidRecord.Code || len(got.ErrorRecords) != 3 || got.ErrorRecords[0].RelativeOffset != 1 ||
			got.ErrorMessage == nil || !strings.HasPrefix(*got.ErrorMessage, "One or more records have been rejected due to 3 record errors") {
			t.Errorf("keyless on compacted at acks=%d: code %d records %+v message %v", acks, got.ErrorCode, got.ErrorRecords, got.ErrorMessage)
		}
	}
	if e := listEnds(t, ctx, adm, compacted)[0]; e != 0 {
		t.Errorf("compacted topic end offset %d after refusals", e)
	}

	// Consumers of every family read the partition to its end.
	ends := map[int32]int64{0: end}
	if n := len(consumeKgo(t, ctx, c, topic, ends)); int64(n) != end {
		t.Errorf("franz-go read %d records, end offset %d", n, end)
	}
	consumeSarama(t, c, topic, ends)
	if kcat, missing := findKcat(); missing == "" {
		consumeKcat(t, ctx, kcat, c, topic, end)
	}

	// The leaders counted the refusals by client id (the keyless ones too,
	// on the compacted topic's leader).
	var counted float64
	for _, n := range c.Nodes() {
		for _, reason := range []string{"corrupt_message", "invalid_record", "message_too_large"} {
			v, err := metric(n, `raftka_produce_refused_batches_total{client_id="raftka-e2e-corrupt",reason="`+reason+`"}`)
			if err != nil && !strings.Contains(err.Error(), "not found") {
				t.Fatalf("refusal metric: %v", err)
			}
			counted += v
		}
	}
	if want := refused + 2; int(counted) != want {
		t.Errorf("leaders counted %v refused batches, sent %d", counted, want)
	}
	if !strings.Contains(leader.Logs(), "raftka-e2e-corrupt") {
		t.Errorf("the leader's log does not name the refused client")
	}
}

// requireTable fails the test unless a consumer (who) read exactly the
// produced key -> value table.
func requireTable(t *testing.T, who string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s read %d distinct keys, want %d", who, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s read %q = %.40q, produced %.40q", who, k, got[k], v)
		}
	}
}
