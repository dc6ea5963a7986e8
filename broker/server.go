package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultMaxRequestBytes is Kafka's default socket.request.max.bytes.
const DefaultMaxRequestBytes = 104857600

// DefaultMaxInFlight is how many requests of one connection may be read
// ahead of the response being written. Clients pipeline at most five.
const DefaultMaxInFlight = 8

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("broker: server closed")

// Listener is one Kafka-protocol listener, as in server.properties
// `listeners=NAME://host:port`.
type Listener struct {
	Name string
	// Listener, if set, is used as is (tests pass a loopback listener on
	// port 0) and the Server owns it from then on; otherwise New binds Addr.
	Listener net.Listener
	Addr     string
	// Security is the listener's protocol and its TLS and SASL settings;
	// nil means PLAINTEXT.
	Security *config.ListenerSecurity
}

// MetadataSource is the broker's view of the latest applied metadata.
// *raftfsm.Node satisfies it.
type MetadataSource interface {
	// Current returns the latest applied image and the Raft index that
	// produced it. The image is immutable; handlers read one image per
	// request so an answer is consistent within itself.
	Current() (*metadata.Image, uint64)
	// CatchUp waits (bounded by ctx) until the node has applied the
	// entries its Raft log already holds, and reports whether there were
	// any; see Server.catchUp. A source with no log of its own returns
	// false at once.
	CatchUp(ctx context.Context) bool
}

// ControllerClient sends requests to the active controller and returns once
// the change is visible in this node's MetadataSource (read-your-writes).
// *raftfsm.ControllerClient satisfies it.
type ControllerClient interface {
	CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error)
}

// ControllerAdmin forwards the admin APIs every broker must accept to the
// active controller, with read-your-writes like ControllerClient. It is
// separate from ControllerClient so fakes of either stay small.
// *raftfsm.ControllerClient satisfies it.
type ControllerAdmin interface {
	DeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, error)
	CreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsResponse, error)
	AlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsResponse, error)
	IncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error)
	ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error)
	DescribeQuorum(ctx context.Context) (*kmsg.DescribeQuorumResponse, error)
	AllocateProducerIDs(ctx context.Context, brokerID int32, brokerEpoch int64) (*kmsg.AllocateProducerIDsResponse, error)
}

// QuorumView tells which node leads the Raft quorum (the active
// controller). *raftfsm.Node satisfies it.
type QuorumView interface {
	LeaderID() int32 // -1 when unknown
}

// Deps is what request handlers need from the rest of the node. Fields are
// added as api_*.go files land; each is a small interface defined in this
// package and satisfied by metadata, storage and raftfsm types wired in
// cmd. A nil field means the node has no such part (tests), and handlers
// answer as Kafka does when it is unavailable.
type Deps struct {
	Metadata   MetadataSource
	Controller ControllerClient
	Admin      ControllerAdmin
	Quorum     QuorumView
	// Replicas is the partition layer (see partitions.go).
	Replicas ReplicaManager
	// Groups is the group coordinator (see groups.go); nil answers the
	// group APIs COORDINATOR_NOT_AVAILABLE.
	Groups GroupCoordinator
	// ShareGroups is the share group coordinator (api_share_group_*.go);
	// nil answers the share group APIs COORDINATOR_NOT_AVAILABLE.
	ShareGroups ShareGroupCoordinator
	// Scram forwards AlterUserScramCredentials; nil answers it
	// NOT_CONTROLLER.
	Scram ScramAdmin
	// ACLs forwards CreateAcls and DeleteAcls; nil answers them
	// NOT_CONTROLLER.
	ACLs ACLAdmin
	// Quotas forwards AlterClientQuotas; nil answers it NOT_CONTROLLER.
	Quotas QuotaAdmin
	// Txns is the transaction coordinator (see txns.go); nil answers the
	// transaction APIs COORDINATOR_NOT_AVAILABLE and refuses
	// transactional produces.
	Txns TxnCoordinator
	// Peers reaches other brokers' inter-broker listeners (a produce's
	// transaction verification with a remote coordinator).
	Peers InterBroker
	// ShareState makes share-partition state durable (share_writer.go);
	// nil keeps it in memory only (tests).
	ShareState SharePartitionWriter
}

