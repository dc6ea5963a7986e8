package storage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxDecompressedBytes bounds the records of one compressed batch once
// decompressed. A batch is at most max.message.bytes (1 MiB by default)
// as stored, and real data compresses well below 64x; a batch claiming
// more is refused with an error rather than allocated.
const MaxDecompressedBytes = 64 << 20

// maxDecompressed is MaxDecompressedBytes, lowered by tests that build
// batches just past it.
var maxDecompressed = MaxDecompressedBytes

// Record is one record of a batch, as Batch.Records yields it. Key, Value
// and header values alias the batch or its decompressed records and are
// valid only during the callback; a null key or value is nil.
type Record struct {
	Offset int64
	// Timestamp is the record's own (CreateTime), or the batch's max
	// timestamp in a LogAppendTime batch, as Kafka reports it.
	Timestamp int64
	// Sequence is the record's producer sequence (the batch's base
	// sequence plus its offset delta, wrapping past MaxInt32), -1 if none.
	Sequence int32
	Key      []byte
	Value    []byte
	Headers  []RecordHeader
}

// RecordHeader is one header of a record.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Records calls fn with every record of b in order until fn returns false,
// decompressing them first if the batch is compressed (gzip, snappy in the
// raw block form librdkafka and franz-go send or the xerial framing of the
// Java client, lz4 frames, zstd). Malformed records or compressed data,
// and records decompressing to more than MaxDecompressedBytes, are
// ErrCorruptBatch, never a panic.
//
// It is for tools and rare lookups (ListOffsets by time, dump-log): the
// append and fetch paths never decode records, let alone decompress them.
func (b Batch) Records(fn func(Record) bool) error {
	if len(b) < BatchHeaderSize {
		return fmt.Errorf("%w: %d bytes, a batch header needs %d", ErrCorruptBatch, len(b), BatchHeaderSize)
	}
	data, err := decompressRecords(b.Compression(), b[BatchHeaderSize:])
	if err != nil {
		return err
	}
	return b.walkRecordData(data, fn)
}

// walkRecordData parses data as the batch's RecordCount records.
func (b Batch) walkRecordData(data []byte, fn func(Record) bool) error {
	count := b.RecordCount()
	if count < 0 {
		return fmt.Errorf("%w: record count %d", ErrCorruptBatch, count)
	}
	base, baseTs, baseSeq := b.BaseOffset(), b.BaseTimestamp(), b.BaseSequence()
	logAppend := b.LogAppendTime()
	var headers []RecordHeader
	pos := 0
	for i := int32(0); i < count; i++ {
		length, n := readVarint(data[pos:])
		if n <= 0 || length <= 0 || length > int64(len(data)-pos-n) {
			return fmt.Errorf("%w: record %d of %d: bad length at byte %d of the records", ErrCorruptBatch, i, count, pos)
		}
		pos += n
		r := recordReader{buf: data[pos : pos+int(length)], pos: 1} // after attributes
		pos += int(length)
		tsDelta := r.varint()
		offDelta := r.varint()
		rec := Record{Key: r.bytes(), Value: r.bytes(), Sequence: -1}
		hc := r.varint()
		if r.err == nil && (hc < 0 || hc > int64(len(r.buf))) {
			r.err = errors.New("bad header count")
		}
		headers = headers[:0]
		for h := int64(0); h < hc && r.err == nil; h++ {
			k := r.bytes()
			if r.err == nil && k == nil {
				r.err = errors.New("null header key")
			}
			headers = append(headers, RecordHeader{Key: string(k), Value: r.bytes()})
		}
		if r.err == nil && r.pos != len(r.buf) {
			r.err = fmt.Errorf("%d trailing bytes", len(r.buf)-r.pos)
		}
		if r.err == nil && (offDelta < 0 || offDelta > int64(b.LastOffsetDelta())) {
			r.err = fmt.Errorf("offset delta %d outside the batch's 0..%d", offDelta, b.LastOffsetDelta())
		}
		if r.err != nil {
			return fmt.Errorf("%w: record %d of %d: %v", ErrCorruptBatch, i, count, r.err)
		}
		rec.Offset = base + offDelta
		rec.Timestamp = baseTs + tsDelta
		if logAppend {
			rec.Timestamp = b.MaxTimestamp()
		}
		if baseSeq >= 0 {
			rec.Sequence = lastSequence(baseSeq, int32(offDelta))
		}
		if len(headers) > 0 {
			rec.Headers = headers
		}
		if !fn(rec) {
			return nil
		}
	}
	if pos != len(data) {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorruptBatch, len(data)-pos, count)
	}
	return nil
}

// recordReader reads the fields of one record; the first error sticks.
type recordReader struct {
	buf []byte
	pos int
	err error
}

func (r *recordReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.buf) {
		r.err = errors.New("record too short")
		return 0
	}
	v, n := readVarint(r.buf[r.pos:])
	if n <= 0 {
		r.err = errors.New("bad varint")
		return 0
	}
	r.pos += n
	return v
}

// bytes reads a length-prefixed field; length -1 is null (nil).
func (r *recordReader) bytes() []byte {
	l := r.varint()
	switch {
	case r.err != nil:
		return nil
	case l == -1:
		return nil
	case l < -1 || l > int64(len(r.buf)-r.pos):
		r.err = fmt.Errorf("bad field length %d", l)
		return nil
	}
	v := r.buf[r.pos : r.pos+int(l) : r.pos+int(l)]
	r.pos += int(l)
	return v
}

