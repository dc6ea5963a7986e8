package broker

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// controller_mutation_rate (KIP-599): a CreateTopics that takes the bucket
// below zero is done and answered with the time until it refills; the
// next one, while it is below zero, is THROTTLING_QUOTA_EXCEEDED.
func TestControllerMutationQuota(t *testing.T) {
	node, err := raftfsm.StartInMemory(raftfsm.Config{NodeID: 1, ClusterID: "mutation-quota-0001",
		HeartbeatInterval: 50 * time.Millisecond, SessionTimeout: 2 * time.Second,
		DefaultPartitions: 1, DefaultReplicationFactor: 1, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	// 10 mutations/s: a bucket of 10 x 11 windows x 1 s = 110.
	if _, err := node.CommitRecords(ctx, &metadata.ClientQuota{
		Entity: metadata.QuotaEntity{{Type: metadata.QuotaEntityClientID, Name: "creator"}}, Key: metadata.QuotaControllerMutationRate, Value: 10}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	srv, err := New(Options{Logger: testLogger(t), Listeners: []Listener{{Name: "CLIENT", Listener: ln}}, NodeID: 1,
		Deps: Deps{Metadata: node, Controller: node.Client(), Admin: node.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	t.Cleanup(func() { _ = srv.Close(); <-served })
	life, err := StartLifecycle(LifecycleOptions{NodeID: 1, ClusterID: "mutation-quota-0001",
		Endpoints: []metadata.Endpoint{{Listener: "CLIENT", Host: "127.0.0.1", Port: port}}, Controller: node.Client(),
		Applied: func() uint64 { _, i := node.Current(); return i }, Interval: 50 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(life.Close)
	waitFor(t, "broker 1 unfenced", func() bool {
		b, ok := func() (metadata.BrokerRegistration, bool) { img, _ := node.Current(); return img.Broker(1) }()
		return ok && !b.Fenced
	})

	client := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.ClientID("creator"), kgo.RetryTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	create := func(cl *kgo.Client, name string, parts int32) *kmsg.CreateTopicsResponse {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, 1
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := create(client(), "big", 120)
	if first.Topics[0].ErrorCode != 0 || first.ThrottleMillis < 500 || first.ThrottleMillis > 1100 {
		t.Fatalf("first create: %v, throttle %d ms (want about 1000)", kerr.ErrorForCode(first.Topics[0].ErrorCode), first.ThrottleMillis)
	}
	// Another connection of the same client, at once: refused, nothing made.
	second := create(client(), "next", 1)
	if second.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || second.ThrottleMillis <= 0 {
		t.Fatalf("second create: %v, throttle %d", kerr.ErrorForCode(second.Topics[0].ErrorCode), second.ThrottleMillis)
	}
	if img, _ := node.Current(); func() bool { _, ok := img.Topic("next"); return ok }() {
		t.Fatal("a refused topic was created")
	}
	// Another client id has no quota.
	other, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.ClientID("someone-else"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if r, err := kadm.NewClient(other).CreateTopic(ctx, 1, 1, nil, "free"); err != nil || r.Err != nil {
		t.Fatalf("unthrottled client: %v %v", err, errors.Unwrap(r.Err))
	}
}
