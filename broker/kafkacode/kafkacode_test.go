package kafkacode

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestOf(t *testing.T) {
	cases := []struct {
		err  error
		want *kerr.Error
	}{
		{kerr.NotLeaderForPartition, kerr.NotLeaderForPartition},
		{fmt.Errorf("wrapped: %w", kerr.FencedLeaderEpoch), kerr.FencedLeaderEpoch},
		{context.DeadlineExceeded, kerr.RequestTimedOut},
		{fmt.Errorf("x: %w", storage.ErrOffsetOutOfRange), kerr.OffsetOutOfRange},
		{storage.ErrCorruptBatch, kerr.CorruptMessage},
		{storage.ErrRecordTooLarge, kerr.MessageTooLarge},
		{storage.ErrClosed, kerr.NotLeaderForPartition},
		{storage.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
		{storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
		{fmt.Errorf("something else"), kerr.UnknownServerError},
	}
	for _, c := range cases {
		if got := Of(c.err); got != c.want.Code {
			t.Errorf("Of(%v) = %d, want %s (%d)", c.err, got, c.want.Message, c.want.Code)
		}
	}
	if Of(nil) != 0 {
		t.Error("Of(nil) must be 0")
	}
}

// TestMapping is the whole merged table, each kind wrapped as its package
// returns it, through both entry points: they differ only for an error no
// kind names.
func TestMapping(t *testing.T) {
	cases := []struct {
		err  error
		want *kerr.Error
	}{
		// passed through, and context
		{kerr.NotController, kerr.NotController},
		{fmt.Errorf("rpc: %w", kerr.StaleBrokerEpoch), kerr.StaleBrokerEpoch},
		{context.Canceled, kerr.RequestTimedOut},
		{fmt.Errorf("waiting: %w", context.DeadlineExceeded), kerr.RequestTimedOut},
		// storage
		{storage.ErrCorruptBatch, kerr.CorruptMessage},
		{storage.ErrInvalidRecord, kerr.InvalidRecord},
		{storage.ErrInvalidTimestamp, kerr.InvalidTimestamp},
		{storage.ErrRecordTooLarge, kerr.MessageTooLarge},
		{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
		{storage.ErrClosed, kerr.NotLeaderForPartition},
		{storage.ErrCorruptFile, kerr.KafkaStorageError},
		{storage.ErrLogDirFailed, kerr.KafkaStorageError},
		{storage.ErrLogDirNotFound, kerr.LogDirNotFound},
		{storage.ErrNoLog, kerr.ReplicaNotAvailable},
		{storage.ErrInvalidConfig, kerr.InvalidConfig},
		{storage.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
		{storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
		{storage.ErrTransactionCoordinatorFenced, kerr.TransactionCoordinatorFenced},
		{storage.ErrTxnVerificationLost, kerr.InvalidTxnState},
		// metadata
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
		{metadata.ErrNotLeader, kerr.InvalidRequest},
		{metadata.ErrIneligibleReplica, kerr.IneligibleReplica},
		{metadata.ErrInvalidRequest, kerr.InvalidRequest},
		{metadata.ErrElectionNotNeeded, kerr.ElectionNotNeeded},
		{metadata.ErrPreferredLeaderNotAvailable, kerr.PreferredLeaderNotAvailable},
		{metadata.ErrLeaderNotAvailable, kerr.EligibleLeadersNotAvailable},
		{metadata.ErrInvalidTxnState, kerr.InvalidTxnState},
		{metadata.ErrProducerFenced, kerr.ProducerFenced},
		{metadata.ErrTxnCoordinatorFenced, kerr.NotCoordinator},
		{metadata.ErrGroupCoordinatorFenced, kerr.NotCoordinator},
		{metadata.ErrUnacceptableCredential, kerr.UnacceptableCredential},
		{metadata.ErrUnsupportedSaslMechanism, kerr.UnsupportedSaslMechanism},
		{metadata.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress},
		{metadata.ErrUnsupportedByMetadataVersion, kerr.UnsupportedVersion},
	}
	tested := make(map[error]bool)
	for _, c := range cases {
		tested[c.err] = true
		err := fmt.Errorf("op: %w", c.err)
		if got := Of(err); got != c.want.Code {
			t.Errorf("Of(%v) = %s, want %s", err, kerr.ErrorForCode(got), c.want)
		}
		if got := OfDecision(err); got != c.want.Code {
			t.Errorf("OfDecision(%v) = %s, want %s", err, kerr.ErrorForCode(got), c.want)
		}
	}
	for _, k := range kinds {
		if !tested[k.err] {
			t.Errorf("kind %v has no case here", k.err)
		}
	}

	unnamed := errors.New("decision: no such thing")
	if got := Of(unnamed); got != kerr.UnknownServerError.Code {
		t.Errorf("Of(unnamed) = %s, want UNKNOWN_SERVER_ERROR", kerr.ErrorForCode(got))
	}
	if got := OfDecision(unnamed); got != kerr.InvalidRequest.Code {
		t.Errorf("OfDecision(unnamed) = %s, want INVALID_REQUEST", kerr.ErrorForCode(got))
	}
	if OfDecision(nil) != 0 {
		t.Error("OfDecision(nil) must be 0")
	}
}

// TestKindsDistinct: a kind listed twice would make one of its lines dead.
func TestKindsDistinct(t *testing.T) {
	seen := make(map[error]bool)
	for _, k := range kinds {
		if seen[k.err] {
			t.Errorf("%v listed twice", k.err)
		}
		seen[k.err] = true
	}
}
