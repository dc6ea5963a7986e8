package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// A Batch is a zero-copy view over one Kafka v2 record batch (magic 2), the
// unit the log stores, replicates and serves. The layout, all integers
// big-endian:
//
//	offset size field
//	     0    8 baseOffset
//	     8    4 batchLength           bytes after this field
//	    12    4 partitionLeaderEpoch
//	    16    1 magic                 always 2
//	    17    4 crc                   CRC-32C (Castagnoli) of bytes 21..end
//	    21    2 attributes            bits 0-2 compression, 3 timestamp type,
//	                                  4 transactional, 5 control, 6 delete horizon
//	    23    4 lastOffsetDelta
//	    27    8 baseTimestamp
//	    35    8 maxTimestamp
//	    43    8 producerId
//	    51    2 producerEpoch
//	    53    4 baseSequence
//	    57    4 recordCount
//	    61    . records
//
// baseOffset and partitionLeaderEpoch lie outside the CRC so the broker can
// write them in place without recomputing it. A Batch does not copy: its
// setters write into the underlying slice.
type Batch []byte

// Header field positions and sizes of a v2 batch.
const (
	BatchHeaderSize = 61 // bytes before the first record
	// batchOverhead is the part of the header the batchLength field does not
	// count (baseOffset and batchLength themselves).
	batchOverhead = 12
	crcStart      = 21 // first byte the CRC covers

	offBaseOffset    = 0
	offBatchLength   = 8
	offLeaderEpoch   = 12
	offMagic         = 16
	offCRC           = 17
	offAttributes    = 21
	offLastDelta     = 23
	offBaseTimestamp = 27
	offMaxTimestamp  = 35
	offProducerID    = 43
	offProducerEpoch = 51
	offBaseSequence  = 53
	offRecordCount   = 57
)

// Attribute bits.
const (
	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
	attrDeleteHorizon   = 0x40
)

// NoTimestamp is Kafka's "no timestamp" value (-1).
const NoTimestamp = -1

// Compression is the codec in attributes bits 0-2.
type Compression int8

// Kafka's compression codecs.
const (
	CompressionNone   Compression = 0
	CompressionGzip   Compression = 1
	CompressionSnappy Compression = 2
	CompressionLZ4    Compression = 3
	CompressionZstd   Compression = 4
)

func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	case CompressionProducer:
		return "producer"
	}
	return fmt.Sprintf("unknown(%d)", int8(c))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchSize returns the total size of the batch whose first 12 or more bytes
// are hdr, read from its batchLength field. It checks only that the length is
// plausible (at least a header); it does not read the rest.
func BatchSize(hdr []byte) (int, error) {
	if len(hdr) < batchOverhead {
		return 0, fmt.Errorf("%w: %d bytes, need %d for the length field", ErrCorruptBatch, len(hdr), batchOverhead)
	}
	n := int32(binary.BigEndian.Uint32(hdr[offBatchLength:]))
	if n < BatchHeaderSize-batchOverhead {
		return 0, fmt.Errorf("%w: batchLength %d below the header size", ErrCorruptBatch, n)
	}
	return int(n) + batchOverhead, nil
}

func (b Batch) BaseOffset() int64  { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }
func (b Batch) BatchLength() int32 { return int32(binary.BigEndian.Uint32(b[offBatchLength:])) }
func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
}
func (b Batch) Magic() int8            { return int8(b[offMagic]) }
func (b Batch) CRC() uint32            { return binary.BigEndian.Uint32(b[offCRC:]) }
func (b Batch) Attributes() int16      { return int16(binary.BigEndian.Uint16(b[offAttributes:])) }
func (b Batch) LastOffsetDelta() int32 { return int32(binary.BigEndian.Uint32(b[offLastDelta:])) }
func (b Batch) BaseTimestamp() int64   { return int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])) }
func (b Batch) MaxTimestamp() int64    { return int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])) }
func (b Batch) ProducerID() int64      { return int64(binary.BigEndian.Uint64(b[offProducerID:])) }
func (b Batch) ProducerEpoch() int16   { return int16(binary.BigEndian.Uint16(b[offProducerEpoch:])) }
func (b Batch) BaseSequence() int32    { return int32(binary.BigEndian.Uint32(b[offBaseSequence:])) }
func (b Batch) RecordCount() int32     { return int32(binary.BigEndian.Uint32(b[offRecordCount:])) }

// LastOffset is baseOffset + lastOffsetDelta.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// NextOffset is the offset after the batch's last one.
func (b Batch) NextOffset() int64 { return b.LastOffset() + 1 }

// LastSequence is the sequence number of the batch's last record:
// baseSequence + lastOffsetDelta, wrapping past MaxInt32 to 0 as
// producers do, or -1 (Kafka's NO_SEQUENCE) for a batch without one.
func (b Batch) LastSequence() int32 { return lastSequence(b.BaseSequence(), b.LastOffsetDelta()) }

func lastSequence(base, delta int32) int32 {
	if base < 0 {
		return -1
	}
	if base > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - base) - 1
	}
	return base + delta
}

