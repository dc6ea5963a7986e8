package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/broker/txn"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnCoordinator is what the transaction APIs need of the transaction
// coordinator. *txn.Coordinator satisfies it; its doc says what each call
// decides.
type TxnCoordinator interface {
	Ownership(img *metadata.Image, id string) error
	// Transaction is id's state, the coordinator's latest write included.
	Transaction(id string) (metadata.Transaction, bool)
	Locate(ctx context.Context, id string) (int32, error)
	InitProducerID(ctx context.Context, id string, in txn.InitInput) (int64, int16, error)
	AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []metadata.TopicPartition) error
	AddOffsets(ctx context.Context, id string, pid int64, epoch int16, group string) error
	Verify(ctx context.Context, id string, pid int64, epoch int16, parts []metadata.TopicPartition) ([]int16, error)
	EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) error
	EndTxnV2(ctx context.Context, id string, pid int64, epoch int16, commit bool) (int64, int16, error)
	CommitOffsets(ctx context.Context, id string, pid int64, epoch int16, group string, offsets []metadata.OffsetCommit) error
}

var _ TxnCoordinator = (*txn.Coordinator)(nil)

// InterBroker sends a request to another broker's inter-broker listener.
// *InterBrokerClient satisfies it.
type InterBroker interface {
	Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
}

// txnsOf returns the transaction coordinator, or nil when the node has none.
func txnsOf(rc *request) TxnCoordinator { return rc.conn.srv.deps.Txns }

// InterBrokerClient sends requests to other brokers at their endpoint on
// the inter-broker listener: up to maxPeerConns connections per broker,
// one request in flight on each (a marker request waits for its
// replication, and many transactions complete at once), no ApiVersions
// exchange (the broker is ours, at the versions set on each request). A
// connection that fails is dropped and dialled again on the next request.
type InterBrokerClient struct {
	// Metadata gives the brokers' endpoints.
	Metadata MetadataSource
	// Listener is inter.broker.listener.name.
	Listener string
	// Dial connects to an address; nil dials plain TCP. A secured
	// inter-broker listener's dialer (InterBrokerDialer) does TLS and SASL.
	Dial     func(ctx context.Context, addr string) (net.Conn, error)
	ClientID string

	mu    sync.Mutex
	conns map[int32][]*ibConn
	next  int // round robin when every connection is busy
}

// maxPeerConns bounds the connections to one broker.
const maxPeerConns = 8

type ibConn struct {
	mu   sync.Mutex
	c    net.Conn
	addr string
	fmtr *kmsg.RequestFormatter
	corr int32
}

// maxInterBrokerResponse bounds a response frame; the answers sent this
// way (markers, verification) are small.
const maxInterBrokerResponse = 16 << 20

// Request sends req to broker and returns its answer.
func (c *InterBrokerClient) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	img, _ := c.Metadata.Current()
	b, ok := img.Broker(broker)
	if !ok {
		return nil, fmt.Errorf("broker %d is not registered", broker)
	}
	ep, ok := b.Endpoint(c.Listener)
	if !ok {
		return nil, fmt.Errorf("broker %d has no %s endpoint", broker, c.Listener)
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	ic := c.conn(broker, addr)
	defer ic.mu.Unlock()
	if ic.c == nil {
		dial := c.Dial
		if dial == nil {
			dial = func(ctx context.Context, addr string) (net.Conn, error) {
				d := net.Dialer{Timeout: 10 * time.Second}
				return d.DialContext(ctx, "tcp", addr)
			}
		}
		nc, err := dial(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("dial broker %d at %s: %w", broker, addr, err)
		}
		ic.c = nc
	}
	resp, err := ic.roundTrip(ctx, req)
	if err != nil {
		_ = ic.c.Close()
		ic.c = nil
		return nil, fmt.Errorf("broker %d at %s: %w", broker, addr, err)
	}
	return resp, nil
}

