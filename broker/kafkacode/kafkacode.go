package kafkacode

import (
	"context"
	"errors"

	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Of turns an error into the Kafka error code for a response field.
// Packages return sentinel kinds wrapped with %w; a case is added here when
// a kind first reaches a response, so the mapping stays in one table-tested
// function.
//
// Unknown errors become UNKNOWN_SERVER_ERROR, which clients treat as
// retriable-by-nobody and log; that is the right answer for a bug and the
// wrong one for an expected condition, so expected kinds must be listed.
func Of(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		// A handler or a controller RPC already speaks the protocol.
		return ke.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// Kafka answers a request that ran out of time (or was abandoned
		// with its connection or the broker) as timed out; clients retry.
		return kerr.RequestTimedOut.Code
	case errors.Is(err, storage.ErrCorruptBatch):
		return kerr.CorruptMessage.Code
	case errors.Is(err, storage.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, storage.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, storage.ErrRecordTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, storage.ErrClosed):
		// The log went away under the request: the partition moved or was
		// deleted; the client refreshes metadata and retries.
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, storage.ErrCorruptFile):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, storage.ErrInvalidConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, storage.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, storage.ErrInvalidProducerEpoch):
		// Since 2.7 Kafka answers a produce with a stale epoch so rather
		// than PRODUCER_FENCED, which clients treat as fatal.
		return kerr.InvalidProducerEpoch.Code
	default:
		return kerr.UnknownServerError.Code
	}
}
