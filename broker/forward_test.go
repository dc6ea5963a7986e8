package broker

import (
	"context"
	"sync"
	"testing"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeAdmin stands in for the controller of the forwarded admin APIs: it
// records what reached it and answers through the per-API funcs, or with
// err. Unset funcs answer every entry with code 0. Answers carry a tag, as
// raftfsm's do, so tests see it removed.
type fakeAdmin struct {
	mu   sync.Mutex
	err  error
	seen []kmsg.Request

	createTopics      func(*kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse
	deleteTopics      func(*kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse
	createPartitions  func(*kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse
	alterConfigs      func(*kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse
	incrementalConfig func(*kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse
	electLeaders      func(*kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse
	describeQuorum    func() *kmsg.DescribeQuorumResponse
	allocate          func(brokerID int32, epoch int64) *kmsg.AllocateProducerIDsResponse
}

// internalTag is what raftfsm puts on controller answers (IndexTag).
const internalTag = 10000

func (f *fakeAdmin) record(req kmsg.Request) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req != nil {
		f.seen = append(f.seen, req)
	}
	return f.err
}

func (f *fakeAdmin) requests() []kmsg.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]kmsg.Request(nil), f.seen...)
}

func tagged(t *kmsg.Tags) { t.Set(internalTag, []byte{0, 0, 0, 0, 0, 0, 0, 7}) }

func (f *fakeAdmin) CreateTopics(_ context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	if err := f.record(req); err != nil {
		return nil, err
	}
	if f.createTopics != nil {
		return f.createTopics(req), nil
	}
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.Version = req.MaxVersion()
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, 3, 1
		rt.TopicID = [16]byte{7}
		tagged(&rt.UnknownTags)
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (f *fakeAdmin) DeleteTopics(_ context.Context, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, error) {
	if err := f.record(req); err != nil {
		return nil, err
	}
	if f.deleteTopics != nil {
		return f.deleteTopics(req), nil
	}
	resp := kmsg.NewPtrDeleteTopicsResponse()
	resp.Version = req.MaxVersion()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		tagged(&rt.UnknownTags)
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (f *fakeAdmin) CreatePartitions(_ context.Context, req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsResponse, error) {
	if err := f.record(req); err != nil {
		return nil, err
	}
	if f.createPartitions != nil {
		return f.createPartitions(req), nil
	}
	resp := kmsg.NewPtrCreatePartitionsResponse()
	resp.Version = req.MaxVersion()
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		tagged(&rt.UnknownTags)
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (f *fakeAdmin) AlterConfigs(_ context.Context, req *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsResponse, error) {
	if err := f.record(req); err != nil {
		return nil, err
	}
	if f.alterConfigs != nil {
		return f.alterConfigs(req), nil
	}
	resp := kmsg.NewPtrAlterConfigsResponse()
	resp.Version = req.MaxVersion()
	for _, r := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		tagged(&rr.UnknownTags)
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

func (f *fakeAdmin) IncrementalAlterConfigs(_ context.Context, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error) {
	if err := f.record(req); err != nil {
		return nil, err
	}
	if f.incrementalConfig != nil {
		return f.incrementalConfig(req), nil
	}
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.Version = req.MaxVersion()
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		tagged(&rr.UnknownTags)
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

func (f *fakeAdmin) ElectLeaders(_ context.Context, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	if err := f.record(req); err != nil {
		return nil, err
	}
	if f.electLeaders != nil {
		return f.electLeaders(req), nil
	}
	resp := kmsg.NewPtrElectLeadersResponse()
	resp.Version = req.MaxVersion()
	tagged(&resp.UnknownTags)
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (f *fakeAdmin) DescribeQuorum(context.Context) (*kmsg.DescribeQuorumResponse, error) {
	if err := f.record(nil); err != nil {
		return nil, err
	}
	return f.describeQuorum(), nil
}

func (f *fakeAdmin) AllocateProducerIDs(_ context.Context, brokerID int32, epoch int64) (*kmsg.AllocateProducerIDsResponse, error) {
	if err := f.record(nil); err != nil {
		return nil, err
	}
	return f.allocate(brokerID, epoch), nil
}

// adminServer is a Server for calling handlers directly, with fa as both
// controller clients.
func adminServer(t *testing.T, img *metadata.Image, fa *fakeAdmin, cfg *config.Config) *Server {
	t.Helper()
	deps := Deps{Metadata: staticMetadata{img: img, index: 1}}
	if fa != nil {
		deps.Controller, deps.Admin = fa, fa
	}
	s, err := newServer(Options{Logger: testLogger(t), NodeID: 1, Deps: deps, Config: cfg}, defaultAPIs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// call runs the registered handler for req as a client on listener CLIENT
// would reach it, and checks the answer encodes and decodes at the
// request's version (the connection writer forces that version).
func call[R kmsg.Response](t *testing.T, s *Server, req kmsg.Request) R {
	t.Helper()
	e := s.table.lookup(req.Key())
	if e == nil || e.check(req.GetVersion()) != versionOK {
		t.Fatalf("%s v%d is not served", kmsg.NameForKey(req.Key()), req.GetVersion())
	}
	rc := &request{conn: &connState{srv: s, listener: "CLIENT"}, key: req.Key(), version: req.GetVersion(), released: make(chan struct{})}
	resp, err := e.handle(context.Background(), rc, req)
	if err != nil {
		t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	resp.SetVersion(req.GetVersion())
	back := resp.RequestKind().ResponseKind()
	back.SetVersion(req.GetVersion())
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatalf("%s v%d answer does not round-trip: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return back.(R)
}

// testConfig is a combined-mode node 1 with a few keys set in the file.
func testConfig(t *testing.T, extra string) *config.Config {
	t.Helper()
	cfg, _, err := config.Parse([]byte(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:19093
listeners=CLIENT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093
listener.security.protocol.map=CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=CLIENT
controller.listener.names=CONTROLLER
log.dirs=data
`+extra), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func strp(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