// conn returns a connection to broker, locked: an idle one, a new one
// while there are fewer than maxPeerConns, else the next in turn (waiting
// for it).
func (c *InterBrokerClient) conn(broker int32, addr string) *ibConn {
	c.mu.Lock()
	if c.conns == nil {
		c.conns = map[int32][]*ibConn{}
	}
	list := c.conns[broker]
	if len(list) > 0 && list[0].addr != addr {
		// The broker moved: close the idle connections to its old
		// address; one in use ends with its request's failure.
		for _, ic := range list {
			if ic.mu.TryLock() {
				if ic.c != nil {
					_ = ic.c.Close()
					ic.c = nil
				}
				ic.mu.Unlock()
			}
		}
		list = nil
	}
	for _, ic := range list {
		if ic.mu.TryLock() {
			c.mu.Unlock()
			return ic
		}
	}
	if len(list) < maxPeerConns {
		ic := &ibConn{addr: addr, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID(c.ClientID))}
		ic.mu.Lock()
		c.conns[broker] = append(list, ic)
		c.mu.Unlock()
		return ic
	}
	c.next++
	ic := list[c.next%len(list)]
	c.mu.Unlock()
	ic.mu.Lock()
	return ic
}

func (ic *ibConn) roundTrip(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	ic.corr++
	corr := ic.corr
	buf := ic.fmtr.AppendRequest(nil, req, corr)
	deadline, _ := ctx.Deadline()
	if err := ic.c.SetDeadline(deadline); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = ic.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := ic.c.Write(buf); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(ic.c, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > maxInterBrokerResponse {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(ic.c, body); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return nil, fmt.Errorf("response to correlation id %d, want %d", got, corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, err
	}
	return resp, nil
}

// Close closes every connection.
func (c *InterBrokerClient) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, list := range c.conns {
		for _, ic := range list {
			ic.mu.Lock()
			if ic.c != nil {
				_ = ic.c.Close()
				ic.c = nil
			}
			ic.mu.Unlock()
		}
	}
}

// TxnMarkers is the transaction coordinator's marker path
// (txn.MarkerWriter): WriteTxnMarkers v1 to a partition leader over the
// inter-broker listener, or straight to the local replicas when this
// broker leads.
type TxnMarkers struct {
	NodeID   int32
	Replicas ReplicaManager
	Peers    InterBroker
}

var _ txn.MarkerWriter = (*TxnMarkers)(nil)

// WriteMarkers implements txn.MarkerWriter.
func (m *TxnMarkers) WriteMarkers(ctx context.Context, leader int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	if leader == m.NodeID {
		req.SetVersion(1)
		return writeMarkersLocal(ctx, m.Replicas, req), nil
	}
	req.SetVersion(1)
	resp, err := m.Peers.Request(ctx, leader, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.WriteTxnMarkersResponse), nil
}

// markerAckTimeout bounds the wait for a marker's replication when the
// caller's context has no deadline (Kafka's coordinator sends markers with
// request.timeout.ms).
const markerAckTimeout = 30 * time.Second

// writeMarkersLocal appends each marker to the partitions this broker
// leads, with acks=all (Kafka's WriteTxnMarkers appends with
// requiredAcks -1), and answers per partition.
func writeMarkersLocal(ctx context.Context, replicas ReplicaManager, req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	type waiting struct {
		rp  *kmsg.WriteTxnMarkersResponseMarkerTopicPartition
		ack *replica.Ack
	}
	var pending []waiting
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(req.Markers))
	for i, mk := range req.Markers {
		rm := &resp.Markers[i]
		*rm = kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = mk.ProducerID
		typ := storage.ControlAbort
		if mk.Committed {
			typ = storage.ControlCommit
		}
		marker := storage.TxnMarker{ProducerID: mk.ProducerID, ProducerEpoch: mk.ProducerEpoch, CoordinatorEpoch: mk.CoordinatorEpoch, Type: typ}
		rm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(mk.Topics))
		for j, t := range mk.Topics {
			rt := &rm.Topics[j]
			*rt = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			for k, p := range t.Partitions {
				rp := &rt.Partitions[k]
				*rp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				if replicas == nil {
					rp.ErrorCode = kerr.NotLeaderForPartition.Code
					continue
				}
				part, err := replicas.Partition(t.Topic, p)
				var ack *replica.Ack
				if err == nil {
					_, ack, err = part.AppendMarker(marker, -1)
				}
				if err != nil {
					rp.ErrorCode = errorCode(err)
					continue
				}
				if ack != nil {
					pending = append(pending, waiting{rp: rp, ack: ack})
				}
			}
		}
	}
	if len(pending) > 0 {
		timeout := markerAckTimeout
		if d, ok := ctx.Deadline(); ok {
			timeout = time.Until(d)
		}
		acks := make([]*replica.Ack, len(pending))
		for i, w := range pending {
			acks[i] = w.ack
		}
		for i, err := range replica.WaitAcks(ctx, timeout, acks) {
			if err != nil {
				pending[i].rp.ErrorCode = errorCode(err)
			}
		}
	}
	return resp
}

