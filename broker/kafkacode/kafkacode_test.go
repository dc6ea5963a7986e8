package kafkacode

import (
	"context"
	"fmt"
	"testing"

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
