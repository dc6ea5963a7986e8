package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/bbolt"
)

// Voter is one entry of controller.quorum.voters: id@host:port.
type Voter struct {
	ID   int32
	Addr string // host:port of the voter's controller listener
}

// Config configures a Node. It is raftfsm's own struct: cmd maps
// server.properties onto it.
type Config struct {
	NodeID int32
	// Voter is true when process.roles contains controller. A voter must be
	// listed in Voters; any other node joins as a Raft non-voter.
	Voter bool
	// Voters is controller.quorum.voters, identical on every node: a
	// static quorum. Empty for a dynamic one (KIP-853), which is reached
	// by BootstrapServers and started from InitialVoters.
	Voters []Voter
	// BootstrapServers is controller.quorum.bootstrap.servers: controller
	// listeners to send the first controller requests to when Voters is
	// empty; afterwards the Raft configuration names the voters.
	BootstrapServers []string
	// InitialVoters is what storage format --standalone or
	// --initial-controllers wrote: a node listed here with no Raft state
	// bootstraps the quorum with these voters. A controller not listed
	// (--no-initial-controllers) starts as an observer (a Raft non-voter)
	// until AddRaftVoter promotes it.
	InitialVoters []Voter
	// DirectoryID is the metadata log dir's directory.id (KIP-858): what
	// AddRaftVoter records for this node, and what tells this incarnation
	// of the node id from an earlier one (vote_gate.go). Zero: unknown.
	DirectoryID [16]byte

	// Listener is the controller listener, shared by Raft and the controller
	// RPCs. If nil, ListenAddr is bound. Broker-only nodes need one too:
	// the Raft leader replicates the metadata log to them over it.
	Listener   net.Listener
	ListenAddr string
	// AdvertisedAddr is the host:port other nodes dial. It defaults to this
	// node's entry in Voters, then to the listener's address.
	AdvertisedAddr string

	// Handshake, when set, secures every connection accepted on the
	// controller listener before it is routed (TLS, SASL: the listener's
	// protocol); Dial, when set, opens this node's connections to other
	// nodes' controller listeners the same way: Raft streams, the
	// controller RPCs and their forwarding. Both nil: PLAINTEXT.
	Handshake Handshake
	Dial      Dialer
	// Authorizer, when set, admits on the controller listener only
	// principals with CLUSTER_ACTION on the cluster (brokers and
	// controllers): a Raft stream of anyone else is closed, and a
	// controller RPC answered CLUSTER_AUTHORIZATION_FAILED. A node in
	// memory (Inmem) has no listener and applies none of the three.
	Authorizer *metadata.Authorizer

	// DescribeConfigs, when set, answers DescribeConfigs on the controller
	// listener for principal from host, checking DESCRIBE_CONFIGS itself
	// (cmd gives the node's broker's, so the controller describes what
	// the broker would; KIP-919's --bootstrap-controller tools). Unset,
	// DescribeConfigs is neither served nor advertised there.
	DescribeConfigs func(ctx context.Context, principal, host string, req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse

	// DataDir holds the Raft stores: <metadata.log.dir>/raft.
	DataDir string

	// Inmem, when set, runs the node on hashicorp/raft's in-memory stores
	// and transport instead of boltdb, snapshot files and the controller
	// listener: the same FSM, publisher, controller and RPC handling, with
	// controller RPCs handed in process to the node the network knows by
	// address (see inmem.go). DataDir, Listener and ListenAddr are unused;
	// Voters' addresses are names on the network. Tests use it.
	Inmem *InmemNetwork

	// ClusterID is the cluster.id from meta.properties. Required.
	ClusterID string
	// BootstrapRecords are committed with the cluster id when this node's
	// controller finds the metadata log empty (Kafka's bootstrap
	// checkpoint: the first SCRAM users of storage format --add-scram).
	BootstrapRecords []metadata.Record

	// HeartbeatInterval is broker.heartbeat.interval.ms (default 2s) and
	// SessionTimeout broker.session.timeout.ms (default 9s). The controller
	// fences on SessionTimeout alone, as Kafka's does; HeartbeatInterval is
	// how often this node's broker side heartbeats.
	HeartbeatInterval time.Duration
	SessionTimeout    time.Duration
	// Prober dials a suspected broker's listeners for fast death detection
	// (liveness.go): TCPProber by default over TCP; with Inmem, nil (no
	// fast detection) unless a test sets one.
	Prober Prober

	// Snapshots: take one after SnapshotThreshold new entries, checked every
	// SnapshotInterval; keep TrailingLogs entries behind a snapshot.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64

	// Raft timing. Zero keeps hashicorp/raft's defaults (1s, 1s, 500ms, 50ms);
	// tests use a few hundred milliseconds.
	RaftHeartbeatTimeout   time.Duration
	RaftElectionTimeout    time.Duration
	RaftLeaderLeaseTimeout time.Duration
	RaftCommitTimeout      time.Duration

	// Topic defaults the controller applies to CreateTopics:
	// num.partitions and default.replication.factor.
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// DefaultUncleanLeaderElection is unclean.leader.election.enable from
	// server.properties: the fallback when neither the topic nor the
	// dynamic broker or cluster configs set it. The controller never copies
	// it (or any other default) into a topic's configs.
	DefaultUncleanLeaderElection bool
	// DefaultMinInsyncReplicas is min.insync.replicas from
	// server.properties (0 means Kafka's 1), the same kind of fallback:
	// with eligible.leader.replicas.version 1 it decides which replicas
	// leaving the ISR stay eligible to lead (KIP-966).
	DefaultMinInsyncReplicas int
	// TopicDeletionDisabled is delete.topic.enable=false: DeleteTopics is
	// answered TOPIC_DELETION_DISABLED.
	TopicDeletionDisabled bool

	// AutoLeaderRebalance is auto.leader.rebalance.enable: every
	// LeaderImbalanceCheckInterval (leader.imbalance.check.interval.seconds,
	// default 300s) the active controller moves leadership back to each
	// partition's preferred replica where it is usable and in the ISR, for
	// the brokers whose share of such misplaced leaderships exceeds
	// LeaderImbalancePerBrokerPercentage (leader.imbalance.per.broker.percentage;
	// 0 moves every one). Kafka 4's KRaft controller ignores the percentage
	// and behaves as 0; Kafka's documentation and its ZooKeeper controller
	// apply it as here. The zero Config leaves rebalancing off.
	AutoLeaderRebalance                bool
	LeaderImbalanceCheckInterval       time.Duration
	LeaderImbalancePerBrokerPercentage int32

	// OffsetsRetention is offsets.retention.minutes (default 7 days): every
	// OffsetsRetentionCheckInterval (offsets.retention.check.interval.ms,
	// default 10 minutes) the active controller removes the committed
	// offsets that have expired under metadata.ExpireOffsets (KIP-211).
	OffsetsRetention              time.Duration
	OffsetsRetentionCheckInterval time.Duration

	// ControllerListenerName is the first of controller.listener.names
	// (default "CONTROLLER"): the listener name DescribeQuorum reports for
	// the voters' endpoints.
	ControllerListenerName string

	// ShutdownTransferTimeout bounds the leadership transfer at shutdown.
	ShutdownTransferTimeout time.Duration

	// Observer hears of commits, applies, snapshots and partition leader
	// elections, for metrics (metrics.go); nil hears nothing.
	Observer Observer

	Logger zerolog.Logger
	// RaftLogLevel is the level from which Raft's own lines are logged
	// (default info).
	RaftLogLevel hclog.Level
}

func (c *Config) setDefaults() {
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Prober == nil && c.Inmem == nil {
		c.Prober = TCPProber
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 2 * time.Second
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 9 * time.Second
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.SnapshotInterval <= 0 {
		c.SnapshotInterval = 2 * time.Minute
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 1
	}
	if c.DefaultReplicationFactor <= 0 {
		c.DefaultReplicationFactor = 1
	}
	if c.LeaderImbalanceCheckInterval <= 0 {
		c.LeaderImbalanceCheckInterval = 300 * time.Second
	}
	if c.OffsetsRetention <= 0 {
		c.OffsetsRetention = 7 * 24 * time.Hour
	}
	if c.OffsetsRetentionCheckInterval <= 0 {
		c.OffsetsRetentionCheckInterval = 10 * time.Minute
	}
	if c.ControllerListenerName == "" {
		c.ControllerListenerName = "CONTROLLER"
	}
	if c.ShutdownTransferTimeout <= 0 {
		c.ShutdownTransferTimeout = 5 * time.Second
	}
	if c.RaftLogLevel == hclog.NoLevel {
		c.RaftLogLevel = hclog.Info
	}
}

func (c *Config) validate() error {
	if c.ClusterID == "" {
		return errors.New("raftfsm: no cluster id: format the storage directory first (raftka storage format)")
	}
	if c.DataDir == "" && c.Inmem == nil {
		return errors.New("raftfsm: no data directory")
	}
	if len(c.Voters) == 0 && len(c.BootstrapServers) == 0 {
		return errors.New("raftfsm: controller.quorum.voters and controller.quorum.bootstrap.servers are both empty")
	}
	for _, a := range c.BootstrapServers {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("raftfsm: controller.quorum.bootstrap.servers: %w", err)
		}
	}
	seen := map[int32]bool{}
	for _, v := range c.InitialVoters {
		if _, _, err := net.SplitHostPort(v.Addr); err != nil {
			return fmt.Errorf("raftfsm: initial controllers: node %d: %w", v.ID, err)
		}
	}
	if len(c.Voters) == 0 {
		// Dynamic: who votes is the Raft configuration's business.
		if c.LeaderImbalancePerBrokerPercentage < 0 || c.LeaderImbalancePerBrokerPercentage > 100 {
			return fmt.Errorf("raftfsm: leader.imbalance.per.broker.percentage %d is not between 0 and 100", c.LeaderImbalancePerBrokerPercentage)
		}
		if c.Listener == nil && c.ListenAddr == "" && c.Inmem == nil {
			return errors.New("raftfsm: no controller listener")
		}
		return nil
	}
	for _, v := range c.Voters {
		if seen[v.ID] {
			return fmt.Errorf("raftfsm: controller.quorum.voters lists node %d twice", v.ID)
		}
		seen[v.ID] = true
		if _, _, err := net.SplitHostPort(v.Addr); err != nil {
			return fmt.Errorf("raftfsm: controller.quorum.voters: node %d: %w", v.ID, err)
		}
	}
	if c.Voter && !seen[c.NodeID] {
		return fmt.Errorf("raftfsm: node %d has the controller role but is not in controller.quorum.voters", c.NodeID)
	}
	if !c.Voter && seen[c.NodeID] {
		return fmt.Errorf("raftfsm: node %d is in controller.quorum.voters but lacks the controller role", c.NodeID)
	}
	if c.LeaderImbalancePerBrokerPercentage < 0 || c.LeaderImbalancePerBrokerPercentage > 100 {
		return fmt.Errorf("raftfsm: leader.imbalance.per.broker.percentage %d is not between 0 and 100", c.LeaderImbalancePerBrokerPercentage)
	}
	if c.Listener == nil && c.ListenAddr == "" && c.Inmem == nil {
		return errors.New("raftfsm: no controller listener")
	}
	return nil
}

// Node is one process's Raft member: the stores, the transport, the FSM and
// its publisher, the controller RPC server, and (while this node leads Raft)
// the active controller. All methods are safe for concurrent use.
type Node struct {
	cfg  Config
	log  zerolog.Logger
	addr string

	raft   *raft.Raft
	logs   raft.LogStore
	stable raft.StableStore
	snaps  raft.SnapshotStore
	trans  raft.Transport
	obs    *observedTransport // trans as Raft uses it (replication_view.go); nil if trans lacks pre-vote or Close
	// closeStore closes the boltdb store; nil in memory.
	closeStore func() error
	mux        *mux // nil in memory
	fsm        *fsm
	pub        *Publisher
	pool       roundTripper // for forwarding requests to the leader
	client     *ControllerClient

	leaderCh      chan bool
	leaderChanges atomic.Uint64 // new leaders seen (metrics.go)
	ctrlMu        sync.Mutex
	ctrl          *controller // non-nil while this node leads
	// changeMu is held while a voter change runs (quorum.go): one at a
	// time.
	changeMu sync.Mutex

	closing   chan struct{}
	ctx       context.Context // canceled when closing
	cancel    context.CancelFunc
	closeOnce sync.Once
	wg        sync.WaitGroup

	fatalOnce sync.Once
	fatalErr  atomic.Pointer[error]
	done      chan struct{} // closed when a fatal error stops the node
	// fastElection is set while a lowered heartbeat timeout is in force
	// (liveness_raft.go); leaseTimeout is Raft's LeaderLeaseTimeout, the
	// least heartbeat timeout it allows.
	fastElection atomic.Bool
	leaseTimeout time.Duration
	// voteGated: this node refuses votes until the image records its
	// directory id as a voter's (vote_gate.go).
	voteGated atomic.Bool
	// rpcReady is closed once n.raft exists: the controller listener
	// accepts before Raft starts (Raft needs its transport), so RPC
	// connections wait here rather than touch a nil *raft.Raft.
	rpcReady chan struct{}
}

// Start opens the Raft stores under cfg.DataDir, starts Raft and the
// controller listener, bootstraps a fresh voter from cfg.Voters, and starts
// asking to join as a non-voter when cfg.Voter is false. It fails when the
// local state belongs to another cluster.
func Start(cfg Config) (_ *Node, err error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:      cfg,
		log:      cfg.Logger.With().Str("component", "raftfsm").Int32("node", cfg.NodeID).Logger(),
		pub:      newPublisher(),
		leaderCh: make(chan bool, 16),
		closing:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	cleanup := []func(){n.cancel}
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()

	n.rpcReady = make(chan struct{})
	hl := newHCLog(cfg.Logger.With().Int32("node", cfg.NodeID).Logger(), cfg.RaftLogLevel)
	if cfg.Inmem != nil {
		release, err := n.startInmem()
		if err != nil {
			return nil, err
		}
		cleanup = append(cleanup, release)
	} else if err := n.startOnDisk(hl, &cleanup); err != nil {
		return nil, err
	}

	n.fsm = &fsm{pub: n.pub, clusterID: cfg.ClusterID, log: n.log, onFatal: n.fail, obs: cfg.Observer}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(strconv.Itoa(int(cfg.NodeID)))
	rc.Logger = hl
	rc.NotifyCh = n.leaderCh
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	if cfg.RaftHeartbeatTimeout > 0 {
		rc.HeartbeatTimeout = cfg.RaftHeartbeatTimeout
	}
	if cfg.RaftElectionTimeout > 0 {
		rc.ElectionTimeout = cfg.RaftElectionTimeout
	}
	if cfg.RaftLeaderLeaseTimeout > 0 {
		rc.LeaderLeaseTimeout = cfg.RaftLeaderLeaseTimeout
	}
	if cfg.RaftCommitTimeout > 0 {
		rc.CommitTimeout = cfg.RaftCommitTimeout
	}
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	n.leaseTimeout = rc.LeaderLeaseTimeout

	if ft, ok := n.trans.(fullTransport); ok {
		n.obs = newObservedTransport(ft)
		n.trans = n.obs
	}
	existing, err := raft.HasExistingState(n.logs, n.stable, n.snaps)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: read raft state: %w", err)
	}
	bootstrapping := !existing && cfg.Voter && (len(cfg.Voters) > 0 ||
		slices.ContainsFunc(cfg.InitialVoters, func(v Voter) bool { return v.ID == cfg.NodeID }))
	if n.obs != nil && !existing && !bootstrapping && len(cfg.Voters) == 0 && cfg.DirectoryID != ([16]byte{}) {
		// A fresh observer of a dynamic quorum: no votes until promoted.
		n.voteGated.Store(true)
		n.obs.gate = n.voteGateShut
		cleanup = append(cleanup, n.obs.stopGate)
	}
	initial := cfg.Voters
	if len(initial) == 0 && slices.ContainsFunc(cfg.InitialVoters, func(v Voter) bool { return v.ID == cfg.NodeID }) {
		initial = cfg.InitialVoters
	}
	bootstrapped := false
	if !existing && cfg.Voter && len(initial) > 0 {
		// Every voter bootstraps the same configuration from the same
		// controller.quorum.voters (or storage format's initial
		// controllers), so it does not matter which of them starts first
		// or whether all of them do.
		bootstrapped = true
		var servers []raft.Server
		for _, v := range initial {
			servers = append(servers, raft.Server{
				Suffrage: raft.Voter,
				ID:       raft.ServerID(strconv.Itoa(int(v.ID))),
				Address:  raft.ServerAddress(v.Addr),
			})
		}
		if err := raft.BootstrapCluster(rc, n.logs, n.stable, n.snaps, n.trans,
			raft.Configuration{Servers: servers}); err != nil {
			return nil, fmt.Errorf("raftfsm: bootstrap: %w", err)
		}
		n.log.Info().Int("voters", len(servers)).Msg("bootstrapped a fresh raft quorum")
	}

	// NewRaft restores the latest local snapshot synchronously, so a foreign
	// snapshot is caught before Start returns.
	n.raft, err = raft.NewRaft(rc, n.fsm, n.logs, n.stable, n.snaps, n.trans)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: start raft: %w", err)
	}
	if n.obs != nil {
		n.obs.raft.Store(n.raft)
	}
	cleanup = append(cleanup, func() { _ = n.raft.Shutdown().Error() })
	close(n.rpcReady)
	if p := n.fatalErr.Load(); p != nil {
		return nil, *p
	}
	dial := cfg.Voters
	for _, a := range cfg.BootstrapServers {
		dial = append(dial, Voter{ID: -1, Addr: a})
	}
	n.client = NewControllerClient(ClientConfig{
		Voters:  dial,
		Waiter:  n.pub,
		Logger:  n.log,
		Inmem:   cfg.Inmem,
		Dial:    cfg.Dial,
		leaders: n.leaderAddr,
		members: n.voterAddrs,
	})
	n.wg.Add(2)
	go n.watchLeadership()
	go n.countLeaderChanges()
	if existing && cfg.Voter && len(cfg.Voters) == 0 {
		n.wg.Add(1)
		go n.updateOwnEndpoint()
	}
	if !cfg.Voter || (!existing && !bootstrapped) {
		// A broker-only node, or a controller formatted
		// --no-initial-controllers: an observer until an operator's
		// AddRaftVoter promotes it.
		n.wg.Add(1)
		go n.joinAsNonvoter()
	}
	n.log.Info().Str("addr", n.addr).Bool("voter", cfg.Voter).Bool("existing_state", existing).Msg("raft node started")
	return n, nil
}

