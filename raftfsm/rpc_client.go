package raftfsm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// IndexWaiter is what the client needs for read-your-writes: the local
// node's publisher (or Node itself).
type IndexWaiter interface {
	WaitForIndex(ctx context.Context, index uint64) error
}

// ClientConfig configures a ControllerClient.
type ClientConfig struct {
	// Voters are the controller listeners to try; any of them answers,
	// forwarding to the Raft leader.
	Voters []Voter
	// Waiter, when set, makes every call that committed wait until the
	// local image has applied the commit before returning.
	Waiter   IndexWaiter
	ClientID string
	Logger   zerolog.Logger
	// DefaultTimeout bounds a call whose context has no deadline (30s).
	DefaultTimeout time.Duration
	// Inmem, when set, reaches the voters on that network in process
	// instead of over TCP.
	Inmem *InmemNetwork
	// Dial, when set, opens connections to the controller listeners (TLS
	// and SASL as their protocol asks); nil dials plain TCP.
	Dial Dialer

	leaders func() string   // local Raft's leader address, when the client lives in a Node
	members func() []string // local Raft's voters' addresses, when the client lives in a Node
}

// ControllerClient calls the active controller from any node. It does not
// care which node it dials: followers forward to the leader, and a
// NOT_CONTROLLER answer or a network error makes it retry, with backoff, on
// the leader or the next voter until the context ends. Safe for concurrent
// use.
type ControllerClient struct {
	cfg  ClientConfig
	pool roundTripper
	last atomic.Int64 // index into addrs() of the last controller that answered
}

// NewControllerClient returns a client; Close releases its connections.
func NewControllerClient(cfg ClientConfig) *ControllerClient {
	if cfg.ClientID == "" {
		cfg.ClientID = "raftka-controller-client"
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = 30 * time.Second
	}
	if cfg.Inmem != nil {
		return &ControllerClient{cfg: cfg, pool: &inmemClient{net: cfg.Inmem}}
	}
	return &ControllerClient{cfg: cfg, pool: newConnPool(cfg.Dial)}
}

// roundTripper carries one controller request to addr and its answer
// back: connPool over TCP, inmemClient on an InmemNetwork.
type roundTripper interface {
	roundTrip(ctx context.Context, addr, clientID string, req kmsg.Request) (kmsg.Response, error)
	close()
}

// Close closes idle connections; calls in flight fail.
func (c *ControllerClient) Close() { c.pool.close() }

// clientVersion is the version the client sends: the newest kmsg knows,
// except OffsetCommit v10, which names topics by id.
func clientVersion(req kmsg.Request) int16 {
	if req.Key() == 8 {
		return 9
	}
	return req.MaxVersion()
}

// Request sends req to the active controller and returns its response and
// the Raft index of its commit (0 when it committed nothing). Retries are
// safe: each retried operation is decided again against the current image
// (a CreateTopics that committed before a lost answer comes back
// TOPIC_ALREADY_EXISTS).
func (c *ControllerClient) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, uint64, error) {
	return c.request(ctx, req, true)
}

// request is Request; wait false skips the wait for the local image.
func (c *ControllerClient) request(ctx context.Context, req kmsg.Request, wait bool) (kmsg.Response, uint64, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.DefaultTimeout)
		defer cancel()
	}
	req.SetVersion(clientVersion(req))
	backoff := 20 * time.Millisecond
	var lastErr error
	for attempt := 0; ; attempt++ {
		addr := c.pick(attempt)
		resp, err := c.pool.roundTrip(ctx, addr, c.cfg.ClientID, req)
		if err == nil && !hasCode(resp, kerr.NotController.Code) {
			c.remember(addr)
			var index uint64
			if tags := respTags(resp); tags != nil {
				index = indexFromTags(tags)
			}
			if wait && index > 0 && c.cfg.Waiter != nil {
				if werr := c.cfg.Waiter.WaitForIndex(ctx, index); werr != nil {
					return resp, index, fmt.Errorf("raftfsm: waiting for commit index %d locally: %w", index, werr)
				}
			}
			return resp, index, nil
		}
		if err == nil {
			err = fmt.Errorf("%w (asked %s)", ErrNotController, addr)
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("raftfsm: %s: %w (last error: %v)", kmsg.NameForKey(req.Key()), ctx.Err(), lastErr)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 500*time.Millisecond)
	}
}

