package broker

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// laggingMetadata is a node's metadata as raftfsm.Node serves it with
// serving held: Current is the image the replica manager has applied
// (served by feed), which may lag the FSM's newest (latest) while the
// replica manager works, and pending are entries its Raft log holds but has
// not applied. CatchUp applies pending and waits for the served image to
// reach the FSM's, as raftfsm.Node.CatchUp does. A request that meets a
// lagging node came from a client that another node told of a leadership.
type laggingMetadata struct {
	mu          sync.Mutex
	latest      *metadata.Image
	latestIndex uint64
	served      *metadata.Image
	servedIndex uint64
	pending     []metadata.Record
	publish     func(img *metadata.Image, delta *metadata.Delta, index uint64)
	catchUps    atomic.Int32
	// onWait runs when a CatchUp starts waiting for the served image.
	onWait func()
}

func (m *laggingMetadata) Current() (*metadata.Image, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.served, m.servedIndex
}

func (m *laggingMetadata) serve(img *metadata.Image, index uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if index >= m.servedIndex {
		m.served, m.servedIndex = img, index
	}
}

func (m *laggingMetadata) CatchUp(ctx context.Context) bool {
	m.catchUps.Add(1)
	m.mu.Lock()
	recs := m.pending
	m.pending = nil
	m.mu.Unlock()
	waited := len(recs) > 0
	if waited {
		m.commit(recs...)
	}
	m.mu.Lock()
	behind, latest := m.servedIndex < m.latestIndex, m.latestIndex
	m.mu.Unlock()
	if !behind {
		return waited
	}
	if m.onWait != nil {
		m.onWait()
	}
	for {
		if _, idx := m.Current(); idx >= latest {
			return true
		}
		select {
		case <-ctx.Done():
			return true
		case <-time.After(time.Millisecond):
		}
	}
}

// appendOnly puts recs in the Raft log without applying them: a follower
// that has the entry but has not yet learnt that it is committed.
func (m *laggingMetadata) appendOnly(recs ...metadata.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending = append(m.pending, recs...)
}

// commit applies recs as one Raft entry in the FSM and publishes it to the
// feed (which serves it once the replica manager has applied it).
func (m *laggingMetadata) commit(recs ...metadata.Record) {
	m.mu.Lock()
	img, delta := m.latest.Apply(recs)
	m.latest, m.latestIndex = img, m.latestIndex+1
	index := m.latestIndex
	m.mu.Unlock()
	m.publish(img, delta, index)
}

type heldEvent struct {
	img   *metadata.Image
	delta *metadata.Delta
	index uint64
}

// lagFixture is broker 1 serving the partition APIs from a real
// replica.Manager that applies the published metadata only when feed runs
// (or at once while eager); the image is served once applied. Broker 2 is
// registered but never runs.
type lagFixture struct {
	t      *testing.T
	md     *laggingMetadata
	rm     *replica.Manager
	srv    *Server
	client *partFixture // only its request helpers (call, produce)

	mu    sync.Mutex
	eager bool
	held  []heldEvent
	feeds sync.WaitGroup
}

func newLagFixture(t *testing.T) *lagFixture {
	t.Helper()
	dir := t.TempDir()
	sm, rm := newTestReplicas(t, dir)
	f := &lagFixture{t: t, rm: rm, eager: true}
	f.md = &laggingMetadata{latest: metadata.NewImage(), served: metadata.NewImage(), publish: f.published}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := newServer(Options{
		Logger: testLogger(t), Listeners: []Listener{{Name: "CLIENT", Listener: ln}}, NodeID: 1,
		Deps:       Deps{Metadata: f.md, Replicas: rm},
		Partitions: PartitionOptions{LogDirs: []string{dir}},
	}, defaultAPIs)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	f.client = &partFixture{t: t, addr: ln.Addr().String()}
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
		f.feeds.Wait()
		_ = rm.Close()
		_ = sm.Close()
	})
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	f.md.commit(
		&metadata.ClusterID{ID: "cluster-lag"},
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 1, Endpoints: []metadata.Endpoint{{Listener: "CLIENT", Host: "127.0.0.1", Port: port}}},
		&metadata.RegisterBroker{BrokerID: 2, BrokerEpoch: 2, Endpoints: []metadata.Endpoint{{Listener: "CLIENT", Host: "127.0.0.1", Port: 1}}},
	)
	return f
}

// published is the metadata subscription: it applies at once while eager,
// else holds the event for feed.
func (f *lagFixture) published(img *metadata.Image, delta *metadata.Delta, index uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range delta.Skipped {
		f.t.Errorf("record %d (%T) skipped: %v", s.Index, s.Record, s.Err)
	}
	f.held = append(f.held, heldEvent{img, delta, index})
	if f.eager {
		f.feedLocked()
	}
}