func (b Batch) Compression() Compression { return Compression(b.Attributes() & attrCompressionMask) }
func (b Batch) LogAppendTime() bool      { return b.Attributes()&attrLogAppendTime != 0 }
func (b Batch) Transactional() bool      { return b.Attributes()&attrTransactional != 0 }
func (b Batch) Control() bool            { return b.Attributes()&attrControl != 0 }

// ComputeCRC returns the CRC-32C of the bytes the crc field covers.
func (b Batch) ComputeCRC() uint32 { return crc32.Checksum(b[crcStart:], castagnoli) }

// CRCValid reports whether the stored CRC matches the content.
func (b Batch) CRCValid() bool { return b.CRC() == b.ComputeCRC() }

// SetBaseOffset writes the base offset in place (outside the CRC).
func (b Batch) SetBaseOffset(o int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(o)) }

// SetPartitionLeaderEpoch writes the leader epoch in place (outside the CRC).
func (b Batch) SetPartitionLeaderEpoch(e int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(e))
}

// SetLogAppendTime marks the batch as LogAppendTime with maxTimestamp ts and
// recomputes the CRC, as Kafka does for topics with
// message.timestamp.type=LogAppendTime. Record timestamps stay as sent;
// readers use maxTimestamp for every record of such a batch.
func (b Batch) SetLogAppendTime(ts int64) {
	attrs := uint16(b.Attributes()) | attrLogAppendTime
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	b.updateCRC()
}

// setCreateTime sets the CreateTime type and maxTimestamp, recomputing the
// CRC only if something changed.
func (b Batch) setCreateTime(maxTs int64) {
	attrs := uint16(b.Attributes())
	if attrs&attrLogAppendTime == 0 && b.MaxTimestamp() == maxTs {
		return
	}
	binary.BigEndian.PutUint16(b[offAttributes:], attrs&^attrLogAppendTime)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	b.updateCRC()
}

func (b Batch) updateCRC() { binary.BigEndian.PutUint32(b[offCRC:], b.ComputeCRC()) }

// BatchInfo is what validation learns about a batch beyond its header.
type BatchInfo struct {
	// MaxTimestamp is the largest record timestamp (for uncompressed
	// batches, computed from the records; otherwise the header's).
	MaxTimestamp int64
	// MaxTimestampDelta is the offset delta of the first record carrying
	// MaxTimestamp (uncompressed batches), or lastOffsetDelta when the
	// records were not walked.
	MaxTimestampDelta int32
	// MinTimestamp is the smallest record timestamp (uncompressed), or the
	// header's baseTimestamp.
	MinTimestamp int64
}

// validation is how strict Validate is.
type validation int

const (
	// fromClient: a produce request. Offset deltas must be exactly
	// 0..count-1, control batches are refused, and record count must match.
	fromClient validation = iota
	// fromLog: a replicated or stored batch. Compaction may have removed
	// records, so deltas need only increase within lastOffsetDelta.
	fromLog
	// fromCleaner: a batch the cleaner writes, whose records it has just
	// walked in full to filter them (see batchFilter.info): fromLog's
	// checks of the header and CRC, without walking the records again.
	fromCleaner
)

// Validate checks the batch as a leader checks a produce request: the whole
// slice must be exactly one batch. It is ValidateProduce with the default
// topic settings (not compacted, the default decompression limit).
func (b Batch) Validate() (BatchInfo, error) { return b.validate(fromClient, &ProduceRules{}) }

// ValidateStored checks a batch read back from a log or sent by a leader: the
// same structural checks, but compacted batches (fewer records than the
// offset range, control batches) are allowed.
func (b Batch) ValidateStored() (BatchInfo, error) { return b.validate(fromLog, nil) }

