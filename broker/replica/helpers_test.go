package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const listener = "INTERNAL"

// controller is the cluster's active controller: an in-memory raftfsm
// node, so AlterPartition runs the real decision, Raft commit and
// publisher. One feed goroutine hands every published change to every
// subscribed Manager in order; apply returns once all of them have it, so
// a test's next line sees the change everywhere.
type controller struct {
	t    testing.TB
	node *raftfsm.Node

	alters atomic.Int32 // AlterPartition calls

	mu   sync.Mutex
	cond *sync.Cond // signaled when fed grows
	img  *metadata.Image
	fed  uint64
	subs []*Manager
	// skip names Managers the feed passes over while commitTo runs, and
	// held keeps the events they missed.
	skip map[int32]bool
	held []raftfsm.Event
}

func newController(t testing.TB) *controller {
	t.Helper()
	node, err := raftfsm.StartInMemory(raftfsm.Config{
		NodeID: 1, ClusterID: "replica-test-cluster",
		// No broker heartbeats here: sessions must outlive every test.
		SessionTimeout: time.Hour, Logger: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &controller{t: t, node: node}
	c.cond = sync.NewCond(&c.mu)
	c.img, c.fed = node.Current()
	sub := node.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		for {
			ev, err := sub.Next(ctx)
			if err != nil {
				return
			}
			c.mu.Lock()
			if ev.Index > c.fed {
				for _, m := range c.subs {
					if !c.skip[m.cfg.BrokerID] {
						m.Apply(ev.Image, ev.Delta, ev.Reset)
					}
				}
				if len(c.skip) > 0 {
					c.held = append(c.held, ev)
				}
				c.img, c.fed = ev.Image, ev.Index
				c.cond.Broadcast()
			}
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		sub.Close()
		<-fed
		if err := node.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func (c *controller) subscribe(m *Manager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = append(c.subs, m)
	m.Apply(c.img, nil, true)
}

// apply commits recs as given and waits until every Manager has them.
func (c *controller) apply(t testing.TB, recs ...metadata.Record) {
	t.Helper()
	c.commit(t, recs)
}

// commit commits recs and waits until the feed has handed them out.
func (c *controller) commit(t testing.TB, recs []metadata.Record) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	index, err := c.node.CommitRecords(ctx, recs...)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.fed < index {
		c.cond.Wait()
	}
	return index
}

func (c *controller) image() *metadata.Image {
	img, _ := c.node.Current()
	return img
}

func (c *controller) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	c.alters.Add(1)
	return c.node.Client().AlterPartition(ctx, req)
}

type clusterOpts struct {
	n   int
	lag time.Duration
	tcp bool // fetch over loopback TCP instead of the in-memory network
	// fetchWait is replica.fetch.wait.max.ms (default 200ms). Tests of
	// wake-ups set it far beyond their deadlines, so a missed wake-up
	// shows as a hang instead of a delay.
	fetchWait time.Duration
	// fetchBackoff is replica.fetch.backoff.ms (default 20ms).
	fetchBackoff time.Duration
	// fetchers is num.replica.fetchers (default 1).
	fetchers int
	// syncData, when set, gives each broker's storage its data fsync
	// (storage.ManagerOptions.SyncData).
	syncData func(broker int32) func(*os.File) error
}

type cluster struct {
	t    testing.TB
	ctrl *controller
	net  *InmemNetwork
	ms   map[int32]*Manager
}

func topicConfigFromImage(img *metadata.Image, topic string) (TopicConfig, error) {
	tc := TopicConfig{Log: storage.DefaultConfig(), MinInsyncReplicas: 1, ELR: img.ELREnabled()}
	if t, ok := img.Topic(topic); ok {
		if v, ok := t.Configs["min.insync.replicas"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return tc, err
			}
			tc.MinInsyncReplicas = n
		}
		if v, ok := t.Configs["flush.messages"]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return tc, err
			}
			tc.Log.FlushMessages = n
		}
	}
	return tc, nil
}

func newCluster(t testing.TB, o clusterOpts) *cluster {
	t.Helper()
	if o.lag == 0 {
		o.lag = 30 * time.Second
	}
	if o.fetchWait == 0 {
		o.fetchWait = 200 * time.Millisecond
	}
	if o.fetchBackoff == 0 {
		o.fetchBackoff = 20 * time.Millisecond
	}
	c := &cluster{t: t, ctrl: newController(t), net: NewInmemNetwork(), ms: map[int32]*Manager{}}
	var regs []metadata.Record
	for i := int32(1); i <= int32(o.n); i++ {
		so := storage.ManagerOptions{Dirs: []string{t.TempDir()}, DisableScheduler: true}
		if o.syncData != nil {
			so.SyncData = o.syncData(i)
		}
		sm, _, err := storage.OpenManager(so)
		if err != nil {
			t.Fatal(err)
		}
		dial := c.net.Dialer(i)
		if o.tcp {
			dial = TCPDialer(fmt.Sprintf("replica-%d", i), 5*time.Second)
		}
		m, err := NewManager(Config{
			BrokerID: i, Storage: sm, TopicConfig: topicConfigFromImage, Controller: c.ctrl, Dial: dial,
			InterBrokerListener: listener, Logger: zerolog.Nop(), ReplicaLagTimeMax: o.lag,
			FetchWaitMax: o.fetchWait, FetchBackoff: o.fetchBackoff, RequestTimeout: 5 * time.Second,
			NumFetchers: o.fetchers,
		})
		if err != nil {
			t.Fatal(err)
		}
		port := uint16(0)
		if o.tcp {
			port = serveTCP(t, m, c.net, i)
		}
		c.net.Register(i, m)
		c.ms[i] = m
		t.Cleanup(func() {
			if err := m.Close(); err != nil {
				t.Error(err)
			}
			if err := sm.Close(); err != nil {
				t.Error(err)
			}
		})
		c.ctrl.subscribe(m)
		regs = append(regs, &metadata.RegisterBroker{
			BrokerID: i, BrokerEpoch: int64(100 + i),
			Endpoints: []metadata.Endpoint{{Listener: listener, Host: "127.0.0.1", Port: port}},
		})
	}
	c.ctrl.apply(t, regs...)
	return c
}

