package broker

import (
	"context"
	"sync"
	"testing"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminCtrl is the twin's controller client as the forwarded admin APIs
// reach it (adminServer starts the twin): it records what reached it, and
// a test may answer an API itself (the per-API funcs) or fail every call
// (err) to see how the broker maps that. Everything else gets the
// controller's real answer, IndexTag included, so tests see it removed.
type adminCtrl struct {
	*raftfsm.ControllerClient

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

func (f *adminCtrl) record(req kmsg.Request) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req != nil {
		f.seen = append(f.seen, copyRequest(req))
	}
	return f.err
}

// copyRequest keeps what reached the controller client as it arrived: the
// client rewrites some requests it sends (DeleteTopics moves names into
// Topics, every request gets the version it is sent at).
func copyRequest(req kmsg.Request) kmsg.Request {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		c := *r
		return &c
	case *kmsg.DeleteTopicsRequest:
		c := *r
		return &c
	case *kmsg.CreatePartitionsRequest:
		c := *r
		return &c
	case *kmsg.AlterConfigsRequest:
		c := *r
		return &c
	case *kmsg.IncrementalAlterConfigsRequest:
		c := *r
		return &c
	case *kmsg.ElectLeadersRequest:
		c := *r
		return &c
	}
	return req
}

// tagged marks a test's own answer as the controller marks its answers
// (IndexTag), so tests see the broker remove it.
func tagged(t *kmsg.Tags) { t.Set(raftfsm.IndexTag, []byte{0, 0, 0, 0, 0, 0, 0, 7}) }

func (f *adminCtrl) requests() []kmsg.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]kmsg.Request(nil), f.seen...)
}

func (f *adminCtrl) CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	if err := f.record(req); err != nil {
		return nil, err
	}
	if f.createTopics != nil {
		return f.createTopics(req), nil
	}
	return f.ControllerClient.CreateTopics(ctx, req)
}

// CreateTopicsCommitted is the path handleCreateTopics takes with a real
// controller client (committedCreator); the fake answers it as
// CreateTopics.
func (f *adminCtrl) CreateTopicsCommitted(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, uint64, error) {
	if err := f.record(req); err != nil {
		return nil, 0, err
	}
	if f.createTopics != nil {
		return f.createTopics(req), 0, nil
	}
	return f.ControllerClient.CreateTopicsCommitted(ctx, req)
}

func (f *adminCtrl) DeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, error) {
	if err := f.record(req); err != nil {
		return nil, err
	}
	if f.deleteTopics != nil {
		return f.deleteTopics(req), nil
	}
	return f.ControllerClient.DeleteTopics(ctx, req)
}

func (f *adminCtrl) CreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsResponse, error) {
	if err := f.record(req); err != nil {
		return nil, err
	}
	if f.createPartitions != nil {
		return f.createPartitions(req), nil
	}
	return f.ControllerClient.CreatePartitions(ctx, req)
}

func (f *adminCtrl) AlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsResponse, error) {
	if err := f.record(req); err != nil {
		return nil, err
	}
	if f.alterConfigs != nil {
		return f.alterConfigs(req), nil
	}
	return f.ControllerClient.AlterConfigs(ctx, req)
}

func (f *adminCtrl) IncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error) {
	if err := f.record(req); err != nil {
		return nil, err
	}
	if f.incrementalConfig != nil {
		return f.incrementalConfig(req), nil
	}
	return f.ControllerClient.IncrementalAlterConfigs(ctx, req)
}

func (f *adminCtrl) ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	if err := f.record(req); err != nil {
		return nil, err
	}
	if f.electLeaders != nil {
		return f.electLeaders(req), nil
	}
	return f.ControllerClient.ElectLeaders(ctx, req)
}

func (f *adminCtrl) DescribeQuorum(ctx context.Context) (*kmsg.DescribeQuorumResponse, error) {
	if err := f.record(nil); err != nil {
		return nil, err
	}
	if f.describeQuorum != nil {
		return f.describeQuorum(), nil
	}
	return f.ControllerClient.DescribeQuorum(ctx)
}

func (f *adminCtrl) AllocateProducerIDs(ctx context.Context, brokerID int32, epoch int64) (*kmsg.AllocateProducerIDsResponse, error) {
	if err := f.record(nil); err != nil {
		return nil, err
	}
	if f.allocate != nil {
		return f.allocate(brokerID, epoch), nil
	}
	return f.ControllerClient.AllocateProducerIDs(ctx, brokerID, epoch)
}

// adminServer is a Server for calling handlers directly. With fa, the
// controller is the in-memory twin started from img, the Server reads the
// twin's image, and fa is both controller clients; without, it reads img.
func adminServer(t *testing.T, img *metadata.Image, fa *adminCtrl, cfg *config.Config) *Server {
	t.Helper()
	deps := Deps{Metadata: staticMetadata{img: img, index: 1}}
	if fa != nil {
		node := startTwin(t, img, nil)
		fa.ControllerClient = node.Client()
		deps.Metadata, deps.Controller, deps.Admin = node, fa, fa
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
