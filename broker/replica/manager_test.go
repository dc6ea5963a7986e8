package replica

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestPartitionMetadataAndRemoval(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 2})
	id := c.createTopic("gone", 1, 1, 2)
	p := c.partition(2, "gone")
	dir := p.Log().Dir()
	got, ok, err := storage.ReadPartitionMetadata(filepath.Join(dir, storage.PartitionMetadataFile))
	if err != nil || !ok || got != storage.TopicID(id) {
		t.Fatalf("partition.metadata: %v %v %v, want %v", got, ok, err, storage.TopicID(id))
	}
	c.ctrl.apply(t, &metadata.RemoveTopic{TopicID: id})
	for _, b := range []int32{1, 2} {
		if _, err := c.ms[b].Partition("gone", 0); !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("broker %d after delete: %v", b, err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("log dir of a deleted topic still there: %v", err)
	}
	if st := p.State(); st.Role != RoleNone {
		t.Fatalf("removed partition still %v", st.Role)
	}
}

func TestReassignmentAwayDeletesLog(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 3})
	id := c.createTopic("moving", 1, 1, 2)
	if _, err := produce(t, c, 1, "moving", -1, "a"); err != nil {
		t.Fatal(err)
	}
	dir := c.partition(2, "moving").Log().Dir()
	c.ctrl.apply(t, &metadata.PartitionChange{TopicID: id, Partition: 0, Leader: metadata.NoLeaderChange, Replicas: []int32{1, 2, 3}})
	waitFor(t, "broker 3 to catch up", func() bool { return c.partition(3, "moving").Log().LogEndOffset() == 1 })
	c.ctrl.apply(t, &metadata.PartitionChange{TopicID: id, Partition: 0, Leader: metadata.NoLeaderChange, Replicas: []int32{1, 3}, ISR: []int32{1, 3}})
	if _, err := c.ms[2].Partition("moving", 0); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("broker 2 after reassignment: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("log of a partition moved away still there: %v", err)
	}
	if _, err := produce(t, c, 1, "moving", -1, "b"); err != nil {
		t.Fatal(err)
	}
	c.sameBelow("moving", 2, 1, 3)
}

func TestRecreatedTopicGetsAFreshLog(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 1})
	id := c.createTopic("again", 1, 1)
	if _, err := produce(t, c, 1, "again", -1, "old"); err != nil {
		t.Fatal(err)
	}
	// Deleted and re-created in one batch: the delta removes the old id and
	// creates the new one, under the same name.
	parts := metadata.NewPartitions(0, [][]int32{{1}}, c.ctrl.image().UsableBrokers())
	newID := [16]byte{9, 9}
	c.ctrl.apply(t, &metadata.RemoveTopic{TopicID: id}, &metadata.CreateTopic{Name: "again", ID: newID, Partitions: parts})
	p := c.partition(1, "again")
	if p.TopicID() != newID || p.Log().LogEndOffset() != 0 {
		t.Fatalf("re-created topic: id %v, LEO %d", p.TopicID(), p.Log().LogEndOffset())
	}
}

func TestMinISRFollowsTopicConfig(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 2})
	c.createTopic("cfg", 1, 1, 2)
	c.stop(2)
	c.ctrl.apply(t, &metadata.Config{ResourceType: metadata.ConfigResourceTopic, ResourceName: "cfg", Key: "min.insync.replicas", Value: "3"})
	if _, _, err := c.partition(1, "cfg").AppendAsLeader(batchOf("x"), -1); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("after raising min.insync.replicas above the ISR: %v", err)
	}
}