func (c *ControllerClient) pick(attempt int) string {
	if c.cfg.leaders != nil && attempt%2 == 0 {
		if a := c.cfg.leaders(); a != "" {
			return a
		}
	}
	addrs := c.addrs()
	n := int64(len(addrs))
	if n == 0 {
		return ""
	}
	i := (c.last.Load() + int64(attempt/2)) % n
	if c.cfg.leaders == nil {
		i = (c.last.Load() + int64(attempt)) % n
	}
	return addrs[i]
}

// addrs are the controller listeners to try: the configured ones
// (controller.quorum.voters or controller.quorum.bootstrap.servers), then
// the voters of the local Raft configuration not among them, so a node
// keeps reaching the controller after the quorum changed (KIP-853).
func (c *ControllerClient) addrs() []string {
	out := make([]string, 0, len(c.cfg.Voters)+3)
	for _, v := range c.cfg.Voters {
		out = append(out, v.Addr)
	}
	if c.cfg.members != nil {
		for _, a := range c.cfg.members() {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

func (c *ControllerClient) remember(addr string) {
	for i, a := range c.addrs() {
		if a == addr {
			c.last.Store(int64(i))
		}
	}
}

// hasCode reports whether any error code in a controller response is code.
func hasCode(resp kmsg.Response, code int16) bool {
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == code
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == code
	case *kmsg.UnregisterBrokerResponse:
		return r.ErrorCode == code
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode == code
	case *kmsg.AlterPartitionResponse:
		return r.ErrorCode == code
	case *kmsg.AddRaftVoterResponse:
		return r.ErrorCode == code
	case *kmsg.RemoveRaftVoterResponse:
		return r.ErrorCode == code
	case *kmsg.UpdateRaftVoterResponse:
		return r.ErrorCode == code
	case *kmsg.DescribeQuorumResponse:
		return r.ErrorCode == code
	case *kmsg.ElectLeadersResponse:
		return r.ErrorCode == code
	case *kmsg.AlterPartitionAssignmentsResponse:
		return r.ErrorCode == code
	case *kmsg.ListPartitionReassignmentsResponse:
		return r.ErrorCode == code
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == code {
				return true
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == code {
				return true
			}
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == code {
				return true
			}
		}
	case *kmsg.AlterConfigsResponse:
		for _, t := range r.Resources {
			if t.ErrorCode == code {
				return true
			}
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, t := range r.Resources {
			if t.ErrorCode == code {
				return true
			}
		}
	case *kmsg.OffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == code {
					return true
				}
			}
		}
	case *kmsg.SyncGroupResponse:
		return r.ErrorCode == code
	case *kmsg.EnvelopeResponse:
		return r.ErrorCode == code
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		for _, u := range r.Results {
			if u.ErrorCode == code {
				return true
			}
		}
	case *kmsg.DeleteGroupsResponse:
		for _, g := range r.Groups {
			if g.ErrorCode == code {
				return true
			}
		}
	case *kmsg.CreateACLsResponse:
		for _, x := range r.Results {
			if x.ErrorCode == code {
				return true
			}
		}
	case *kmsg.DeleteACLsResponse:
		for _, x := range r.Results {
			if x.ErrorCode == code {
				return true
			}
		}
	case *kmsg.AlterClientQuotasResponse:
		for _, x := range r.Entries {
			if x.ErrorCode == code {
				return true
			}
		}
	}
	return false
}

// call sends req and returns its response as the type the caller expects.
func call[R kmsg.Response](ctx context.Context, c *ControllerClient, req kmsg.Request) (R, error) {
	resp, _, err := c.Request(ctx, req)
	if err != nil {
		var zero R
		return zero, err
	}
	return resp.(R), nil
}

// RegisterBroker sends BrokerRegistration; the response carries the new
// broker epoch.
func (c *ControllerClient) RegisterBroker(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error) {
	withSupportedFeatures(req)
	return call[*kmsg.BrokerRegistrationResponse](ctx, c, req)
}

// Heartbeat sends BrokerHeartbeat, with this binary's supported features
// (SupportedFeaturesTag).
func (c *ControllerClient) Heartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	withSupportedFeatures(req)
	return call[*kmsg.BrokerHeartbeatResponse](ctx, c, req)
}

