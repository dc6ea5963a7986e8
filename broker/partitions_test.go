package broker

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partFixture is one broker (id 1) serving the partition APIs from a real
// replica.Manager on t.TempDir() logs, with a metadata image built from
// records; broker 2 is registered (so partitions can be led elsewhere) but
// never runs.
type partFixture struct {
	t    testing.TB
	srv  *Server
	addr string
	rm   *replica.Manager
	sm   *storage.Manager
	md   *swappableMetadata
	dir  string

	mu   sync.Mutex
	img  *metadata.Image
	raw  *rawClient
	corr int32
}

var errNoDial = errors.New("test: no follower fetching in this fixture")

type noController struct{}

func (noController) AlterPartition(context.Context, *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	return nil, errNoDial
}

func testTopicConfig(t testing.TB) func(*metadata.Image, string) (replica.TopicConfig, error) {
	cfg, _, err := config.Parse([]byte(baseProps), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ReplicaTopicConfig(cfg)
}

// newTestReplicas opens logs under dir and a replica manager for broker 1
// over them, with no controller and no way to dial a leader.
func newTestReplicas(t testing.TB, dir string) (*storage.Manager, *replica.Manager) {
	t.Helper()
	sm, _, err := storage.OpenManager(storage.ManagerOptions{Dirs: []string{dir}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	rm, err := replica.NewManager(replica.Config{
		BrokerID: 1, Storage: sm, TopicConfig: testTopicConfig(t), Controller: noController{},
		Dial: func(context.Context, int32, metadata.Endpoint) (replica.LeaderEndpoint, error) {
			return nil, errNoDial
		},
		InterBrokerListener: "CLIENT", Logger: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return sm, rm
}

func newPartFixture(t testing.TB) *partFixture {
	t.Helper()
	f := &partFixture{t: t, md: &swappableMetadata{}, dir: t.TempDir(), img: metadata.NewImage()}
	f.sm, f.rm = newTestReplicas(t, f.dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	f.md.cur.Store(f.img)
	srv, err := newServer(Options{
		Logger: testLogger(t), Listeners: []Listener{{Name: "CLIENT", Listener: ln}}, NodeID: 1,
		Deps:       Deps{Metadata: f.md, Replicas: f.rm},
		Partitions: PartitionOptions{LogDirs: []string{f.dir}},
	}, defaultAPIs)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	f.srv, f.addr = srv, ln.Addr().String()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
		_ = f.rm.Close()
		_ = f.sm.Close()
	})
	f.apply(
		&metadata.ClusterID{ID: "cluster-p"},
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 1, Endpoints: []metadata.Endpoint{{Listener: "CLIENT", Host: "127.0.0.1", Port: port}}},
		&metadata.RegisterBroker{BrokerID: 2, BrokerEpoch: 2, Endpoints: []metadata.Endpoint{{Listener: "CLIENT", Host: "127.0.0.1", Port: 1}}, Rack: "r2"},
	)
	return f
}

// apply commits records to the fixture's image and feeds the delta to the
// replica manager, as the metadata subscription does.
func (f *partFixture) apply(recs ...metadata.Record) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	img, delta := f.img.Apply(recs)
	for _, s := range delta.Skipped {
		f.t.Fatalf("record %d (%T) skipped: %v", s.Index, s.Record, s.Err)
	}
	f.img = img
	f.rm.Apply(img, delta, false)
	f.rm.MarkApplied(1)
	f.md.cur.Store(img)
}

// topic creates a topic whose partitions have the given replicas (the first
// leads), with configs.
func (f *partFixture) topic(name string, configs map[string]string, replicas ...[]int32) [16]byte {
	f.t.Helper()
	id := [16]byte{0xfe, byte(len(name)), name[0], name[len(name)-1]}
	var parts []metadata.PartitionRegistration
	for i, r := range replicas {
		parts = append(parts, metadata.PartitionRegistration{Partition: int32(i), Replicas: r, ISR: r, Leader: r[0]})
	}
	f.apply(&metadata.CreateTopic{Name: name, ID: id, Configs: configs, Partitions: parts})
	return id
}

// call sends req on the fixture's connection and decodes the answer.
func (f *partFixture) call(req kmsg.Request) kmsg.Response {
	f.t.Helper()
	f.mu.Lock()
	if f.raw == nil {
		f.raw = dialRaw(f.t, f.addr)
	}
	f.corr++
	corr, raw := f.corr, f.raw
	f.mu.Unlock()
	raw.send(req, corr)
	resp := req.ResponseKind()
	if got := raw.readResponse(resp); got != corr {
		f.t.Fatalf("correlation %d, want %d", got, corr)
	}
	return resp
}

// produce sends one batch per (partition -> batch) to topic at version v
// with acks and returns the partitions' answers by partition.
func (f *partFixture) produce(v int16, acks int16, topic string, id [16]byte, batches map[int32][]byte) map[int32]kmsg.ProduceResponseTopicPartition {
	f.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = v, acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	for p, b := range batches {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, b
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := f.call(req).(*kmsg.ProduceResponse)
	out := map[int32]kmsg.ProduceResponseTopicPartition{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p
		}
	}
	return out
}

// fetchReq builds a sessionless consumer fetch of one partition.
func fetchReq(v int16, topic string, id [16]byte, partition int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = v, -1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func onlyPartition(t testing.TB, resp *kmsg.FetchResponse) kmsg.FetchResponseTopicPartition {
	t.Helper()
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("want one partition, got error %d and %d topics", resp.ErrorCode, len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// record builds a keyed record with a header, value i.
func keyed(i int) recordbatch.Record {
	s := strconv.Itoa(i)
	return recordbatch.Record{Key: []byte("k" + s), Value: []byte("value-" + s), Headers: []recordbatch.Header{{Key: "h", Value: []byte(s)}}}
}

// waitTB waits until cond holds, failing after testDeadline.
func waitTB(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
