package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Header is a record header. Value nil encodes as length -1.
type Header struct {
	Key   string
	Value []byte
}

// Record is one record. A nil Key or Value encodes as length -1 (null).
type Record struct {
	// Timestamp is absolute milliseconds; encoded as a delta from the
	// batch's base timestamp.
	Timestamp int64
	// OffsetDelta is the record's offset relative to the batch base. Build
	// numbers records 0..n-1; Batch.Encode uses the value as given.
	OffsetDelta int32
	Key         []byte
	Value       []byte
	Headers     []Header
}

// Batch is a decoded v2 record batch with uncompressed records.
type Batch struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	// Attributes other than compression (which is always none here): set
	// the flags below instead of raw bits.
	LogAppendTime bool
	Transactional bool
	Control       bool
	// LastOffsetDelta defaults to the last record's OffsetDelta when zero
	// and there are records.
	LastOffsetDelta int32
	BaseTimestamp   int64
	// MaxTimestamp defaults to the largest record timestamp when zero.
	MaxTimestamp  int64
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Records       []Record
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Build returns an encoded uncompressed batch at base offset 0 holding
// records (their OffsetDelta set to 0..n-1, a zero Timestamp replaced by
// baseTimestamp), with no producer id, as a non-idempotent client sends it.
func Build(baseTimestamp int64, records ...Record) []byte {
	rs := make([]Record, len(records))
	for i, r := range records {
		r.OffsetDelta = int32(i)
		if r.Timestamp == 0 {
			r.Timestamp = baseTimestamp
		}
		rs[i] = r
	}
	return Batch{BaseTimestamp: baseTimestamp, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Records: rs}.Encode()
}

// BuildValues is Build with one keyless record per value, all at ts.
func BuildValues(ts int64, values ...[]byte) []byte {
	rs := make([]Record, len(values))
	for i, v := range values {
		rs[i] = Record{Timestamp: ts, Value: v}
	}
	return Build(ts, rs...)
}

