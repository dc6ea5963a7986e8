package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// compressRecords appends src compressed with c to dst, for the cleaner,
// which recompresses a batch it filtered with the codec the producer
// chose. Snappy keeps the framing the batch came in (xerial for the Java
// client, a raw block otherwise) so every client reads it as before.
func compressRecords(dst []byte, c Compression, src []byte, xerial bool) ([]byte, error) {
	switch c {
	case CompressionNone:
		return append(dst, src...), nil
	case CompressionGzip:
		w := bytes.NewBuffer(dst)
		zw := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(zw)
		zw.Reset(w)
		if _, err := zw.Write(src); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return w.Bytes(), nil
	case CompressionSnappy:
		if !xerial {
			return append(dst, s2.EncodeSnappy(nil, src)...), nil
		}
		return appendXerial(dst, src), nil
	case CompressionLZ4:
		w := bytes.NewBuffer(dst)
		zw := lz4Writers.Get().(*lz4.Writer)
		defer lz4Writers.Put(zw)
		zw.Reset(w)
		if _, err := zw.Write(src); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return w.Bytes(), nil
	case CompressionZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("%w: unknown compression codec %d", ErrCorruptBatch, c)
}

// The gzip and lz4 writers hold hundreds of KiB of state each: one per
// batch would dominate the cleaning of small batches.
var (
	gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	lz4Writers  = sync.Pool{New: func() any { return newLZ4Writer() }}
)

// xerialChunk is the chunk size snappy-java writes.
const xerialChunk = 32 << 10

// appendXerial frames src as snappy-java does: the magic, version 1,
// compatible version 1, then 4-byte-length-prefixed raw snappy blocks.
func appendXerial(dst, src []byte) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	for len(src) > 0 {
		n := min(len(src), xerialChunk)
		block := s2.EncodeSnappy(nil, src[:n])
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(block)))
		dst = append(dst, block...)
		src = src[n:]
	}
	return dst
}

// zstdEncoder is shared: EncodeAll is safe for concurrent use.
var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("storage: zstd encoder: %w", err)
	}
	return e, nil
})

// newLZ4Writer writes 64 KiB blocks, as Kafka's producers do, rather than
// the library's 4 MiB (a batch's records are far smaller).
func newLZ4Writer() *lz4.Writer {
	w := lz4.NewWriter(nil)
	_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb))
	return w
}