// lag holds the events published from now on until feed.
func (f *lagFixture) lag() {
	f.mu.Lock()
	f.eager = false
	f.mu.Unlock()
}

// feed applies the held events to the replica manager, in order, and
// serves each.
func (f *lagFixture) feed() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.feedLocked()
}

func (f *lagFixture) feedLocked() {
	for _, ev := range f.held {
		f.rm.Apply(ev.img, ev.delta, false)
		f.rm.MarkApplied(ev.index)
		f.md.serve(ev.img, ev.index)
	}
	f.held = nil
}

// feedWhenWaited makes the first handler that waits for the served image
// release the held events, from another goroutine, once it has started
// waiting: the request can only succeed by waiting and asking again.
func (f *lagFixture) feedWhenWaited() {
	var once sync.Once
	f.md.onWait = func() {
		once.Do(func() {
			f.feeds.Add(1)
			go func() {
				defer f.feeds.Done()
				f.feed()
			}()
		})
	}
}

func partitionsOf(replicas ...int32) []metadata.PartitionRegistration {
	return []metadata.PartitionRegistration{{Partition: 0, Replicas: replicas, ISR: replicas, Leader: replicas[0]}}
}

// lagScenario brings the fixture to a state where the published metadata
// names broker 1 leader of topic's partition 0 at epoch but the replica
// manager does not know it yet (its last change is held).
type lagScenario struct {
	name  string
	topic string
	epoch int32
	setup func(f *lagFixture)
}

var lagScenarios = []lagScenario{
	{
		// Created a moment ago: the manager answers UNKNOWN_TOPIC_OR_PARTITION.
		name: "new topic", topic: "fresh", epoch: 0,
		setup: func(f *lagFixture) {
			f.lag()
			f.md.commit(&metadata.CreateTopic{Name: "fresh", ID: [16]byte{0xc, 1}, Partitions: partitionsOf(1, 2)})
		},
	},
	{
		// Broker 1 follows; the leadership moves to it: the manager still
		// holds a follower (NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH).
		name: "leader moved here", topic: "moved", epoch: 1,
		setup: func(f *lagFixture) {
			id := [16]byte{0xc, 2}
			f.md.commit(&metadata.CreateTopic{Name: "moved", ID: id, Partitions: partitionsOf(2, 1)})
			f.lag()
			f.md.commit(&metadata.PartitionChange{TopicID: id, Partition: 0, Leader: 1, ISR: []int32{1}})
		},
	},
}

// The requests a client sends to the leader Metadata names, each returning
// its error code for the partition and failing on any other wrong answer.
type lagRequest struct {
	name string
	call func(t *testing.T, f *lagFixture, topic string, epoch int32) int16
}

