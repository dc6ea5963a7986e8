package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// batchFilter decides, record by record, what a clean keeps of a batch of
// the cleaned range, and rewrites the batch when that is less than all of
// it. Its buffers are reused from batch to batch.
type batchFilter struct {
	m                 *offsetMap
	nowMs             int64
	deleteRetentionMs int64
	// lastOfProducer maps each producer the log still knows to the last
	// offset of its last data batch (-1 if it has none) and its epoch:
	// that batch is kept, empty if need be, so the producer's sequence
	// state survives a reopen; a producer with no data batch keeps its
	// markers of its current epoch, which carry that epoch (as Kafka).
	lastOfProducer map[int64]producerLast
	// txns follows the transactions through the pass: it says which data
	// batches were aborted (their records go) and which markers may go.
	// nil: no transaction is looked at (markers stay, nothing is aborted).
	txns *cleanTxns

	keep    []bool
	records []byte
	out     []byte

	// info is what walking the records of the batch filter returned
	// found (what walkRecords would), valid when infoOK: the clean then
	// need not walk them again to validate the batch it writes.
	info   BatchInfo
	infoOK bool
	walked bool // info holds the records' timestamps, not the header's

	// horizon is the earliest delete horizon of the tombstones kept by
	// the batches filtered so far (math.MaxInt64: none).
	horizon int64
	stats   CleanStats
}

// filter returns what the clean writes in b's place: b itself when every
// record stays, a rewritten batch (same base and last offset, the kept
// records, the same codec) when some go, an empty batch when none stay but
// b is its producer's last, or nil. The returned slice is valid until the
// next call.
func (f *batchFilter) filter(b Batch) (Batch, error) {
	f.stats.BatchesRead++
	f.stats.RecordsRead += int64(b.RecordCount())
	f.infoOK, f.walked = false, false
	if b.Control() {
		return f.filterControl(b)
	}
	abortedTxn := f.txns != nil && f.txns.onData(b)
	data, err := decompressRecords(b.Compression(), b[BatchHeaderSize:])
	if err != nil {
		return nil, err
	}
	hasHorizon := b.Attributes()&attrDeleteHorizon != 0
	horizon := b.BaseTimestamp()
	f.keep = f.keep[:0]
	kept, tombstones := 0, 0
	minTs, maxTs := int64(math.MaxInt64), int64(NoTimestamp)
	needHorizon := false
	// The timestamps and offset deltas walkRecords would check and
	// report, of all records and of the kept ones.
	base := b.BaseOffset()
	prevDelta, outOfOrder := int64(-1), false
	all, kept1 := newTsRange(), newTsRange()
	err = b.walkRecordData(data, func(r Record) bool {
		delta := r.Offset - base
		outOfOrder = outOfOrder || delta <= prevDelta
		prevDelta = delta
		all.add(r.Timestamp, delta)
		keep := !abortedTxn && r.Key != nil
		if keep {
			if latest, ok := f.m.get(r.Key); ok && latest > r.Offset {
				keep = false
			}
		}
		if keep && r.Value == nil {
			if hasHorizon && f.nowMs >= horizon {
				keep = false
			} else {
				tombstones++
				needHorizon = needHorizon || !hasHorizon
			}
		}
		if keep {
			kept++
			minTs, maxTs = min(minTs, r.Timestamp), max(maxTs, r.Timestamp)
			kept1.add(r.Timestamp, delta)
		}
		f.keep = append(f.keep, keep)
		return true
	})
	if err != nil {
		return nil, err
	}
	if outOfOrder {
		return nil, fmt.Errorf("%w: offset deltas do not increase", ErrCorruptBatch)
	}
	if kept == len(f.keep) && !needHorizon {
		if tombstones > 0 {
			f.horizon = min(f.horizon, horizon)
		}
		f.stats.RecordsKept += int64(kept)
		// walkRecordData gives records of a LogAppendTime batch its max
		// timestamp, not their own: those are left to validate.
		if !b.LogAppendTime() {
			f.setInfo(b, all)
		}
		return b, nil
	}
	f.stats.RecordsKept += int64(kept)
	if kept == 0 {
		if p, ok := f.lastOfProducer[b.ProducerID()]; ok && b.ProducerID() >= 0 && p.lastData == b.LastOffset() {
			f.infoOK = true // no records: the header says it all
			return f.emptyBatch(b), nil
		}
		return nil, nil
	}
	// The rewritten batch keeps its tombstones' delete horizon in
	// baseTimestamp (KIP-534): set at the first clean that sees them, so
	// they are removed delete.retention.ms after it whatever their own
	// timestamps say.
	baseTs := minTs
	if tombstones > 0 {
		if !hasHorizon {
			horizon = f.nowMs + f.deleteRetentionMs
		}
		baseTs = horizon
		f.horizon = min(f.horizon, horizon)
	}
	if b.LogAppendTime() {
		maxTs = b.MaxTimestamp()
	}
	f.records = f.records[:0]
	i := 0
	_ = b.walkRecordData(data, func(r Record) bool {
		if f.keep[i] {
			f.records = appendRecord(f.records, r, baseTs, b.BaseOffset())
		}
		i++
		return true
	})
	xerial := b.Compression() == CompressionSnappy && bytes.HasPrefix(b[BatchHeaderSize:], xerialMagic)
	if f.out, err = encodeBatch(f.out[:0], b, b.Compression(), f.records, xerial, defaultLevel(b.Compression())); err != nil {
		return nil, fmt.Errorf("recompress: %w", err)
	}
	nb := Batch(f.out)
	attrs := uint16(b.Attributes()) &^ attrDeleteHorizon
	if tombstones > 0 {
		attrs |= attrDeleteHorizon
	}
	binary.BigEndian.PutUint16(nb[offAttributes:], attrs)
	binary.BigEndian.PutUint64(nb[offBaseTimestamp:], uint64(baseTs))
	binary.BigEndian.PutUint64(nb[offMaxTimestamp:], uint64(maxTs))
	binary.BigEndian.PutUint32(nb[offRecordCount:], uint32(kept))
	nb.updateCRC()
	// The rewritten records carry their timestamps as walked.
	f.setInfo(nb, kept1)
	return nb, nil
}

