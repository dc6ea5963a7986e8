// Package storage owns the partition logs on disk: segments, offset and time
// indexes, recovery after an unclean stop, retention, checkpoint files, the
// leader-epoch cache and idempotent-producer state, in Kafka's on-disk layout
// so an operator recognises the files (and kafka-dump-log.sh can read the
// segments and indexes).
//
// It knows nothing of the network or of Raft. It imports the standard library
// and small libraries only; it must never import metadata, raftfsm or broker,
// and it does not log: it returns errors (wrapping the sentinels in
// errors.go, which broker/errors.go maps to Kafka codes) and recovery
// reports, and callers log.
//
// # Files
//
// Per partition directory <log.dir>/<topic>-<partition>/: segments
// NNNNNNNNNNNNNNNNNNNN.log (v2 record batches exactly as produced, see
// Batch), .index (see offsetIndex), .timeindex (see timeIndex), .txnindex
// (the segment's aborted transactions in Kafka's format, present only once
// it holds an ABORT marker, see AbortedTxn),
// NNNNNNNNNNNNNNNNNNNN.snapshot producer state (see ProducerSnapshot; our
// own format, not Kafka's), leader-epoch-checkpoint (see LeaderEpochCache)
// and partition.metadata (see ParsePartitionMetadata); while the cleaner
// swaps segments, .cleaned and .swap files (see Log.Clean). Per log dir:
// recovery-point-offset-checkpoint, replication-offset-checkpoint,
// log-start-offset-checkpoint, cleaner-offset-checkpoint (see
// ParseOffsetCheckpoint) and the .kafka_cleanshutdown marker, present only
// between a clean Manager.Close and the next OpenManager.
//
// # Source files
//
// A Log's code is split by concern: log.go holds the type, its offsets,
// segment removal and Close; log_append.go the leader's and the follower's
// appends and segment rolls; log_read.go reads and the lookups by time;
// log_truncate.go Truncate, ResetTo and DeleteRecords; log_flush.go
// flush.messages, flush.ms, Sync and durable mode, flusher.go the log
// dir's group commit; retention.go time and size retention
// by cleanup.policy; log_loader.go opening and recovery. The cleaner:
// cleaner_plan.go what is cleanable and which log is dirtiest,
// cleaner_map.go the key map, cleaner_batch.go the filtering of one batch,
// cleaner_txn.go the transactions through a clean, cleaner.go a log's clean and
// segment swap, cleaner_manager.go and cleaner_throttle.go the threads,
// cleaner_reconfigure.go their settings changed on a running Manager
// (SetCleaner); producer_expiration.go producer.id.expiration.ms changed on a
// running Manager; dir_failure.go a log dir taken offline by an I/O error
// (JBOD), alone, without stopping the others.
// manager.go owns the set of logs and the schedule; segment.go, offset_index.go,
// time_index.go and index.go one segment's files; batch.go and
// compression.go the v2 batch format and its decoders, compress.go the
// encoders (the cleaner's recompression and compression.type's); producer_state.go,
// leader_epoch.go, checkpoint.go, meta_properties.go and
// partition_metadata.go the other files listed above. Transactions:
// control.go the marker format (TxnMarker), txn_index.go the .txnindex
// file, lso.go the last stable offset, the marker append and the
// read_committed reads.
//
// # Concurrency
//
// A Log has one writer at a time and any number of readers. Writers
// (Append, AppendMarker, AppendAsFollower, Truncate, ResetTo, DeleteRecords,
// ApplyRetention, Roll, UpdateConfig, ExpireProducers, Close) serialise on
// Log.mu; Producers takes it too, to copy the producer table. Clean runs
// beside them: it takes Log.mu only to read the log's state and to swap
// each group of segments, and gives up if a truncation intervened. A write
// is published only after its bytes are in the file: the active segment's
// size and the log end offset change together under Log.segMu, which
// readers (Read, lookups) hold shared while they resolve offsets to file
// positions, so a reader never sees a partial batch. Sync and FlushRolled
// run beside the writer under Log.flushMu; concurrent Syncs share one
// fsync (group commit). Segment files removed by retention or truncation are renamed
// .deleted and closed only after file.delete.delay.ms, so regions handed to
// readers stay readable meanwhile.
//
// The producer table (producer id -> epoch and last five batches) belongs to
// the writer: Append checks a producer's batch against it under Log.mu
// before any offset is assigned, so a refused or duplicate batch leaves the
// log untouched; every batch written (leader, follower, replay) updates it.
//
// Lock order (never take an earlier lock while holding a later one):
//
//	Manager.ckptMu -> Manager.mu -> Log.mu -> Log.flushMu -> Log.segMu ->
//	index.mu, LeaderEpochCache.mu
//
// Log.mu is never held across another Log's locks. Hot paths (Append, Read)
// allocate nothing per record.
//
// # Flushing
//
// As in Kafka, appends are not fsynced unless flush.messages or flush.ms
// ask for it (flush.messages=1 is durable mode, below); a segment is fsynced once it rolls (Log.FlushRolled, on the
// Manager's next tick), which moves the recovery point to the new active
// segment, so recovery after a crash rescans only that segment. Each flush
// that fsynced reports its duration to LogOptions.OnFlush (the broker's
// fsync latency histogram): a function, so the package needs no metrics
// library and does not log.
//
// # Durable mode
//
// flush.messages=1 (a topic's, or the broker default
// log.flush.interval.messages) is durable mode: a record counts toward
// acknowledgement only once it is fsynced. Unlike Kafka's flush.messages=1,
// which fsyncs each append in the append path, appends do not wait: Append,
// AppendMarker and AppendAsFollower queue their log with the log dir's
// flusher (flusher.go, one per dir, started by the first durable append)
// and return. Each flusher round takes every log queued since the last
// round, fsyncs their segment data with a few fsyncs in flight (the file
// system commits concurrent fsyncs together), moves each log's durable
// end (Log.DurableEnd) and calls its OnDurable hook: one round covers
// every batch of every partition and request appended meanwhile, leader
// and follower appends alike, so the fsync rate is the rounds', not the
// batches'. Log.MakeDurable returns the channel of the round that will
// cover what is appended so far (a follower's fetcher waits on it before
// reporting its offset). Outside durable mode DurableEnd is the log end.
//
// Only the .log files (and the directory, after a segment file is
// created) are fsynced per round; the indexes are not, and the recovery
// point does not move, since recovery after an unclean stop rescans the
// segment holding the recovery point and rebuilds its indexes anyway;
// FlushRolled syncs a rolled segment whole and moves the recovery point
// past it, as in page-cache mode. A failed data fsync is sticky
// (Log.FlushError): after one, Linux may have dropped the dirty pages, so
// the durable end never moves again and nothing more of the log is
// acknowledged. ManagerOptions.SyncData replaces the data fsync, for
// tests that order fsyncs against acknowledgements or fail them.
//
// # Page cache
//
// Like Kafka, the log writes through the page cache and leaves writeback to
// the kernel, except for a follower's copy when LogOptions.FollowerDropBehind
// is set (raftka.follower.drop.behind.bytes, 8 MiB by default):
// AppendAsFollower then advises POSIX_FADV_DONTNEED behind itself in steps
// of that size, so the kernel writes those pages back early and reuses
// them. Nothing reads a follower's copy until it leads, and on a VM whose
// host reclaims free guest memory each fresh cache page costs a fault: with
// three replicas on one two-core machine that made page-cache writes 85% of
// a broker's CPU, and the advice cut the brokers' CPU per GB at RF=3 by a third to a half. A
// replica that becomes leader serves its older data from disk rather than
// from the cache. Linux only (cache_linux.go); elsewhere the advice is a
// no-op.
//
// # Idempotent producers
//
// Kafka's rules for batches with a producer id (see producerStates.check):
// a retry of one of the producer's last MaxProducerBatches batches (same
// epoch and sequence range) is answered with the original offsets
// (AppendResult.Duplicate, no error); an older epoch is
// ErrInvalidProducerEpoch; a new epoch must start at sequence 0 and the same
// epoch must continue at the last sequence + 1 (wrapping at MaxInt32), else
// ErrOutOfOrderSequence; a producer the partition does not know may start
// at any sequence (KIP-360: its state may have gone with retention or
// expiry while the producer lived on), so no UNKNOWN_PRODUCER_ID is ever
// answered. Producers outlive the deletion of their batches and leave only
// by expiry (producer.id.expiration.ms, Log.ExpireProducers from
// Manager.Tick), as in Kafka since KIP-360. The table is snapshotted on
// roll and close and rebuilt at open and after truncation from the newest
// good snapshot plus the batch headers after it (never decompressing).
//
// # Compression
//
// Batches are stored as producers compressed them, byte for byte, under
// compression.type=producer (the default) or when the batch already uses
// the topic's codec. The leader's Append walks every produced batch's
// records before it assigns offsets, decompressing compressed ones as a
// stream (records_validate.go: pooled decoders, a fixed window, at most
// DecompressLimit bytes, 64 x max.message.bytes within 64 MiB..1 GiB), so
// a batch no consumer could decode is refused rather than stored. When
// compression.type names another codec, that walk also gathers the
// decompressed records and Append stores the batch rebuilt with the
// topic's codec and level (compression.gzip/lz4/zstd.level), as Kafka's
// LogValidator: same records, offsets, timestamps and producer fields, a
// new length, codec and CRC; snappy in snappy-java's framing as Kafka
// writes it; refused with MESSAGE_TOO_LARGE if it then exceeds
// max.message.bytes. compress.go holds the encoders, pooled per level and
// shared with the cleaner (encodeBatch). Fetch,
// follower appends, recovery and producer replay trust the leader's walk
// and the CRC that covers the records since, and read only batch headers.
// Batch.Records decompresses whole (gzip, snappy raw or xerial-framed, lz4
// frames, zstd; with klauspost/compress and pierrec/lz4, the codecs
// franz-go uses) for ListOffsets by time, which must find the exact record
// as Kafka does, and for tools; it refuses more than MaxDecompressedBytes
// per batch.
//
// # Retention and compaction
//
// cleanup.policy decides (CleanupPolicy): delete lets retention.ms and
// retention.bytes remove old segments; compact never does (Kafka Connect,
// Schema Registry and Streams keep state in such topics) and lets the
// cleaner compact; compact,delete does both; an empty policy does neither.
// DeleteRecords moves the log start whatever the policy.
//
// The cleaner (Log.Clean, run by the Manager's log.cleaner.threads) works
// as Kafka's: it cleans the log with the highest dirty ratio above
// min.cleanable.dirty.ratio (or past max.compaction.lag.ms), maps each key
// of the dirty segments to its last offset, then rewrites every segment
// below the end of that range keeping per key the last record, with
// offsets unchanged, so a compacted log has gaps. Keyless records go;
// tombstones stay delete.retention.ms past the clean that first sees them
// (the delete horizon in baseTimestamp, KIP-534); a producer's last batch
// stays, empty if need be, so its sequence state survives; a batch that
// loses records is recompressed with its codec, one that loses none is
// copied as it is. Only durable data (below the recovery point, which
// Clean advances first) and stable data (below the last stable offset, so
// below the high watermark and the oldest open transaction) is cleaned.
// Transactions (cleaner_txn.go, Kafka's rules): records of aborted
// transactions go and never enter the key map, so a key's latest value is
// its latest committed one; a COMMIT or ABORT marker stays while a batch
// of its transaction remains before it (one pass over the cleaned range,
// which starts at the log start, follows them), then carries a delete
// horizon from the clean that first finds it removable and goes at the
// first clean delete.retention.ms after (KIP-534, as tombstones); a
// producer with no data batch left keeps its markers of its epoch. A
// cleaned segment's .txnindex holds the entries of the ABORT markers it
// keeps whose transactions still had records there; the others' records
// are gone, so their ranges are not needed. The swap is crash-safe: the
// new segment is written .cleaned, renamed .swap, the old ones .deleted, the .swap into place; OpenLog
// finishes a swap whose .swap files exist and discards .cleaned ones.
// Recovery accepts gaps between batches only below the cleaner checkpoint
// (moved and written before the first swap) and in swapped segments;
// elsewhere a gap still marks a damaged base offset. A follower accepts a
// compacted leader's gaps and moves its checkpoint past them. The key map
// (offsetMap) grows with the keys it meets, up to
// log.cleaner.dedupe.buffer.size, so its random accesses stay in the CPU
// caches for a log of few keys; its 16-byte slots (a 96-bit hash of the
// key, the offset as 32 bits from the first dirty one) hold as many keys
// as Kafka's 24-byte entries would in the buffer, in two thirds of it.
// SetCleaner changes the threads, key-map budget, I/O rate and backoff of
// a running Manager as Kafka's LogCleaner.reconfigure does: the threads
// stop (a clean in progress gives up) and start again with the new
// settings.
//
// The cleaner yields to the produce path, which Kafka's does not: while
// the node's logs take appends (leader, follower or marker, counted by
// the Manager) and for half a second after, its threads' I/O is held to
// raftka.log.cleaner.busy.io.max.bytes.per.second
// (CleanerOptions.BusyIOBytesPerSecond, 80 MB/s by default), and runs at log.cleaner.io.max.bytes.per.second
// (unlimited by default, as in Kafka) when they stop; an explicit
// log.cleaner.io.max.bytes.per.second lower than the busy rate caps both.
// On two cores a cleaner running flat out beside a producer took a third
// of its throughput; at 80 MB/s it takes under 15% and still keeps up
// with 20 MB/s of keyed writes (DefaultCleanerBusyIO). The key's 0 (the
// option's +Inf) turns it off.
//
// # Transactions
//
// The partition side of KIP-98 (see lso.go): a transactional batch opens
// its producer's transaction (the producer table records its first
// offset); a COMMIT or ABORT marker, appended on the leader by
// AppendMarker and copied byte for byte by followers, ends it. A marker
// with an older producer epoch is ErrInvalidProducerEpoch, one from an
// older coordinator epoch than the producer's last marker's
// ErrTransactionCoordinatorFenced; Append still refuses control batches
// from clients. An ABORT that ends an open transaction writes its entry
// (producer, first offset, marker offset, LSO after it) to the .txnindex
// of the segment it lands in. The last stable offset is
// min(first offset of the oldest open transaction or of an ended one whose
// marker the HW has not passed, HW), at least the log start offset.
// ReadCommitted serves read_committed fetches up to it with the aborted
// transactions that overlap the read (AbortedTransactions, bounded by the
// segment as in Kafka). The producer snapshot (version 2) carries the
// open transactions and the unreplicated ended ones; at open and after a
// truncation the replay from the chosen snapshot also rewrites the
// .txnindex entries from that offset on (entries below it are durable:
// Sync fsyncs .txnindex files with their segment). A corrupt .txnindex is
// emptied and the replay starts at or below its segment. Retention and
// DeleteRecords never delete past the LSO's segment.
//
// # Not here yet
//
// The transaction coordinator, which appends markers through
// AppendMarker; until it lands the broker refuses transactional produce.
//
//arch:imports std github.com/klauspost/compress/... github.com/pierrec/lz4/v4 golang.org/x/sys/unix
//arch:imports github.com/magiconair/properties
package storage
