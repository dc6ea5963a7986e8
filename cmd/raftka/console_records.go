package main

import (
	"fmt"

	"github.com/raftka/raftka/storage"
)

// consoleReadLimit bounds the log bytes one partition's recent records are
// read from: a page never reads more than this per partition.
const consoleReadLimit = 4 << 20

// recentRecords returns up to n of the newest records of log below its high
// watermark (what consumers may read), oldest first, decompressing as
// needed; control batches (transaction markers) are skipped. Only the last
// consoleReadLimit bytes before the high watermark are looked at.
func recentRecords(log *storage.Log, partition int32, n int) ([]consoleRecord, error) {
	hw, start := log.HighWatermark(), log.LogStartOffset()
	if n <= 0 || hw <= start {
		return nil, nil
	}
	from := max(hw-int64(n), start)
	region, err := log.ReadUpTo(from, consoleReadLimit, hw)
	if err != nil {
		return nil, err
	}
	buf, err := region.Bytes()
	if err != nil {
		return nil, err
	}
	var out []consoleRecord
	for len(buf) >= storage.BatchHeaderSize {
		size, err := storage.BatchSize(buf)
		if err != nil {
			return out, err
		}
		if size > len(buf) {
			break // the read stopped inside a batch
		}
		b := storage.Batch(buf[:size])
		buf = buf[size:]
		if b.Control() {
			continue
		}
		err = b.Records(func(r storage.Record) bool {
			if r.Offset < from || r.Offset >= hw {
				return true
			}
			out = append(out, consoleRecord{Partition: partition, Offset: r.Offset, Timestamp: r.Timestamp,
				Key: clone(r.Key), Value: clone(r.Value), Headers: len(r.Headers)})
			return true
		})
		if err != nil {
			return out, fmt.Errorf("batch at offset %d: %w", b.BaseOffset(), err)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}

// clone keeps nil as nil (a null key stays null).
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