// A restarted broker keeps its HW (replication-offset-checkpoint) and
// leader epochs, and leads again from where it stopped.
func TestRestartKeepsHWAndEpochs(t *testing.T) {
	dir := t.TempDir()
	ctrl := newController(t)
	ctrl.apply(t, &metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 5, Endpoints: []metadata.Endpoint{{Listener: listener, Host: "127.0.0.1", Port: 1}}})
	parts := metadata.NewPartitions(0, [][]int32{{1}}, ctrl.image().UsableBrokers())
	ctrl.apply(t, &metadata.CreateTopic{Name: "r", ID: [16]byte{7}, Partitions: parts})
	start := func() (*Manager, *storage.Manager) {
		sm, _, err := storage.OpenManager(storage.ManagerOptions{Dirs: []string{dir}, DisableScheduler: true})
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewManager(Config{BrokerID: 1, Storage: sm, TopicConfig: topicConfigFromImage, Controller: ctrl,
			Dial: NewInmemNetwork().Dialer(1), InterBrokerListener: listener, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		m.Apply(ctrl.image(), nil, true)
		return m, sm
	}
	m, sm := start()
	p, err := m.Partition("r", 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, ack, err := p.AppendAsLeader(batchOf("v"), -1)
		if err != nil {
			t.Fatal(err)
		}
		if err := ack.Wait(context.Background(), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	m.Close()
	if err := sm.Close(); err != nil {
		t.Fatal(err)
	}
	m, sm = start()
	defer sm.Close()
	defer m.Close()
	p, err = m.Partition("r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.State(); st.Role != RoleLeader || st.HighWatermark != 3 || st.LogEndOffset != 3 {
		t.Fatalf("after restart: %+v", st)
	}
	if eo, err := p.OffsetForLeaderEpoch(-1, 0); err != nil || eo.Epoch != 0 || eo.EndOffset != 3 {
		t.Fatalf("OffsetForLeaderEpoch(0) after restart: %+v %v", eo, err)
	}
	if _, err := p.OffsetForLeaderEpoch(1, 0); !errors.Is(err, kerr.UnknownLeaderEpoch) {
		t.Fatalf("OffsetForLeaderEpoch with a future current epoch: %v", err)
	}
}

func TestListOffsets(t *testing.T) {
	c := newCluster(t, clusterOpts{n: 1})
	c.createTopic("lo", 1, 1)
	p := c.partition(1, "lo")
	now := time.Now().UnixMilli()
	for i, ts := range []int64{now - 3000, now - 2000, now - 1000} {
		b := batchOfAt(ts, "v")
		if _, _, err := p.AppendAsLeader(b, 1); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	// A search by time answers the found record's own timestamp (Kafka's
	// TimestampAndOffset), not the one asked for.
	tests := []struct {
		ts     int64
		want   int64
		wantTs int64
	}{
		{EarliestTimestamp, 0, -1},
		{LatestTimestamp, 3, -1},
		{MaxTimestamp, 2, now - 1000},
		{now - 2500, 1, now - 2000},
		{now - 2000, 1, now - 2000},
		{now - 3500, 0, now - 3000},
		{now + 1000, -1, -1},
	}
	for _, tt := range tests {
		got, err := p.ListOffsets(-1, tt.ts, ReadUncommitted)
		if err != nil || got.Offset != tt.want || got.Timestamp != tt.wantTs {
			t.Errorf("ListOffsets(%d) = %+v, %v; want offset %d timestamp %d", tt.ts, got, err, tt.want, tt.wantTs)
		}
		if err == nil && got.Offset >= 0 && got.LeaderEpoch != 0 {
			t.Errorf("ListOffsets(%d) leader epoch %d, want 0", tt.ts, got.LeaderEpoch)
		}
	}
	if _, err := p.ListOffsets(3, LatestTimestamp, ReadUncommitted); !errors.Is(err, kerr.UnknownLeaderEpoch) {
		t.Fatalf("future epoch: %v", err)
	}
	if _, err := p.ListOffsets(-1, -9, ReadUncommitted); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("bad timestamp: %v", err)
	}
}

// A log left on disk by an earlier topic of the same name (deleted while
// this broker was down) is deleted, not served as the new topic's.
func TestStaleLogOnDiskIsReplaced(t *testing.T) {
	dir := t.TempDir()
	sm, _, err := storage.OpenManager(storage.ManagerOptions{Dirs: []string{dir}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := sm.GetOrCreate("twice", 0, storage.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := storage.WritePartitionMetadata(filepath.Join(l.Dir(), storage.PartitionMetadataFile), storage.TopicID{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(batchOf("from the old topic"), storage.AppendOptions{LeaderEpoch: 0}); err != nil {
		t.Fatal(err)
	}
	ctrl := newController(t)
	ctrl.apply(t, &metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 5})
	parts := metadata.NewPartitions(0, [][]int32{{1}}, ctrl.image().UsableBrokers())
	ctrl.apply(t, &metadata.CreateTopic{Name: "twice", ID: [16]byte{2}, Partitions: parts})
	m, err := NewManager(Config{BrokerID: 1, Storage: sm, TopicConfig: topicConfigFromImage, Controller: ctrl,
		Dial: NewInmemNetwork().Dialer(1), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	defer m.Close()
	m.Apply(ctrl.image(), nil, true)
	p, err := m.Partition("twice", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Log().LogEndOffset() != 0 {
		t.Fatalf("the old topic's records are served: LEO %d", p.Log().LogEndOffset())
	}
	id, ok, err := storage.ReadPartitionMetadata(filepath.Join(p.Log().Dir(), storage.PartitionMetadataFile))
	if err != nil || !ok || id != (storage.TopicID{2}) {
		t.Fatalf("partition.metadata: %v %v %v", id, ok, err)
	}
}

// A topic's config is resolved once per image, however many of its
// partitions an Apply touches, and again for the next image (where a
// config change would be).
func TestTopicConfigOncePerTopicAndImage(t *testing.T) {
	sm, _, err := storage.OpenManager(storage.ManagerOptions{Dirs: []string{t.TempDir()}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sm.Close() })
	var calls atomic.Int32
	m, err := NewManager(Config{
		BrokerID: 1, Storage: sm, Controller: &fakeAlterController{}, Dial: NewInmemNetwork().Dialer(1), Logger: zerolog.Nop(),
		TopicConfig: func(img *metadata.Image, topic string) (TopicConfig, error) {
			calls.Add(1)
			return topicConfigFromImage(img, topic)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	mk := func(minISR string) *metadata.Image {
		img, d := metadata.NewImage().Apply([]metadata.Record{
			&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 1},
			&metadata.CreateTopic{Name: "t", ID: [16]byte{'t'}, Configs: map[string]string{"min.insync.replicas": minISR},
				Partitions: []metadata.PartitionRegistration{{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
		})
		if len(d.Skipped) > 0 {
			t.Fatal(d.Skipped[0].Err)
		}
		return img
	}
	one, two := mk("2"), mk("3")
	for range 1000 {
		if tc := m.topicConfig(one, "t"); tc.MinInsyncReplicas != 2 {
			t.Fatalf("min ISR %d, want 2", tc.MinInsyncReplicas)
		}
		m.topicConfig(one, "u")
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("TopicConfig called %d times for two topics of one image, want 2", n)
	}
	if tc := m.topicConfig(two, "t"); tc.MinInsyncReplicas != 3 {
		t.Fatalf("next image: min ISR %d, want 3", tc.MinInsyncReplicas)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("TopicConfig called %d times after a new image, want 3", n)
	}
}