// fail records a fatal error (a foreign cluster id) and stops serving. The
// process owner sees it on Done/Err and exits.
func (n *Node) fail(err error) {
	n.fatalOnce.Do(func() {
		n.fatalErr.Store(&err)
		n.log.Error().Err(err).Msg("stopping raft node")
		close(n.done)
		// Shutting down from the FSM goroutine would deadlock on raft's own
		// shutdown, which waits for that goroutine.
		go func() { _ = n.raft.Shutdown().Error() }()
	})
}

// Done is closed when the node stopped on a fatal error; Err returns it.
func (n *Node) Done() <-chan struct{} { return n.done }

// Err returns the fatal error that stopped the node, or nil.
func (n *Node) Err() error {
	if p := n.fatalErr.Load(); p != nil {
		return *p
	}
	return nil
}

// ID returns the node id.
func (n *Node) ID() int32 { return n.cfg.NodeID }

// Addr returns the controller listener address other nodes dial.
func (n *Node) Addr() string { return n.addr }

// Publisher returns the node's image publisher.
func (n *Node) Publisher() *Publisher { return n.pub }

// Current returns the served image and its Raft index: the latest applied
// one, or, once HoldServing was called, the last one handed to Serve.
func (n *Node) Current() (*metadata.Image, uint64) { return n.pub.Current() }

