package storage

import (
	"fmt"
	"io"
	"math"
	"os"
)

// Region is a byte range of a segment file holding whole record batches,
// ready to be copied to a socket. The file stays open while the log is open
// (a segment removed by retention or truncation is deleted only after
// file.delete.delay.ms), but a truncation may shorten it, so a copy can come
// up short; callers treat that like a closed connection.
type Region struct {
	File *os.File
	Pos  int64
	Len  int64
}

// Reader returns a reader over the region (it does not move the file's
// offset, so any number may read concurrently).
func (r Region) Reader() *io.SectionReader { return io.NewSectionReader(r.File, r.Pos, r.Len) }

// Bytes reads the region into memory.
func (r Region) Bytes() ([]byte, error) {
	if r.Len == 0 {
		return nil, nil
	}
	buf := make([]byte, r.Len)
	_, err := io.ReadFull(r.Reader(), buf)
	return buf, err
}

// Read returns a region of whole batches starting with the batch holding
// offset, at most maxBytes long unless the first batch alone is larger (it
// is always returned whole, so consumers make progress). Reads stop at the
// log end offset. offset == LogEndOffset returns an empty region; an offset
// outside [LogStartOffset, LogEndOffset] is ErrOffsetOutOfRange.
func (l *Log) Read(offset int64, maxBytes int) (Region, error) {
	return l.ReadUpTo(offset, maxBytes, math.MaxInt64)
}

// ReadUpTo is Read that also stops before the first batch whose last
// offset is >= maxOffset (consumers read up to the high watermark).
func (l *Log) ReadUpTo(offset int64, maxBytes int, maxOffset int64) (Region, error) {
	r, err := l.readUpTo(offset, maxBytes, maxOffset)
	return r, l.ioFailure(err)
}

func (l *Log) readUpTo(offset int64, maxBytes int, maxOffset int64) (Region, error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	leo, start := l.leo.Load(), l.logStart.Load()
	if offset < start || offset > leo {
		return Region{}, fmt.Errorf("%w: offset %d, log covers [%d, %d)", ErrOffsetOutOfRange, offset, start, leo)
	}
	limit := min(maxOffset, leo)
	if offset >= limit || len(l.segments) == 0 {
		return Region{}, nil
	}
	for i := l.segmentFor(offset); i < len(l.segments); i++ {
		s := l.segments[i]
		end := s.size.Load()
		pos, _, err := s.translate(offset, end)
		if err != nil {
			return Region{}, err
		}
		if pos >= end {
			continue
		}
		maxPos := end
		if limit < leo {
			if maxPos, _, err = s.translate(limit, end); err != nil {
				return Region{}, err
			}
		}
		if pos >= maxPos {
			return Region{}, nil
		}
		var hdr [BatchHeaderSize]byte
		n, err := s.batchHeader(&hdr, pos, end)
		if err != nil {
			return Region{}, fmt.Errorf("%s at position %d: %w", s.logPath(), pos, err)
		}
		stop := pos + n
		if want := pos + int64(max(maxBytes, 0)); want > stop && stop < maxPos {
			b, err := s.boundaryAtOrBefore(min(want, maxPos), stop)
			if err != nil {
				return Region{}, err
			}
			stop = max(stop, b)
		}
		return Region{File: s.f, Pos: pos, Len: stop - pos}, nil
	}
	return Region{}, nil
}

// TimestampAndOffset is a record found by its timestamp: its own timestamp
// and offset, and the partition leader epoch of its batch (what Kafka's
// ListOffsets answers for a search by time).
type TimestampAndOffset struct {
	Timestamp   int64
	Offset      int64
	LeaderEpoch int32
}

// FindByTimestamp returns the first record, in offset order, with a
// timestamp >= ts and an offset at or after the log start offset
// (ListOffsets by time); ok is false if there is none. Compressed batches
// that may hold it are decompressed (see segment.findTimestamp), so the
// answer is exact as in Kafka.
func (l *Log) FindByTimestamp(ts int64) (found TimestampAndOffset, ok bool, err error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	start := l.logStart.Load()
	for _, s := range l.segments {
		if s.maxTs < ts {
			continue
		}
		found, ok, err := s.findTimestamp(ts, start, s.size.Load())
		if err != nil || ok {
			return found, ok, err
		}
	}
	return TimestampAndOffset{}, false, nil
}

// FindOffsetByTimestamp is FindByTimestamp's offset alone.
func (l *Log) FindOffsetByTimestamp(ts int64) (offset int64, ok bool, err error) {
	found, ok, err := l.FindByTimestamp(ts)
	return found.Offset, ok, err
}

// MaxTimestamp returns the largest timestamp in the log and the offset of
// the record carrying it (ListOffsets MAX_TIMESTAMP, KIP-734); ok is false
// for a log without timestamps.
func (l *Log) MaxTimestamp() (ts, offset int64, ok bool) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	ts = NoTimestamp
	for _, s := range l.segments {
		if s.maxTs > ts && s.maxTsOffset >= l.logStart.Load() {
			ts, offset = s.maxTs, s.maxTsOffset
		}
	}
	return ts, offset, ts >= 0
}
