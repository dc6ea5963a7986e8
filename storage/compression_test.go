package storage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/twmb/franz-go/pkg/kgo"
)

// codecCase is one way a client compresses a batch's records.
type codecCase struct {
	name     string
	codec    Compression
	compress func(t testing.TB, raw []byte) []byte
}

var codecCases = []codecCase{
	{"none", CompressionNone, func(_ testing.TB, raw []byte) []byte { return raw }},
	{"gzip", CompressionGzip, gzipBytes},
	// librdkafka and franz-go send one raw snappy block.
	{"snappy", CompressionSnappy, func(_ testing.TB, raw []byte) []byte { return s2.EncodeSnappy(nil, raw) }},
	// The Java client frames snappy as snappy-java's stream does; small
	// chunks so a batch spans several.
	{"snappy-xerial", CompressionSnappy, func(_ testing.TB, raw []byte) []byte { return xerialFrame(raw, 100) }},
	{"lz4", CompressionLZ4, lz4Bytes},
	{"zstd", CompressionZstd, zstdBytes},
}

func gzipBytes(t testing.TB, raw []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func lz4Bytes(t testing.TB, raw []byte) []byte {
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstdBytes(t testing.TB, raw []byte) []byte {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(raw, nil)
}

// xerialFrame frames raw as snappy-java does: magic, version 1, minimum
// compatible version 1, then chunks of a length and a raw snappy block.
func xerialFrame(raw []byte, chunk int) []byte {
	out := append(slices.Clone(xerialMagic), 0, 0, 0, 1, 0, 0, 0, 1)
	for len(raw) > 0 {
		n := min(chunk, len(raw))
		block := s2.EncodeSnappy(nil, raw[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		raw = raw[n:]
	}
	return out
}

// withCompressedRecords replaces the records of the uncompressed batch raw
// by data, marks the codec and fixes the length and CRC, as a producer
// that compressed its records sends the batch.
func withCompressedRecords(raw []byte, c Compression, data []byte) []byte {
	b := Batch(append(slices.Clone(raw[:BatchHeaderSize]), data...))
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-batchOverhead))
	attrs := binary.BigEndian.Uint16(b[offAttributes:])
	binary.BigEndian.PutUint16(b[offAttributes:], attrs&^attrCompressionMask|uint16(c))
	b.updateCRC()
	return b
}

func compressBatch(t testing.TB, raw []byte, cc codecCase) []byte {
	return withCompressedRecords(raw, cc.codec, cc.compress(t, raw[BatchHeaderSize:]))
}

// sampleRecords are records with out-of-order timestamps, keys, a null
// key and value, and headers.
func sampleRecords(base int64, n int) []recordbatch.Record {
	rs := make([]recordbatch.Record, n)
	for i := range rs {
		rs[i] = recordbatch.Record{
			Timestamp: base + int64((i*7)%n)*10, // a permutation of base..base+10(n-1)
			Key:       fmt.Appendf(nil, "k%d", i),
			Value:     bytes.Repeat([]byte{byte('a' + i%26)}, 10+i),
		}
		switch i % 4 {
		case 1:
			rs[i].Key = nil
		case 2:
			rs[i].Value = nil
		case 3:
			rs[i].Headers = []recordbatch.Header{{Key: "h", Value: []byte("x")}, {Key: "n"}}
		}
	}
	return rs
}

func collectRecords(t testing.TB, b Batch) []Record {
	t.Helper()
	var out []Record
	err := b.Records(func(r Record) bool {
		r.Key, r.Value = slices.Clone(r.Key), slices.Clone(r.Value)
		r.Headers = slices.Clone(r.Headers)
		out = append(out, r)
		return true
	})
	if err != nil {
		t.Fatalf("Records: %v", err)
	}
	return out
}

func TestBatchRecordsEveryCodec(t *testing.T) {
	in := sampleRecords(1_700_000_000_000, 40)
	raw := recordbatch.Build(1_700_000_000_000, in...)
	for _, cc := range codecCases {
		t.Run(cc.name, func(t *testing.T) {
			b := Batch(compressBatch(t, raw, cc))
			if _, err := b.Validate(); err != nil {
				t.Fatalf("built an invalid batch: %v", err)
			}
			b.SetBaseOffset(100)
			got := collectRecords(t, b)
			if len(got) != len(in) {
				t.Fatalf("%d records, want %d", len(got), len(in))
			}
			for i, r := range got {
				w := in[i]
				if r.Offset != 100+int64(i) || r.Timestamp != w.Timestamp || r.Sequence != -1 ||
					!bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) ||
					!bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) || len(r.Headers) != len(w.Headers) {
					t.Fatalf("record %d: got %+v, want %+v", i, r, w)
				}
				for h := range r.Headers {
					if r.Headers[h].Key != w.Headers[h].Key || !bytes.Equal(r.Headers[h].Value, w.Headers[h].Value) {
						t.Fatalf("record %d header %d: %+v", i, h, r.Headers[h])
					}
				}
			}
			// Stopping early stops.
			n := 0
			if err := b.Records(func(Record) bool { n++; return n < 3 }); err != nil || n != 3 {
				t.Fatalf("early stop: %d records, %v", n, err)
			}
		})
	}
}