// Latest returns the FSM's newest image and its Raft index, served or not.
func (n *Node) Latest() (*metadata.Image, uint64) { return n.pub.Latest() }

// HoldServing makes Current, WaitForIndex (read-your-writes) and CatchUp
// follow Serve instead of the FSM: a broker calls it before it subscribes
// its replica manager, and serves each image once the manager has applied
// it, so the node never names itself leader in an answer before its
// partition layer leads (see Publisher).
func (n *Node) HoldServing() { n.pub.Hold() }

// Serve makes img, the image of Raft entry index, the served one.
func (n *Node) Serve(img *metadata.Image, index uint64) { n.pub.Serve(img, index) }

// WaitForIndex waits until the served image has applied index.
func (n *Node) WaitForIndex(ctx context.Context, index uint64) error {
	return n.pub.WaitForIndex(ctx, index)
}

// CatchUp waits until this node has applied every entry its Raft log held
// when called, or ctx ends, and reports whether it had any to wait for.
// A follower appends an entry before it learns (on the leader's next
// AppendEntries, up to CommitTimeout later) that the entry is committed, so
// another node may already answer from an image this one is about to reach;
// a request that found "unknown topic" here can wait for it instead of
// sending the client into a retry backoff. Entries that a new leader cuts
// never apply: callers bound ctx.
//
// Then, while serving is held, it waits until the served image has caught
// up with the FSM's (the replica manager has applied what the FSM has).
func (n *Node) CatchUp(ctx context.Context) bool {
	waited := n.CatchUpLog(ctx)
	_, latest := n.pub.Latest()
	if _, served := n.pub.Current(); served >= latest {
		return waited
	}
	_ = n.pub.WaitForIndex(ctx, latest)
	return true
}

