package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestErrorCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int16
	}{
		{"nil", nil, 0},
		{"deadline", context.DeadlineExceeded, kerr.RequestTimedOut.Code},
		{"canceled wrapped", fmt.Errorf("waiting for acks: %w", context.Canceled), kerr.RequestTimedOut.Code},
		{"kerr", kerr.NotLeaderForPartition, kerr.NotLeaderForPartition.Code},
		{"kerr wrapped", fmt.Errorf("controller: %w", kerr.TopicAlreadyExists), kerr.TopicAlreadyExists.Code},
		{"unknown", errors.New("boom"), kerr.UnknownServerError.Code},
		{"corrupt batch", fmt.Errorf("append: %w", storage.ErrCorruptBatch), kerr.CorruptMessage.Code},
		{"invalid record", storage.ErrInvalidRecord, kerr.InvalidRecord.Code},
		{"invalid timestamp", storage.ErrInvalidTimestamp, kerr.InvalidTimestamp.Code},
		{"too large", storage.ErrRecordTooLarge, kerr.MessageTooLarge.Code},
		{"out of range", storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange.Code},
		{"kerr wins over storage", fmt.Errorf("%w: %w", kerr.OffsetOutOfRange, storage.ErrClosed), kerr.OffsetOutOfRange.Code},
		{"closed log", storage.ErrClosed, kerr.NotLeaderForPartition.Code},
		{"corrupt file", storage.ErrCorruptFile, kerr.KafkaStorageError.Code},
		{"invalid config", storage.ErrInvalidConfig, kerr.InvalidConfig.Code},
		{"out of order sequence", fmt.Errorf("append: %w", storage.ErrOutOfOrderSequence), kerr.OutOfOrderSequenceNumber.Code},
		{"stale producer epoch", storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch.Code},
	}
	for _, tt := range tests {
		if got := errorCode(tt.err); got != tt.want {
			t.Errorf("%s: errorCode = %d, want %d", tt.name, got, tt.want)
		}
	}
}
