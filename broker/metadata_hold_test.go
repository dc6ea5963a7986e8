package broker

import (
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type lostAt map[int32]time.Time

func (l lostAt) AnyUnreachable() bool { return len(l) > 0 }
func (l lostAt) UnreachableSince(id int32) (time.Time, bool) {
	t, ok := l[id]
	return t, ok
}

// TestLostLeaderHold is the Metadata hold's decision on a fake clock:
// clusterImage has "orders" partition 0 led by broker 1, partition 2 by 4,
// and broker 3 fenced.
func TestLostLeaderHold(t *testing.T) {
	img := clusterImage(t, 9001)
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	orders := []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	offsets := []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("__consumer_offsets")}}
	byID := []kmsg.MetadataRequestTopic{{TopicID: ordersID}}
	for _, tc := range []struct {
		name   string
		lost   lostAt
		topics []kmsg.MetadataRequestTopic
		until  time.Duration // from now; 0: no hold
	}{
		{"nothing lost", lostAt{}, orders, 0},
		{"a leader lost 100 ms ago", lostAt{1: now.Add(-100 * time.Millisecond)}, orders, leaderLossHold - 100*time.Millisecond},
		{"by topic id", lostAt{4: now.Add(-time.Second)}, byID, leaderLossHold - time.Second},
		{"every topic", lostAt{1: now.Add(-time.Second)}, nil, leaderLossHold - time.Second},
		{"the later of two losses", lostAt{1: now.Add(-2 * time.Second), 4: now.Add(-time.Second)}, orders, leaderLossHold - time.Second},
		{"lost longer ago than the hold", lostAt{1: now.Add(-leaderLossHold)}, orders, 0},
		{"lost broker leads nothing asked for", lostAt{4: now}, offsets, 0},
		{"lost broker leads nothing at all", lostAt{2: now}, orders, 0},
		{"the image fenced it already", lostAt{3: now}, orders, 0},
		{"unknown topic", lostAt{1: now}, []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("nope")}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			until, hold := lostLeader(img, tc.topics, tc.lost, now)
			if hold != (tc.until != 0) {
				t.Fatalf("hold = %v, want %v", hold, tc.until != 0)
			}
			if hold && !until.Equal(now.Add(tc.until)) {
				t.Fatalf("until %v, want %v", until.Sub(now), tc.until)
			}
		})
	}
	// A fenced leader ends the hold: the image after the controller's
	// fence of broker 1 (and the election) holds nothing.
	after, _ := img.Apply([]metadata.Record{&metadata.FenceBroker{BrokerID: 1, BrokerEpoch: 1}})
	if _, hold := lostLeader(after, orders, lostAt{1: now}, now); hold {
		t.Fatal("held after the lost leader was fenced")
	}
}