// createTopic creates a one-partition topic with the replicas given
// (the first leads).
func (c *cluster) createTopic(name string, minISR int, replicas ...int32) [16]byte {
	c.t.Helper()
	id := [16]byte{1, byte(len(name)), name[0]}
	parts := metadata.NewPartitions(0, [][]int32{replicas}, c.ctrl.image().UsableBrokers())
	c.ctrl.apply(c.t, &metadata.CreateTopic{Name: name, ID: id, Configs: map[string]string{"min.insync.replicas": strconv.Itoa(minISR)}, Partitions: parts})
	return id
}

func (c *cluster) partition(id int32, topic string) *Partition {
	c.t.Helper()
	p, err := c.ms[id].Partition(topic, 0)
	if err != nil {
		c.t.Fatalf("broker %d: %v", id, err)
	}
	return p
}

// waitFor waits until cond holds, failing the test after a deadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func batchOf(values ...string) []byte {
	vs := make([][]byte, len(values))
	for i, v := range values {
		vs[i] = []byte(v)
	}
	return recordbatch.BuildValues(time.Now().UnixMilli(), vs...)
}

// logBytes returns a log's batches below end.
func logBytes(t testing.TB, l *storage.Log, end int64) []byte {
	t.Helper()
	r, err := l.ReadUpTo(l.LogStartOffset(), 1<<30, end)
	if err != nil {
		t.Fatal(err)
	}
	if r.Len == 0 {
		return nil
	}
	b, err := r.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameBelow checks that every broker's log holds byte-identical batches
// below end.
func (c *cluster) sameBelow(topic string, end int64, ids ...int32) {
	c.t.Helper()
	want := logBytes(c.t, c.partition(ids[0], topic).Log(), end)
	if len(want) == 0 && end > 0 {
		c.t.Fatalf("broker %d has no batches below %d", ids[0], end)
	}
	for _, id := range ids[1:] {
		if got := logBytes(c.t, c.partition(id, topic).Log(), end); !bytes.Equal(got, want) {
			c.t.Fatalf("broker %d's batches below %d differ from broker %d's (%d vs %d bytes)", id, end, ids[0], len(got), len(want))
		}
	}
}

// serveTCP serves Fetch and OffsetForLeaderEpoch frames for m on a loopback
// port, the way the root broker's listener would, and returns the port.
func serveTCP(t testing.TB, m *Manager, n *InmemNetwork, self int32) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	ctx, cancel := context.WithCancel(context.Background())
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				for serveFrame(ctx, m, n, self, c) == nil {
				}
			}()
		}
	}()
	t.Cleanup(func() {
		cancel()
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// serveFrame reads one request frame and writes its answer.
func serveFrame(ctx context.Context, m *Manager, n *InmemNetwork, self int32, c net.Conn) error {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	key, version := int16(binary.BigEndian.Uint16(buf)), int16(binary.BigEndian.Uint16(buf[2:]))
	corr := buf[4:8]
	idLen := int(int16(binary.BigEndian.Uint16(buf[8:])))
	body := buf[10+max(idLen, 0):]
	req := kmsg.RequestForKey(key)
	if req == nil {
		return fmt.Errorf("unknown key %d", key)
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		body = body[1:] // no header tags
	}
	if err := req.ReadFrom(body); err != nil {
		return err
	}
	var resp kmsg.Response
	var from int32
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		from = r.ReplicaID
		if _, err := n.route(from, self); err != nil {
			return err
		}
		resp = m.ServeFetch(ctx, r)
	case *kmsg.OffsetForLeaderEpochRequest:
		from = r.ReplicaID
		if _, err := n.route(from, self); err != nil {
			return err
		}
		resp = m.ServeOffsetForLeaderEpoch(r)
	default:
		return fmt.Errorf("unexpected %T", req)
	}
	if _, err := n.route(from, self); err != nil {
		return err // went down while serving: the answer is lost
	}
	out := append([]byte{0, 0, 0, 0}, corr...)
	if resp.IsFlexible() {
		out = append(out, 0)
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	_, err := c.Write(out)
	return err
}

func batchOfAt(ts int64, values ...string) []byte {
	vs := make([][]byte, len(values))
	for i, v := range values {
		vs[i] = []byte(v)
	}
	return recordbatch.BuildValues(ts, vs...)
}
