package storage

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/raftka/raftka/storage/recordbatch"
)

// benchBatch builds one uncompressed batch of about size bytes (1 KiB
// records).
func benchBatch(size int) []byte {
	rec := make([]byte, min(size, 1024)-40)
	n := max(size/1024, 1)
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = rec
	}
	return recordbatch.BuildValues(1700000000000, vals...)
}

var benchSizes = []int{1 << 10, 16 << 10, 1 << 20}

// BenchmarkAppend appends batches through Log.Append (validation, offset
// assignment, index upkeep, segment rolls at 1 GiB) beside a baseline that
// writes the same bytes to a plain file. Neither fsyncs.
func BenchmarkAppend(b *testing.B) {
	for _, size := range benchSizes {
		batch := benchBatch(size)
		name := strconv.Itoa(size>>10) + "KiB"
		b.Run(name+"/log", func(b *testing.B) {
			l, _, err := OpenLog(filepath.Join(b.TempDir(), "bench-0"), DefaultConfig(), LogOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(batch, AppendOptions{LeaderEpoch: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The same batches from one idempotent producer: each is given the
		// next sequence (and so a new CRC) before it is appended, as the
		// producer would send it. restamp measures that client-side share
		// alone, to subtract.
		idem := bytes.Clone(batch)
		binary.BigEndian.PutUint64(idem[offProducerID:], 1)
		binary.BigEndian.PutUint16(idem[offProducerEpoch:], 0)
		restamp := func(i int) {
			binary.BigEndian.PutUint32(idem[offBaseSequence:], uint32(i*int(Batch(idem).RecordCount())))
			Batch(idem).updateCRC()
		}
		b.Run(name+"/idempotent", func(b *testing.B) {
			l, _, err := OpenLog(filepath.Join(b.TempDir(), "bench-0"), DefaultConfig(), LogOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.SetBytes(int64(len(idem)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				restamp(i)
				res, err := l.Append(idem, AppendOptions{LeaderEpoch: 1})
				if err != nil || res.Duplicate {
					b.Fatal(res, err)
				}
			}
		})
		b.Run(name+"/restamp", func(b *testing.B) {
			b.SetBytes(int64(len(idem)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				restamp(i)
			}
		})
		b.Run(name+"/file", func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "plain"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := f.Write(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRead reads a 64 MiB log sequentially through Log.Read (offset
// -> segment -> index -> region, 1 MiB per read, the region's bytes copied
// into a buffer) beside a baseline that reads the same file with ReadAt in
// the same chunk size. Both read from the page cache.
func BenchmarkRead(b *testing.B) {
	for _, size := range benchSizes {
		batch := benchBatch(size)
		name := strconv.Itoa(size>>10) + "KiB"
		dir := filepath.Join(b.TempDir(), "bench-0")
		l, _, err := OpenLog(dir, DefaultConfig(), LogOptions{})
		if err != nil {
			b.Fatal(err)
		}
		total := 64 << 20
		for written := 0; written < total; written += len(batch) {
			if _, err := l.Append(batch, AppendOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		const chunk = 1 << 20
		buf := make([]byte, 2*max(chunk, len(batch)))
		b.Run(name+"/log", func(b *testing.B) {
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			off, read := int64(0), 0
			for read < b.N*len(batch) {
				r, err := l.Read(off, chunk)
				if err != nil {
					b.Fatal(err)
				}
				if r.Len == 0 {
					off = 0
					continue
				}
				if _, err := io.ReadFull(r.Reader(), buf[:r.Len]); err != nil {
					b.Fatal(err)
				}
				read += int(r.Len)
				off = Batch(buf[r.Len-int64(len(batch)) : r.Len]).NextOffset()
			}
		})
		b.Run(name+"/file", func(b *testing.B) {
			f, err := os.Open(filepath.Join(dir, "00000000000000000000.log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			pos, read := int64(0), 0
			for read < b.N*len(batch) {
				n, err := f.ReadAt(buf[:chunk], pos)
				if err == io.EOF && n == 0 {
					pos = 0
					continue
				}
				if err != nil && err != io.EOF {
					b.Fatal(err)
				}
				pos += int64(n)
				read += n
			}
		})
		l.Close()
	}
}
