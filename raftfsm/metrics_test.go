package raftfsm

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type recordingObserver struct {
	mu                            sync.Mutex
	committed, applied, snapshots int
	snapshotBytes                 int64
	clean, unclean                int
}

func (o *recordingObserver) Committed(time.Duration) { o.mu.Lock(); o.committed++; o.mu.Unlock() }
func (o *recordingObserver) Applied(time.Duration)   { o.mu.Lock(); o.applied++; o.mu.Unlock() }
func (o *recordingObserver) SnapshotPersisted(b int64, _ time.Duration) {
	o.mu.Lock()
	o.snapshots++
	o.snapshotBytes = b
	o.mu.Unlock()
}
func (o *recordingObserver) LeaderElected(unclean bool, _ time.Duration) {
	o.mu.Lock()
	if unclean {
		o.unclean++
	} else {
		o.clean++
	}
	o.mu.Unlock()
}

// The observer hears of each commit and apply and of a snapshot with its
// size; RaftStats reports the term, the indexes and the leader change that
// made the single voter leader.
func TestObserverAndRaftStats(t *testing.T) {
	obs := &recordingObserver{}
	n, err := StartInMemory(Config{NodeID: 1, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obs.mu.Lock()
	c0, a0 := obs.committed, obs.applied
	obs.mu.Unlock()
	idx, err := n.CommitRecords(ctx, &metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	// The controller's own start-up commits may still be landing: at
	// least ours is counted.
	if obs.committed < c0+1 || obs.applied < a0+1 || obs.snapshots != 1 || obs.snapshotBytes <= 24 {
		t.Errorf("observer: %d commits (want >= %d), %d applies (want >= %d), %d snapshots of %d bytes", obs.committed, c0+1, obs.applied, a0+1, obs.snapshots, obs.snapshotBytes)
	}
	obs.mu.Unlock()
	st := n.RaftStats()
	if st.Term < 1 || st.CommitIndex < idx || st.AppliedIndex < idx || st.LastLogIndex < idx || st.LastSnapshotIndex < idx || st.LeaderID != 1 {
		t.Errorf("stats %+v after committing index %d", st, idx)
	}
	deadline := time.Now().Add(5 * time.Second)
	for n.RaftStats().LeaderChanges < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := n.RaftStats().LeaderChanges; got != 1 {
		t.Errorf("%d leader changes seen, want 1", got)
	}
}

func TestObserveElections(t *testing.T) {
	id := [16]byte{7}
	before, _ := metadata.NewImage().Apply([]metadata.Record{&metadata.CreateTopic{Name: "t", ID: id, Partitions: []metadata.PartitionRegistration{
		{Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1},
		{Partition: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1},
		{Partition: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
	}}})
	for _, tc := range []struct {
		name           string
		recs           []metadata.Record
		clean, unclean int
	}{
		{"to an ISR member", []metadata.Record{&metadata.PartitionChange{TopicID: id, Partition: 0, Leader: 2}}, 1, 0},
		{"outside the ISR", []metadata.Record{&metadata.PartitionChange{TopicID: id, Partition: 1, Leader: 3}}, 0, 1},
		{"ISR change only", []metadata.Record{&metadata.PartitionChange{TopicID: id, Partition: 2, Leader: metadata.NoLeaderChange, ISR: []int32{1, 2}}}, 0, 0},
		{"same leader", []metadata.Record{&metadata.PartitionChange{TopicID: id, Partition: 2, Leader: 1}}, 0, 0},
		{"leader lost", []metadata.Record{&metadata.PartitionChange{TopicID: id, Partition: 2, Leader: metadata.NoLeader}}, 0, 0},
		{"not a partition change", []metadata.Record{&metadata.RegisterBroker{BrokerID: 4}}, 0, 0},
		{"unknown partition", []metadata.Record{&metadata.PartitionChange{TopicID: id, Partition: 9, Leader: 2}}, 0, 0},
	} {
		obs := &recordingObserver{}
		observeElections(obs, before, tc.recs, time.Millisecond)
		if obs.clean != tc.clean || obs.unclean != tc.unclean {
			t.Errorf("%s: %d clean, %d unclean; want %d, %d", tc.name, obs.clean, obs.unclean, tc.clean, tc.unclean)
		}
	}
}

// Elections through the controller's real path (ElectLeaders, decided,
// committed, applied) reach the observer as clean or unclean.
func TestObserverHearsElections(t *testing.T) {
	obs := &recordingObserver{}
	cfg := inmemConfig(1)
	cfg.Observer = obs
	n, err := StartInMemory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := [16]byte{9}
	if _, err := n.CommitRecords(ctx,
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 1},
		&metadata.RegisterBroker{BrokerID: 2, BrokerEpoch: 2},
		&metadata.RegisterBroker{BrokerID: 3, BrokerEpoch: 3, Fenced: true},
		&metadata.CreateTopic{Name: "e", ID: id, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2},              // preferred: to 1, clean
			{Partition: 1, Replicas: []int32{3, 2}, ISR: []int32{3}, Leader: metadata.NoLeader}, // unclean: to 2
		}},
	); err != nil {
		t.Fatal(err)
	}
	elect := func(typ int8, p int32) {
		t.Helper()
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version, req.ElectionType = 2, typ
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = "e", []int32{p}
		req.Topics = append(req.Topics, rt)
		resp, err := n.Client().ElectLeaders(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("election type %d of partition %d: code %d", typ, p, code)
		}
	}
	elect(0, 0)
	elect(1, 1)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.clean != 1 || obs.unclean != 1 {
		t.Fatalf("%d clean and %d unclean elections observed, want 1 and 1", obs.clean, obs.unclean)
	}
}
