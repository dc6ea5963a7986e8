package broker

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	ordersID  = [16]byte{1, 2, 3}
	offsetsID = [16]byte{9}
)

// clusterImage: brokers 1 and 2 live on CLIENT (2 in rack b), 3 fenced,
// 4 live but only on another listener; "orders" with a healthy partition, a
// leaderless one and one led by broker 4; "__consumer_offsets".
func clusterImage(t testing.TB, clientPort uint16) *metadata.Image {
	ep := func(port uint16) []metadata.Endpoint {
		return []metadata.Endpoint{{Listener: "CLIENT", Host: "127.0.0.1", Port: port}}
	}
	return imageOf(t,
		&metadata.ClusterID{ID: "cluster-x"},
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 1, Endpoints: ep(clientPort)},
		&metadata.RegisterBroker{BrokerID: 2, BrokerEpoch: 2, Endpoints: ep(9002), Rack: "b"},
		&metadata.RegisterBroker{BrokerID: 3, BrokerEpoch: 3, Endpoints: ep(9003), Fenced: true},
		&metadata.RegisterBroker{BrokerID: 4, BrokerEpoch: 4, Endpoints: []metadata.Endpoint{{Listener: "OTHER", Host: "h", Port: 1}}},
		&metadata.CreateTopic{Name: "orders", ID: ordersID, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 5},
			{Partition: 1, Replicas: []int32{2, 3}, ISR: []int32{2}, Leader: metadata.NoLeader, LeaderEpoch: 7},
			{Partition: 2, Replicas: []int32{4, 1}, ISR: []int32{4, 1}, Leader: 4, LeaderEpoch: 1},
		}},
		&metadata.CreateTopic{Name: "__consumer_offsets", ID: offsetsID, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		}},
	)
}

// swappableMetadata is a MetadataSource a test replaces the image of.
type swappableMetadata struct {
	cur atomic.Pointer[metadata.Image]
}

func (s *swappableMetadata) Current() (*metadata.Image, uint64) { return s.cur.Load(), 1 }

// CatchUp: a swapped image is current at once, so nothing is ever
// pending.
func (*swappableMetadata) CatchUp(context.Context) bool { return false }

// autoCreateController is the twin's controller client as Metadata's auto
// creation reaches it: it counts calls, checks they ask for the cluster
// defaults, and can answer every topic with a fixed code or fail.
type autoCreateController struct {
	*raftfsm.ControllerClient
	code  int16
	err   error
	calls atomic.Int32
}