// filterControl is filter for a control batch. A transaction marker the
// pass found removable (see cleanTxns) goes delete.retention.ms after the
// clean that first found it so (its delete horizon, stamped into the batch
// as for tombstones, KIP-534), so a consumer that read the transaction's
// records before they went still finds its marker; until then it stays,
// as does every other control batch.
func (f *batchFilter) filterControl(b Batch) (Batch, error) {
	removable := f.txns != nil && f.txns.onControl(b)
	if !removable {
		return b, nil
	}
	if p, ok := f.lastOfProducer[b.ProducerID()]; ok && p.lastData < 0 && p.epoch == b.ProducerEpoch() {
		return b, nil // the producer's epoch lives only in its markers
	}
	if b.Attributes()&attrDeleteHorizon != 0 {
		h := b.BaseTimestamp()
		if f.nowMs >= h {
			return nil, nil
		}
		f.horizon = min(f.horizon, h)
		return b, nil
	}
	data, err := decompressRecords(b.Compression(), b[BatchHeaderSize:])
	if err != nil {
		return nil, err
	}
	horizon := f.nowMs + f.deleteRetentionMs
	f.records = f.records[:0]
	base := b.BaseOffset()
	err = b.walkRecordData(data, func(r Record) bool {
		f.records = appendRecord(f.records, r, horizon, base)
		return true
	})
	if err != nil {
		return nil, err
	}
	if f.out, err = encodeBatch(f.out[:0], b, b.Compression(), f.records, false, defaultLevel(b.Compression())); err != nil {
		return nil, fmt.Errorf("recompress: %w", err)
	}
	nb := Batch(f.out)
	binary.BigEndian.PutUint16(nb[offAttributes:], uint16(nb.Attributes())|attrDeleteHorizon)
	binary.BigEndian.PutUint64(nb[offBaseTimestamp:], uint64(horizon))
	nb.updateCRC()
	f.horizon = min(f.horizon, horizon)
	f.stats.RecordsKept += int64(nb.RecordCount())
	return nb, nil
}

// tsRange is the largest and smallest record timestamp of a batch and
// the offset delta of the (first) largest, as walkRecords reports them.
type tsRange struct {
	maxTs, minTs int64
	maxDelta     int32
	n            int
}

func newTsRange() tsRange { return tsRange{maxTs: math.MinInt64, minTs: math.MaxInt64} }

func (t *tsRange) add(ts, delta int64) {
	if ts > t.maxTs {
		t.maxTs, t.maxDelta = ts, int32(delta)
	}
	t.minTs = min(t.minTs, ts)
	t.n++
}

// setInfo records what validating nb, whose records are t, would find
// walking them; compressed batches are not walked by that validation.
func (f *batchFilter) setInfo(nb Batch, t tsRange) {
	f.infoOK = true
	f.walked = nb.Compression() == CompressionNone && t.n > 0
	f.info = BatchInfo{MaxTimestamp: t.maxTs, MaxTimestampDelta: t.maxDelta, MinTimestamp: t.minTs}
}

// emptyBatch is b's header with no records: its offsets, producer and
// sequences stay, so replaying the log restores the producer's state.
func (f *batchFilter) emptyBatch(b Batch) Batch {
	f.out = append(f.out[:0], b[:BatchHeaderSize]...)
	nb := Batch(f.out)
	attrs := uint16(b.Attributes()) &^ (attrDeleteHorizon | attrCompressionMask)
	binary.BigEndian.PutUint32(nb[offBatchLength:], uint32(BatchHeaderSize-batchOverhead))
	binary.BigEndian.PutUint16(nb[offAttributes:], attrs)
	binary.BigEndian.PutUint32(nb[offRecordCount:], 0)
	nb.updateCRC()
	return nb
}

// appendRecord encodes r as a v2 record of a batch with the given base
// timestamp and offset.
func appendRecord(dst []byte, r Record, baseTs, baseOffset int64) []byte {
	var body [3 * binary.MaxVarintLen64]byte
	n := 1 // attributes: unused, 0
	n += binary.PutVarint(body[n:], r.Timestamp-baseTs)
	n += binary.PutVarint(body[n:], r.Offset-baseOffset)
	size := n + varintBytesLen(r.Key) + varintBytesLen(r.Value) + varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		size += varintLen(int64(len(h.Key))) + len(h.Key) + varintBytesLen(h.Value)
	}
	dst = binary.AppendVarint(dst, int64(size))
	dst = append(dst, body[:n]...)
	dst = appendVarintBytes(dst, r.Key)
	dst = appendVarintBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendVarintBytes(dst, h.Value)
	}
	return dst
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// varintBytesLen is the encoded size of a nullable byte field.
func varintBytesLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

func appendVarintBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(b))), b...)
}