// decompressRecords returns the records section src decompressed with c
// (src itself for CompressionNone). Every failure wraps ErrCorruptBatch.
func decompressRecords(c Compression, src []byte) (out []byte, err error) {
	// The codecs are well fuzzed, but the bytes come from disk or a peer:
	// a codec bug met on bad input must fail this lookup, not the broker.
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("%w: %s records: decoder failed: %v", ErrCorruptBatch, c, p)
		}
	}()
	switch c {
	case CompressionNone:
		return src, nil
	case CompressionGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip records: %v", ErrCorruptBatch, err)
		}
		return readBounded(c, zr, len(src))
	case CompressionSnappy:
		out, err = decodeSnappy(src)
	case CompressionLZ4:
		return readBounded(c, lz4.NewReader(bytes.NewReader(src)), len(src))
	case CompressionZstd:
		dec, derr := zstdDecoder()
		if derr != nil {
			return nil, derr
		}
		out, err = dec.DecodeAll(src, nil)
		if err == nil && len(out) > maxDecompressed {
			err = fmt.Errorf("decompresses to %d bytes, more than %d", len(out), maxDecompressed)
		}
	default:
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrCorruptBatch, c)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s records: %v", ErrCorruptBatch, c, err)
	}
	return out, nil
}

// readBounded reads r to its end, refusing more than maxDecompressed.
func readBounded(c Compression, r io.Reader, srcLen int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(min(4*srcLen, maxDecompressed))
	n, err := buf.ReadFrom(io.LimitReader(r, int64(maxDecompressed)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s records: %v", ErrCorruptBatch, c, err)
	}
	if n > int64(maxDecompressed) {
		return nil, fmt.Errorf("%w: %s records decompress to more than %d bytes", ErrCorruptBatch, c, maxDecompressed)
	}
	return buf.Bytes(), nil
}

// xerialMagic opens snappy data in the Java client's framing (from the
// snappy-java library): the magic, two 4-byte versions, then chunks of a
// 4-byte big-endian length and a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// decodeSnappy decodes a raw snappy block or xerial-framed chunks, checking
// the decoded lengths the blocks declare against the bound before
// allocating.
func decodeSnappy(src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		n, err := s2.DecodedLen(src)
		if err != nil {
			return nil, err
		}
		if n > maxDecompressed {
			return nil, fmt.Errorf("block decompresses to %d bytes, more than %d", n, maxDecompressed)
		}
		return s2.Decode(make([]byte, n), src)
	}
	if len(src) < xerialHeaderSize {
		return nil, errors.New("truncated xerial header")
	}
	chunks := src[xerialHeaderSize:]
	total := 0
	for rest := chunks; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, errors.New("truncated xerial chunk length")
		}
		size := binary.BigEndian.Uint32(rest)
		if uint64(size) > uint64(len(rest)-4) {
			return nil, fmt.Errorf("xerial chunk of %d bytes but %d left", size, len(rest)-4)
		}
		n, err := s2.DecodedLen(rest[4 : 4+size])
		if err != nil {
			return nil, err
		}
		if total += n; total > maxDecompressed {
			return nil, fmt.Errorf("xerial chunks decompress to more than %d bytes", maxDecompressed)
		}
		rest = rest[4+size:]
	}
	out := make([]byte, 0, total)
	for rest := chunks; len(rest) > 0; {
		size := binary.BigEndian.Uint32(rest)
		block := rest[4 : 4+size]
		n, _ := s2.DecodedLen(block)
		if _, err := s2.Decode(out[len(out):len(out)+n], block); err != nil {
			return nil, err
		}
		out = out[:len(out)+n]
		rest = rest[4+size:]
	}
	return out, nil
}

// zstdDecoder is shared: DecodeAll is safe for concurrent use and starts
// no goroutines; the memory and window bounds refuse frames that would
// decompress past maxDecompressed before allocating for them.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(2),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(MaxDecompressedBytes),
		zstd.WithDecoderMaxWindow(MaxDecompressedBytes))
	if err != nil {
		return nil, fmt.Errorf("storage: zstd decoder: %w", err)
	}
	return d, nil
})

// walkKeys parses data as the batch's records as far as the cleaner's
// key map needs: each record's offset delta and key (nil if null). It
// checks the record framing and those fields, not the rest.
func (b Batch) walkKeys(data []byte, fn func(key []byte, offDelta int64) bool) error {
	count := b.RecordCount()
	if count < 0 {
		return fmt.Errorf("%w: record count %d", ErrCorruptBatch, count)
	}
	lastDelta := int64(b.LastOffsetDelta())
	pos := 0
	for i := int32(0); i < count; i++ {
		length, n := readVarint(data[pos:])
		if n <= 0 || length <= 0 || length > int64(len(data)-pos-n) {
			return fmt.Errorf("%w: record %d of %d: bad length at byte %d of the records", ErrCorruptBatch, i, count, pos)
		}
		pos += n
		r := recordReader{buf: data[pos : pos+int(length)], pos: 1} // after attributes
		pos += int(length)
		r.varint() // timestamp delta
		offDelta := r.varint()
		key := r.bytes()
		if r.err == nil && (offDelta < 0 || offDelta > lastDelta) {
			r.err = fmt.Errorf("offset delta %d outside the batch's 0..%d", offDelta, lastDelta)
		}
		if r.err != nil {
			return fmt.Errorf("%w: record %d of %d: %v", ErrCorruptBatch, i, count, r.err)
		}
		if !fn(key, offDelta) {
			return nil
		}
	}
	if pos != len(data) {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorruptBatch, len(data)-pos, count)
	}
	return nil
}