// Options configures a Server.
type Options struct {
	Logger    zerolog.Logger
	Listeners []Listener
	// MaxRequestBytes is socket.request.max.bytes; zero means the default.
	MaxRequestBytes int32
	// ConnectionsMaxIdle is connections.max.idle.ms: a client connection
	// with no traffic for this long is closed (conn_idle.go); zero or
	// negative never closes one.
	ConnectionsMaxIdle time.Duration
	// MaxInFlight bounds each connection's queue of unanswered requests;
	// zero means DefaultMaxInFlight.
	MaxInFlight int
	Deps        Deps
	// NodeID is node.id: Metadata names it as the controller (see
	// api_metadata.go).
	NodeID int32
	// AutoCreateTopics is auto.create.topics.enable (Kafka's default is
	// true; the zero value here is off, so cmd sets it from the config).
	AutoCreateTopics bool
	// Metrics receives counters; nil means a fresh *Counters, available
	// from Server.Counters.
	Metrics Metrics
	// Config is the node's server.properties, which DescribeConfigs shows
	// (broker resources, and the static layer of topic configs); nil shows
	// only the metadata image's configs.
	Config *config.Config
	// Partitions configures the partition APIs (see partitions.go).
	Partitions PartitionOptions
	// Authorizer decides ACLs (authorized_ops.go); nil takes it from
	// Config (authorizer.class.name), and no authorizer allows everything.
	Authorizer *metadata.Authorizer
}

// Server answers the Kafka protocol on its listeners.
//
// New, Serve and Close may be called from any goroutine. Each accepted
// connection is served by its own goroutines (see conn); Close cancels them
// all and returns once every one has finished.
type Server struct {
	log                 zerolog.Logger
	table               *apiTable
	deps                Deps
	metrics             Metrics
	counters            *Counters     // set when Options.Metrics was nil
	catchUpWaits        atomic.Uint64 // clients' requests; see catchUp
	replicaCatchUpWaits atomic.Uint64 // followers' requests
	refusals            refusals      // produced batches refused for their content, by client
	maxRequestBytes     int32
	maxInFlight         int
	connMaxIdle         time.Duration
	nodeID              int32
	autoCreate          bool
	config              *config.Config
	listeners           []boundListener
	producerIDs         producerIDs // see producer_ids.go
	parts               *partitionState
	authorizer          *metadata.Authorizer // nil: everything allowed
	quotas              *quotaManager        // client quotas (quota.go)
	connRates           *connectionRates     // max.connection.creation.rate (quota.go)
	shares              *shareManager        // share-partitions led here (share_partitions.go)

	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex // guards closed, serving and adding to wg
	closed  bool
	serving bool
	wg      sync.WaitGroup // accept loops, connections and background auto-creations

	nextConnID atomic.Uint64

	autoMu       sync.Mutex      // guards autoInflight
	autoInflight map[string]bool // topics this node is auto-creating (api_metadata.go)
}

type boundListener struct {
	name string
	ln   net.Listener
	auth *listenerAuth // nil for PLAINTEXT
}

// New binds the listeners and returns a Server that answers from the API
// table the api_*.go files registered. It accepts nothing until Serve.
func New(opts Options) (*Server, error) {
	table := defaultAPIs
	if opts.Config != nil && !slices.Contains(opts.Config.GroupCoordinatorRebalanceProtocols, "consumer") {
		// group.coordinator.rebalance.protocols without consumer: the
		// KIP-848 APIs are not advertised, so clients keep the classic
		// protocol, as Kafka's broker does.
		table = table.clone()
		delete(table.entries, 68)
		delete(table.entries, 69)
	}
	return newServer(opts, table)
}

