package storage

import (
	"fmt"
	"math"
	"strings"
)

// TimestampType is message.timestamp.type.
type TimestampType int8

const (
	CreateTime    TimestampType = 0
	LogAppendTime TimestampType = 1
)

func (t TimestampType) String() string {
	if t == LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// Config is the per-topic configuration the log obeys, named after Kafka's
// topic configs. Durations are milliseconds and sizes bytes, as in Kafka, so
// the broker copies values across without conversion. -1 means "no limit"
// where Kafka allows it (RetentionMs, RetentionBytes).
type Config struct {
	SegmentBytes       int64 // segment.bytes: roll when the active segment would exceed it
	SegmentMs          int64 // segment.ms: roll when the active segment is older
	SegmentJitterMs    int64 // segment.jitter.ms: each segment rolls up to this much (at random) before SegmentMs
	SegmentIndexBytes  int64 // segment.index.bytes: max size of each index; roll when full
	IndexIntervalBytes int64 // index.interval.bytes: log bytes between index entries
	RetentionMs        int64 // retention.ms: delete segments older; -1 keeps forever
	RetentionBytes     int64 // retention.bytes: delete oldest segments above; -1 no limit
	FlushMessages      int64 // flush.messages: fsync after this many records
	FlushMs            int64 // flush.ms: fsync when the last flush is older
	MaxMessageBytes    int64 // max.message.bytes: largest batch accepted
	// message.timestamp.type
	MessageTimestampType TimestampType
	// message.timestamp.before.max.ms / after.max.ms: how far a CreateTime
	// record timestamp may lie before or after the broker's clock.
	MessageTimestampBeforeMaxMs int64
	MessageTimestampAfterMaxMs  int64
	// file.delete.delay.ms: how long a deleted segment's files stay (renamed
	// .deleted) so in-flight reads of them complete.
	FileDeleteDelayMs int64
	// cleanup.policy: whether retention deletes old segments, whether the
	// cleaner compacts, both or neither.
	CleanupPolicy CleanupPolicy
	// The cleaner's per-topic settings (compacted topics only):
	// min.cleanable.dirty.ratio, min.compaction.lag.ms,
	// max.compaction.lag.ms, delete.retention.ms.
	MinCleanableDirtyRatio float64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64
	DeleteRetentionMs      int64
	// compression.type: the codec the leader stores produced batches in,
	// or CompressionProducer to store them as sent; and the levels of
	// compression.gzip.level, compression.lz4.level and
	// compression.zstd.level (Kafka's ranges and defaults).
	CompressionType      Compression
	CompressionGzipLevel int64
	CompressionLZ4Level  int64
	CompressionZstdLevel int64
}

// CleanupPolicy is cleanup.policy, a set of PolicyDelete and PolicyCompact.
// The zero value (an empty list, which Kafka allows) neither deletes nor
// compacts.
type CleanupPolicy uint8

const (
	PolicyDelete  CleanupPolicy = 1 << iota // time and size retention apply
	PolicyCompact                           // the cleaner keeps the last record per key
)

// Deletes says whether retention.ms and retention.bytes remove segments.
// A compact-only log must never lose a key's latest value to time or size
// (Kafka Connect, Schema Registry and Streams changelogs live in such
// topics), so only the delete policy, alone or with compact, lets them.
func (p CleanupPolicy) Deletes() bool { return p&PolicyDelete != 0 }

// Compacts says whether the log cleaner works on the log.
func (p CleanupPolicy) Compacts() bool { return p&PolicyCompact != 0 }

func (p CleanupPolicy) String() string {
	switch p {
	case PolicyDelete:
		return "delete"
	case PolicyCompact:
		return "compact"
	case PolicyDelete | PolicyCompact:
		return "compact,delete"
	}
	return ""
}

// ParseCleanupPolicy reads cleanup.policy's comma-separated list.
func ParseCleanupPolicy(v string) (CleanupPolicy, error) {
	var p CleanupPolicy
	for item := range strings.SplitSeq(v, ",") {
		switch strings.TrimSpace(item) {
		case "delete":
			p |= PolicyDelete
		case "compact":
			p |= PolicyCompact
		case "":
		default:
			return 0, fmt.Errorf("%w: cleanup.policy %q", ErrInvalidConfig, v)
		}
	}
	return p, nil
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:                1 << 30,
		SegmentMs:                   7 * 24 * 3600 * 1000,
		SegmentIndexBytes:           10 << 20,
		IndexIntervalBytes:          4096,
		RetentionMs:                 7 * 24 * 3600 * 1000,
		RetentionBytes:              -1,
		FlushMessages:               math.MaxInt64,
		FlushMs:                     math.MaxInt64,
		MaxMessageBytes:             1048588,
		MessageTimestampType:        CreateTime,
		MessageTimestampBeforeMaxMs: math.MaxInt64,
		MessageTimestampAfterMaxMs:  math.MaxInt64,
		FileDeleteDelayMs:           60000,
		CleanupPolicy:               PolicyDelete,
		MinCleanableDirtyRatio:      0.5,
		MaxCompactionLagMs:          math.MaxInt64,
		DeleteRetentionMs:           24 * 3600 * 1000,
		CompressionType:             CompressionProducer,
		CompressionGzipLevel:        GzipDefaultLevel,
		CompressionLZ4Level:         LZ4DefaultLevel,
		CompressionZstdLevel:        ZstdDefaultLevel,
	}
}