// Encode serialises the batch with a correct batchLength and CRC-32C.
func (b Batch) Encode() []byte {
	maxTs := b.MaxTimestamp
	lastDelta := b.LastOffsetDelta
	if len(b.Records) > 0 {
		if maxTs == 0 {
			maxTs = b.Records[0].Timestamp
			for _, r := range b.Records {
				maxTs = max(maxTs, r.Timestamp)
			}
		}
		if lastDelta == 0 {
			lastDelta = b.Records[len(b.Records)-1].OffsetDelta
		}
	}
	buf := make([]byte, 61, 61+len(b.Records)*32)
	binary.BigEndian.PutUint64(buf[0:], uint64(b.BaseOffset))
	binary.BigEndian.PutUint32(buf[12:], uint32(b.PartitionLeaderEpoch))
	buf[16] = 2
	var attrs uint16
	if b.LogAppendTime {
		attrs |= 0x08
	}
	if b.Transactional {
		attrs |= 0x10
	}
	if b.Control {
		attrs |= 0x20
	}
	binary.BigEndian.PutUint16(buf[21:], attrs)
	binary.BigEndian.PutUint32(buf[23:], uint32(lastDelta))
	binary.BigEndian.PutUint64(buf[27:], uint64(b.BaseTimestamp))
	binary.BigEndian.PutUint64(buf[35:], uint64(maxTs))
	binary.BigEndian.PutUint64(buf[43:], uint64(b.ProducerID))
	binary.BigEndian.PutUint16(buf[51:], uint16(b.ProducerEpoch))
	binary.BigEndian.PutUint32(buf[53:], uint32(b.BaseSequence))
	binary.BigEndian.PutUint32(buf[57:], uint32(len(b.Records)))
	var body []byte
	for _, r := range b.Records {
		body = body[:0]
		body = append(body, 0) // record attributes, unused
		body = binary.AppendVarint(body, r.Timestamp-b.BaseTimestamp)
		body = binary.AppendVarint(body, int64(r.OffsetDelta))
		body = appendBytes(body, r.Key)
		body = appendBytes(body, r.Value)
		body = binary.AppendVarint(body, int64(len(r.Headers)))
		for _, h := range r.Headers {
			body = binary.AppendVarint(body, int64(len(h.Key)))
			body = append(body, h.Key...)
			body = appendBytes(body, h.Value)
		}
		buf = binary.AppendVarint(buf, int64(len(body)))
		buf = append(buf, body...)
	}
	binary.BigEndian.PutUint32(buf[8:], uint32(len(buf)-12))
	binary.BigEndian.PutUint32(buf[17:], crc32.Checksum(buf[21:], castagnoli))
	return buf
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// ErrMalformed is returned by Decode for bytes that are not a well-formed
// uncompressed v2 batch.
var ErrMalformed = errors.New("recordbatch: malformed batch")

// Decode parses one uncompressed v2 batch (exactly the bytes of one batch).
// Keys, values and header values alias buf. It checks framing and the CRC
// but none of the broker's rules (storage.Batch.Validate does that).
func Decode(buf []byte) (Batch, error) {
	var b Batch
	if len(buf) < 61 {
		return b, fmt.Errorf("%w: %d bytes, need a 61-byte header", ErrMalformed, len(buf))
	}
	if int64(int32(binary.BigEndian.Uint32(buf[8:])))+12 != int64(len(buf)) {
		return b, fmt.Errorf("%w: batchLength does not match %d bytes", ErrMalformed, len(buf))
	}
	if buf[16] != 2 {
		return b, fmt.Errorf("%w: magic %d", ErrMalformed, int8(buf[16]))
	}
	if crc32.Checksum(buf[21:], castagnoli) != binary.BigEndian.Uint32(buf[17:]) {
		return b, fmt.Errorf("%w: crc mismatch", ErrMalformed)
	}
	attrs := binary.BigEndian.Uint16(buf[21:])
	if attrs&0x07 != 0 {
		return b, fmt.Errorf("%w: compressed (codec %d) batches are not decoded", ErrMalformed, attrs&0x07)
	}
	b.BaseOffset = int64(binary.BigEndian.Uint64(buf[0:]))
	b.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(buf[12:]))
	b.LogAppendTime = attrs&0x08 != 0
	b.Transactional = attrs&0x10 != 0
	b.Control = attrs&0x20 != 0
	b.LastOffsetDelta = int32(binary.BigEndian.Uint32(buf[23:]))
	b.BaseTimestamp = int64(binary.BigEndian.Uint64(buf[27:]))
	b.MaxTimestamp = int64(binary.BigEndian.Uint64(buf[35:]))
	b.ProducerID = int64(binary.BigEndian.Uint64(buf[43:]))
	b.ProducerEpoch = int16(binary.BigEndian.Uint16(buf[51:]))
	b.BaseSequence = int32(binary.BigEndian.Uint32(buf[53:]))
	count := int32(binary.BigEndian.Uint32(buf[57:]))
	if count < 0 || int64(count) > int64(len(buf)-61) {
		return b, fmt.Errorf("%w: record count %d", ErrMalformed, count)
	}
	r := reader{buf: buf[61:]}
	b.Records = make([]Record, 0, count)
	for i := int32(0); i < count; i++ {
		length := r.varint()
		if r.err != nil || length < 0 || length > int64(len(r.buf)-r.pos) {
			return b, fmt.Errorf("%w: record %d length", ErrMalformed, i)
		}
		rr := reader{buf: r.buf[r.pos : r.pos+int(length)]}
		r.pos += int(length)
		var rec Record
		rr.pos++ // attributes
		if rr.pos > len(rr.buf) {
			return b, fmt.Errorf("%w: record %d empty", ErrMalformed, i)
		}
		rec.Timestamp = b.BaseTimestamp + rr.varint()
		rec.OffsetDelta = int32(rr.varint())
		rec.Key = rr.bytes()
		rec.Value = rr.bytes()
		nh := rr.varint()
		if rr.err == nil && (nh < 0 || nh > int64(len(rr.buf))) {
			rr.err = errors.New("header count")
		}
		for h := int64(0); h < nh && rr.err == nil; h++ {
			k := rr.bytes()
			v := rr.bytes()
			rec.Headers = append(rec.Headers, Header{Key: string(k), Value: v})
		}
		if rr.err != nil || rr.pos != len(rr.buf) {
			return b, fmt.Errorf("%w: record %d body", ErrMalformed, i)
		}
		b.Records = append(b.Records, rec)
	}
	if r.pos != len(r.buf) {
		return b, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(r.buf)-r.pos)
	}
	return b, nil
}

type reader struct {
	buf []byte
	pos int
	err error
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	if r.pos > len(r.buf) {
		r.err = errors.New("short")
		return 0
	}
	v, n := binary.Varint(r.buf[r.pos:])
	if n <= 0 {
		r.err = errors.New("bad varint")
		return 0
	}
	r.pos += n
	return v
}

func (r *reader) bytes() []byte {
	l := r.varint()
	if r.err != nil || l < 0 {
		return nil
	}
	if l > int64(len(r.buf)-r.pos) {
		r.err = errors.New("short")
		return nil
	}
	b := r.buf[r.pos : r.pos+int(l)]
	r.pos += int(l)
	return b
}