// UnregisterBroker sends UnregisterBroker.
func (c *ControllerClient) UnregisterBroker(ctx context.Context, brokerID int32) (*kmsg.UnregisterBrokerResponse, error) {
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = brokerID
	return call[*kmsg.UnregisterBrokerResponse](ctx, c, req)
}

// CreateTopics sends CreateTopics (v7: topic ids and configs come back).
func (c *ControllerClient) CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	return call[*kmsg.CreateTopicsResponse](ctx, c, req)
}

// CreateTopicsCommitted is CreateTopics answered as soon as the controller
// has committed, with the commit's index and without the wait for this
// node's image, so a caller can let other work start first; it then waits
// with WaitServed.
func (c *ControllerClient) CreateTopicsCommitted(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, uint64, error) {
	resp, index, err := c.request(ctx, req, false)
	if err != nil {
		return nil, 0, err
	}
	return resp.(*kmsg.CreateTopicsResponse), index, nil
}

// WaitServed waits until this node serves the image of Raft index (the
// read-your-writes wait Request does after a commit).
func (c *ControllerClient) WaitServed(ctx context.Context, index uint64) error {
	if index == 0 || c.cfg.Waiter == nil {
		return nil
	}
	if err := c.cfg.Waiter.WaitForIndex(ctx, index); err != nil {
		return fmt.Errorf("raftfsm: waiting for commit index %d locally: %w", index, err)
	}
	return nil
}

// DeleteTopics sends DeleteTopics v6; names in TopicNames are moved into
// Topics, which v6 uses.
func (c *ControllerClient) DeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, error) {
	for _, n := range req.TopicNames {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, t)
	}
	req.TopicNames = nil
	return call[*kmsg.DeleteTopicsResponse](ctx, c, req)
}

// CreatePartitions sends CreatePartitions.
func (c *ControllerClient) CreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsResponse, error) {
	return call[*kmsg.CreatePartitionsResponse](ctx, c, req)
}

// AlterConfigs sends AlterConfigs.
func (c *ControllerClient) AlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsResponse, error) {
	return call[*kmsg.AlterConfigsResponse](ctx, c, req)
}

// AlterUserScramCredentials sends AlterUserScramCredentials.
func (c *ControllerClient) AlterUserScramCredentials(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) (*kmsg.AlterUserSCRAMCredentialsResponse, error) {
	return call[*kmsg.AlterUserSCRAMCredentialsResponse](ctx, c, req)
}

// CreateACLs sends CreateAcls.
func (c *ControllerClient) CreateACLs(ctx context.Context, req *kmsg.CreateACLsRequest) (*kmsg.CreateACLsResponse, error) {
	return call[*kmsg.CreateACLsResponse](ctx, c, req)
}

// DeleteACLs sends DeleteAcls.
func (c *ControllerClient) DeleteACLs(ctx context.Context, req *kmsg.DeleteACLsRequest) (*kmsg.DeleteACLsResponse, error) {
	return call[*kmsg.DeleteACLsResponse](ctx, c, req)
}

// AlterClientQuotas sends AlterClientQuotas.
func (c *ControllerClient) AlterClientQuotas(ctx context.Context, req *kmsg.AlterClientQuotasRequest) (*kmsg.AlterClientQuotasResponse, error) {
	return call[*kmsg.AlterClientQuotasResponse](ctx, c, req)
}

// IncrementalAlterConfigs sends IncrementalAlterConfigs.
func (c *ControllerClient) IncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error) {
	return call[*kmsg.IncrementalAlterConfigsResponse](ctx, c, req)
}

// AlterPartition sends AlterPartition (v3: ISR members with broker epochs).
func (c *ControllerClient) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	return call[*kmsg.AlterPartitionResponse](ctx, c, req)
}

// AllocateProducerIDs sends AllocateProducerIDs; a block is
// ProducerIDBlockSize ids.
func (c *ControllerClient) AllocateProducerIDs(ctx context.Context, brokerID int32, brokerEpoch int64) (*kmsg.AllocateProducerIDsResponse, error) {
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = brokerID, brokerEpoch
	return call[*kmsg.AllocateProducerIDsResponse](ctx, c, req)
}

