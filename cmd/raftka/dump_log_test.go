package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// writeSegment writes a small log through the storage package and returns
// its partition directory.
func writeSegment(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "events-0")
	cfg := storage.DefaultConfig()
	cfg.IndexIntervalBytes = 64
	l, _, err := storage.OpenLog(dir, cfg, storage.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		b := recordbatch.Build(1700000000000+int64(i),
			recordbatch.Record{Key: []byte("key"), Value: []byte("hello"), Headers: []recordbatch.Header{{Key: "h1", Value: []byte("v")}}},
			recordbatch.Record{Value: []byte("world")})
		if _, err := l.Append(b, storage.AppendOptions{LeaderEpoch: 7}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runDump(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	app.ExitErrHandler = func(*cli.Context, error) {} // keep the test process alive
	err := app.Run(append([]string{"raftka", "dump-log"}, args...))
	return out.String(), errOut.String(), err
}

func TestDumpLogSegment(t *testing.T) {
	dir := writeSegment(t)
	seg := filepath.Join(dir, "00000000000000000000.log")
	out, _, err := runDump(t, "--print-data", seg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"baseOffset: 0 lastOffset: 1 count: 2",
		"baseOffset: 8 lastOffset: 9 count: 2",
		"partitionLeaderEpoch: 7",
		"producerId: -1 producerEpoch: -1",
		"isTransactional: false isControl: false position: 0",
		"CreateTime: 1700000000004 MaxTimestamp: 1700000000004 timestampType: CreateTime",
		"compresscodec: none",
		"isvalid: true",
		"| offset: 0 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: -1 headerKeys: [h1] key: key payload: hello",
		"| offset: 1 CreateTime: 1700000000000 keySize: -1 valueSize: 5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "baseOffset:"); n != 5 {
		t.Errorf("%d batches printed, want 5", n)
	}
}

func TestDumpLogIndexes(t *testing.T) {
	dir := writeSegment(t)
	out, _, err := runDump(t, filepath.Join(dir, "00000000000000000000.index"), filepath.Join(dir, "00000000000000000000.timeindex"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "offset: 3 position: ") {
		t.Errorf("index entries missing:\n%s", out)
	}
	if !strings.Contains(out, "timestamp: 1700000000004 offset: 8") {
		t.Errorf("time index entries missing:\n%s", out)
	}
}

func TestDumpLogCorrupt(t *testing.T) {
	dir := writeSegment(t)
	seg := filepath.Join(dir, "00000000000000000000.log")
	data, _ := os.ReadFile(seg)
	data[93+storage.BatchHeaderSize+5] ^= 0xff // inside the second batch's records: CRC fails
	bad := filepath.Join(t.TempDir(), "00000000000000000000.log")
	os.WriteFile(bad, append(data, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f), 0o644)
	out, errOut, err := runDump(t, bad)
	if err == nil {
		t.Fatal("want a non-zero exit for a torn tail")
	}
	if !strings.Contains(out, "isvalid: false") {
		t.Errorf("the bad CRC is not reported:\n%s", out)
	}
	if !strings.Contains(errOut, bad) || !strings.Contains(errOut, "position "+itoa(len(data))) {
		t.Errorf("error does not name the file and position: %q", errOut)
	}
	for _, garbage := range [][]byte{{1, 2, 3}, bytes.Repeat([]byte{0xff}, 100), {}} {
		p := filepath.Join(t.TempDir(), "x.timeindex")
		os.WriteFile(p, garbage, 0o644)
		runDump(t, p) // must not panic
		p2 := filepath.Join(t.TempDir(), "00000000000000000000.log")
		os.WriteFile(p2, garbage, 0o644)
		runDump(t, p2)
	}
	if _, _, err := runDump(t, filepath.Join(t.TempDir(), "missing.log")); err == nil {
		t.Error("missing file: want an error")
	}
	if _, _, err := runDump(t, filepath.Join(dir, "leader-epoch-checkpoint")); err == nil {
		t.Error("unknown file type: want an error")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// compressed returns the uncompressed batch raw with its records
// compressed by franz-go's compressor, as a franz-go producer sends it.
func compressed(t *testing.T, raw []byte, codec kgo.CompressionCodec) []byte {
	t.Helper()
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		t.Fatal(err)
	}
	data, typ := comp.Compress(new(bytes.Buffer), raw[storage.BatchHeaderSize:])
	b := append(bytes.Clone(raw[:storage.BatchHeaderSize]), data...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])&^7|uint16(typ))
	binary.BigEndian.PutUint32(b[17:], storage.Batch(b).ComputeCRC())
	return b
}

// TestDumpLogIdempotentCompressed: an idempotent producer's batches,
// compressed, whose sequences wrap past MaxInt32: lastSequence wraps as
// the producer's do, --print-data decompresses the records, and the
// producer snapshot Close writes prints the producer.
func TestDumpLogIdempotentCompressed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "events-0")
	l, _, err := storage.OpenLog(dir, storage.DefaultConfig(), storage.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	codecs := []kgo.CompressionCodec{kgo.SnappyCompression(), kgo.GzipCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	seq := int32(math.MaxInt32 - 4)
	for i, codec := range codecs {
		raw := recordbatch.Batch{
			BaseTimestamp: 1700000000000 + int64(i), ProducerID: 42, ProducerEpoch: 3, BaseSequence: seq,
			Records: []recordbatch.Record{
				{Timestamp: 1700000000000 + int64(i), Key: []byte("k"), Value: []byte("first"), Headers: []recordbatch.Header{{Key: "h1"}}},
				{Timestamp: 1700000000000 + int64(i), OffsetDelta: 1, Value: []byte("second")},
			},
		}.Encode()
		if _, err := l.Append(compressed(t, raw, codec), storage.AppendOptions{LeaderEpoch: 1}); err != nil {
			t.Fatal(err)
		}
		seq = int32((int64(seq) + 2) % (math.MaxInt32 + 1))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	out, _, err := runDump(t, "--print-data", filepath.Join(dir, "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 2147483643 lastSequence: 2147483644 producerId: 42 producerEpoch: 3",
		"baseOffset: 2 lastOffset: 3 count: 2 baseSequence: 2147483645 lastSequence: 2147483646",
		"baseOffset: 4 lastOffset: 5 count: 2 baseSequence: 2147483647 lastSequence: 0 ",
		"baseOffset: 6 lastOffset: 7 count: 2 baseSequence: 1 lastSequence: 2 ",
		"compresscodec: snappy", "compresscodec: gzip", "compresscodec: lz4", "compresscodec: zstd",
		"| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 5 sequence: 2147483643 headerKeys: [h1] key: k payload: first",
		"| offset: 4 CreateTime: 1700000000002 keySize: 1 valueSize: 5 sequence: 2147483647 headerKeys: [h1] key: k payload: first",
		"| offset: 5 CreateTime: 1700000000002 keySize: -1 valueSize: 6 sequence: 0 headerKeys: [] key:  payload: second",
		"| offset: 7 CreateTime: 1700000000003 keySize: -1 valueSize: 6 sequence: 2 headerKeys: [] key:  payload: second",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not decoded") {
		t.Errorf("records left undecoded:\n%s", out)
	}

	out, _, err = runDump(t, filepath.Join(dir, "00000000000000000008.snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"endOffset: 8 producers: 1",
		"producerId: 42 producerEpoch: 3 coordinatorEpoch: -1 currentTxnFirstOffset: -1 lastTimestamp: 1700000000003 lastSequence: 2 batches: 4",
		"| firstSequence: 2147483647 lastSequence: 0 firstOffset: 4 lastOffset: 5 offsetDelta: 1 timestamp: 1700000000002",
		"| firstSequence: 1 lastSequence: 2 firstOffset: 6 lastOffset: 7 offsetDelta: 1 timestamp: 1700000000003",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("snapshot output lacks %q:\n%s", want, out)
		}
	}
}

func TestDumpLogCorruptSnapshot(t *testing.T) {
	p := filepath.Join(t.TempDir(), "00000000000000000008.snapshot")
	os.WriteFile(p, []byte{0, 1, 2, 3, 4, 5, 6, 7}, 0o644)
	_, errOut, err := runDump(t, p)
	if err == nil || !strings.Contains(errOut, p) || !strings.Contains(errOut, "corrupt") {
		t.Fatalf("corrupt snapshot: err %v, stderr %q; want a failure naming the file", err, errOut)
	}
}

// TestDumpLogUndecodableRecords: a batch whose compressed records are
// damaged (the CRC fixed to match, so only decoding finds it) prints a line
// saying so and the dump goes on.
func TestDumpLogUndecodableRecords(t *testing.T) {
	raw := recordbatch.Build(1700000000000, recordbatch.Record{Value: []byte("v")})
	b := compressed(t, raw, kgo.GzipCompression())
	b[len(b)-12] ^= 0xff // inside the deflate data or its checksum
	binary.BigEndian.PutUint32(b[17:], storage.Batch(b).ComputeCRC())
	p := filepath.Join(t.TempDir(), "00000000000000000000.log")
	os.WriteFile(p, append(b, raw...), 0o644)
	out, _, err := runDump(t, "--print-data", p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "| records not decoded: storage: corrupt record batch") || !strings.Contains(out, "| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 1") {
		t.Errorf("output:\n%s", out)
	}
}

// TestDumpLogTransactions: control batches show their marker, and a
// .txnindex its entries, as kafka-dump-log.sh prints them; a torn
// .txnindex prints what is whole and fails naming the position.
func TestDumpLogTransactions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tx-0")
	l, _, err := storage.OpenLog(dir, storage.DefaultConfig(), storage.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Markers carry the broker's time: the batch's must be close to it,
	// or segment.ms would roll between them.
	now := time.Now().UnixMilli()
	txn := recordbatch.Batch{Transactional: true, BaseTimestamp: now, ProducerID: 42, ProducerEpoch: 1, BaseSequence: 0,
		Records: []recordbatch.Record{{Timestamp: now, Value: []byte("x")}}}.Encode()
	if _, err := l.Append(txn, storage.AppendOptions{LeaderEpoch: 2}); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []storage.ControlType{storage.ControlAbort, storage.ControlCommit} {
		if _, err := l.AppendMarker(storage.TxnMarker{ProducerID: 42, ProducerEpoch: 1, CoordinatorEpoch: 9, Type: typ}, storage.AppendOptions{LeaderEpoch: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	out, _, err := runDump(t, filepath.Join(dir, "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"baseOffset: 1 lastOffset: 1 count: 1 baseSequence: -1 lastSequence: -1 producerId: 42 producerEpoch: 1 partitionLeaderEpoch: 2 isTransactional: true isControl: true",
		"| offset: 1 CreateTime: ",
		"keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 9",
		"| offset: 2 ",
		"endTxnMarker: COMMIT coordinatorEpoch: 9",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "| offset: 0") {
		t.Errorf("a data batch's records printed without --print-data:\n%s", out)
	}
	idx := filepath.Join(dir, "00000000000000000000.txnindex")
	out, _, err = runDump(t, idx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "version: 0 producerId: 42 firstOffset: 0 lastOffset: 1 lastStableOffset: 2\n"; !strings.HasSuffix(out, want) {
		t.Errorf("txnindex output %q, want it to end with %q", out, want)
	}
	data, _ := os.ReadFile(idx)
	torn := filepath.Join(t.TempDir(), "00000000000000000000.txnindex")
	if err := os.WriteFile(torn, append(data, 0, 0, 7), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runDump(t, torn)
	if err == nil || !strings.Contains(errOut, "corrupt at position 34") || !strings.Contains(out, "producerId: 42") {
		t.Errorf("torn txnindex: err %v, stderr %q, stdout %q", err, errOut, out)
	}
	bad := append(bytes.Clone(data), data...) // second entry's marker does not follow the first's
	if err := os.WriteFile(torn, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = runDump(t, torn)
	if err == nil || !strings.Contains(errOut, "position 34") || strings.Count(out, "producerId: 42") != 1 {
		t.Errorf("corrupt txnindex: err %v, stderr %q, stdout %q", err, errOut, out)
	}
}
