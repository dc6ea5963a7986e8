package broker

import (
	"context"
	"sync"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// gatedController holds each CreateTopics until the test opens its gate, so
// the test sees what Metadata answers while a creation is in flight.
type gatedController struct {
	inner ControllerClient
	gate  chan struct{}
	mu    sync.Mutex
	names [][]string
}

func (g *gatedController) CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	var names []string
	for _, t := range req.Topics {
		names = append(names, t.Topic)
	}
	g.mu.Lock()
	g.names = append(g.names, names)
	g.mu.Unlock()
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.inner.CreateTopics(ctx, req)
}

func (g *gatedController) calls() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([][]string(nil), g.names...)
}

// autoCreateImage has broker 1 as the only broker, so a new topic is led by
// the broker that answers.
func autoCreateImage(t *testing.T) *metadata.Image {
	return imageOf(t,
		&metadata.ClusterID{ID: "cluster-x"},
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 1, Endpoints: []metadata.Endpoint{{Listener: "CLIENT", Host: "127.0.0.1", Port: 9001}}},
		&metadata.CreateTopic{Name: "orders", ID: ordersID, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		}},
	)
}

// Kafka (KRaft) answers an unknown topic at once with
// UNKNOWN_TOPIC_OR_PARTITION and no partitions and creates it in the
// background (AutoTopicCreationManager.sendCreateTopicRequest); the client's
// retry finds it.
func TestMetadataAutoCreate(t *testing.T) {
	md := startTwin(t, autoCreateImage(t), nil)
	ctl := &gatedController{inner: &autoCreateController{ControllerClient: md.Client()}, gate: make(chan struct{})}
	s, err := newServer(Options{Logger: testLogger(t), AutoCreateTopics: true, Deps: Deps{Metadata: md, Controller: ctl}}, defaultAPIs)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	call := func(req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
		t.Helper()
		rc := &request{conn: &connState{srv: s, listener: "CLIENT"}, key: 3, version: req.Version, released: make(chan struct{})}
		resp, err := handleMetadata(context.Background(), rc, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.MetadataResponse)
	}
	inImage := func(name string) func() bool {
		return func() bool { img, _ := md.Current(); _, ok := img.Topic(name); return ok }
	}

	resp := call(metadataReq(12, "orders", "fresh", "bad/name"))
	if got := findTopic(t, resp, "orders"); got.ErrorCode != 0 || len(got.Partitions) == 0 {
		t.Errorf("existing topic answered %+v", got)
	}
	if got := findTopic(t, resp, "fresh"); got.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(got.Partitions) != 0 {
		t.Errorf("first answer for an auto-created topic: %+v", got)
	}
	if got := findTopic(t, resp, "bad/name"); got.ErrorCode != kerr.InvalidTopicException.Code {
		t.Errorf("invalid name: error %d", got.ErrorCode)
	}
	waitFor(t, "the background CreateTopics", func() bool { return len(ctl.calls()) == 1 })
	if c := ctl.calls(); len(c[0]) != 1 || c[0][0] != "fresh" {
		t.Errorf("controller asked for %v, want [fresh]", c)
	}

	// While it is in flight, a retry answers the same and asks nothing more.
	if got := call(metadataReq(12, "fresh")).Topics[0]; got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("in-flight topic answered %+v", got)
	}
	close(ctl.gate)
	waitFor(t, "the topic in the image", inImage("fresh"))
	if n := len(ctl.calls()); n != 1 {
		t.Errorf("%d controller calls, want one while the first was in flight", n)
	}
	got := call(metadataReq(12, "fresh")).Topics[0]
	if got.ErrorCode != 0 || len(got.Partitions) != 1 || got.Partitions[0].Leader != 1 {
		t.Errorf("retry after creation answered %+v", got)
	}

	// The client may forbid it (v4+), but not below v4; invalid names are
	// INVALID_TOPIC_EXCEPTION either way (KafkaApis.getTopicMetadata).
	no := metadataReq(12, "other", "bad/other")
	no.AllowAutoTopicCreation = false
	resp = call(no)
	if got := findTopic(t, resp, "other"); got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("creation forbidden by the client: %+v", got)
	}
	if got := findTopic(t, resp, "bad/other"); got.ErrorCode != kerr.InvalidTopicException.Code {
		t.Errorf("invalid name without creation: %+v", got)
	}
	old := metadataReq(3, "legacy")
	old.AllowAutoTopicCreation = false
	if got := call(old).Topics[0]; got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("v3 first answer: %+v", got)
	}
	waitFor(t, "v3 auto-creation", inImage("legacy"))
	for _, c := range ctl.calls() {
		for _, n := range c {
			if n == "other" {
				t.Errorf("created %q though the client forbade it", n)
			}
		}
	}

	// Internal topics are never created through Metadata.
	before := len(ctl.calls())
	resp = call(metadataReq(12, "__transaction_state"))
	if got := findTopic(t, resp, "__transaction_state"); got.ErrorCode != kerr.UnknownTopicOrPartition.Code || !got.IsInternal {
		t.Errorf("__transaction_state: %+v", got)
	}
	if err := s.Close(); err != nil { // waits for background creations
		t.Fatal(err)
	}
	if n := len(ctl.calls()); n != before {
		t.Errorf("internal topic sent to the controller")
	}
}

// A creation the controller refuses or never finishes is only logged, as in
// Kafka; the next request tries again.
func TestMetadataAutoCreateFailures(t *testing.T) {
	img := autoCreateImage(t)
	for _, f := range []struct {
		name string
		opt  func(*raftfsm.Config)
		code int16
		err  error
	}{
		// The twin itself refuses: default.replication.factor 3 on one broker.
		{"invalid replication factor", func(c *raftfsm.Config) { c.DefaultReplicationFactor = 3 }, 0, nil},
		{"controller unavailable", nil, kerr.NotController.Code, nil},
		{"controller times out", nil, 0, context.DeadlineExceeded},
	} {
		md := startTwin(t, img, f.opt)
		ctl := &autoCreateController{ControllerClient: md.Client(), code: f.code, err: f.err}
		opts := Options{AutoCreateTopics: true, Deps: Deps{Metadata: md, Controller: ctl}}
		for i := int32(1); i <= 2; i++ {
			if got := callMetadata(t, opts, metadataReq(12, "fresh")).Topics[0]; got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Errorf("%s: error %d", f.name, got.ErrorCode)
			}
			waitFor(t, f.name, func() bool { return ctl.calls.Load() == i })
		}
		if img, _ := md.Current(); func() bool { _, ok := img.Topic("fresh"); return ok }() {
			t.Errorf("%s: topic created", f.name)
		}
	}
	if got := callMetadata(t, Options{AutoCreateTopics: true, Deps: Deps{Metadata: staticMetadata{img: img, index: 1}}}, metadataReq(12, "fresh")).Topics[0]; got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("no controller: error %d", got.ErrorCode)
	}
}
