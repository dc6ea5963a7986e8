package replica

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

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaderEndpoint is what a fetcher needs from a source broker (Kafka's
// LeaderEndPoint). A fetcher uses one endpoint from its own goroutine only;
// Close may be called once. The byte fields of a response (RecordBatches)
// may alias a buffer the endpoint reuses: they are valid until the next
// call on the endpoint, so the fetcher appends them before it asks again.
type LeaderEndpoint interface {
	Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error)
	OffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error)
	Close() error
}

// Dialer connects to broker id at its inter-broker endpoint from the image.
type Dialer func(ctx context.Context, id int32, ep metadata.Endpoint) (LeaderEndpoint, error)

// ErrEndpointDown is returned by InmemNetwork endpoints of a broker that is
// down.
var ErrEndpointDown = errors.New("replica: broker unreachable")

// maxResponseSize bounds a response frame the TCP endpoint accepts; replica
// fetch answers are bounded by replica.fetch.response.max.bytes (10 MiB by
// default) and a frame claiming more than this is refused, not allocated.
const maxResponseSize = 256 << 20

// TCPDialer returns a Dialer speaking Kafka frames over TCP, as Kafka's
// inter-broker client does: request header v1/v2 with clientID, the
// versions of fetchVersion and offsetForLeaderEpochVersion, no ApiVersions
// exchange (the broker is ours) and one request in flight per connection.
func TCPDialer(clientID string, dialTimeout time.Duration) Dialer {
	return func(ctx context.Context, id int32, ep metadata.Endpoint) (LeaderEndpoint, error) {
		d := net.Dialer{Timeout: dialTimeout}
		addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("replica: dial broker %d at %s: %w", id, addr, err)
		}
		return &tcpEndpoint{conn: c, addr: addr, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}, nil
	}
}

type tcpEndpoint struct {
	conn net.Conn
	addr string
	fmtr *kmsg.RequestFormatter

	mu   sync.Mutex
	corr int32
	buf  []byte
	// resp is the response frame buffer, reused across round trips: a
	// follower reads every produced byte through it, and allocating (and
	// zeroing) a fresh multi-megabyte frame per fetch showed in profiles.
	resp []byte
}

// maxKeptResponse bounds the response buffer an endpoint keeps between
// round trips (replica.fetch.response.max.bytes is 10 MiB by default).
const maxKeptResponse = 32 << 20

func (e *tcpEndpoint) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	return resp, e.roundTrip(ctx, req, resp)
}

func (e *tcpEndpoint) OffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	return resp, e.roundTrip(ctx, req, resp)
}

func (e *tcpEndpoint) Close() error { return e.conn.Close() }

