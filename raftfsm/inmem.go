package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InmemNetwork connects nodes started with Config.Inmem: the in-memory
// twin of the controller, as hashicorp/raft ships InmemStore and
// InmemTransport beside the real ones. Raft traffic goes over
// raft.InmemTransport; controller RPCs are handed to the addressed node in
// process, encoded and decoded as Kafka frames exactly as on the controller
// listener, so the same parse, decide, commit, publish and read-your-writes
// path runs, without boltdb, files or sockets. Each address keeps its Raft
// log and snapshots across a stop and a start, as a data directory would.
// Safe for concurrent use.
type InmemNetwork struct {
	mu      sync.Mutex
	members map[string]*inmemMember // by address
	corr    atomic.Int32
}

type inmemMember struct {
	node  *Node // nil while stopped
	trans *raft.InmemTransport
	logs  *raft.InmemStore
	snaps *raft.InmemSnapshotStore
}

// NewInmemNetwork returns an empty network.
func NewInmemNetwork() *InmemNetwork {
	return &InmemNetwork{members: map[string]*inmemMember{}}
}

// InmemAddr is the address StartInMemory gives node id: a host:port, as
// controller.quorum.voters needs, that names a node on an InmemNetwork and
// nothing on any real network.
func InmemAddr(id int32) string { return "inmem-" + strconv.Itoa(int(id)) + ":9093" }

var errInmemNodeDown = errors.New("raftfsm: in-memory node stopped")

// startInmem joins n to cfg.Inmem under its address, with the stores that
// address kept from an earlier run, and returns the undo for a failed Start.
func (n *Node) startInmem() (func(), error) {
	n.addr = n.cfg.AdvertisedAddr
	if n.addr == "" {
		n.addr = n.voterAddr()
	}
	if n.addr == "" {
		n.addr = InmemAddr(n.cfg.NodeID)
	}
	m, err := n.cfg.Inmem.join(n)
	if err != nil {
		return nil, err
	}
	n.logs, n.stable, n.snaps, n.trans = m.logs, m.logs, m.snaps, m.trans
	n.pool = &inmemClient{net: n.cfg.Inmem}
	return func() { n.cfg.Inmem.leave(n) }, nil
}

func (w *InmemNetwork) join(n *Node) (*inmemMember, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.members[n.addr]
	if m == nil {
		m = &inmemMember{logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
		w.members[n.addr] = m
	}
	if m.node != nil {
		return nil, fmt.Errorf("raftfsm: in-memory address %s is taken by node %d", n.addr, m.node.cfg.NodeID)
	}
	// A transport does not outlive its node (Raft closes it at shutdown),
	// so every start gets a new one and the peers are pointed at it.
	_, m.trans = raft.NewInmemTransport(raft.ServerAddress(n.addr))
	for addr, o := range w.members {
		if o.node == nil || addr == n.addr {
			continue
		}
		m.trans.Connect(raft.ServerAddress(addr), o.trans)
		o.trans.Connect(raft.ServerAddress(n.addr), m.trans)
	}
	m.node = n
	return m, nil
}

// leave takes n off the network: its peers stop routing to it, as to a
// process that exited. Its stores stay for the next start at its address.
func (w *InmemNetwork) leave(n *Node) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.members[n.addr]
	if m == nil || m.node != n {
		return
	}
	m.node = nil
	for addr, o := range w.members {
		if addr != n.addr && o.trans != nil {
			o.trans.Disconnect(raft.ServerAddress(n.addr))
		}
	}
	_ = m.trans.Close()
}

func (w *InmemNetwork) node(addr string) *Node {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m := w.members[addr]; m != nil {
		return m.node
	}
	return nil
}

// inmemClient is the roundTripper of clients on an InmemNetwork.
type inmemClient struct {
	net    *InmemNetwork
	closed atomic.Bool
}

func (c *inmemClient) close() { c.closed.Store(true) }

func (c *inmemClient) roundTrip(ctx context.Context, addr, clientID string, req kmsg.Request) (kmsg.Response, error) {
	if c.closed.Load() {
		return nil, errPoolClosed
	}
	if addr == "" {
		return nil, errors.New("raftfsm: no controller address")
	}
	n := c.net.node(addr)
	if n == nil {
		return nil, fmt.Errorf("raftfsm: no in-memory node at %s", addr)
	}
	return n.serveInmem(ctx, c.net.corr.Add(1), clientID, req)
}