// verifyTxnPartitions is the partition leader's check of KIP-890 before
// transactional batches are appended (transaction.partition.verification.enable,
// on by default as in Kafka): the producer's open transaction at the
// coordinator must include each partition. A partition where the producer
// already has a transaction open at this epoch needs no check (Kafka skips
// it too). The partitions of one produce request are asked about (or, with
// add, added) together, one call for all: the coordinator records an add
// with a Raft write, and one write per partition made a produce of a few
// partitions wait for them in turn. The coordinator is asked in process
// when it is this broker, with AddPartitionsToTxn v4 VerifyOnly (v5 to
// add) otherwise. It answers one error per partition, nil when the batch
// may be appended.
//
// Between the answer and the append a marker could end the transaction
// verified, and the batch would then open one the coordinator does not
// know of. As Kafka's verification guard, each verified partition gets the
// producer's marker count in the log taken before the coordinator was
// asked (txnGuard); the append refuses the batch with INVALID_TXN_STATE if
// a marker came since (storage.AppendOptions.TxnGuard). Under transaction
// version 2 the marker's bumped epoch does that instead.
func (s *Server) verifyTxnPartitions(ctx context.Context, txnID string, add bool, pid int64, epoch int16, parts []metadata.TopicPartition) ([]error, []txnGuard) {
	errs := make([]error, len(parts))
	guards := make([]txnGuard, len(parts))
	if !add && s.config != nil && !s.config.TransactionPartitionVerification {
		return errs, guards
	}
	var ask []metadata.TopicPartition
	var at []int // index in parts of each asked partition
	for i, tp := range parts {
		if s.deps.Replicas != nil {
			if p, err := s.deps.Replicas.Partition(tp.Topic, tp.Partition); err == nil {
				open, g := p.Log().TxnGuard(pid, epoch)
				if open {
					continue
				}
				// Taken before the coordinator is asked: a marker for the
				// producer appended after it refuses the batch. Not when
				// the leader adds the partition (transaction version 2):
				// the add may wait for the previous transaction's marker
				// to land here, and the marker's bumped epoch refuses a
				// late batch of the old transaction already.
				if !add {
					guards[i] = txnGuard{set: true, value: g}
				}
			}
		}
		ask, at = append(ask, tp), append(at, i)
	}
	if len(ask) == 0 {
		return errs, guards
	}
	fail := func(err error) ([]error, []txnGuard) {
		for _, i := range at {
			errs[i] = err
		}
		return errs, guards
	}
	if s.deps.Txns == nil || s.deps.Metadata == nil {
		return fail(fmt.Errorf("%w: no transaction coordinator to verify with", kerr.InvalidTxnState))
	}
	img, _ := s.deps.Metadata.Current()
	var codes []int16
	if s.deps.Txns.Ownership(img, txnID) == nil {
		if add {
			return fail(verifyErr(s.deps.Txns.AddPartitions(ctx, txnID, pid, epoch, ask)))
		}
		var err error
		if codes, err = s.deps.Txns.Verify(ctx, txnID, pid, epoch, ask); err != nil {
			return fail(verifyErr(err))
		}
	} else {
		place, ok := txn.Place(img, txnID)
		if !ok || place.Leader < 0 || s.deps.Peers == nil {
			return fail(fmt.Errorf("%w: the transaction coordinator of %q is not available", kerr.NotEnoughReplicas, txnID))
		}
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.SetVersion(4)
		if add {
			req.SetVersion(5)
		}
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = txnID, pid, epoch, !add
		byTopic := map[string]int{}
		for _, tp := range ask {
			j, ok := byTopic[tp.Topic]
			if !ok {
				j = len(tx.Topics)
				byTopic[tp.Topic] = j
				tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				tt.Topic = tp.Topic
				tx.Topics = append(tx.Topics, tt)
			}
			tx.Topics[j].Partitions = append(tx.Topics[j].Partitions, tp.Partition)
		}
		req.Transactions = append(req.Transactions, tx)
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := s.deps.Peers.Request(vctx, place.Leader, req)
		cancel()
		if err != nil {
			return fail(fmt.Errorf("%w: verifying with the transaction coordinator: %v", kerr.NotEnoughReplicas, err))
		}
		r := resp.(*kmsg.AddPartitionsToTxnResponse)
		if r.ErrorCode != 0 {
			return fail(verifyErr(kerr.ErrorForCode(r.ErrorCode)))
		}
		answered := map[metadata.TopicPartition]int16{}
		for _, rt := range r.Transactions {
			for _, t := range rt.Topics {
				for _, p := range t.Partitions {
					answered[metadata.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
				}
			}
		}
		codes = make([]int16, len(ask))
		for k, tp := range ask {
			code, ok := answered[tp]
			if !ok {
				code = kerr.InvalidTxnState.Code
			}
			codes[k] = code
		}
	}
	for k, i := range at {
		if codes[k] != 0 {
			errs[i] = verifyErr(kerr.ErrorForCode(codes[k]))
		}
	}
	return errs, guards
}

// txnGuard is a partition's verification guard for one produce
// (storage.Log.TxnGuard), set when the partition was verified.
type txnGuard struct {
	set   bool
	value uint64
}

// verifyErr is what a produce answers when verification fails, as
// Kafka's ReplicaManager: a fenced producer is INVALID_PRODUCER_EPOCH (a
// produce never answers PRODUCER_FENCED), a coordinator that cannot answer
// is NOT_ENOUGH_REPLICAS (retriable: Kafka maps the coordinator errors
// so), and a partition outside the transaction INVALID_TXN_STATE.
func verifyErr(err error) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return fmt.Errorf("%w: %v", kerr.NotEnoughReplicas, err)
	}
	switch ke.Code {
	case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code:
		return fmt.Errorf("%w: %v", kerr.InvalidProducerEpoch, err)
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.ConcurrentTransactions.Code,
		kerr.RequestTimedOut.Code:
		return fmt.Errorf("%w: %v", kerr.NotEnoughReplicas, err)
	}
	return fmt.Errorf("%w: %v", kerr.InvalidTxnState, err)
}

// txnV2 reports whether transaction version 2 is finalized in this node's
// image: clients then use KIP-890's protocol (EndTxn v5+, produce v12+
// without AddPartitionsToTxn).
func txnV2(rc *request) bool {
	md := rc.conn.srv.deps.Metadata
	if md == nil {
		return false
	}
	img, _ := md.Current()
	l, ok := img.Feature(metadata.TransactionVersionFeature)
	return ok && l >= 2
}
