package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const listener = "INTERNAL"

// fakeController holds the cluster image, applies AlterPartition the way
// the active controller does (metadata.ValidateAlterPartition) and feeds
// every change to every Manager in order, like the publisher.
type fakeController struct {
	mu     sync.Mutex
	img    *metadata.Image
	subs   []*Manager
	alters int
}

func (c *fakeController) subscribe(m *Manager) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = append(c.subs, m)
	m.Apply(c.img, nil, true)
}

func (c *fakeController) apply(t testing.TB, recs ...metadata.Record) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applyLocked(t, recs...)
}

func (c *fakeController) applyLocked(t testing.TB, recs ...metadata.Record) {
	img, delta := c.img.Apply(recs)
	if len(delta.Skipped) > 0 {
		t.Errorf("records skipped: %v", delta.Skipped[0].Err)
	}
	c.img = img
	for _, m := range c.subs {
		m.Apply(img, delta, false)
	}
}

func (c *fakeController) image() *metadata.Image {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.img
}

func (c *fakeController) AlterPartition(_ context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.alters++
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.Topic, rt.TopidID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			ar := metadata.AlterPartitionRequest{
				BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch, TopicID: t.TopicID, Partition: p.Partition,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
			}
			for _, e := range p.NewEpochISR {
				ar.NewISR = append(ar.NewISR, e.BrokerID)
				ar.NewISRBrokerEpochs = append(ar.NewISRBrokerEpochs, e.BrokerEpoch)
			}
			out := kmsg.NewAlterPartitionResponseTopicPartition()
			out.Partition = p.Partition
			rec, err := c.img.ValidateAlterPartition(ar)
			if err != nil {
				out.ErrorCode = metadataCode(err)
			} else if rec != nil {
				img, delta := c.img.Apply([]metadata.Record{rec})
				c.img = img
				for _, m := range c.subs {
					m.Apply(img, delta, false)
				}
			}
			if ti, ok := c.img.TopicByID(t.TopicID); ok && out.ErrorCode == 0 {
				reg, _ := ti.Partition(p.Partition)
				out.LeaderID, out.LeaderEpoch, out.ISR, out.PartitionEpoch = reg.Leader, reg.LeaderEpoch, reg.ISR, reg.PartitionEpoch
			}
			rt.Partitions = append(rt.Partitions, out)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func metadataCode(err error) int16 {
	switch {
	case errors.Is(err, metadata.ErrStaleBrokerEpoch):
		return kerr.StaleBrokerEpoch.Code
	case errors.Is(err, metadata.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, metadata.ErrInvalidUpdateVersion):
		return kerr.InvalidUpdateVersion.Code
	case errors.Is(err, metadata.ErrNotLeader):
		return kerr.InvalidRequest.Code // as raftfsm's controller and Kafka's answer
	case errors.Is(err, metadata.ErrIneligibleReplica):
		return kerr.IneligibleReplica.Code
	case errors.Is(err, metadata.ErrUnknownTopic), errors.Is(err, metadata.ErrUnknownPartition):
		return kerr.UnknownTopicID.Code
	default:
		return kerr.InvalidRequest.Code
	}
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
}

type cluster struct {
	t    testing.TB
	ctrl *fakeController
	net  *InmemNetwork
	ms   map[int32]*Manager
}

func topicConfigFromImage(img *metadata.Image, topic string) (TopicConfig, error) {
	tc := TopicConfig{Log: storage.DefaultConfig(), MinInsyncReplicas: 1}
	if t, ok := img.Topic(topic); ok {
		if v, ok := t.Configs["min.insync.replicas"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return tc, err
			}
			tc.MinInsyncReplicas = n
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
	c := &cluster{t: t, ctrl: &fakeController{img: metadata.NewImage()}, net: NewInmemNetwork(), ms: map[int32]*Manager{}}
	var regs []metadata.Record
	for i := int32(1); i <= int32(o.n); i++ {
		sm, _, err := storage.OpenManager(storage.ManagerOptions{Dirs: []string{t.TempDir()}, DisableScheduler: true})
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