// ElectLeaders sends ElectLeaders (type 0 preferred, 1 unclean).
func (c *ControllerClient) ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	return call[*kmsg.ElectLeadersResponse](ctx, c, req)
}

// AlterPartitionReassignments sends AlterPartitionReassignments (key 45).
func (c *ControllerClient) AlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, error) {
	return call[*kmsg.AlterPartitionAssignmentsResponse](ctx, c, req)
}

// UpdateFeatures sends UpdateFeatures (key 57).
func (c *ControllerClient) UpdateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) (*kmsg.UpdateFeaturesResponse, error) {
	return call[*kmsg.UpdateFeaturesResponse](ctx, c, req)
}

// ListPartitionReassignments sends ListPartitionReassignments (key 46).
func (c *ControllerClient) ListPartitionReassignments(ctx context.Context, req *kmsg.ListPartitionReassignmentsRequest) (*kmsg.ListPartitionReassignmentsResponse, error) {
	return call[*kmsg.ListPartitionReassignmentsResponse](ctx, c, req)
}

// DescribeQuorum asks the active controller for the quorum's state.
func (c *ControllerClient) DescribeQuorum(ctx context.Context) (*kmsg.DescribeQuorumResponse, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = MetadataTopic
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	return call[*kmsg.DescribeQuorumResponse](ctx, c, req)
}

// offsetCommitRequest builds the OffsetCommit that carries a group's
// partitions to the controller.
func offsetCommitRequest(group string, n int, at func(i int) metadata.OffsetCommit) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = -1
	byTopic := map[string]int{}
	for i := range n {
		o := at(i)
		ti, ok := byTopic[o.Topic]
		if !ok {
			ti = len(req.Topics)
			byTopic[o.Topic] = ti
			t := kmsg.NewOffsetCommitRequestTopic()
			t.Topic = o.Topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = o.Partition, o.Offset, o.LeaderEpoch
		p.Metadata = kmsg.StringPtr(o.Metadata)
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, p)
	}
	return req
}

// CommitOffsets stores a group's committed offsets in the metadata image,
// as the coordinator built them (the controller stamps the commit time).
// Concurrent calls from many coordinators are coalesced by the controller
// into one Raft entry. The returned index is the commit's; an offset the
// controller could not store fails the call with its Kafka error.
func (c *ControllerClient) CommitOffsets(ctx context.Context, group string, offsets []metadata.OffsetCommit) (uint64, error) {
	req := offsetCommitRequest(group, len(offsets), func(i int) metadata.OffsetCommit { return offsets[i] })
	resp, index, err := c.Request(ctx, req)
	if err != nil {
		return 0, err
	}
	return index, offsetCommitErr("commit", group, resp.(*kmsg.OffsetCommitResponse))
}

// offsetCommitErr is the first per-partition error of an OffsetCommit
// answer, nil if none.
func offsetCommitErr(what, group string, resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return fmt.Errorf("raftfsm: %s offsets of group %q, %s-%d: %w", what, group, t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	return nil
}

// DeleteOffsets deletes a group's committed offsets for parts (Kafka's
// OffsetDelete, after the coordinator has checked the group no longer
// consumes those topics). Partitions without an offset are ignored. It is
// coalesced like CommitOffsets and returns the index of the commit (or of
// the image it was decided against when nothing needed deleting).
func (c *ControllerClient) DeleteOffsets(ctx context.Context, group string, parts []metadata.TopicPartition) (uint64, error) {
	req := offsetCommitRequest(group, len(parts), func(i int) metadata.OffsetCommit {
		return metadata.OffsetCommit{Topic: parts[i].Topic, Partition: parts[i].Partition, Offset: -1, LeaderEpoch: -1}
	})
	req.UnknownTags.Set(DeleteOffsetsTag, []byte{1})
	resp, index, err := c.Request(ctx, req)
	if err != nil {
		return 0, err
	}
	return index, offsetCommitErr("delete", group, resp.(*kmsg.OffsetCommitResponse))
}

// CommitGroupGeneration records a group's completed rebalance (its
// generation, protocol, leader and members) in the image, coalesced with
// other group commits. A generation not above the recorded one fails with
// kerr.IllegalGeneration.
func (c *ControllerClient) CommitGroupGeneration(ctx context.Context, gen *metadata.GroupGeneration) (uint64, error) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.Generation, req.MemberID = gen.Group, gen.Generation, gen.Leader
	req.ProtocolType, req.Protocol = kmsg.StringPtr(gen.ProtocolType), kmsg.StringPtr(gen.Protocol)
	for _, m := range gen.Members {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID = m.MemberID
		if m.InstanceID != "" {
			a.UnknownTags.Set(InstanceIDTag, []byte(m.InstanceID))
		}
		req.GroupAssignment = append(req.GroupAssignment, a)
	}
	if gen.SubscribedTopics != nil {
		req.UnknownTags.Set(SubscribedTopicsTag, encodeTopics(gen.SubscribedTopics))
	}
	resp, index, err := c.Request(ctx, req)
	if err != nil {
		return 0, err
	}
	if code := resp.(*kmsg.SyncGroupResponse).ErrorCode; code != 0 {
		return index, fmt.Errorf("raftfsm: group %q generation %d: %w", gen.Group, gen.Generation, kerr.ErrorForCode(code))
	}
	return index, nil
}

