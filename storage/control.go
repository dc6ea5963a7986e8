package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// ControlType is the type in a control record's key (Kafka's
// ControlRecordType). Only the transaction markers mean anything to the
// log; other types (KRaft's, which a Kafka topic never holds) are stored
// and replicated but change no state.
type ControlType int16

// Kafka's control record types that end a transaction.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("UNKNOWN(%d)", int16(t))
}

// TxnMarker is a transaction marker (Kafka's EndTransactionMarker): the
// control batch a transaction coordinator has each partition leader write
// to end a producer's transaction there. The batch carries the producer's
// id and epoch; its one record's key is the control type and its value the
// coordinator epoch:
//
//	key:   version int16 (0), type int16 (ABORT 0, COMMIT 1)
//	value: version int16 (0), coordinatorEpoch int32
//
// Versions above 0 are read as Kafka reads them (the fields it knows first,
// anything after ignored); only version 0 is written.
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Type             ControlType
}

// Commit reports whether the marker commits (else it aborts).
func (m TxnMarker) Commit() bool { return m.Type == ControlCommit }

const (
	controlKeySize   = 4
	endTxnValueSize  = 6
	markerRecordSize = 1 + 1 + 1 + 1 + controlKeySize + 1 + endTxnValueSize + 1
	// MarkerBatchSize is the size of a batch BuildMarkerBatch writes.
	MarkerBatchSize = BatchHeaderSize + 1 + markerRecordSize
)

// BuildMarkerBatch encodes m as Kafka writes a marker: an uncompressed,
// transactional control batch at base offset 0 with one record, no
// sequence (-1), timestamp ts for the batch and the record.
func BuildMarkerBatch(m TxnMarker, ts int64) Batch {
	b := make(Batch, MarkerBatchSize)
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(MarkerBatchSize-batchOverhead))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], attrTransactional|attrControl)
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(m.ProducerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(m.ProducerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offRecordCount:], 1)
	r := b[BatchHeaderSize:]
	// Varints of small non-negative n are one byte, 2n (zig-zag).
	r[0] = markerRecordSize * 2
	r[1], r[2], r[3] = 0, 0, 0 // attributes, timestampDelta, offsetDelta
	r[4] = controlKeySize * 2
	binary.BigEndian.PutUint16(r[5:], 0)
	binary.BigEndian.PutUint16(r[7:], uint16(m.Type))
	r[9] = endTxnValueSize * 2
	binary.BigEndian.PutUint16(r[10:], 0)
	binary.BigEndian.PutUint32(r[12:], uint32(m.CoordinatorEpoch))
	r[16] = 0 // no headers
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[crcStart:], castagnoli))
	return b
}

// ParseControlRecord reads a control record's key (its type) and, for a
// transaction marker, its value (the coordinator epoch; -1 for other
// types). A key or value too short or of a negative version is
// ErrCorruptBatch.
func ParseControlRecord(key, value []byte) (ControlType, int32, error) {
	if len(key) < controlKeySize {
		return 0, -1, fmt.Errorf("%w: control record key of %d bytes", ErrCorruptBatch, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v < 0 {
		return 0, -1, fmt.Errorf("%w: control record key version %d", ErrCorruptBatch, v)
	}
	t := ControlType(binary.BigEndian.Uint16(key[2:]))
	if t != ControlAbort && t != ControlCommit {
		return t, -1, nil
	}
	if len(value) < endTxnValueSize {
		return t, -1, fmt.Errorf("%w: transaction marker value of %d bytes", ErrCorruptBatch, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 {
		return t, -1, fmt.Errorf("%w: transaction marker value version %d", ErrCorruptBatch, v)
	}
	return t, int32(binary.BigEndian.Uint32(value[2:])), nil
}

// TxnMarker reads the transaction marker of a control batch whose records
// are all present (not a header alone). ok is false for a batch that is
// not a control batch, or whose control type is not COMMIT or ABORT. The
// marker's record is the batch's first; an uncompressed batch (all that
// Kafka writes) is read without allocating.
func (b Batch) TxnMarker() (m TxnMarker, ok bool, err error) {
	if !b.Control() || b.RecordCount() < 1 {
		return m, false, nil
	}
	var key, value []byte
	if b.Compression() == CompressionNone {
		key, value, err = firstRecordKeyValue(b[BatchHeaderSize:])
	} else {
		found := false
		err = b.Records(func(r Record) bool {
			key, value, found = r.Key, r.Value, true
			return false
		})
		if err == nil && !found {
			err = fmt.Errorf("%w: control batch without records", ErrCorruptBatch)
		}
	}
	if err != nil {
		return m, false, err
	}
	t, epoch, err := ParseControlRecord(key, value)
	if err != nil || (t != ControlAbort && t != ControlCommit) {
		return m, false, err
	}
	return TxnMarker{ProducerID: b.ProducerID(), ProducerEpoch: b.ProducerEpoch(), CoordinatorEpoch: epoch, Type: t}, true, nil
}

// firstRecordKeyValue returns the key and value of the first record of an
// uncompressed records section.
func firstRecordKeyValue(data []byte) (key, value []byte, err error) {
	bad := func(what string) ([]byte, []byte, error) {
		return nil, nil, fmt.Errorf("%w: control record: %s", ErrCorruptBatch, what)
	}
	length, n := readVarint(data)
	if n <= 0 || length <= 0 || length > int64(len(data)-n) {
		return bad("bad length")
	}
	rec := data[n : n+int(length)]
	// attributes (one byte), then timestampDelta and offsetDelta.
	p := 1
	for range 2 {
		if p > len(rec) {
			return bad("truncated")
		}
		_, n := readVarint(rec[p:])
		if n <= 0 {
			return bad("bad delta")
		}
		p += n
	}
	var kv [2][]byte
	for i := range kv {
		if p > len(rec) {
			return bad("truncated")
		}
		l, n := readVarint(rec[p:])
		if n <= 0 || l < -1 || l > int64(len(rec)-p-n) {
			return bad("bad key or value length")
		}
		p += n
		if l > 0 {
			kv[i] = rec[p : p+int(l)]
			p += int(l)
		}
	}
	return kv[0], kv[1], nil
}
