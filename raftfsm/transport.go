package raftfsm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

// RaftPreface is the first byte of every Raft stream on the controller
// listener. A Kafka frame starts with its big-endian int32 size, so its first
// byte is 0x00 for any frame under 16 MiB; 0xFF would be a negative size, which
// no Kafka frame has. The accept loop routes on this byte alone.
const RaftPreface byte = 0xFF

// classifyTimeout bounds how long an accepted connection may take to send its
// first byte (after its TLS handshake and SASL login, when the listener has
// them) before it is dropped, so idle sockets cannot pin goroutines.
const classifyTimeout = 10 * time.Second

// AnonymousPrincipal is Kafka's principal of a connection that did not
// authenticate.
const AnonymousPrincipal = "User:ANONYMOUS"

// Handshake secures one accepted connection of the controller listener
// before it is routed: TLS and SASL, as the listener's protocol asks. It
// returns the connection to use from then on (nothing read past the
// exchange) and the authenticated principal (AnonymousPrincipal when the
// listener does not authenticate). An error closes the connection; the
// handshake has logged and counted it.
type Handshake func(ctx context.Context, c net.Conn) (net.Conn, string, error)

// Dialer opens a connection to another node's controller listener, with
// the TLS and SASL its protocol asks for, ready for the first byte.
type Dialer func(ctx context.Context, addr string) (net.Conn, error)

func plainDial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

var errMuxClosed = errors.New("raftfsm: controller listener closed")

// mux owns the controller listener. One goroutine accepts; each accepted
// connection gets a short-lived goroutine that reads the first byte and routes
// the connection to the Raft stream layer or to the RPC handler.
type mux struct {
	ln      net.Listener
	handler func(c net.Conn, principal string) // runs in its own goroutine per RPC connection
	// handshake, when set, secures each connection before its first byte
	// is read; mayRaft, when set, decides whether a principal may open a
	// Raft stream (CLUSTER_ACTION).
	handshake Handshake
	mayRaft   func(principal, host string) bool
	log       zerolog.Logger

	raftConns chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once

	mu    sync.Mutex
	conns map[net.Conn]struct{} // open RPC connections, closed on shutdown
	wg    sync.WaitGroup
}

func newMux(ln net.Listener, handler func(net.Conn, string), handshake Handshake, mayRaft func(principal, host string) bool, log zerolog.Logger) *mux {
	m := &mux{
		ln:        ln,
		handler:   handler,
		handshake: handshake,
		mayRaft:   mayRaft,
		log:       log,
		raftConns: make(chan net.Conn),
		closed:    make(chan struct{}),
		conns:     make(map[net.Conn]struct{}),
	}
	m.wg.Add(1)
	go m.acceptLoop()
	return m
}

func (m *mux) acceptLoop() {
	defer m.wg.Done()
	var backoff time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.closed:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Anything else (EMFILE, ENFILE, ENOBUFS, a timeout) passes:
			// returning here would leave the controller listener bound
			// but never accepting again, its backlog full, and Raft and
			// every broker-to-controller RPC to this node timing out
			// until a restart.
			backoff = min(max(backoff*2, 5*time.Millisecond), time.Second)
			m.log.Warn().Err(err).Dur("pause", backoff).Msg("controller listener: accept failed; retrying")
			select {
			case <-time.After(backoff):
			case <-m.closed:
				return
			}
			continue
		}
		backoff = 0
		if !m.track(c) {
			c.Close()
			return
		}
		m.wg.Add(1)
		go m.route(c)
	}
}

func (m *mux) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.closed:
		return false
	default:
	}
	m.conns[c] = struct{}{}
	return true
}

func (m *mux) untrack(c net.Conn) {
	m.mu.Lock()
	delete(m.conns, c)
	m.mu.Unlock()
}

func (m *mux) route(raw net.Conn) {
	defer m.wg.Done()
	c, principal := raw, AnonymousPrincipal
	deadline := time.Now().Add(classifyTimeout)
	if m.handshake != nil {
		// Bounded by the deadline; closing the mux closes raw, which ends
		// a handshake in progress too.
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		sc, p, err := m.handshake(ctx, raw)
		cancel()
		if err != nil {
			m.untrack(raw)
			raw.Close()
			return
		}
		c, principal = sc, p
	}
	var first [1]byte
	_ = c.SetReadDeadline(deadline)
	if _, err := io.ReadFull(c, first[:]); err != nil {
		m.untrack(raw)
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if first[0] == RaftPreface {
		if m.mayRaft != nil && !m.mayRaft(principal, remoteHost(raw)) {
			// Raft has no error answer: the stream is refused by closing it.
			m.log.Warn().Str("remote", raw.RemoteAddr().String()).Str("principal", principal).
				Msg("raft connection from a principal without CLUSTER_ACTION on the cluster; closed")
			m.untrack(raw)
			c.Close()
			return
		}
		// Raft owns the connection from here on. NetworkTransport does not
		// close accepted connections when it shuts down, so the mux keeps
		// them tracked and closes them with the listener.
		rc := &trackedConn{Conn: c, raw: raw, m: m}
		select {
		case m.raftConns <- rc:
		case <-m.closed:
			rc.Close()
		}
		return
	}
	defer func() {
		m.untrack(raw)
		c.Close()
	}()
	m.handler(&prefixedConn{Conn: c, r: io.MultiReader(bytes.NewReader(first[:]), c)}, principal)
}

// remoteHost is the IP address of a connection's peer, as ACL hosts name it.
func remoteHost(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// close stops accepting, closes the listener and every open RPC connection,
// and waits for the routing goroutines.
func (m *mux) close() {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		close(m.closed)
		for c := range m.conns {
			c.Close()
		}
		m.mu.Unlock()
		m.ln.Close()
	})
	m.wg.Wait()
}

// trackedConn forgets itself in the mux when closed. raw is the accepted
// socket the mux tracks; Conn may be a TLS connection over it.
type trackedConn struct {
	net.Conn
	raw  net.Conn
	m    *mux
	once sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() { t.m.untrack(t.raw) })
	return t.Conn.Close()
}

// prefixedConn gives back the byte the mux read to classify the connection.
type prefixedConn struct {
	net.Conn
	r io.Reader
}

func (p *prefixedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// streamLayer is the raft.StreamLayer over the shared listener. Closing it
// only stops Raft's accepts; the listener belongs to the mux.
type streamLayer struct {
	m         *mux
	dial      Dialer
	addr      net.Addr
	closed    chan struct{}
	closeOnce sync.Once
}

var _ raft.StreamLayer = (*streamLayer)(nil)

func newStreamLayer(m *mux, dial Dialer, advertise net.Addr) *streamLayer {
	if dial == nil {
		dial = plainDial
	}
	return &streamLayer{m: m, dial: dial, addr: advertise, closed: make(chan struct{})}
}

func (s *streamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.m.raftConns:
		return c, nil
	case <-s.closed:
		return nil, errMuxClosed
	case <-s.m.closed:
		return nil, errMuxClosed
	}
}

func (s *streamLayer) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

func (s *streamLayer) Addr() net.Addr { return s.addr }

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := s.dial(ctx, string(address))
	if err != nil {
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{RaftPreface}); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}