// serveInmem is serveConn for one request that arrives without a socket:
// the request is framed and parsed, answered by handle, and the answer
// framed and parsed back, so both sides see only what the wire carries.
// Unlike a socket, the caller's ctx also bounds the handling; an
// operation already queued may still commit, as one whose connection
// dropped may.
func (n *Node) serveInmem(ctx context.Context, corr int32, clientID string, req kmsg.Request) (kmsg.Response, error) {
	select {
	case <-n.rpcReady:
	case <-n.ctx.Done():
		return nil, errInmemNodeDown
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, corr)
	hdr, sreq, err := parseRequest(frame[4:])
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(n.ctx, rpcTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	resp := n.handle(sctx, hdr, sreq)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n.ctx.Err() != nil {
		return nil, errInmemNodeDown
	}
	out := appendResponse(nil, hdr.correlationID, resp)
	return parseResponse(out[4:], corr, req)
}

// StartInMemory starts a node on an InmemNetwork (a new one unless
// cfg.Inmem is set) with Raft timing fit for tests. With no Voters it is
// the single voter of its own quorum at InmemAddr(cfg.NodeID), and
// StartInMemory returns once it is the active controller and its image
// holds the cluster id, so a caller's first controller call needs no
// retry. A zero ClusterID becomes "inmem-cluster".
func StartInMemory(cfg Config) (*Node, error) {
	if cfg.Inmem == nil {
		cfg.Inmem = NewInmemNetwork()
	}
	single := len(cfg.Voters) == 0
	if single {
		cfg.Voter = true
		cfg.Voters = []Voter{{ID: cfg.NodeID, Addr: InmemAddr(cfg.NodeID)}}
	}
	if cfg.ClusterID == "" {
		cfg.ClusterID = "inmem-cluster"
	}
	// No network delays to absorb, and a single voter has no follower
	// whose silence could cost it the lease: it elects itself within two
	// heartbeat timeouts of starting, so those are as short as
	// hashicorp/raft allows. Several voters keep room for a busy machine.
	timeout := 100 * time.Millisecond
	if single {
		timeout = 5 * time.Millisecond
	}
	if cfg.RaftHeartbeatTimeout <= 0 {
		cfg.RaftHeartbeatTimeout = timeout
	}
	if cfg.RaftElectionTimeout <= 0 {
		cfg.RaftElectionTimeout = timeout
	}
	if cfg.RaftLeaderLeaseTimeout <= 0 {
		cfg.RaftLeaderLeaseTimeout = cfg.RaftHeartbeatTimeout
	}
	if cfg.RaftCommitTimeout <= 0 {
		cfg.RaftCommitTimeout = 5 * time.Millisecond
	}
	if cfg.ShutdownTransferTimeout <= 0 {
		cfg.ShutdownTransferTimeout = time.Second
	}
	n, err := Start(cfg)
	if err != nil || !single {
		return n, err
	}
	if err := n.waitActive(10 * time.Second); err != nil {
		_ = n.Shutdown()
		return nil, err
	}
	return n, nil
}

// waitActive waits until n is the active controller and its image holds
// the cluster id.
func (n *Node) waitActive(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		if img, _ := n.pub.Latest(); n.activeController() != nil && img.ClusterID() != "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("raftfsm: in-memory node %d not the active controller after %v", n.cfg.NodeID, limit)
		}
		select {
		case <-n.done:
			return n.Err()
		case <-t.C:
		}
	}
}

// CommitRecords commits recs as given, without a decision, through the
// active controller's loop, Raft and the FSM, and returns the index once
// this node has applied it. It exists for tests that start from an image
// requests would take many steps to build (fixed epochs, ids, placements),
// so only in-memory nodes accept it. A record the image would skip is an
// error and nothing is committed.
func (n *Node) CommitRecords(ctx context.Context, recs ...metadata.Record) (uint64, error) {
	if n.cfg.Inmem == nil {
		return 0, errors.New("raftfsm: CommitRecords is for in-memory nodes")
	}
	c := n.activeController()
	if c == nil {
		return 0, ErrNotController
	}
	var skipped error
	res := c.submit(ctx, func(_ *controller, img *metadata.Image, _ time.Time) decision {
		if _, d := img.Apply(recs); len(d.Skipped) > 0 {
			skipped = fmt.Errorf("raftfsm: record skipped: %w", d.Skipped[0].Err)
			return decision{}
		}
		return decision{recs: recs}
	})
	if res.err != nil {
		return 0, res.err
	}
	if skipped != nil {
		return 0, skipped
	}
	return res.index, n.pub.WaitForIndex(ctx, res.index)
}