// TestBatchRecordsKgoCompressed decodes records compressed by franz-go's
// own compressor, as a franz-go producer sends them.
func TestBatchRecordsKgoCompressed(t *testing.T) {
	in := sampleRecords(1_700_000_000_000, 25)
	raw := recordbatch.Build(1_700_000_000_000, in...)
	for _, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		comp, err := kgo.DefaultCompressor(codec)
		if err != nil {
			t.Fatal(err)
		}
		data, typ := comp.Compress(new(bytes.Buffer), raw[BatchHeaderSize:])
		b := Batch(withCompressedRecords(raw, Compression(typ), slices.Clone(data)))
		got := collectRecords(t, b)
		if len(got) != len(in) {
			t.Fatalf("codec %d: %d records, want %d", typ, len(got), len(in))
		}
		for i, r := range got {
			if r.Timestamp != in[i].Timestamp || !bytes.Equal(r.Value, in[i].Value) {
				t.Fatalf("codec %d record %d: %+v", typ, i, r)
			}
		}
	}
}

func TestBatchRecordsSequenceAndLogAppendTime(t *testing.T) {
	raw := recordbatch.Batch{
		BaseTimestamp: 5, MaxTimestamp: 9, ProducerID: 7, ProducerEpoch: 0, BaseSequence: 0x7ffffffe, LogAppendTime: true,
		Records: []recordbatch.Record{{Timestamp: 5, Value: []byte("a")}, {Timestamp: 6, OffsetDelta: 1}, {Timestamp: 7, OffsetDelta: 2}},
	}.Encode()
	b := Batch(compressBatch(t, raw, codecCases[2]))
	got := collectRecords(t, b)
	wantSeq := []int32{0x7ffffffe, 0x7fffffff, 0}
	for i, r := range got {
		if r.Sequence != wantSeq[i] || r.Timestamp != 9 {
			t.Fatalf("record %d: sequence %d timestamp %d, want %d and the batch's max timestamp 9", i, r.Sequence, r.Timestamp, wantSeq[i])
		}
	}
}

// TestBatchRecordsRefusesBombs: records decompressing past
// MaxDecompressedBytes are an error, not an allocation.
func TestBatchRecordsRefusesBombs(t *testing.T) {
	raw := recordbatch.Build(1, recordbatch.Record{Value: []byte("v")})
	// A zstd frame declaring a content size past the bound is refused by
	// the decoder itself, before it allocates.
	zstdBomb := zstdBytes(t, make([]byte, MaxDecompressedBytes+1))
	// The rest at a lowered bound: compressing 64 MiB under -race is slow.
	old := maxDecompressed
	maxDecompressed = 1 << 20
	t.Cleanup(func() { maxDecompressed = old })
	zeros := make([]byte, maxDecompressed+1)
	// A raw snappy block declaring a huge length up front.
	claim := binary.AppendUvarint(nil, 1<<31)
	cases := map[string][]byte{
		"gzip":          withCompressedRecords(raw, CompressionGzip, gzipBytes(t, zeros)),
		"zstd":          withCompressedRecords(raw, CompressionZstd, zstdBytes(t, zeros)),
		"zstd-declared": withCompressedRecords(raw, CompressionZstd, zstdBomb),
		"lz4":           withCompressedRecords(raw, CompressionLZ4, lz4Bytes(t, zeros)),
		"snappy":        withCompressedRecords(raw, CompressionSnappy, s2.EncodeSnappy(nil, zeros)),
		"snappy-claim":  withCompressedRecords(raw, CompressionSnappy, append(claim, 0)),
		"snappy-xerial": withCompressedRecords(raw, CompressionSnappy, xerialFrame(zeros, 64<<10)),
	}
	for name, b := range cases {
		err := Batch(b).Records(func(Record) bool { return true })
		if !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("%s: %v, want ErrCorruptBatch", name, err)
		}
	}
}

