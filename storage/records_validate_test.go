package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/raftka/raftka/storage/recordbatch"
)

// rawRecord encodes one v2 record by hand, so tests can break what the
// recordbatch builder never would. key nil is a null key.
func rawRecord(offDelta int64, key, value []byte) []byte {
	var body []byte
	body = append(body, 0) // attributes
	body = binary.AppendVarint(body, 0)
	body = binary.AppendVarint(body, offDelta)
	if key == nil {
		body = binary.AppendVarint(body, -1)
	} else {
		body = binary.AppendVarint(body, int64(len(key)))
		body = append(body, key...)
	}
	body = binary.AppendVarint(body, int64(len(value)))
	body = append(body, value...)
	body = binary.AppendVarint(body, 0) // headers
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// batchWith returns a valid batch header for count records with data as
// its (already compressed, or raw) records section.
func batchWith(c Compression, count int32, data []byte) []byte {
	raw := recordbatch.Build(1_700_000_000_000, recordbatch.Record{Timestamp: 1_700_000_000_000})
	b := Batch(withCompressedRecords(raw, c, data))
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(count))
	binary.BigEndian.PutUint32(b[offLastDelta:], uint32(count-1))
	b.updateCRC()
	return b
}

// codecFor is the codecCase compressing with c (the raw-block snappy).
func codecFor(c Compression) codecCase {
	for _, cc := range codecCases {
		if cc.codec == c {
			return cc
		}
	}
	panic(c)
}

var compressedCodecs = []Compression{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}

func TestValidateProduceEveryCodec(t *testing.T) {
	recs := sampleRecords(1_700_000_000_000, 20)
	raw := recordbatch.Build(1_700_000_000_000, recs...)
	for _, cc := range codecCases {
		t.Run(cc.name, func(t *testing.T) {
			b := compressBatch(t, raw, cc)
			sent := slices.Clone(b)
			info, err := Batch(b).ValidateProduce(ProduceRules{})
			if err != nil {
				t.Fatalf("valid %s batch refused: %v", cc.name, err)
			}
			if !bytes.Equal(b, sent) {
				t.Fatal("validation changed the batch")
			}
			// The record timestamps are a permutation of base..base+190.
			if info.MinTimestamp != 1_700_000_000_000 || info.MaxTimestamp != 1_700_000_000_190 {
				t.Errorf("timestamps %d..%d, want the records' range", info.MinTimestamp, info.MaxTimestamp)
			}
			var maxDelta int32
			for i, r := range recs {
				if r.Timestamp == info.MaxTimestamp {
					maxDelta = int32(i)
				}
			}
			if info.MaxTimestampDelta != maxDelta {
				t.Errorf("max timestamp at delta %d, want %d", info.MaxTimestampDelta, maxDelta)
			}
		})
	}
}

// corruptCase is one hand-made bad batch and the error kind it must get.
type corruptCase struct {
	name  string
	batch []byte
	want  error
	rules ProduceRules
}

