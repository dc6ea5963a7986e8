package kafkacode

import (
	"context"
	"errors"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

// kind is one error kind and the code a response carries for it.
type kind struct {
	err  error
	code *kerr.Error
}

// kinds is the table. Packages return these sentinels wrapped with %w; a
// kind is added here when it first reaches a response. No error wraps
// more than one of them, so the order only matters for reading.
var kinds = []kind{
	// storage: a partition's log.
	{storage.ErrCorruptBatch, kerr.CorruptMessage},
	{storage.ErrInvalidRecord, kerr.InvalidRecord},
	{storage.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{storage.ErrRecordTooLarge, kerr.MessageTooLarge},
	{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	// The log went away under the request: the partition moved or was
	// deleted; the client refreshes metadata and retries.
	{storage.ErrClosed, kerr.NotLeaderForPartition},
	{storage.ErrCorruptFile, kerr.KafkaStorageError},
	{storage.ErrLogDirFailed, kerr.KafkaStorageError},
	{storage.ErrLogDirNotFound, kerr.LogDirNotFound},
	{storage.ErrNoLog, kerr.ReplicaNotAvailable},
	{storage.ErrInvalidConfig, kerr.InvalidConfig},
	{storage.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	// Since 2.7 Kafka answers a produce with a stale epoch so rather than
	// PRODUCER_FENCED, which clients treat as fatal.
	{storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{storage.ErrTxnVerificationLost, kerr.InvalidTxnState},
	{storage.ErrTransactionCoordinatorFenced, kerr.TransactionCoordinatorFenced},

	// metadata: the controller's rules for topics, brokers, partitions.
	{metadata.ErrTopicExists, kerr.TopicAlreadyExists},
	{metadata.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{metadata.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{metadata.ErrInvalidTopicName, kerr.InvalidTopicException},
	{metadata.ErrTopicNameCollision, kerr.InvalidTopicException},
	{metadata.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{metadata.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{metadata.ErrInvalidPartitions, kerr.InvalidPartitions},
	{metadata.ErrInvalidConfig, kerr.InvalidConfig},
	{metadata.ErrUnknownBroker, kerr.BrokerIDNotRegistered},
	{metadata.ErrStaleBrokerEpoch, kerr.StaleBrokerEpoch},
	{metadata.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{metadata.ErrInvalidUpdateVersion, kerr.InvalidUpdateVersion},
	// Kafka's controller answers an AlterPartition from a non-leader so
	// (ReplicationControlManager.validateAlterPartitionData).
	{metadata.ErrNotLeader, kerr.InvalidRequest},
	{metadata.ErrIneligibleReplica, kerr.IneligibleReplica},
	{metadata.ErrInvalidRequest, kerr.InvalidRequest},
	{metadata.ErrElectionNotNeeded, kerr.ElectionNotNeeded},
	{metadata.ErrPreferredLeaderNotAvailable, kerr.PreferredLeaderNotAvailable},
	{metadata.ErrLeaderNotAvailable, kerr.EligibleLeadersNotAvailable},
	{metadata.ErrUnacceptableCredential, kerr.UnacceptableCredential},
	{metadata.ErrUnsupportedSaslMechanism, kerr.UnsupportedSaslMechanism},
	// metadata: the rules of transaction state writes.
	{metadata.ErrInvalidTxnState, kerr.InvalidTxnState},
	{metadata.ErrProducerFenced, kerr.ProducerFenced},
	// A coordinator that lost its slot: Kafka's log append fails then
	// with NOT_COORDINATOR, and the client finds the new one.
	{metadata.ErrTxnCoordinatorFenced, kerr.NotCoordinator},
	{metadata.ErrGroupCoordinatorFenced, kerr.NotCoordinator},
	{metadata.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress},
	// A write the finalized metadata.version does not allow, as Kafka
	// answers an API whose records the level lacks.
	{metadata.ErrUnsupportedByMetadataVersion, kerr.UnsupportedVersion},
}

// lookup is the code of err's kind, if the table or the protocol names it.
func lookup(err error) (int16, bool) {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		// A handler or a controller RPC already speaks the protocol.
		return ke.Code, true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// Kafka answers a request that ran out of time (or was abandoned
		// with its connection or the broker) as timed out; clients retry.
		return kerr.RequestTimedOut.Code, true
	}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.code.Code, true
		}
	}
	return 0, false
}

// Of turns an error into the Kafka error code for a broker response field.
//
// Unknown errors become UNKNOWN_SERVER_ERROR, which clients treat as
// retriable-by-nobody and log; that is the right answer for a bug and the
// wrong one for an expected condition, so expected kinds must be listed.
func Of(err error) int16 {
	if err == nil {
		return 0
	}
	if code, ok := lookup(err); ok {
		return code
	}
	return kerr.UnknownServerError.Code
}

// OfDecision turns an error from a controller decision into the Kafka error
// code for its response. A decision fails only on what was asked, so an
// error no kind names is the request's: INVALID_REQUEST.
func OfDecision(err error) int16 {
	if err == nil {
		return 0
	}
	if code, ok := lookup(err); ok {
		return code
	}
	return kerr.InvalidRequest.Code
}