var lagRequests = []lagRequest{
	{"produce", func(t *testing.T, f *lagFixture, topic string, _ int32) int16 {
		// acks=1: broker 2, in the ISR of the new topic, never fetches.
		r := f.client.produce(9, 1, topic, [16]byte{}, map[int32][]byte{0: recordbatch.BuildValues(1000, []byte("v"))})[0]
		if r.ErrorCode == 0 && r.BaseOffset != 0 {
			t.Errorf("appended at %d, want 0", r.BaseOffset)
		}
		return r.ErrorCode
	}},
	{"consumer fetch", func(t *testing.T, f *lagFixture, topic string, epoch int32) int16 {
		req := fetchReq(12, topic, [16]byte{}, 0, 0)
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch
		rp := onlyPartition(t, f.client.call(req).(*kmsg.FetchResponse))
		if rp.ErrorCode == 0 && rp.HighWatermark != 0 {
			t.Errorf("high watermark %d, want 0", rp.HighWatermark)
		}
		return rp.ErrorCode
	}},
	{"follower fetch", func(t *testing.T, f *lagFixture, topic string, epoch int32) int16 {
		req := fetchReq(12, topic, [16]byte{}, 0, 0)
		req.ReplicaID = 2
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch
		return onlyPartition(t, f.client.call(req).(*kmsg.FetchResponse)).ErrorCode
	}},
	{"list offsets", func(t *testing.T, f *lagFixture, topic string, epoch int32) int16 {
		r := listOffsets(f.client, 7, topic, 0, replica.LatestTimestamp, epoch)
		if r.ErrorCode == 0 && r.Offset != 0 {
			t.Errorf("latest offset %d, want 0", r.Offset)
		}
		return r.ErrorCode
	}},
	{"offset for leader epoch", func(t *testing.T, f *lagFixture, topic string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = 4, 2
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, epoch, max(epoch, 0)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r := f.client.call(req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
		if r.ErrorCode == 0 && r.EndOffset != 0 {
			t.Errorf("end offset %d, want 0", r.EndOffset)
		}
		return r.ErrorCode
	}},
	{"delete records", func(t *testing.T, f *lagFixture, topic string, _ int32) int16 {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Version, req.TimeoutMillis = 2, 100
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = 0, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r := f.client.call(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
		// Broker 2 never fetches, so it never reports its log start: the
		// wait for the low watermark times out after the leader deleted,
		// which is the partition's answer this test looks for.
		if r.ErrorCode == kerr.RequestTimedOut.Code {
			r.ErrorCode = 0
		}
		if r.ErrorCode == 0 && r.LowWatermark != -1 {
			t.Errorf("low watermark %d, want -1 (broker 2 has not reported)", r.LowWatermark)
		}
		return r.ErrorCode
	}},
}

// TestCatchUpServesNewLeadership: right after the metadata names this
// broker leader of a partition (a new topic, a leader that moved here), as
// another node already serves it, and before this node serves it (its
// replica manager has not applied it), a client's Produce, Fetch or
// ListOffsets for it is answered by the partition (the handler waits for
// the node to catch up and asks again) instead of NOT_LEADER_OR_FOLLOWER or
// UNKNOWN_TOPIC_OR_PARTITION, on which clients back off a second or more.
// A follower's fetch likewise, instead of a refusal it would back off on.
// ListOffsets, OffsetForLeaderEpoch and DeleteRecords included: there a
// follower about to lead answers from its Partition method
// (NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH), retried by
// Server.onPartition.
func TestCatchUpServesNewLeadership(t *testing.T) {
	for _, sc := range lagScenarios {
		for _, rq := range lagRequests {
			t.Run(sc.name+"/"+rq.name, func(t *testing.T) {
				f := newLagFixture(t)
				sc.setup(f)
				f.feedWhenWaited()
				if code := rq.call(t, f, sc.topic, sc.epoch); code != 0 {
					t.Fatalf("answered %v", kerr.ErrorForCode(code))
				}
				if catchUpWaits(f.srv) == 0 {
					t.Fatal("answered without a counted catch-up wait")
				}
			})
		}
	}
}

// TestCatchUpNotBehindAnswersAtOnce: when the node serves everything its
// Raft log holds, NOT_LEADER_OR_FOLLOWER and
// UNKNOWN_TOPIC_OR_PARTITION are the true answer and come back without
// waiting for it.
func TestCatchUpNotBehindAnswersAtOnce(t *testing.T) {
	cases := []struct {
		name, topic string
		want        int16
	}{
		{"led elsewhere", "elsewhere", kerr.NotLeaderForPartition.Code},
		{"unknown topic", "nowhere", kerr.UnknownTopicOrPartition.Code},
	}
	for _, c := range cases {
		for _, rq := range lagRequests {
			t.Run(c.name+"/"+rq.name, func(t *testing.T) {
				f := newLagFixture(t)
				f.md.commit(&metadata.CreateTopic{Name: "elsewhere", ID: [16]byte{0xc, 3}, Partitions: partitionsOf(2, 1)})
				if code := rq.call(t, f, c.topic, -1); code != c.want {
					t.Fatalf("answered %v, want %v", kerr.ErrorForCode(code), kerr.ErrorForCode(c.want))
				}
				if n := catchUpWaits(f.srv); n != 0 {
					t.Fatalf("waited %d times for a node that was not behind", n)
				}
			})
		}
	}
}

// TestCatchUpGivesUp: a replica manager that stays behind (its feed is
// stuck) does not hold the request: after the bounded wait the client gets
// the error it would have got without waiting.
func TestCatchUpGivesUp(t *testing.T) {
	f := newLagFixture(t)
	lagScenarios[0].setup(f)
	if code := lagRequests[0].call(t, f, "fresh", 0); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("answered %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
	if catchUpWaits(f.srv) == 0 {
		t.Fatal("answered without a counted catch-up wait")
	}
}

// TestCatchUpAppliesRaftLogFirst: the topic was created through another
// broker; this node's Raft log holds the entry but has not applied it, so
// neither its image nor its replica manager knows the topic. Metadata and
// Produce let the node apply it (CatchUp) and, for Produce, the replica
// manager follow, and answer from there. A Metadata request for topics the
// image knows does not ask.
func TestCatchUpAppliesRaftLogFirst(t *testing.T) {
	f := newLagFixture(t)
	f.lag()
	f.feedWhenWaited()
	f.md.appendOnly(&metadata.CreateTopic{Name: "remote", ID: [16]byte{0xc, 4}, Partitions: partitionsOf(1)})

	md := f.client.call(metadataReq(12, "remote")).(*kmsg.MetadataResponse)
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || len(md.Topics[0].Partitions) != 1 || md.Topics[0].Partitions[0].Leader != 1 {
		t.Fatalf("Metadata for a topic in the Raft log: %+v", md.Topics)
	}
	if n := f.md.catchUps.Load(); n != 1 {
		t.Fatalf("%d CatchUps, want 1", n)
	}
	if r := f.client.produce(9, -1, "remote", [16]byte{}, map[int32][]byte{0: recordbatch.BuildValues(1000, []byte("v"))})[0]; r.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	before := f.md.catchUps.Load()
	f.client.call(metadataReq(12, "remote"))
	allTopics := metadataReq(12)
	allTopics.Topics = nil
	f.client.call(allTopics)
	if n := f.md.catchUps.Load(); n != before {
		t.Fatalf("Metadata for known topics asked the node to catch up (%d times)", n-before)
	}
}

// TestCatchUpProduceFromRaftLog is the Produce half alone: the first
// request to meet the topic is a Produce.
func TestCatchUpProduceFromRaftLog(t *testing.T) {
	f := newLagFixture(t)
	f.lag()
	f.feedWhenWaited()
	f.md.appendOnly(&metadata.CreateTopic{Name: "remote", ID: [16]byte{0xc, 4}, Partitions: partitionsOf(1)})
	if r := f.client.produce(9, -1, "remote", [16]byte{}, map[int32][]byte{0: recordbatch.BuildValues(1000, []byte("v"))})[0]; r.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if f.md.catchUps.Load() == 0 || catchUpWaits(f.srv) == 0 {
		t.Fatalf("answered with %d CatchUps and %d counted waits", f.md.catchUps.Load(), catchUpWaits(f.srv))
	}
}

func TestNamesUnknown(t *testing.T) {
	known, unknownID := [16]byte{0xd, 1}, [16]byte{0xd, 2}
	img := imageOf(t,
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 1},
		&metadata.CreateTopic{Name: "here", ID: known, Partitions: partitionsOf(1)},
	)
	byName := func(n string) kmsg.MetadataRequestTopic {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		return rt
	}
	byID := func(id [16]byte) kmsg.MetadataRequestTopic {
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = id
		return rt
	}
	both := func(n string, id [16]byte) kmsg.MetadataRequestTopic {
		rt := byName(n)
		rt.TopicID = id
		return rt
	}
	tests := []struct {
		name   string
		topics []kmsg.MetadataRequestTopic
		want   bool
	}{
		{"all topics", nil, false},
		{"known name", []kmsg.MetadataRequestTopic{byName("here")}, false},
		{"unknown name", []kmsg.MetadataRequestTopic{byName("gone")}, true},
		{"known id", []kmsg.MetadataRequestTopic{byID(known)}, false},
		{"unknown id", []kmsg.MetadataRequestTopic{byID(unknownID)}, true},
		// Neither: nothing to catch up for (the handler answers it as it is).
		{"nil name, no id", []kmsg.MetadataRequestTopic{kmsg.NewMetadataRequestTopic()}, false},
		// The id decides when both are given.
		{"known id, other name", []kmsg.MetadataRequestTopic{both("gone", known)}, false},
		{"unknown id, known name", []kmsg.MetadataRequestTopic{both("here", unknownID)}, true},
		{"one unknown among known", []kmsg.MetadataRequestTopic{byName("here"), byID(known), byName("gone")}, true},
		{"unknown first", []kmsg.MetadataRequestTopic{byID(unknownID), byName("here")}, true},
	}
	for _, tt := range tests {
		if got := namesUnknown(img, tt.topics); got != tt.want {
			t.Errorf("%s: namesUnknown = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestServedImageLeadsNoEarlierThanReplicas: while the replica manager has
// not applied a new topic, the served image (the one Metadata answers
// from) does not name it; once it has, the leader it names takes a
// Produce at once, without a catch-up wait.
func TestServedImageLeadsNoEarlierThanReplicas(t *testing.T) {
	f := newLagFixture(t)
	f.lag()
	f.md.commit(&metadata.CreateTopic{Name: "fresh", ID: [16]byte{0xc, 5}, Partitions: partitionsOf(1)})
	all := metadataReq(12)
	all.Topics = nil
	for _, mt := range f.client.call(all).(*kmsg.MetadataResponse).Topics {
		if mt.Topic != nil && *mt.Topic == "fresh" {
			t.Fatal("Metadata named the topic before the replica manager applied it")
		}
	}
	f.feed()
	md := f.client.call(all).(*kmsg.MetadataResponse)
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 1 || md.Topics[0].Partitions[0].Leader != 1 {
		t.Fatalf("Metadata after the apply: %+v", md.Topics)
	}
	if r := f.client.produce(9, 1, "fresh", [16]byte{}, map[int32][]byte{0: recordbatch.BuildValues(1000, []byte("v"))})[0]; r.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if n := catchUpWaits(f.srv); n != 0 {
		t.Fatalf("%d catch-up waits, want 0", n)
	}
}

// catchUpWaits is both of srv's catch-up wait counts together.
func catchUpWaits(srv *Server) uint64 {
	c, r := srv.CatchUpWaits()
	return c + r
}