func corruptCases(t testing.TB) []corruptCase {
	const n = 8
	raw := recordbatch.Build(1_700_000_000_000, sampleRecords(1_700_000_000_000, n)...)
	records := raw[BatchHeaderSize:]
	var cases []corruptCase
	add := func(name string, b []byte, want error) {
		cases = append(cases, corruptCase{name: name, batch: b, want: want})
	}
	garbage := make([]byte, 300)
	rand.New(rand.NewSource(1)).Read(garbage)
	for _, c := range compressedCodecs {
		cc := codecFor(c)
		comp := cc.compress(t, records)
		add(c.String()+"/garbage", batchWith(c, n, garbage), ErrCorruptBatch)
		add(c.String()+"/truncated", batchWith(c, n, comp[:len(comp)*2/3]), ErrCorruptBatch)
		add(c.String()+"/last byte dropped", batchWith(c, n, comp[:len(comp)-1]), ErrCorruptBatch)
		flipped := slices.Clone(comp)
		flipped[len(flipped)/2] ^= 0x55
		add(c.String()+"/flipped byte", batchWith(c, n, flipped), ErrCorruptBatch)
		add(c.String()+"/count one more", batchWith(c, n+1, comp), ErrInvalidRecord)
		add(c.String()+"/count one less", batchWith(c, n-1, comp), ErrInvalidRecord)
		add(c.String()+"/not records", batchWith(c, 1, cc.compress(t, []byte("this is plain text, not a v2 record"))), ErrCorruptBatch)
		add(c.String()+"/empty stream", batchWith(c, 1, cc.compress(t, nil)), ErrInvalidRecord)
		// A 6-byte varint record length, then the same with a 5-byte offset
		// delta whose last byte overflows 32 bits.
		overlong := append([]byte{0x8c, 0x80, 0x80, 0x80, 0x80, 0x00}, rawRecord(0, []byte("k"), nil)[1:]...)
		add(c.String()+"/overlong varint", batchWith(c, 1, cc.compress(t, overlong)), ErrCorruptBatch)
		wide := []byte{0x0e, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0x01, 0x00, 0x00}
		add(c.String()+"/varint past 32 bits", batchWith(c, 1, cc.compress(t, wide)), ErrCorruptBatch)
		add(c.String()+"/offset deltas 1..n", batchWith(c, 2, cc.compress(t, append(rawRecord(1, []byte("a"), nil), rawRecord(2, []byte("b"), nil)...))), ErrInvalidRecord)
		short := rawRecord(0, []byte("key"), []byte("value"))
		short[0] = byte(binary.AppendVarint(nil, int64(len(short)))[0]) // length one byte past the fields
		add(c.String()+"/length past fields", batchWith(c, 1, cc.compress(t, append(short, 0))), ErrCorruptBatch)
		tail := append(slices.Clone(records), 0)
		add(c.String()+"/byte after the records", batchWith(c, n, cc.compress(t, tail)), ErrInvalidRecord)
	}
	gz := codecFor(CompressionGzip).compress(t, records)
	gz[len(gz)-5] ^= 1 // the CRC-32 in gzip's trailer
	add("gzip/trailer crc", batchWith(CompressionGzip, n, gz), ErrCorruptBatch)
	add("snappy/s2 extension", batchWith(CompressionSnappy, n, s2.Encode(nil, bytes.Repeat(records, 4))), ErrCorruptBatch)
	add("snappy/xerial header cut", batchWith(CompressionSnappy, 1, xerialMagic), ErrCorruptBatch)
	add("snappy/xerial chunk overruns", batchWith(CompressionSnappy, n, append(xerialFrame(records, 50), 0, 0, 1, 0, 1)), ErrCorruptBatch)
	// Bombs: records that decompress past the default limit, at minimal
	// record framing so the walk reaches the limit rather than an error.
	bomb := rawRecord(0, []byte("k"), make([]byte, DecompressLimit(DefaultConfig().MaxMessageBytes)))
	for _, c := range []Compression{CompressionGzip, CompressionZstd, CompressionLZ4} {
		add(c.String()+"/bomb", batchWith(c, 1, codecFor(c).compress(t, bomb)), ErrRecordTooLarge)
	}
	add("snappy/bomb", batchWith(CompressionSnappy, 1, xerialFrame(bomb, 1<<16)), ErrRecordTooLarge)
	// Uncompressed batches get the same walk.
	add("none/count one less", batchWith(CompressionNone, n-1, records), ErrInvalidRecord)
	add("none/overlong varint", batchWith(CompressionNone, 1, append([]byte{0x8c, 0x80, 0x80, 0x80, 0x80, 0x00}, rawRecord(0, []byte("k"), nil)[1:]...)), ErrCorruptBatch)
	// Keyless records on a compacted topic, compressed or not.
	keyless := append(rawRecord(0, []byte("k"), []byte("v")), rawRecord(1, nil, []byte("v"))...)
	for _, c := range append([]Compression{CompressionNone}, compressedCodecs...) {
		cases = append(cases, corruptCase{name: c.String() + "/keyless on compacted", want: ErrInvalidRecord,
			batch: batchWith(c, 2, codecFor(c).compress(t, keyless)),
			rules: ProduceRules{Compacted: true, TopicPartition: TopicPartition{"t", 3}}})
	}
	return cases
}

func TestValidateProduceRefuses(t *testing.T) {
	for _, tc := range corruptCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			sent := slices.Clone(tc.batch)
			_, err := Batch(tc.batch).ValidateProduce(tc.rules)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if !bytes.Equal(tc.batch, sent) {
				t.Error("a refused batch was changed")
			}
			// The follower's check trusts compressed records, never more.
			if Batch(tc.batch).Compression() != CompressionNone {
				if _, err := Batch(tc.batch).ValidateStored(); err != nil && !strings.Contains(tc.name, "count") {
					t.Errorf("ValidateStored refused a header-valid batch: %v", err)
				}
			}
		})
	}
}

