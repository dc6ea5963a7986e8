package main

import (
	"testing"

	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
)

// lagImage has groups a and b with commits on t-0, t-1 and u-0.
func lagImage(t *testing.T) *metadata.Image {
	t.Helper()
	img, d := metadata.NewImage().Apply([]metadata.Record{
		&metadata.CommitOffsets{Group: "a", Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 1, Offset: 5}, {Topic: "t", Partition: 0, Offset: 10}}},
		&metadata.CommitOffsets{Group: "b", Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 12}, {Topic: "u", Partition: 0, Offset: 1}}},
	})
	if len(d.Skipped) > 0 {
		t.Fatal(d.Skipped[0].Err)
	}
	return img
}

func TestConsumerLag(t *testing.T) {
	img := lagImage(t)
	h := replica.Health{Partitions: []replica.PartitionHealth{
		{Topic: "t", Partition: 0, HighWatermark: 11}, {Topic: "t", Partition: 1, HighWatermark: 5},
	}}
	stats := []group.GroupStat{{ID: "a", State: group.Stable}, {ID: "b", State: group.Empty}}
	for _, tc := range []struct {
		name             string
		max              int
		want             []lagSample
		dropped, unknown int
	}{
		{"all", 100, []lagSample{{"a", "t", 0, 1}, {"a", "t", 1, 0}, {"b", "t", 0, 0}}, 0, 1},
		{"bounded", 2, []lagSample{{"a", "t", 0, 1}, {"a", "t", 1, 0}}, 1, 1},
		{"none", 0, nil, 3, 1},
	} {
		got, dropped, unknown := consumerLag(img, stats, h, nil, tc.max)
		if len(got) != len(tc.want) || dropped != tc.dropped || unknown != tc.unknown {
			t.Errorf("%s: %+v dropped %d unknown %d; want %+v, %d, %d", tc.name, got, dropped, unknown, tc.want, tc.dropped, tc.unknown)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: sample %d = %+v, want %+v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	// A remote partition's HW from its leader counts; a local one wins.
	remote := map[metadata.TopicPartition]int64{{Topic: "u", Partition: 0}: 4, {Topic: "t", Partition: 0}: 99}
	if got, _, unknown := consumerLag(img, stats, h, remote, 100); unknown != 0 || len(got) != 4 || got[3] != (lagSample{"b", "u", 0, 3}) || got[0].lag != 1 {
		t.Errorf("with remote HWs: %+v unknown %d", got, unknown)
	}
	if got := remoteCommitted(img, stats, h); len(got) != 1 || got[0] != (metadata.TopicPartition{Topic: "u", Partition: 0}) {
		t.Errorf("remote committed partitions: %v", got)
	}
	// Only the groups in stats (those coordinated here) count.
	if got, _, _ := consumerLag(img, stats[1:], h, nil, 100); len(got) != 1 || got[0].group != "b" {
		t.Errorf("lag of b alone: %+v", got)
	}
}

func TestGroupCollector(t *testing.T) {
	img := lagImage(t)
	m := newPromMetrics()
	m.reg.MustRegister(newGroupCollector(
		func(*metadata.Image) []group.GroupStat {
			return []group.GroupStat{{ID: "a", State: group.Stable}, {ID: "b", State: group.Stable}, {ID: "c", State: group.PreparingRebalance}}
		},
		func() *metadata.Image { return img },
		func() replica.Health {
			return replica.Health{Partitions: []replica.PartitionHealth{{Topic: "t", Partition: 0, HighWatermark: 20}, {Topic: "t", Partition: 1, HighWatermark: 9}}}
		}, 100, nil))
	m.RebalanceCompleted(0)
	for name, want := range map[string]float64{
		"raftka_consumer_groups":                       3,
		"raftka_consumer_group_lag":                    (20 - 10) + (9 - 5) + (20 - 12),
		"raftka_consumer_group_lag_series_dropped":     0,
		"raftka_consumer_group_lag_unknown_partitions": 1,
		"raftka_group_rebalances_total":                1,
		"raftka_group_rebalance_time_seconds":          1,
	} {
		if got := value(t, m, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
