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
		{"out of order sequence", fmt.Errorf("append: %w", storage.ErrOutOfOrderSequence), kerr.OutOfOrderSequenceNumber.Code},
		{"stale producer epoch", storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch.Code},
	}
	for _, tt := range tests {
		if got := errorCode(tt.err); got != tt.want {
			t.Errorf("%s: errorCode = %d, want %d", tt.name, got, tt.want)
		}
	}
}