// validate checks magic, lengths, CRC-32C, attributes, offsets, timestamps
// and producer fields, then walks the records (see walkRecords).
// Uncompressed batches are always walked. Compressed ones are walked, after
// decompressing, only with rules (a leader's produce): a follower or
// recovery trusts the leader that walked them, and the CRC covers them
// since, so it does not decompress.
func (b Batch) validate(mode validation, rules *ProduceRules) (BatchInfo, error) {
	var info BatchInfo
	if len(b) < BatchHeaderSize {
		return info, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrCorruptBatch, len(b), BatchHeaderSize)
	}
	if n := b.BatchLength(); int64(n)+batchOverhead != int64(len(b)) {
		return info, fmt.Errorf("%w: batchLength %d does not match %d bytes", ErrCorruptBatch, n, len(b)-batchOverhead)
	}
	if m := b.Magic(); m != 2 {
		return info, fmt.Errorf("%w: magic %d, only v2 (magic 2) is supported", ErrCorruptBatch, m)
	}
	if got, want := b.ComputeCRC(), b.CRC(); got != want {
		return info, fmt.Errorf("%w: crc %#08x, computed %#08x", ErrCorruptBatch, want, got)
	}
	attrs := b.Attributes()
	if attrs < 0 || attrs&^(attrCompressionMask|attrLogAppendTime|attrTransactional|attrControl|attrDeleteHorizon) != 0 {
		return info, fmt.Errorf("%w: unknown attribute bits %#04x", ErrCorruptBatch, uint16(attrs))
	}
	codec := b.Compression()
	if codec > CompressionZstd {
		return info, fmt.Errorf("%w: unknown compression codec %d", ErrCorruptBatch, codec)
	}
	count, lastDelta := b.RecordCount(), b.LastOffsetDelta()
	if lastDelta < 0 || count < 0 {
		return info, fmt.Errorf("%w: lastOffsetDelta %d, recordCount %d", ErrCorruptBatch, lastDelta, count)
	}
	if b.BaseOffset() < 0 || b.BaseOffset() > math.MaxInt64-int64(lastDelta) {
		return info, fmt.Errorf("%w: base offset %d", ErrCorruptBatch, b.BaseOffset())
	}
	switch mode {
	case fromClient:
		if count == 0 || lastDelta != count-1 {
			return info, fmt.Errorf("%w: recordCount %d with lastOffsetDelta %d", ErrInvalidRecord, count, lastDelta)
		}
		if b.Control() {
			return info, fmt.Errorf("%w: control batches may not be produced by clients", ErrInvalidRecord)
		}
	case fromLog, fromCleaner:
		if int64(count) > int64(lastDelta)+1 {
			return info, fmt.Errorf("%w: recordCount %d exceeds the offset range %d", ErrCorruptBatch, count, lastDelta+1)
		}
	}
	baseTs, maxTs := b.BaseTimestamp(), b.MaxTimestamp()
	if baseTs < NoTimestamp || maxTs < NoTimestamp {
		return info, fmt.Errorf("%w: baseTimestamp %d, maxTimestamp %d", ErrInvalidTimestamp, baseTs, maxTs)
	}
	if err := b.validateProducer(); err != nil {
		return info, err
	}
	info = BatchInfo{MaxTimestamp: maxTs, MaxTimestampDelta: lastDelta, MinTimestamp: baseTs}
	if codec != CompressionNone {
		if count > 0 && len(b) == BatchHeaderSize {
			return info, fmt.Errorf("%w: compressed batch with %d records has no payload", ErrCorruptBatch, count)
		}
		if rules == nil {
			return info, nil
		}
	}
	if mode == fromCleaner {
		return info, nil
	}
	return b.walkRecords(mode, rules, info)
}

func (b Batch) validateProducer() error {
	pid, epoch, seq := b.ProducerID(), b.ProducerEpoch(), b.BaseSequence()
	if pid < -1 {
		return fmt.Errorf("%w: producerId %d", ErrInvalidRecord, pid)
	}
	if pid == -1 {
		if b.Transactional() || b.Control() {
			return fmt.Errorf("%w: transactional or control batch without a producerId", ErrInvalidRecord)
		}
		return nil
	}
	if epoch < 0 {
		return fmt.Errorf("%w: producerId %d with producerEpoch %d", ErrInvalidRecord, pid, epoch)
	}
	if seq < 0 && !b.Control() {
		return fmt.Errorf("%w: producerId %d with baseSequence %d", ErrInvalidRecord, pid, seq)
	}
	return nil
}

// readVarint decodes a zig-zag varint (Kafka's varint/varlong). n is the
// bytes read, 0 if buf is too short, -1 if it overflows 64 bits.
func readVarint(buf []byte) (int64, int) {
	var ux uint64
	var s uint
	for i, c := range buf {
		if i == binary.MaxVarintLen64 {
			return 0, -1
		}
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -1
			}
			ux |= uint64(c) << s
			return int64(ux>>1) ^ -int64(ux&1), i + 1
		}
		ux |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0
}

// firstRecordFrom walks an uncompressed batch that has already been
// validated and returns the offset and timestamp of its first record with
// a timestamp >= ts and an offset >= minOffset (Kafka's
// FileRecords.searchForTimestamp).
func (b Batch) firstRecordFrom(ts, minOffset int64) (offset, timestamp int64, ok bool) {
	data := b[BatchHeaderSize:]
	baseTs, base := b.BaseTimestamp(), b.BaseOffset()
	pos := 0
	for i := int32(0); i < b.RecordCount(); i++ {
		length, n := readVarint(data[pos:])
		if n <= 0 || length <= 0 || length > int64(len(data)-pos-n) {
			return 0, 0, false
		}
		rec := data[pos+n : pos+n+int(length)]
		pos += n + int(length)
		tsDelta, n1 := readVarint(rec[1:])
		if n1 <= 0 {
			return 0, 0, false
		}
		offDelta, n2 := readVarint(rec[1+n1:])
		if n2 <= 0 {
			return 0, 0, false
		}
		if baseTs+tsDelta >= ts && base+offDelta >= minOffset {
			return base + offDelta, baseTs + tsDelta, true
		}
	}
	return 0, 0, false
}