func newServer(opts Options, table *apiTable) (*Server, error) {
	s := &Server{
		log:             opts.Logger,
		table:           table,
		deps:            opts.Deps,
		metrics:         opts.Metrics,
		maxRequestBytes: opts.MaxRequestBytes,
		maxInFlight:     opts.MaxInFlight,
		connMaxIdle:     opts.ConnectionsMaxIdle,
		nodeID:          opts.NodeID,
		autoCreate:      opts.AutoCreateTopics,
		config:          opts.Config,
		parts:           newPartitionState(opts.Partitions),
		authorizer:      opts.authorizer(),
		quotas:          opts.quotaManager(),
	}
	s.connRates = &connectionRates{m: s.quotas}
	if opts.Config != nil {
		s.connRates.limit = float64(opts.Config.MaxConnectionCreationRate)
		for l, r := range opts.Config.ListenerMaxConnectionCreationRate {
			if s.connRates.perListen == nil {
				s.connRates.perListen = map[string]float64{}
			}
			s.connRates.perListen[l] = float64(r)
		}
	}
	if s.maxRequestBytes == 0 {
		s.maxRequestBytes = DefaultMaxRequestBytes
	}
	if s.maxRequestBytes < 0 {
		return nil, fmt.Errorf("broker: socket.request.max.bytes %d is negative", s.maxRequestBytes)
	}
	if s.maxInFlight <= 0 {
		s.maxInFlight = DefaultMaxInFlight
	}
	if s.metrics == nil {
		s.counters = new(Counters)
		s.metrics = s.counters
	}
	for _, l := range opts.Listeners {
		ln := l.Listener
		if ln == nil {
			var err error
			if ln, err = net.Listen("tcp", l.Addr); err != nil {
				s.closeListeners()
				return nil, fmt.Errorf("broker: listener %s: %w", l.Name, err)
			}
		}
		auth, err := s.newListenerAuth(l.Security)
		if err != nil {
			_ = ln.Close()
			s.closeListeners()
			return nil, fmt.Errorf("broker: %w", err)
		}
		s.listeners = append(s.listeners, boundListener{name: l.Name, ln: ln, auth: auth})
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.shares = newShareManager(s)
	return s, nil
}

// Addrs returns the bound address of each listener, in Options order.
func (s *Server) Addrs() []net.Addr {
	addrs := make([]net.Addr, len(s.listeners))
	for i, l := range s.listeners {
		addrs[i] = l.ln.Addr()
	}
	return addrs
}

// Counters returns the built-in counters, or nil when Options.Metrics was
// set.
func (s *Server) Counters() *Counters { return s.counters }

// Serve accepts connections on every listener until Close. It returns
// ErrServerClosed after Close, or the first listener's fatal error.
func (s *Server) Serve() error {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return ErrServerClosed
	case s.serving:
		s.mu.Unlock()
		return errors.New("broker: Serve called twice")
	}
	s.serving = true
	errs := make(chan error, len(s.listeners))
	s.wg.Add(len(s.listeners))
	s.mu.Unlock()

	for _, l := range s.listeners {
		go func() {
			defer s.wg.Done()
			errs <- s.acceptLoop(l)
		}()
	}
	var first error
	for range s.listeners {
		if err := <-errs; err != nil && first == nil {
			first = err
			// One listener failing stops the server: a node that serves
			// on only some of its listeners confuses clients and operators.
			// errs is buffered, so the other loops can finish meanwhile.
			_ = s.Close()
		}
	}
	if first != nil {
		return first
	}
	return ErrServerClosed
}

// acceptLoop accepts on one listener. Errors other than the listener being
// closed are retried with a growing pause (EMFILE and the like are
// transient); it returns nil once the server closes.
func (s *Server) acceptLoop(l boundListener) error {
	const maxPause = time.Second
	pause := 5 * time.Millisecond
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				if s.ctx.Err() == nil {
					return fmt.Errorf("broker: listener %s closed: %w", l.name, err)
				}
				return nil
			}
			s.log.Warn().Err(err).Str("listener", l.name).Dur("pause", pause).Msg("accept failed")
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return nil
			}
			pause = min(2*pause, maxPause)
			continue
		}
		pause = 5 * time.Millisecond
		if !s.track() {
			_ = nc.Close()
			return nil
		}
		if d := s.ipThrottle(aclHost(nc.RemoteAddr())); d > 0 {
			// connection_creation_rate: closed unserved after the
			// throttle time (KIP-612).
			s.metrics.Rejected(ReasonConnectionThrottled)
			s.log.Debug().Str("listener", l.name).Stringer("remote", addrString{nc.RemoteAddr()}).Dur("throttle", d).
				Msg("connection over its IP's connection_creation_rate; closing it after the throttle time")
			go func() {
				defer s.wg.Done()
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-s.ctx.Done():
					t.Stop()
				}
				_ = nc.Close()
			}()
			continue
		}
		go func() {
			defer s.wg.Done()
			c := s.newConn(nc, l.name)
			c.auth = l.auth
			c.serve()
		}()
		interBroker := s.config != nil && l.name == s.config.InterBrokerListenerName
		if d := s.connRates.acceptThrottle(l.name, interBroker); d > 0 {
			// max.connection.creation.rate, the broker's or the
			// listener's: accept nothing more for d.
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return nil
			}
		}
	}
}

// track adds a connection goroutine to wg unless the server is closing.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// serveConn serves an already-accepted connection on the calling goroutine
// (tests and fuzzing use in-memory connections). It returns when the
// connection is done, or at once if the server is closed.
func (s *Server) serveConn(nc net.Conn, listener string) {
	if !s.track() {
		_ = nc.Close()
		return
	}
	defer s.wg.Done()
	s.newConn(nc, listener).serve()
}

// Close stops accepting, closes every connection and waits for all of the
// server's goroutines, request handlers included, to finish. It is safe to
// call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.closeListeners()
	s.wg.Wait()
	return nil
}

func (s *Server) closeListeners() {
	for _, l := range s.listeners {
		_ = l.ln.Close()
	}
}