func TestBatchRecordsCorrupt(t *testing.T) {
	raw := recordbatch.Build(1_700_000_000_000, sampleRecords(1_700_000_000_000, 10)...)
	rng := rand.New(rand.NewSource(1))
	for _, cc := range codecCases {
		good := compressBatch(t, raw, cc)
		// Truncated compressed data.
		cut := withCompressedRecords(raw, cc.codec, good[BatchHeaderSize:len(good)-len(good[BatchHeaderSize:])/2])
		if err := Batch(cut).Records(func(Record) bool { return true }); !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("%s truncated: %v, want ErrCorruptBatch", cc.name, err)
		}
		// Random damage: an error or records, never a panic.
		for range 40 {
			b := slices.Clone(good)
			for range 1 + rng.Intn(4) {
				b[BatchHeaderSize+rng.Intn(len(b)-BatchHeaderSize)] ^= byte(1 + rng.Intn(255))
			}
			if err := Batch(b).Records(func(Record) bool { return true }); err != nil && !errors.Is(err, ErrCorruptBatch) {
				t.Fatalf("%s damaged: %v is not ErrCorruptBatch", cc.name, err)
			}
		}
	}
	// A record count the records do not match.
	b := Batch(compressBatch(t, raw, codecCases[1]))
	binary.BigEndian.PutUint32(b[offRecordCount:], 11)
	if err := b.Records(func(Record) bool { return true }); !errors.Is(err, ErrCorruptBatch) {
		t.Errorf("count mismatch: %v", err)
	}
}

// TestFindByTimestampCompressed: ListOffsets by time over compressed
// batches answers exactly the first record, in offset order, with a
// timestamp at or after the target and an offset at or after the log
// start, as Kafka does; checked against every record for many targets.
func TestFindByTimestampCompressed(t *testing.T) {
	for _, cc := range codecCases {
		t.Run(cc.name, func(t *testing.T) {
			clk := newClock()
			cfg := smallConfig()
			cfg.SegmentBytes = 2048
			l, _ := openTestLog(t, partDir(t), cfg, LogOptions{Now: clk.now})
			defer l.Close()
			type rec struct{ off, ts int64 }
			var all []rec
			base := int64(1_700_000_000_000)
			for i := range 12 {
				rs := sampleRecords(base+int64(i)*35, 8)
				raw := recordbatch.Build(rs[0].Timestamp, rs...)
				res, err := l.Append(compressBatch(t, raw, cc), AppendOptions{LeaderEpoch: 3})
				if err != nil {
					t.Fatal(err)
				}
				for j, r := range rs {
					all = append(all, rec{res.BaseOffset + int64(j), r.Timestamp})
				}
			}
			if l.NumSegments() < 2 {
				t.Fatalf("%d segments; the test wants several", l.NumSegments())
			}
			l.SetHighWatermark(l.LogEndOffset())
			check := func(start int64) {
				t.Helper()
				for target := base - 5; target <= base+12*35+80; target += 7 {
					var want rec
					found := false
					for _, r := range all {
						if r.off >= start && r.ts >= target {
							want, found = r, true
							break
						}
					}
					got, ok, err := l.FindByTimestamp(target)
					if err != nil || ok != found || ok && (got.Offset != want.off || got.Timestamp != want.ts || got.LeaderEpoch != 3) {
						t.Fatalf("start %d target %d: got %+v %v %v, want %+v %v", start, target, got, ok, err, want, found)
					}
				}
			}
			check(0)
			// A log start inside a batch passes over its earlier records.
			if _, err := l.DeleteRecords(13); err != nil {
				t.Fatal(err)
			}
			check(13)
		})
	}
}

// FuzzBatchRecords: any records section under any codec decodes to
// records or fails with ErrCorruptBatch, never a panic; what decodes
// decodes the same again.
func FuzzBatchRecords(f *testing.F) {
	raw := recordbatch.Build(1_700_000_000_000, sampleRecords(1_700_000_000_000, 6)...)
	for _, cc := range codecCases {
		b := compressBatch(f, raw, cc)
		f.Add(uint8(cc.codec), int32(6), int32(5), b[BatchHeaderSize:])
	}
	f.Add(uint8(CompressionSnappy), int32(1), int32(0), append(slices.Clone(xerialMagic), 0, 0, 0, 1))
	f.Add(uint8(CompressionZstd), int32(0), int32(0), []byte{})
	f.Add(uint8(7), int32(1), int32(0), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, codec uint8, count, lastDelta int32, data []byte) {
		b := Batch(withCompressedRecords(raw, Compression(codec&attrCompressionMask), data))
		binary.BigEndian.PutUint32(b[offRecordCount:], uint32(count))
		binary.BigEndian.PutUint32(b[offLastDelta:], uint32(lastDelta))
		var first []Record
		err := b.Records(func(r Record) bool { first = append(first, r); return true })
		if err != nil {
			if !errors.Is(err, ErrCorruptBatch) {
				t.Fatalf("%v is not ErrCorruptBatch", err)
			}
			return
		}
		if int32(len(first)) != count {
			t.Fatalf("%d records, count %d", len(first), count)
		}
		i := 0
		err = b.Records(func(r Record) bool {
			if r.Offset != first[i].Offset || r.Timestamp != first[i].Timestamp || !bytes.Equal(r.Value, first[i].Value) {
				t.Fatalf("record %d decoded differently the second time", i)
			}
			i++
			return true
		})
		if err != nil {
			t.Fatalf("second decode failed: %v", err)
		}
	})
}