// CatchUpLog is CatchUp's first half: it waits for the FSM only, not for
// the served image (what the holder of serving waits for at its start).
func (n *Node) CatchUpLog(ctx context.Context) bool {
	last := n.raft.LastIndex()
	if n.raft.AppliedIndex() >= last {
		return false
	}
	// No event marks AppliedIndex moving (configuration and no-op entries
	// publish nothing), so poll; this path runs only on a miss.
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for n.raft.AppliedIndex() < last {
		select {
		case <-ctx.Done():
			return true
		case <-n.done:
			return true
		case <-t.C:
		}
	}
	return true
}

// Subscribe returns an ordered feed of published images and deltas.
func (n *Node) Subscribe() *Subscription { return n.pub.Subscribe() }

// Client returns a controller client whose calls wait for their commit on
// this node before returning (read-your-writes).
func (n *Node) Client() *ControllerClient { return n.client }

// IsLeader reports whether this node is the Raft leader (the active
// controller).
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// LeaderID returns the Raft leader's node id, or -1 when unknown.
func (n *Node) LeaderID() int32 {
	_, id := n.raft.LeaderWithID()
	if id == "" {
		return -1
	}
	v, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return -1
	}
	return int32(v)
}

// voteGateShut reports whether this node must still refuse votes: until
// the newest image records its own directory id for its node id.
func (n *Node) voteGateShut() bool {
	if !n.voteGated.Load() {
		return false
	}
	img, _ := n.pub.Latest()
	if d, ok := img.VoterDirectory(n.cfg.NodeID); ok && d == n.cfg.DirectoryID {
		n.voteGated.Store(false)
		n.log.Info().Msg("this node's directory id is a voter's: voting")
		return false
	}
	return true
}

