package storage

import "errors"

// Error kinds. Every error the package returns for bad input or a bad state
// wraps one of these with %w, so callers test with errors.Is and the broker
// maps each kind to one Kafka error code in one place.
var (
	// ErrCorruptBatch: the bytes are not a well-formed v2 record batch (bad
	// magic, CRC mismatch, impossible lengths). Kafka: CORRUPT_MESSAGE.
	ErrCorruptBatch = errors.New("storage: corrupt record batch")
	// ErrInvalidRecord: the batch is well-formed but breaks a rule (offset
	// deltas, record count, producer fields, control batch from a client).
	// Kafka: INVALID_RECORD.
	ErrInvalidRecord = errors.New("storage: invalid record")
	// ErrInvalidTimestamp: a record timestamp is outside the topic's allowed
	// window. Kafka: INVALID_TIMESTAMP.
	ErrInvalidTimestamp = errors.New("storage: invalid timestamp")
	// ErrRecordTooLarge: the batch is larger than max.message.bytes.
	// Kafka: MESSAGE_TOO_LARGE.
	ErrRecordTooLarge = errors.New("storage: record batch too large")
	// ErrOffsetOutOfRange: the offset is below the log start offset or above
	// the log end offset. Kafka: OFFSET_OUT_OF_RANGE.
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	// ErrUnexpectedOffset: a follower append whose first offset is not the log
	// end offset (a gap or an overlap). Kafka: UNKNOWN_SERVER_ERROR on the
	// follower, which truncates and refetches.
	ErrUnexpectedOffset = errors.New("storage: unexpected append offset")
	// ErrClosed: the log or manager was closed. Kafka: KAFKA_STORAGE_ERROR /
	// NOT_LEADER_OR_FOLLOWER depending on context.
	ErrClosed = errors.New("storage: closed")
	// ErrCorruptFile: a file on disk could not be parsed or recovered. The
	// message names the file. Kafka: KAFKA_STORAGE_ERROR.
	ErrCorruptFile = errors.New("storage: corrupt file")
	// ErrLogDirFailed: the log dir holding the log met an I/O error (a
	// failed write, fsync or read, or a dir unusable at start) and is
	// offline; its logs are closed until the broker restarts with it
	// repaired. Kafka: KAFKA_STORAGE_ERROR.
	ErrLogDirFailed = errors.New("storage: log dir failed")
	// ErrLogDirNotFound: a log dir that is not one of log.dirs.
	// Kafka: LOG_DIR_NOT_FOUND.
	ErrLogDirNotFound = errors.New("storage: log dir not found")
	// ErrNoLog: the partition has no log on this broker.
	// Kafka (AlterReplicaLogDirs): REPLICA_NOT_AVAILABLE.
	ErrNoLog = errors.New("storage: no log for the partition here")
	// ErrInvalidConfig: a topic config value out of range.
	// Kafka: INVALID_CONFIG.
	ErrInvalidConfig = errors.New("storage: invalid config")
	// ErrOutOfOrderSequence: an idempotent producer's batch does not
	// continue its sequence (a gap, or a new epoch not starting at 0).
	// Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER.
	ErrOutOfOrderSequence = errors.New("storage: out of order sequence number")
	// ErrInvalidProducerEpoch: an idempotent producer's epoch is older
	// than the latest the partition has seen (a fenced zombie).
	// Kafka: INVALID_PRODUCER_EPOCH.
	ErrInvalidProducerEpoch = errors.New("storage: invalid producer epoch")
	// ErrTransactionCoordinatorFenced: a transaction marker from a
	// coordinator epoch older than the producer's last marker's (a
	// coordinator that lost its slot). Kafka: TRANSACTION_COORDINATOR_FENCED.
	ErrTransactionCoordinatorFenced = errors.New("storage: transaction coordinator fenced")
	// ErrTxnVerificationLost: a transactional batch verified with the
	// coordinator (AppendOptions.TxnGuard) whose producer had a marker
	// appended since, which may have ended the transaction verified.
	// Kafka: INVALID_TXN_STATE (its verification guard).
	ErrTxnVerificationLost = errors.New("storage: transaction ended after verification")
)
