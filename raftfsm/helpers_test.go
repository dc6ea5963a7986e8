package raftfsm

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const testClusterID = "test-cluster-id-000001"

type testCluster struct {
	t      *testing.T
	voters []Voter
	dirs   []string
	nodes  []*Node // nil when stopped
	opts   func(*Config)
}

func testLogger() zerolog.Logger {
	if os.Getenv("RAFTFSM_TEST_LOG") != "" {
		return zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	}
	return zerolog.Nop()
}

func (tc *testCluster) config(i int, ln net.Listener) Config {
	cfg := Config{
		NodeID:                   tc.voters[i].ID,
		Voter:                    true,
		Voters:                   tc.voters,
		Listener:                 ln,
		DataDir:                  tc.dirs[i],
		ClusterID:                testClusterID,
		HeartbeatInterval:        100 * time.Millisecond,
		SessionTimeout:           time.Second,
		RaftHeartbeatTimeout:     250 * time.Millisecond,
		RaftElectionTimeout:      250 * time.Millisecond,
		RaftLeaderLeaseTimeout:   200 * time.Millisecond,
		RaftCommitTimeout:        5 * time.Millisecond,
		DefaultPartitions:        3,
		DefaultReplicationFactor: 1,
		ShutdownTransferTimeout:  2 * time.Second,
		Logger:                   testLogger(),
		// The fake brokers listen nowhere: a real probe would find every
		// one of them dead. They count as alive unless a test says not.
		Prober: func(context.Context, []metadata.Endpoint) ProbeOutcome { return ProbeAnswered },
	}
	if tc.opts != nil {
		tc.opts(&cfg)
	}
	return cfg
}

// startCluster starts n in-process voters on loopback with real TCP.
func startCluster(t *testing.T, n int, opts func(*Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, opts: opts, nodes: make([]*Node, n)}
	lns := make([]net.Listener, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		tc.voters = append(tc.voters, Voter{ID: int32(i + 1), Addr: ln.Addr().String()})
		tc.dirs = append(tc.dirs, t.TempDir())
	}
	for i := range n {
		node, err := Start(tc.config(i, lns[i]))
		if err != nil {
			t.Fatalf("start node %d: %v", i+1, err)
		}
		tc.nodes[i] = node
	}
	t.Cleanup(tc.stopAll)
	return tc
}

func (tc *testCluster) stopAll() {
	for i := range tc.nodes {
		tc.stop(i)
	}
}

func (tc *testCluster) stop(i int) {
	if tc.nodes[i] != nil {
		if err := tc.nodes[i].Shutdown(); err != nil {
			tc.t.Logf("shutdown node %d: %v", i+1, err)
		}
		tc.nodes[i] = nil
	}
}

// restart starts node i again on its old address and data directory.
func (tc *testCluster) restart(i int) *Node {
	tc.t.Helper()
	var ln net.Listener
	// The old listener's port may take a moment to be free again.
	waitFor(tc.t, 5*time.Second, "relisten on "+tc.voters[i].Addr, func() bool {
		var err error
		ln, err = net.Listen("tcp", tc.voters[i].Addr)
		return err == nil
	})
	node, err := Start(tc.config(i, ln))
	if err != nil {
		tc.t.Fatalf("restart node %d: %v", i+1, err)
	}
	tc.nodes[i] = node
	return node
}

// leader waits for exactly one running node to lead and returns its index.
func (tc *testCluster) leader(timeout time.Duration) int {
	tc.t.Helper()
	var idx int
	waitFor(tc.t, timeout, "one raft leader", func() bool {
		idx = -1
		count := 0
		for i, n := range tc.nodes {
			if n != nil && n.IsLeader() && n.activeController() != nil {
				idx = i
				count++
			}
		}
		return count == 1
	})
	return idx
}

func (tc *testCluster) follower() int {
	for i, n := range tc.nodes {
		if n != nil && !n.IsLeader() {
			return i
		}
	}
	tc.t.Fatal("no follower")
	return -1
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func createTopicReq(name string, parts int32, rf int16) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, parts, rf
	req.Topics = append(req.Topics, t)
	return req
}

func mustCreate(t *testing.T, c *ControllerClient, name string, parts int32, rf int16) {
	t.Helper()
	resp, err := c.CreateTopics(ctxT(t, 10*time.Second), createTopicReq(name, parts, rf))
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create %s: error code %d: %s", name, code, deref(resp.Topics[0].ErrorMessage))
	}
}

// fakeBroker registers a broker id and heartbeats from its own goroutine
// until stopped; pause/resume stop and restart the heartbeats without
// unregistering, as a SIGSTOPped process would.
type fakeBroker struct {
	t      *testing.T
	id     int32
	epoch  int64
	client *ControllerClient
	node   *Node // the local node whose applied index the heartbeat reports

	pauseCh  chan bool
	shutdown chan bool // WantShutdown flag for the next heartbeats
	quit     chan struct{}
	done     chan struct{}
	last     chan *kmsg.BrokerHeartbeatResponse
}

func startFakeBroker(t *testing.T, tc *testCluster, id int32, local int) *fakeBroker {
	t.Helper()
	b := &fakeBroker{
		t: t, id: id, node: tc.nodes[local],
		client:   NewControllerClient(ClientConfig{Voters: tc.voters, Waiter: tc.nodes[local]}),
		pauseCh:  make(chan bool),
		shutdown: make(chan bool),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		last:     make(chan *kmsg.BrokerHeartbeatResponse, 1),
	}
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID = id, testClusterID
	req.IncarnationID = [16]byte{byte(id), 1}
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9000+id)
	req.Listeners = append(req.Listeners, l)
	resp, err := b.client.RegisterBroker(ctxT(t, 10*time.Second), req)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("register broker %d: %v code %v", id, err, resp)
	}
	b.epoch = resp.BrokerEpoch
	go b.run()
	t.Cleanup(b.stop)
	return b
}

func (b *fakeBroker) stop() {
	select {
	case <-b.quit:
	default:
		close(b.quit)
	}
	<-b.done
	b.client.Close()
}

func (b *fakeBroker) run() {
	defer close(b.done)
	paused, wantShutdown := false, false
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-b.quit:
			return
		case paused = <-b.pauseCh:
			continue
		case wantShutdown = <-b.shutdown:
		case <-tick.C:
		}
		if paused {
			continue
		}
		_, applied := b.node.Current()
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID, req.BrokerEpoch = b.id, b.epoch
		req.CurrentMetadataOffset = int64(applied)
		req.WantShutdown = wantShutdown
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := b.client.Heartbeat(ctx, req)
		cancel()
		if err != nil {
			continue
		}
		select {
		case <-b.last:
		default:
		}
		b.last <- resp
	}
}

func (b *fakeBroker) pause(p bool) {
	select {
	case b.pauseCh <- p:
	case <-b.done:
	}
}

// startBrokers registers brokers 1..n, each reporting node i's applied index,
// and waits until all are unfenced.
func startBrokers(t *testing.T, tc *testCluster, n int) []*fakeBroker {
	t.Helper()
	var bs []*fakeBroker
	for i := range n {
		bs = append(bs, startFakeBroker(t, tc, int32(i+1), i%len(tc.nodes)))
	}
	waitFor(t, 10*time.Second, "brokers unfenced", func() bool {
		for _, node := range tc.nodes {
			if node == nil {
				continue
			}
			img, _ := node.Current()
			for _, b := range bs {
				reg, ok := img.Broker(b.id)
				if !ok || reg.Fenced {
					return false
				}
			}
		}
		return true
	})
	return bs
}