// voterAddrs are the controller listeners of the voters in this node's
// Raft configuration, the newest it holds.
func (n *Node) voterAddrs() []string {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	var out []string
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter && string(s.Address) != n.addr {
			out = append(out, string(s.Address))
		}
	}
	return out
}

func (n *Node) leaderAddr() string {
	addr, _ := n.raft.LeaderWithID()
	return string(addr)
}

// SnapshotRestores counts snapshots the FSM restored, from local disk at
// start or installed from the leader.
func (n *Node) SnapshotRestores() int64 { return n.fsm.restores.Load() }

// Snapshot forces a Raft snapshot now.
func (n *Node) Snapshot() error { return n.raft.Snapshot().Error() }

func (n *Node) watchLeadership() {
	defer n.wg.Done()
	for {
		select {
		case <-n.closing:
			n.stopController()
			return
		case leader := <-n.leaderCh:
			if leader {
				n.startController()
			} else {
				n.stopController()
			}
		}
	}
}

func (n *Node) startController() {
	n.ctrlMu.Lock()
	defer n.ctrlMu.Unlock()
	if n.ctrl != nil {
		return
	}
	n.ctrl = newController(n)
	n.log.Info().Uint64("term", n.raft.CurrentTerm()).Msg("became raft leader: active controller starting")
}

