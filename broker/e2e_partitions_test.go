package broker

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/raftka/raftka/storage"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// node is one in-process raftka node as cmd/raftka/server.go builds it: a
// single-voter in-memory Raft quorum, the logs, the replica manager fed by the
// metadata subscription, the Kafka listener and the broker lifecycle.
type node struct {
	addr string
	raft *raftfsm.Node
	rm   *replica.Manager
}

// startNode runs one in-process node; opts, if any, adjust its controller's
// config.
func startNode(t testing.TB, opts ...func(*raftfsm.Config)) *node {
	t.Helper()
	dir := t.TempDir()
	rc := raftfsm.Config{
		NodeID: 1, ClusterID: "e2e-cluster-id-0000001",
		HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: 2 * time.Second,
		DefaultPartitions: 3, DefaultReplicationFactor: 1,
		Logger: zerolog.Nop(),
	}
	for _, o := range opts {
		o(&rc)
	}
	rn, err := raftfsm.StartInMemory(rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rn.Shutdown() })

	sm, _, err := storage.OpenManager(storage.ManagerOptions{Dirs: []string{filepath.Join(dir, "logs")}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sm.Close() })
	rm, err := replica.NewManager(replica.Config{
		BrokerID: 1, Storage: sm, TopicConfig: testTopicConfig(t), Controller: rn.Client(),
		Dial: replica.TCPDialer("e2e", time.Second), InterBrokerListener: "CLIENT", Logger: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	// As cmd/raftka's feed: the node serves what the replicas applied.
	rn.HoldServing()
	sub := rn.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		for {
			ev, err := sub.Next(ctx)
			if err != nil {
				return
			}
			rm.Apply(ev.Image, ev.Delta, ev.Reset)
			rm.MarkApplied(ev.Index)
			rn.Serve(ev.Image, ev.Index)
		}
	}()
	t.Cleanup(func() {
		cancel()
		sub.Close()
		<-fed
		_ = rm.Close()
	})

	groups := group.NewCoordinator(group.CoordinatorConfig{
		NodeID: 1,
		Group: group.Config{
			MinSessionTimeout: 100 * time.Millisecond, MaxSessionTimeout: time.Minute,
			InitialRebalanceDelay: 50 * time.Millisecond,
		},
		OffsetsTopicPartitions: 5, OffsetsTopicReplicationFactor: 1,
		Logger: testLogger(t),
	}, rn.Publisher(), rn.Client())
	t.Cleanup(groups.Close)

	cln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{
		Logger: testLogger(t), Listeners: []Listener{{Name: "CLIENT", Listener: cln}}, NodeID: 1,
		Deps:       Deps{Metadata: rn, Controller: rn.Client(), Replicas: rm, Groups: groups},
		Partitions: PartitionOptions{LogDirs: []string{filepath.Join(dir, "logs")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	t.Cleanup(func() {
		_ = srv.Close()
		<-served
	})
	port := uint16(cln.Addr().(*net.TCPAddr).Port)
	life, err := StartLifecycle(LifecycleOptions{
		NodeID: 1, ClusterID: "e2e-cluster-id-0000001", Controller: rn.Client(),
		Endpoints: []metadata.Endpoint{{Listener: "CLIENT", Host: "127.0.0.1", Port: port}},
		Applied:   func() uint64 { _, i := rn.Current(); return i },
		Interval:  100 * time.Millisecond, Logger: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(life.Close)
	waitTB(t, "broker 1 unfenced", func() bool {
		img, _ := rn.Current()
		b, ok := img.Broker(1)
		return ok && !b.Fenced
	})
	return &node{addr: cln.Addr().String(), raft: rn, rm: rm}
}

func (n *node) createTopic(t testing.TB, name string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	resp, err := n.raft.Client().CreateTopics(ctx, req)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", name, err, resp)
	}
	waitTB(t, "partitions led here", func() bool {
		for p := range partitions {
			part, err := n.rm.Partition(name, p)
			if err != nil || part.State().Role != replica.RoleLeader {
				return false
			}
		}
		return true
	})
}

// TestEndToEndFranzGo: a franz-go producer writes 10,000 keyed records with
// headers across 3 partitions through the real server, and a franz-go
// consumer reads every one back with the same key, value, headers and
// offset.
func TestEndToEndFranzGo(t *testing.T) {
	n := startNode(t)
	n.createTopic(t, "e2e", 3)
	const total = 10000
	prod, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic("e2e"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type sent struct {
		key, value string
		header     string
		offset     int64
	}
	want := make(map[int32][]sent)
	recs := make([]*kgo.Record, total)
	for i := range recs {
		s := strconv.Itoa(i)
		recs[i] = &kgo.Record{
			Partition: int32(i % 3), Key: []byte("key-" + s), Value: []byte(fmt.Sprintf("value-%d-%0100d", i, i)),
			Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(s)}, {Key: "empty"}},
		}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		want[r.Partition] = append(want[r.Partition], sent{string(r.Key), string(r.Value), string(r.Headers[0].Value), r.Offset})
	}
	for p, ws := range want {
		for i, w := range ws {
			if w.offset != int64(i) {
				t.Fatalf("partition %d: record %d acknowledged at offset %d", p, i, w.offset)
			}
		}
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(n.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"e2e": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := make(map[int32][]sent)
	for n := 0; n < total; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", n, total, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if len(r.Headers) != 2 || r.Headers[0].Key != "i" || r.Headers[1].Key != "empty" || len(r.Headers[1].Value) != 0 {
				t.Fatalf("record %s-%d@%d headers %v", r.Topic, r.Partition, r.Offset, r.Headers)
			}
			got[r.Partition] = append(got[r.Partition], sent{string(r.Key), string(r.Value), string(r.Headers[0].Value), r.Offset})
		})
	}
	for p, ws := range want {
		if len(got[p]) != len(ws) {
			t.Fatalf("partition %d: read %d records, produced %d", p, len(got[p]), len(ws))
		}
		for i := range ws {
			if got[p][i] != ws[i] {
				t.Fatalf("partition %d record %d: read %+v, produced %+v", p, i, got[p][i], ws[i])
			}
		}
	}
}