func TestValidateProduceRecordErrors(t *testing.T) {
	recs := []byte{}
	for i := range 5 {
		key := []byte("k")
		if i != 0 {
			key = nil
		}
		recs = append(recs, rawRecord(int64(i), key, []byte("v"))...)
	}
	_, err := Batch(batchWith(CompressionLZ4, 5, lz4Bytes(t, recs))).ValidateProduce(ProduceRules{Compacted: true, TopicPartition: TopicPartition{"logs", 2}})
	var re *RecordErrors
	if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("got %v, want *RecordErrors wrapping ErrInvalidRecord", err)
	}
	if re.Total != 4 || len(re.Errors) != 4 || re.Errors[0].BatchIndex != 1 || re.Errors[3].BatchIndex != 4 {
		t.Fatalf("record errors %+v", re)
	}
	const msg = "Compacted topic cannot accept message without key in topic partition logs-2"
	if re.Errors[0].Message != msg {
		t.Errorf("message %q", re.Errors[0].Message)
	}
	want := "One or more records have been rejected due to 4 record errors in total, and only showing the first three errors at most: [" +
		"RecordError(batchIndex=1, message='" + msg + "'), RecordError(batchIndex=2, message='" + msg + "'), RecordError(batchIndex=3, message='" + msg + "')]"
	if err.Error() != want {
		t.Errorf("message\n%s\nwant\n%s", err.Error(), want)
	}
	// Not compacted: the same batch is fine.
	if _, err := Batch(batchWith(CompressionLZ4, 5, lz4Bytes(t, recs))).ValidateProduce(ProduceRules{}); err != nil {
		t.Errorf("keyless records on a delete topic: %v", err)
	}
}

func TestDecompressLimit(t *testing.T) {
	for _, c := range []struct{ maxMessage, want int64 }{
		{0, 64 << 20}, {1 << 20, 64 << 20}, {1048588, 64 * 1048588}, {2 << 20, 128 << 20}, {1 << 30, 1 << 30}, {-1, 64 << 20},
	} {
		if got := DecompressLimit(c.maxMessage); got != c.want {
			t.Errorf("DecompressLimit(%d) = %d, want %d", c.maxMessage, got, c.want)
		}
	}
	// The limit is what the rules say: a batch just over it is refused,
	// just under it accepted.
	recs := bytes.Repeat(rawRecord(0, []byte("k"), nil), 1)
	b := batchWith(CompressionZstd, 1, zstdBytes(t, recs))
	if _, err := Batch(b).ValidateProduce(ProduceRules{MaxDecompressedBytes: int64(len(recs))}); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	if _, err := Batch(b).ValidateProduce(ProduceRules{MaxDecompressedBytes: int64(len(recs)) - 1}); !errors.Is(err, ErrRecordTooLarge) {
		t.Errorf("one byte over the limit: %v", err)
	}
}

// FuzzValidateProduce: valid batches of every codec, mutated after
// compression. Whatever the leader accepts, a consumer decodes to exactly
// recordCount records at offsets 0..n-1; whatever it refuses is refused
// with one of the produce error kinds, never a panic.
func FuzzValidateProduce(f *testing.F) {
	raw := recordbatch.Build(1_700_000_000_000, sampleRecords(1_700_000_000_000, 6)...)
	for _, cc := range codecCases {
		b := compressBatch(f, raw, cc)
		f.Add(uint8(cc.codec), int32(6), b[BatchHeaderSize:], false)
		f.Add(uint8(cc.codec), int32(6), b[BatchHeaderSize:], true)
	}
	f.Fuzz(func(t *testing.T, codec uint8, count int32, data []byte, compacted bool) {
		if count <= 0 || count > 1<<16 {
			count = 1 + count&0xff
		}
		b := Batch(withCompressedRecords(raw, Compression(codec%5), data))
		binary.BigEndian.PutUint32(b[offRecordCount:], uint32(count))
		binary.BigEndian.PutUint32(b[offLastDelta:], uint32(count-1))
		b.updateCRC()
		_, err := b.ValidateProduce(ProduceRules{Compacted: compacted, MaxDecompressedBytes: 1 << 20})
		if err != nil {
			if !errors.Is(err, ErrCorruptBatch) && !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrRecordTooLarge) {
				t.Fatalf("%v is not a produce error kind", err)
			}
			return
		}
		var n int64
		err = b.Records(func(r Record) bool {
			if r.Offset != b.BaseOffset()+n {
				t.Fatalf("record %d at offset %d", n, r.Offset)
			}
			if compacted && r.Key == nil {
				t.Fatalf("keyless record %d accepted on a compacted topic", n)
			}
			n++
			return true
		})
		if err != nil {
			t.Fatalf("accepted batch does not decode: %v", err)
		}
		if n != int64(count) {
			t.Fatalf("accepted batch has %d records, count %d", n, count)
		}
	})
}