func (n *Node) stopController() {
	n.ctrlMu.Lock()
	c := n.ctrl
	n.ctrl = nil
	n.ctrlMu.Unlock()
	if c != nil {
		c.stop()
		n.log.Info().Msg("active controller stopped")
	}
}

func (n *Node) activeController() *controller {
	n.ctrlMu.Lock()
	defer n.ctrlMu.Unlock()
	return n.ctrl
}

// joinAsNonvoter asks the active controller to add this node as a Raft
// non-voter until the local configuration lists it.
func (n *Node) joinAsNonvoter() {
	defer n.wg.Done()
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if n.inConfiguration() {
			return
		}
		ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
		err := n.client.AddNonvoter(ctx, n.cfg.NodeID, n.addr, n.cfg.ClusterID)
		cancel()
		if err == nil {
			n.log.Info().Msg("joined the raft quorum as a non-voter")
			return
		}
		if attempt%10 == 0 {
			n.log.Warn().Err(err).Msg("joining the raft quorum as a non-voter")
		}
		select {
		case <-n.closing:
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// updateOwnEndpoint sends UpdateRaftVoter (KIP-853) while this voter's
// entry in the Raft configuration has another address than its controller
// listener now has (it moved), as a Kafka controller does at start-up.
func (n *Node) updateOwnEndpoint() {
	defer n.wg.Done()
	id := raft.ServerID(strconv.Itoa(int(n.cfg.NodeID)))
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		f := n.raft.GetConfiguration()
		if f.Error() != nil {
			return
		}
		i := slices.IndexFunc(f.Configuration().Servers, func(s raft.Server) bool { return s.ID == id })
		if i < 0 || f.Configuration().Servers[i].Suffrage != raft.Voter || string(f.Configuration().Servers[i].Address) == n.addr {
			return
		}
		ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
		err := n.client.UpdateVoter(ctx, n.cfg.NodeID, n.cfg.DirectoryID, n.cfg.ControllerListenerName, n.addr, n.cfg.ClusterID)
		cancel()
		if err == nil {
			n.log.Info().Str("addr", n.addr).Msg("updated this voter's controller listener in the quorum")
			return
		}
		if attempt%10 == 0 {
			n.log.Warn().Err(err).Msg("updating this voter's controller listener in the quorum")
		}
		select {
		case <-n.closing:
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (n *Node) inConfiguration() bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	id := raft.ServerID(strconv.Itoa(int(n.cfg.NodeID)))
	return slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool { return s.ID == id })
}

// Shutdown stops the node. A Raft leader first hands leadership to another
// voter (bounded by ShutdownTransferTimeout) so the quorum does not wait an
// election timeout; then Raft, the listener and the stores close.
func (n *Node) Shutdown() error {
	var err error
	n.closeOnce.Do(func() {
		if n.IsLeader() && n.Err() == nil {
			n.stopController()
			f := n.raft.LeadershipTransfer()
			ch := make(chan error, 1)
			go func() { ch <- f.Error() }()
			select {
			case terr := <-ch:
				if terr != nil {
					n.log.Warn().Err(terr).Msg("leadership transfer at shutdown failed")
				} else {
					n.log.Info().Msg("transferred raft leadership before shutdown")
				}
			case <-time.After(n.cfg.ShutdownTransferTimeout):
				n.log.Warn().Msg("leadership transfer at shutdown timed out")
			}
		}
		close(n.closing)
		n.cancel()
		n.wg.Wait()
		if serr := n.raft.Shutdown().Error(); serr != nil {
			err = serr
		}
		if n.obs != nil {
			n.obs.stopGate()
		}
		if n.mux != nil {
			n.mux.close()
		}
		n.pool.close()
		n.pub.close()
		if n.cfg.Inmem != nil {
			n.cfg.Inmem.leave(n)
		}
		if n.closeStore != nil {
			if cerr := n.closeStore(); cerr != nil && err == nil {
				err = cerr
			}
		}
	})
	return err
}

// startOnDisk opens the boltdb store and the snapshot files under
// cfg.DataDir, and binds the controller listener that Raft and the
// controller RPCs share. Each step's undo is appended to cleanup.
// raftLogCacheSize is how many of the latest Raft entries the leader
// keeps in memory to replicate (hashicorp/raft's LogCache).
const raftLogCacheSize = 512

func (n *Node) startOnDisk(hl hclog.Logger, cleanup *[]func()) error {
	cfg := n.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("raftfsm: %w", err)
	}
	store, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(cfg.DataDir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: time.Second},
	})
	if err != nil {
		return fmt.Errorf("raftfsm: open raft store: %w", err)
	}
	// The leader sends each new entry to every follower; without a cache
	// each send reads it back out of bolt (a read transaction and a
	// decode per entry per follower) on the commit's path. The cache
	// holds the last entries written, as Consul and Nomad wrap theirs.
	logs, err := raft.NewLogCache(raftLogCacheSize, store)
	if err != nil {
		store.Close()
		return fmt.Errorf("raftfsm: raft log cache: %w", err)
	}
	n.logs, n.stable, n.closeStore = logs, store, store.Close
	*cleanup = append(*cleanup, func() { store.Close() })
	n.snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, hl.Named("snapshot"))
	if err != nil {
		return fmt.Errorf("raftfsm: open snapshot store: %w", err)
	}

	ln := cfg.Listener
	if ln == nil {
		ln, err = net.Listen("tcp", cfg.ListenAddr)
		if err != nil {
			return fmt.Errorf("raftfsm: controller listener: %w", err)
		}
	}
	n.addr = cfg.AdvertisedAddr
	if n.addr == "" {
		n.addr = n.voterAddr()
	}
	if n.addr == "" {
		n.addr = ln.Addr().String()
	}
	advertise, err := net.ResolveTCPAddr("tcp", n.addr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("raftfsm: advertised address %q: %w", n.addr, err)
	}
	var mayRaft func(principal, host string) bool
	if cfg.Authorizer != nil {
		mayRaft = n.clusterAction
	}
	n.mux = newMux(ln, n.serveConn, cfg.Handshake, mayRaft, n.log)
	// If Start fails, cancel before the mux waits for its connections:
	// RPC connections accepted before Raft existed wait on n.ctx.
	*cleanup = append(*cleanup, n.mux.close, n.cancel)
	pool := newConnPool(cfg.Dial)
	n.pool = pool
	*cleanup = append(*cleanup, pool.close)
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  newStreamLayer(n.mux, cfg.Dial, advertise),
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  hl.Named("transport"),
	})
	n.trans = trans
	*cleanup = append(*cleanup, func() { trans.Close() })
	return nil
}

// voterAddr returns this node's address in cfg.Voters (or
// cfg.InitialVoters), or "".
func (n *Node) voterAddr() string {
	for _, v := range slices.Concat(n.cfg.Voters, n.cfg.InitialVoters) {
		if v.ID == n.cfg.NodeID {
			return v.Addr
		}
	}
	return ""
}