func (f *autoCreateController) CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	f.calls.Add(1)
	if f.err != nil {
		return nil, f.err
	}
	for _, t := range req.Topics {
		if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
			return nil, errors.New("auto creation must use the cluster defaults")
		}
	}
	if f.code == 0 {
		return f.ControllerClient.CreateTopics(ctx, req)
	}
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, f.code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func callMetadata(t *testing.T, opts Options, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	t.Helper()
	opts.Logger = testLogger(t)
	s, err := newServer(opts, defaultAPIs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	rc := &request{conn: &connState{srv: s, listener: "CLIENT"}, key: 3, version: req.Version, released: make(chan struct{})}
	resp, err := handleMetadata(context.Background(), rc, req)
	if err != nil {
		t.Fatal(err)
	}
	// Every answer must encode and decode at its version.
	out := resp.(*kmsg.MetadataResponse)
	back := kmsg.NewPtrMetadataResponse()
	back.Version = req.Version
	if err := back.ReadFrom(out.AppendTo(nil)); err != nil {
		t.Fatalf("v%d response does not round-trip: %v", req.Version, err)
	}
	return out
}

func metadataReq(version int16, names ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	req.AllowAutoTopicCreation = true
	for _, n := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func findTopic(t *testing.T, resp *kmsg.MetadataResponse, name string) kmsg.MetadataResponseTopic {
	t.Helper()
	for _, rt := range resp.Topics {
		if rt.Topic != nil && *rt.Topic == name {
			return rt
		}
	}
	t.Fatalf("topic %q not in the answer", name)
	return kmsg.MetadataResponseTopic{}
}

func TestMetadataAllTopics(t *testing.T) {
	md := staticMetadata{img: clusterImage(t, 9001)}
	for v := int16(0); v <= 13; v++ {
		req := metadataReq(v)
		if v >= 1 {
			req.Topics = nil
		}
		resp := callMetadata(t, Options{NodeID: 2, Deps: Deps{Metadata: md}}, req)
		var ids []int32
		for _, b := range resp.Brokers {
			ids = append(ids, b.NodeID)
		}
		if !slices.Equal(ids, []int32{1, 2}) {
			t.Fatalf("v%d: brokers %v, want the live ones on CLIENT", v, ids)
		}
		if v >= 1 && resp.ControllerID != 2 {
			t.Errorf("v%d: controller %d, want this node", v, resp.ControllerID)
		}
		if v >= 2 && (resp.ClusterID == nil || *resp.ClusterID != "cluster-x") {
			t.Errorf("v%d: cluster id %v", v, resp.ClusterID)
		}
		if len(resp.Topics) != 2 || *resp.Topics[0].Topic != "__consumer_offsets" || *resp.Topics[1].Topic != "orders" {
			t.Fatalf("v%d: topics %+v", v, resp.Topics)
		}
		if v >= 1 && !resp.Topics[0].IsInternal {
			t.Errorf("v%d: __consumer_offsets not internal", v)
		}
		orders := resp.Topics[1]
		if v >= 10 && orders.TopicID != ordersID {
			t.Errorf("v%d: topic id %x", v, orders.TopicID)
		}
		p0, p1, p2 := orders.Partitions[0], orders.Partitions[1], orders.Partitions[2]
		if p0.Leader != 1 || p0.ErrorCode != 0 && v > 0 {
			t.Errorf("v%d: p0 %+v", v, p0)
		}
		if v >= 7 && (p0.LeaderEpoch != 5 || p1.LeaderEpoch != 7) {
			t.Errorf("v%d: leader epochs %d %d", v, p0.LeaderEpoch, p1.LeaderEpoch)
		}
		if v >= 5 && !slices.Equal(p0.OfflineReplicas, []int32{3}) {
			t.Errorf("v%d: p0 offline replicas %v", v, p0.OfflineReplicas)
		}
		if v == 0 {
			if !slices.Equal(p0.Replicas, []int32{1, 2}) || p0.ErrorCode != kerr.ReplicaNotAvailable.Code {
				t.Errorf("v0: p0 replicas %v error %d, want live ones and REPLICA_NOT_AVAILABLE", p0.Replicas, p0.ErrorCode)
			}
		} else if !slices.Equal(p0.Replicas, []int32{1, 2, 3}) || !slices.Equal(p0.ISR, []int32{1, 2}) {
			t.Errorf("v%d: p0 replicas %v isr %v", v, p0.Replicas, p0.ISR)
		}
		if p1.Leader != -1 || p1.ErrorCode != kerr.LeaderNotAvailable.Code {
			t.Errorf("v%d: leaderless p1 %+v", v, p1)
		}
		want := kerr.LeaderNotAvailable.Code
		if v >= 6 {
			want = kerr.ListenerNotFound.Code
		}
		if p2.Leader != -1 || p2.ErrorCode != want {
			t.Errorf("v%d: p2 led off-listener: leader %d error %d, want -1 and %d", v, p2.Leader, p2.ErrorCode, want)
		}
	}

	// Not a live broker itself: the lowest live broker is named.
	req := metadataReq(12)
	req.Topics = nil
	if resp := callMetadata(t, Options{NodeID: 3, Deps: Deps{Metadata: md}}, req); resp.ControllerID != 1 {
		t.Errorf("controller %d, want 1", resp.ControllerID)
	}
}

func TestMetadataNamedTopics(t *testing.T) {
	md := staticMetadata{img: clusterImage(t, 9001)}
	resp := callMetadata(t, Options{Deps: Deps{Metadata: md}}, metadataReq(12, "orders", "nope", "orders", "bad/name", "__transaction_state"))
	if len(resp.Topics) != 4 {
		t.Fatalf("%d topics, want 4 (duplicates answered once)", len(resp.Topics))
	}
	if got := findTopic(t, resp, "orders"); got.ErrorCode != 0 || len(got.Partitions) != 3 {
		t.Errorf("orders: %+v", got)
	}
	for _, n := range []string{"nope", "__transaction_state"} {
		if got := findTopic(t, resp, n); got.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(got.Partitions) != 0 {
			t.Errorf("%s without auto creation: %+v", n, got)
		}
	}
	// KafkaApis.getTopicMetadata validates the name even without creation.
	if got := findTopic(t, resp, "bad/name"); got.ErrorCode != kerr.InvalidTopicException.Code || len(got.Partitions) != 0 {
		t.Errorf("bad/name without auto creation: %+v", got)
	}
	if !findTopic(t, resp, "__transaction_state").IsInternal {
		t.Error("__transaction_state not flagged internal")
	}

	byID := func(v int16, ids ...[16]byte) *kmsg.MetadataRequest {
		req := metadataReq(v)
		for _, id := range ids {
			rt := kmsg.NewMetadataRequestTopic()
			rt.TopicID = id
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	resp = callMetadata(t, Options{Deps: Deps{Metadata: md}}, byID(12, ordersID, [16]byte{0xee}, ordersID))
	if len(resp.Topics) != 2 || *resp.Topics[0].Topic != "orders" || resp.Topics[1].ErrorCode != kerr.UnknownTopicID.Code || resp.Topics[1].TopicID != [16]byte{0xee} {
		t.Fatalf("by id: %+v", resp.Topics)
	}
	resp = callMetadata(t, Options{Deps: Deps{Metadata: md}}, byID(11, ordersID))
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("id at v11: %+v", resp.Topics)
	}
	nullName := metadataReq(12)
	nullName.Topics = []kmsg.MetadataRequestTopic{kmsg.NewMetadataRequestTopic()}
	if resp := callMetadata(t, Options{Deps: Deps{Metadata: md}}, nullName); resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("null name, zero id: %+v", resp.Topics)
	}

	ops := metadataReq(10, "orders")
	ops.IncludeTopicAuthorizedOperations, ops.IncludeClusterAuthorizedOperations = true, true
	resp = callMetadata(t, Options{Deps: Deps{Metadata: md}}, ops)
	if resp.AuthorizedOperations != clusterOps || resp.Topics[0].AuthorizedOperations != topicOps {
		t.Errorf("authorized operations %b %b", resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations)
	}
	resp = callMetadata(t, Options{Deps: Deps{Metadata: md}}, metadataReq(10, "orders"))
	if resp.AuthorizedOperations != authorizedOpsUnset || resp.Topics[0].AuthorizedOperations != authorizedOpsUnset {
		t.Errorf("unrequested authorized operations %d %d", resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations)
	}

	resp = callMetadata(t, Options{}, metadataReq(12, "orders"))
	if len(resp.Brokers) != 0 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("without metadata: %+v", resp)
	}
}

// franz-go discovers the cluster through our Metadata, at its own version,
// and finds the topic's leader at the address it connected to.
func TestKgoMetadata(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	md := staticMetadata{img: clusterImage(t, ln.Addr().(*net.TCPAddr).AddrPort().Port())}
	s, err := newServer(Options{Logger: testLogger(t), NodeID: 1, Listeners: []Listener{{Name: "CLIENT", Listener: ln}}, Deps: Deps{Metadata: md}}, defaultAPIs)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	defer func() { _ = s.Close(); <-done }()

	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	req := metadataReq(13, "orders")
	req.Version = 0 // kgo picks the version from ApiVersions
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 13 || resp.ControllerID != 1 || len(resp.Topics) != 1 || resp.Topics[0].TopicID != ordersID || len(resp.Topics[0].Partitions) != 3 {
		t.Fatalf("kgo got v%d %+v", resp.Version, resp)
	}
	if s.Counters().RequestsFor(3, 13) == 0 {
		t.Error("kgo did not use Metadata v13")
	}
}