// benchRecords are 1 KiB records with realistic, compressible values:
// JSON-ish events whose fields repeat and vary, as application logs do.
func benchRecords(n int) []recordbatch.Record {
	rng := rand.New(rand.NewSource(7))
	words := []string{"checkout", "login", "search", "cart", "payment", "profile", "logout", "refund"}
	rs := make([]recordbatch.Record, n)
	for i := range rs {
		var v []byte
		for len(v) < 1024 {
			v = fmt.Appendf(v, `{"user":%d,"event":"%s","session":"%08x","latency_ms":%d,"ok":%t},`,
				rng.Intn(100000), words[rng.Intn(len(words))], rng.Uint32(), rng.Intn(2000), rng.Intn(10) > 0)
		}
		rs[i] = recordbatch.Record{Key: fmt.Appendf(nil, "user-%d", rng.Intn(100000)), Value: v[:1024], Timestamp: 1_700_000_000_000 + int64(i)}
	}
	return rs
}

// BenchmarkValidateProduce is the leader's validation of one 64-record
// batch of 1 KiB records per codec; MB/s counts the records' uncompressed
// bytes.
func BenchmarkValidateProduce(b *testing.B) {
	raw := recordbatch.Build(1_700_000_000_000, benchRecords(64)...)
	for _, cc := range codecCases {
		batch := compressBatch(b, raw, cc)
		b.Run(cc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw) - BatchHeaderSize))
			b.ReportAllocs()
			rules := ProduceRules{Compacted: true}
			for b.Loop() {
				if _, err := Batch(batch).ValidateProduce(rules); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAppendRefusesCorruptCompressed: the leader's append runs the walk
// with the log's config, and a refused batch leaves the log as it was.
func TestAppendRefusesCorruptCompressed(t *testing.T) {
	noFsync(t)
	cfg := smallConfig()
	cfg.CleanupPolicy = PolicyCompact
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{})
	raw := recordbatch.Build(1_700_000_000_000, recordbatch.Record{Key: []byte("a"), Value: []byte("1"), Timestamp: 1_700_000_000_000},
		recordbatch.Record{Key: []byte("b"), Value: []byte("2"), Timestamp: 1_700_000_000_005})
	good := compressBatch(t, raw, codecFor(CompressionZstd))
	garbage := batchWith(CompressionZstd, 2, []byte("\x28\xb5\x2f\xfd this is not a zstd frame"))
	keyless := batchWith(CompressionZstd, 2, zstdBytes(t, append(rawRecord(0, []byte("k"), nil), rawRecord(1, nil, []byte("v"))...)))
	for _, bad := range []struct {
		b    []byte
		want error
	}{{garbage, ErrCorruptBatch}, {keyless, ErrInvalidRecord}} {
		if _, err := l.Append(bad.b, AppendOptions{}); !errors.Is(err, bad.want) {
			t.Fatalf("append: %v, want %v", err, bad.want)
		}
		if l.LogEndOffset() != 0 || l.Size() != 0 {
			t.Fatalf("a refused batch moved the log: end %d, %d bytes", l.LogEndOffset(), l.Size())
		}
	}
	sent := slices.Clone(good)
	res, err := l.Append(good, AppendOptions{})
	if err != nil || res.BaseOffset != 0 || l.LogEndOffset() != 2 {
		t.Fatalf("valid batch: %+v, %v", res, err)
	}
	// Stored as sent: only base offset and leader epoch (outside the CRC)
	// were stamped.
	Batch(sent).SetBaseOffset(0)
	Batch(sent).SetPartitionLeaderEpoch(0)
	requireBatches(t, l, [][]byte{sent})
}