// DeleteGroups removes the groups' offsets and generations from the image
// (Kafka's DeleteGroups, after the coordinator has checked each group is
// empty). A group the image does not hold is not an error.
func (c *ControllerClient) DeleteGroups(ctx context.Context, groups []string) (uint64, error) {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = groups
	resp, index, err := c.Request(ctx, req)
	if err != nil {
		return 0, err
	}
	for _, g := range resp.(*kmsg.DeleteGroupsResponse).Groups {
		if g.ErrorCode != 0 {
			return index, fmt.Errorf("raftfsm: delete group %q: %w", g.Group, kerr.ErrorForCode(g.ErrorCode))
		}
	}
	return index, nil
}

// AddNonvoter asks the active controller to add node id at addr as a Raft
// non-voter (AddRaftVoter with NonvoterTag).
func (c *ControllerClient) AddNonvoter(ctx context.Context, id int32, addr, clusterID string) error {
	host, port := splitHostPort(addr)
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.ClusterID = kmsg.StringPtr(clusterID)
	req.TimeoutMillis = 10000
	req.VoterID = id
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", host, port
	req.Listeners = append(req.Listeners, l)
	req.UnknownTags.Set(NonvoterTag, []byte{1})
	resp, _, err := c.Request(ctx, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.AddRaftVoterResponse)
	if r.ErrorCode != 0 {
		return fmt.Errorf("raftfsm: add non-voter: %w: %s", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	return nil
}

// UpdateVoter sends UpdateRaftVoter: voter id's controller listener is
// now at addr.
func (c *ControllerClient) UpdateVoter(ctx context.Context, id int32, dir [16]byte, listener, addr, clusterID string) error {
	host, port := splitHostPort(addr)
	req := kmsg.NewPtrUpdateRaftVoterRequest()
	req.ClusterID = kmsg.StringPtr(clusterID)
	req.CurrentLeaderEpoch = -1
	req.VoterID, req.VoterDirectoryID = id, dir
	l := kmsg.NewUpdateRaftVoterRequestListener()
	l.Name, l.Host, l.Port = listener, host, port
	req.Listeners = append(req.Listeners, l)
	req.KRaftVersionFeature.MinSupportedVersion, req.KRaftVersionFeature.MaxSupportedVersion = 0, 1
	resp, _, err := c.Request(ctx, req)
	if err != nil {
		return err
	}
	if r := resp.(*kmsg.UpdateRaftVoterResponse); r.ErrorCode != 0 {
		return fmt.Errorf("raftfsm: update voter: %w", kerr.ErrorForCode(r.ErrorCode))
	}
	return nil
}

func splitHostPort(addr string) (string, uint16) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	p, _ := strconv.ParseUint(ps, 10, 16)
	return host, uint16(p)
}

// connPool keeps a few idle connections per controller address. A
// connection carries one request at a time; a failed one is discarded.
type connPool struct {
	dial   Dialer
	mu     sync.Mutex
	idle   map[string][]*poolConn
	busy   map[string]chan struct{} // per address: one token per round trip in flight
	closed bool
	corr   atomic.Int32
}

type poolConn struct {
	c net.Conn
	r *bufio.Reader
}

const maxIdlePerAddr = 4

// maxBusyPerAddr bounds the round trips in flight to one address, and so
// the connections open to it: each takes its own connection. Unbounded, a
// broker restarting with 10,000 partition replicas sent one AlterPartition
// per partition at once, opened 10,000 connections to the active
// controller, exhausted its descriptors and filled its listener's backlog,
// and Raft and every other node's heartbeats to it timed out. Callers past
// the bound wait for a token (within their context), which still leaves
// room for forwarded admin requests that wait on the controller for
// seconds.
const maxBusyPerAddr = 64

var errPoolClosed = errors.New("raftfsm: client closed")

func newConnPool(dial Dialer) *connPool {
	if dial == nil {
		dial = plainDial
	}
	return &connPool{dial: dial, idle: map[string][]*poolConn{}, busy: map[string]chan struct{}{}}
}

// acquire takes one of addr's round-trip tokens, waiting while all are
// taken; release gives it back.
func (p *connPool) acquire(ctx context.Context, addr string) (release func(), err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	sem, ok := p.busy[addr]
	if !ok {
		sem = make(chan struct{}, maxBusyPerAddr)
		p.busy[addr] = sem
	}
	p.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *connPool) get(ctx context.Context, addr string) (*poolConn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	if l := p.idle[addr]; len(l) > 0 {
		pc := l[len(l)-1]
		p.idle[addr] = l[:len(l)-1]
		p.mu.Unlock()
		return pc, nil
	}
	p.mu.Unlock()
	// The dial, with its TLS handshake and SASL login, gets at least 2 s
	// of the caller's time (a SCRAM login of many iterations is slow).
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := p.dial(dctx, addr)
	if err != nil {
		return nil, err
	}
	return &poolConn{c: c, r: bufio.NewReader(c)}, nil
}

func (p *connPool) put(addr string, pc *poolConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle[addr]) >= maxIdlePerAddr {
		pc.c.Close()
		return
	}
	p.idle[addr] = append(p.idle[addr], pc)
}