func (e *tcpEndpoint) roundTrip(ctx context.Context, req kmsg.Request, resp kmsg.Response) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.corr++
	corr := e.corr
	e.buf = e.fmtr.AppendRequest(e.buf[:0], req, corr)
	deadline, _ := ctx.Deadline()
	if err := e.conn.SetDeadline(deadline); err != nil {
		return err
	}
	// Cancelling ctx unblocks the read at once.
	stop := context.AfterFunc(ctx, func() { _ = e.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	wrap := func(err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("replica: %s: %w", e.addr, ctx.Err())
		}
		return fmt.Errorf("replica: %s: %w", e.addr, err)
	}
	if _, err := e.conn.Write(e.buf); err != nil {
		return wrap(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(e.conn, size[:]); err != nil {
		return wrap(err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxResponseSize {
		return wrap(fmt.Errorf("response frame of %d bytes", n))
	}
	if int(n) > cap(e.resp) {
		e.resp = make([]byte, n)
	}
	body := e.resp[:n]
	if cap(e.resp) > maxKeptResponse {
		e.resp = nil
	}
	if _, err := io.ReadFull(e.conn, body); err != nil {
		return wrap(err)
	}
	if err := decodeResponse(body, corr, req.IsFlexible(), resp); err != nil {
		return wrap(err)
	}
	return nil
}

// decodeResponse parses a response frame body (without its size prefix):
// the correlation id, which must be corr, then for a flexible version
// (response header v1) the header's tagged fields, skipped, then the body
// into resp at the request's version.
func decodeResponse(body []byte, corr int32, flexible bool, resp kmsg.Response) error {
	if len(body) < 4 {
		return errors.New("response shorter than its header")
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return fmt.Errorf("response correlation id %d, expected %d", got, corr)
	}
	b := body[4:]
	if flexible {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return errors.New("malformed response header tags")
		}
		b = b[k:]
		for range n {
			_, k := binary.Uvarint(b) // tag number
			if k <= 0 {
				return errors.New("malformed response header tag")
			}
			b = b[k:]
			size, k := binary.Uvarint(b)
			if k <= 0 || size > uint64(len(b)-k) {
				return errors.New("malformed response header tag size")
			}
			b = b[k+int(size):]
		}
	}
	if err := resp.ReadFrom(b); err != nil {
		return fmt.Errorf("decoding %T v%d: %w", resp, resp.GetVersion(), err)
	}
	return nil
}

// InmemNetwork connects Managers in one process, the in-memory twin of
// TCPDialer: requests and responses go through the Kafka encoding (so the
// codec paths run and no memory is shared), and a broker can be taken down
// to simulate a crash, a pause or a partition.
type InmemNetwork struct {
	mu       sync.Mutex
	managers map[int32]*Manager
	down     map[int32]bool
}

// NewInmemNetwork returns an empty network.
func NewInmemNetwork() *InmemNetwork {
	return &InmemNetwork{managers: map[int32]*Manager{}, down: map[int32]bool{}}
}

// Register makes m reachable as broker id.
func (n *InmemNetwork) Register(id int32, m *Manager) {
	n.mu.Lock()
	n.managers[id] = m
	n.mu.Unlock()
}

// SetDown takes broker id off the network (down) or back: a down broker's
// requests fail and requests to it fail.
func (n *InmemNetwork) SetDown(id int32, down bool) {
	n.mu.Lock()
	n.down[id] = down
	n.mu.Unlock()
}

func (n *InmemNetwork) route(from, to int32) (*Manager, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := n.managers[to]
	if n.down[from] || n.down[to] || m == nil {
		return nil, fmt.Errorf("%w: %d -> %d", ErrEndpointDown, from, to)
	}
	return m, nil
}

// Dialer returns the Dialer broker from uses.
func (n *InmemNetwork) Dialer(from int32) Dialer {
	return func(ctx context.Context, id int32, _ metadata.Endpoint) (LeaderEndpoint, error) {
		if _, err := n.route(from, id); err != nil {
			return nil, err
		}
		return &inmemEndpoint{n: n, from: from, to: id}, nil
	}
}

type inmemEndpoint struct {
	n        *InmemNetwork
	from, to int32
}

// recode passes a message through its wire form into dst.
func recode(src interface{ AppendTo([]byte) []byte }, dst interface{ ReadFrom([]byte) error }) error {
	return dst.ReadFrom(src.AppendTo(nil))
}

func (e *inmemEndpoint) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	m, err := e.n.route(e.from, e.to)
	if err != nil {
		return nil, err
	}
	in := kmsg.NewPtrFetchRequest()
	in.Version = req.Version
	if err := recode(req, in); err != nil {
		return nil, err
	}
	out := m.ServeFetch(ctx, in)
	if _, err := e.n.route(e.from, e.to); err != nil {
		return nil, err // went down meanwhile: the answer is lost
	}
	resp := in.ResponseKind().(*kmsg.FetchResponse)
	return resp, recode(out, resp)
}

func (e *inmemEndpoint) OffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	m, err := e.n.route(e.from, e.to)
	if err != nil {
		return nil, err
	}
	in := kmsg.NewPtrOffsetForLeaderEpochRequest()
	in.Version = req.Version
	if err := recode(req, in); err != nil {
		return nil, err
	}
	out := m.ServeOffsetForLeaderEpoch(in)
	if _, err := e.n.route(e.from, e.to); err != nil {
		return nil, err
	}
	resp := in.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	return resp, recode(out, resp)
}

func (e *inmemEndpoint) Close() error { return nil }
