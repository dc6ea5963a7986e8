package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Two writers compress records: the cleaner, which recompresses a batch
// it filtered with the codec the producer chose, at the codec's default
// level; and the leader's Append, which recompresses a produced batch into
// the topic's compression.type at the topic's level. Both go through
// encodeBatch, and the encoders are pooled per level, so neither allocates
// an encoder per batch.

// encodeBatch appends to dst b's header followed by records (a batch's
// records section, uncompressed) compressed with c at level, and sets the
// header's batch length and codec bits. The caller finishes the header
// (record count, timestamps, other attributes) and then the CRC.
func encodeBatch(dst []byte, b Batch, c Compression, records []byte, xerial bool, level int) ([]byte, error) {
	start := len(dst)
	dst = append(dst, b[:BatchHeaderSize]...)
	dst, err := compressRecords(dst, c, records, xerial, level)
	if err != nil {
		return nil, fmt.Errorf("compress %d records of the batch at %d with %s: %w", b.RecordCount(), b.BaseOffset(), c, err)
	}
	nb := Batch(dst[start:])
	binary.BigEndian.PutUint32(nb[offBatchLength:], uint32(len(nb)-batchOverhead))
	attrs := uint16(nb.Attributes())&^attrCompressionMask | uint16(c)
	binary.BigEndian.PutUint16(nb[offAttributes:], attrs)
	return dst, nil
}

// compressRecords appends src compressed with c at level (Kafka's level
// for c, see Config) to dst. Snappy is written raw or, with xerial, in
// snappy-java's framing, which every client reads and Kafka's broker
// writes.
func compressRecords(dst []byte, c Compression, src []byte, xerial bool, level int) ([]byte, error) {
	switch c {
	case CompressionNone:
		return append(dst, src...), nil
	case CompressionGzip:
		pool := &gzipWriters[gzipPoolIndex(level)]
		zw, _ := pool.Get().(*gzip.Writer)
		if zw == nil {
			var err error
			if zw, err = gzip.NewWriterLevel(nil, gzipLevel(level)); err != nil {
				return nil, err
			}
		}
		defer pool.Put(zw)
		w := bytes.NewBuffer(dst)
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
			return appendSnappyBlock(dst, src), nil
		}
		return appendXerial(dst, src), nil
	case CompressionLZ4:
		pool := &lz4Writers[lz4PoolIndex(level)]
		zw, _ := pool.Get().(*lz4.Writer)
		if zw == nil {
			zw = newLZ4Writer(lz4Level(level))
		}
		defer pool.Put(zw)
		w := bytes.NewBuffer(dst)
		zw.Reset(w)
		if _, err := zw.Write(src); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return w.Bytes(), nil
	case CompressionZstd:
		enc, err := zstdEncoder(level)
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("%w: unknown compression codec %d", ErrCorruptBatch, c)
}

// defaultLevel is Kafka's default level for c.
func defaultLevel(c Compression) int {
	switch c {
	case CompressionGzip:
		return GzipDefaultLevel
	case CompressionLZ4:
		return LZ4DefaultLevel
	case CompressionZstd:
		return ZstdDefaultLevel
	}
	return 0
}

// The gzip and lz4 writers hold hundreds of KiB of state each: one per
// batch would dominate the compression of small batches. One pool per
// level the library tells apart.
var (
	gzipWriters [GzipMaxLevel + 1]sync.Pool // index 0: the default level
	lz4Writers  [10]sync.Pool               // index 0: fast; 1..9 the HC levels
)

func gzipPoolIndex(level int) int {
	if level < GzipMinLevel || level > GzipMaxLevel {
		return 0
	}
	return level
}

func gzipLevel(level int) int {
	if i := gzipPoolIndex(level); i > 0 {
		return i
	}
	return gzip.DefaultCompression
}

// lz4PoolIndex maps Kafka's lz4 level (1..17, default 9) onto the
// library's: Kafka compresses its default level 9 with lz4's fast
// compressor, as Kafka did before levels existed, and any other level
// with the high-compression one, whose levels the library has up to 9.
func lz4PoolIndex(level int) int {
	if level == LZ4DefaultLevel || level < LZ4MinLevel {
		return 0
	}
	return min(level, 9)
}

func lz4Level(level int) lz4.CompressionLevel {
	levels := [...]lz4.CompressionLevel{lz4.Fast, lz4.Level1, lz4.Level2, lz4.Level3, lz4.Level4,
		lz4.Level5, lz4.Level6, lz4.Level7, lz4.Level8, lz4.Level9}
	return levels[lz4PoolIndex(level)]
}

// newLZ4Writer writes 64 KiB blocks, as Kafka's producers do, rather than
// the library's 4 MiB (a batch's records are far smaller).
func newLZ4Writer(level lz4.CompressionLevel) *lz4.Writer {
	w := lz4.NewWriter(nil)
	_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.CompressionLevelOption(level))
	return w
}

// The zstd encoders are shared, one per level the library has (Kafka's
// levels -131072..22 map onto its four): EncodeAll is safe for concurrent
// use, and writes the content size into the frame, which librdkafka's
// decoder uses to size its buffer.
var zstdEncoders [zstd.SpeedBestCompression + 1]struct {
	once sync.Once
	enc  *zstd.Encoder
	err  error
}

func zstdEncoder(level int) (*zstd.Encoder, error) {
	l := zstd.EncoderLevelFromZstd(level)
	e := &zstdEncoders[l]
	e.once.Do(func() {
		e.enc, e.err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(l))
		if e.err != nil {
			e.err = fmt.Errorf("storage: zstd encoder: %w", e.err)
		}
	})
	return e.enc, e.err
}

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
		at := len(dst)
		dst = appendSnappyBlock(binary.BigEndian.AppendUint32(dst, 0), src[:n])
		binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
		src = src[n:]
	}
	return dst
}

// appendSnappyBlock appends src as one raw snappy block, encoding in
// dst's spare capacity rather than a fresh slice.
func appendSnappyBlock(dst, src []byte) []byte {
	dst = slices.Grow(dst, s2.MaxEncodedLen(len(src)))
	block := s2.EncodeSnappy(dst[len(dst):cap(dst)], src)
	return dst[:len(dst)+len(block)]
}