func (p *connPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, l := range p.idle {
		for _, pc := range l {
			pc.c.Close()
		}
	}
	p.idle = nil
}

// roundTrip sends one request to addr and reads its response.
func (p *connPool) roundTrip(ctx context.Context, addr, clientID string, req kmsg.Request) (kmsg.Response, error) {
	if addr == "" {
		return nil, errors.New("raftfsm: no controller address")
	}
	release, err := p.acquire(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer release()
	pc, err := p.get(ctx, addr)
	if err != nil {
		return nil, err
	}
	corr := p.corr.Add(1)
	buf := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, corr)
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(rpcTimeout)
	}
	_ = pc.c.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = pc.c.SetDeadline(time.Now()) })
	defer stop()
	if _, err := pc.c.Write(buf); err != nil {
		pc.c.Close()
		return nil, err
	}
	frame, err := readFrame(pc.r)
	if err != nil {
		pc.c.Close()
		return nil, err
	}
	resp, err := parseResponse(frame, corr, req)
	if err != nil {
		pc.c.Close()
		return nil, err
	}
	if stop() {
		_ = pc.c.SetDeadline(time.Time{})
		p.put(addr, pc)
	} else {
		pc.c.Close()
	}
	return resp, nil
}

// AddRaftVoter forwards an operator's AddRaftVoter (KIP-853) to the active
// controller; it answers once the voter is caught up and promoted.
func (c *ControllerClient) AddRaftVoter(ctx context.Context, req *kmsg.AddRaftVoterRequest) (*kmsg.AddRaftVoterResponse, error) {
	v := req.Version
	resp, err := call[*kmsg.AddRaftVoterResponse](ctx, c, req)
	req.Version = v
	return resp, err
}

// RemoveRaftVoter forwards RemoveRaftVoter to the active controller.
func (c *ControllerClient) RemoveRaftVoter(ctx context.Context, req *kmsg.RemoveRaftVoterRequest) (*kmsg.RemoveRaftVoterResponse, error) {
	return call[*kmsg.RemoveRaftVoterResponse](ctx, c, req)
}
