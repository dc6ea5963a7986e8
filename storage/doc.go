// Package storage owns the partition logs on disk: segments, offset and time
// indexes, recovery after an unclean stop, retention, checkpoint files and the
// leader-epoch cache, all in Kafka's on-disk format so an operator recognises
// the files (and kafka-dump-log.sh can read them).
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
// Batch), .index (see offsetIndex), .timeindex (see timeIndex),
// leader-epoch-checkpoint (see LeaderEpochCache) and partition.metadata (see
// ParsePartitionMetadata). Per log dir: recovery-point-offset-checkpoint,
// replication-offset-checkpoint, log-start-offset-checkpoint (see
// ParseOffsetCheckpoint) and the .kafka_cleanshutdown marker, present only
// between a clean Manager.Close and the next OpenManager.
//
// # Concurrency
//
// A Log has one writer at a time and any number of readers. Writers
// (Append, AppendAsFollower, Truncate, ResetTo, DeleteRecords,
// ApplyRetention, Roll, UpdateConfig, Close) serialise on Log.mu. A write
// is published only after its bytes are in the file: the active segment's
// size and the log end offset change together under Log.segMu, which
// readers (Read, lookups) hold shared while they resolve offsets to file
// positions, so a reader never sees a partial batch. Sync runs beside the
// writer under Log.flushMu; concurrent Syncs share one fsync (group
// commit). Segment files removed by retention or truncation are renamed
// .deleted and closed only after file.delete.delay.ms, so regions handed to
// readers stay readable meanwhile.
//
// Lock order (never take an earlier lock while holding a later one):
//
//	Manager.ckptMu -> Manager.mu -> Log.mu -> Log.flushMu -> Log.segMu ->
//	index.mu, LeaderEpochCache.mu
//
// Log.mu is never held across another Log's locks. Hot paths (Append, Read)
// allocate nothing per record.
//
// # Not here yet
//
// Producer state (idempotence, transactions) and compaction are separate
// pieces of work; the segment layout leaves room for their files
// (.snapshot, .txnindex).
package storage