// Validate checks ranges as Kafka's LogConfig does.
func (c *Config) Validate() error {
	bad := func(name string, v int64) error {
		return fmt.Errorf("%w: %s=%d", ErrInvalidConfig, name, v)
	}
	switch {
	case c.SegmentBytes < 14 || c.SegmentBytes > math.MaxInt32:
		return bad("segment.bytes", c.SegmentBytes)
	case c.SegmentMs < 1:
		return bad("segment.ms", c.SegmentMs)
	case c.SegmentJitterMs < 0:
		return bad("segment.jitter.ms", c.SegmentJitterMs)
	case c.SegmentIndexBytes < timeEntrySize || c.SegmentIndexBytes > math.MaxInt32:
		return bad("segment.index.bytes", c.SegmentIndexBytes)
	case c.IndexIntervalBytes < 0:
		return bad("index.interval.bytes", c.IndexIntervalBytes)
	case c.RetentionMs < -1:
		return bad("retention.ms", c.RetentionMs)
	case c.RetentionBytes < -1:
		return bad("retention.bytes", c.RetentionBytes)
	case c.FlushMessages < 1:
		return bad("flush.messages", c.FlushMessages)
	case c.FlushMs < 0:
		return bad("flush.ms", c.FlushMs)
	case c.MaxMessageBytes < 0 || c.MaxMessageBytes > math.MaxInt32:
		return bad("max.message.bytes", c.MaxMessageBytes)
	case c.MessageTimestampType != CreateTime && c.MessageTimestampType != LogAppendTime:
		return bad("message.timestamp.type", int64(c.MessageTimestampType))
	case c.MessageTimestampBeforeMaxMs < 0:
		return bad("message.timestamp.before.max.ms", c.MessageTimestampBeforeMaxMs)
	case c.MessageTimestampAfterMaxMs < 0:
		return bad("message.timestamp.after.max.ms", c.MessageTimestampAfterMaxMs)
	case c.FileDeleteDelayMs < 0:
		return bad("file.delete.delay.ms", c.FileDeleteDelayMs)
	case c.CleanupPolicy&^(PolicyDelete|PolicyCompact) != 0:
		return bad("cleanup.policy", int64(c.CleanupPolicy))
	case !(c.MinCleanableDirtyRatio >= 0 && c.MinCleanableDirtyRatio <= 1):
		return fmt.Errorf("%w: min.cleanable.dirty.ratio=%g", ErrInvalidConfig, c.MinCleanableDirtyRatio)
	case c.MinCompactionLagMs < 0:
		return bad("min.compaction.lag.ms", c.MinCompactionLagMs)
	case c.MaxCompactionLagMs < 1:
		return bad("max.compaction.lag.ms", c.MaxCompactionLagMs)
	case c.DeleteRetentionMs < 0:
		return bad("delete.retention.ms", c.DeleteRetentionMs)
	case c.CompressionType != CompressionProducer && (c.CompressionType < CompressionNone || c.CompressionType > CompressionZstd):
		return bad("compression.type", int64(c.CompressionType))
	case c.CompressionGzipLevel != GzipDefaultLevel && (c.CompressionGzipLevel < GzipMinLevel || c.CompressionGzipLevel > GzipMaxLevel):
		return bad("compression.gzip.level", c.CompressionGzipLevel)
	case c.CompressionLZ4Level < LZ4MinLevel || c.CompressionLZ4Level > LZ4MaxLevel:
		return bad("compression.lz4.level", c.CompressionLZ4Level)
	case c.CompressionZstdLevel < ZstdMinLevel || c.CompressionZstdLevel > ZstdMaxLevel:
		return bad("compression.zstd.level", c.CompressionZstdLevel)
	}
	return nil
}

// CompressionProducer is compression.type=producer: batches are stored in
// the codec their producer chose.
const CompressionProducer Compression = -1

// Kafka's compression levels (KIP-390): ranges and defaults of
// compression.gzip.level (-1 is zlib's default, 6), compression.lz4.level
// and compression.zstd.level.
const (
	GzipDefaultLevel = -1
	GzipMinLevel     = 1
	GzipMaxLevel     = 9
	LZ4DefaultLevel  = 9
	LZ4MinLevel      = 1
	LZ4MaxLevel      = 17
	ZstdDefaultLevel = 3
	ZstdMinLevel     = -131072
	ZstdMaxLevel     = 22
)

// ParseCompressionType reads compression.type: producer, uncompressed
// (or none, the producers' name for it), gzip, snappy, lz4 or zstd.
func ParseCompressionType(v string) (Compression, error) {
	switch strings.TrimSpace(v) {
	case "producer":
		return CompressionProducer, nil
	case "uncompressed", "none":
		return CompressionNone, nil
	case "gzip":
		return CompressionGzip, nil
	case "snappy":
		return CompressionSnappy, nil
	case "lz4":
		return CompressionLZ4, nil
	case "zstd":
		return CompressionZstd, nil
	}
	return 0, fmt.Errorf("%w: compression.type %q", ErrInvalidConfig, v)
}

// compressionLevel is the configured level for codec c (0 where the codec
// has none).
func (c *Config) compressionLevel(codec Compression) int {
	switch codec {
	case CompressionGzip:
		return int(c.CompressionGzipLevel)
	case CompressionLZ4:
		return int(c.CompressionLZ4Level)
	case CompressionZstd:
		return int(c.CompressionZstdLevel)
	}
	return 0
}
