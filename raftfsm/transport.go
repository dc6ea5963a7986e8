package raftfsm

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// RaftPreface is the first byte of every Raft stream on the controller
// listener. A Kafka frame starts with its big-endian int32 size, so its first
// byte is 0x00 for any frame under 16 MiB; 0xFF would be a negative size, which
// no Kafka frame has. The accept loop routes on this byte alone.
const RaftPreface byte = 0xFF

// classifyTimeout bounds how long an accepted connection may take to send its
// first byte before it is dropped, so idle sockets cannot pin goroutines.
const classifyTimeout = 10 * time.Second

var errMuxClosed = errors.New("raftfsm: controller listener closed")

// mux owns the controller listener. One goroutine accepts; each accepted
// connection gets a short-lived goroutine that reads the first byte and routes
// the connection to the Raft stream layer or to the RPC handler.
type mux struct {
	ln      net.Listener
	handler func(net.Conn) // runs in its own goroutine per RPC connection

	raftConns chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once

	mu    sync.Mutex
	conns map[net.Conn]struct{} // open RPC connections, closed on shutdown
	wg    sync.WaitGroup
}

func newMux(ln net.Listener, handler func(net.Conn)) *mux {
	m := &mux{
		ln:        ln,
		handler:   handler,
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
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				backoff = min(max(backoff*2, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(backoff):
				case <-m.closed:
					return
				}
				continue
			}
			return
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

func (m *mux) route(c net.Conn) {
	defer m.wg.Done()
	var first [1]byte
	_ = c.SetReadDeadline(time.Now().Add(classifyTimeout))
	if _, err := io.ReadFull(c, first[:]); err != nil {
		m.untrack(c)
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if first[0] == RaftPreface {
		// Raft owns the connection from here on. NetworkTransport does not
		// close accepted connections when it shuts down, so the mux keeps
		// them tracked and closes them with the listener.
		rc := &trackedConn{Conn: c, m: m}
		select {
		case m.raftConns <- rc:
		case <-m.closed:
			rc.Close()
		}
		return
	}
	defer func() {
		m.untrack(c)
		c.Close()
	}()
	m.handler(&prefixedConn{Conn: c, r: io.MultiReader(bytes.NewReader(first[:]), c)})
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

// trackedConn forgets itself in the mux when closed.
type trackedConn struct {
	net.Conn
	m    *mux
	once sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() { t.m.untrack(t.Conn) })
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
	addr      net.Addr
	closed    chan struct{}
	closeOnce sync.Once
}

var _ raft.StreamLayer = (*streamLayer)(nil)

func newStreamLayer(m *mux, advertise net.Addr) *streamLayer {
	return &streamLayer{m: m, addr: advertise, closed: make(chan struct{})}
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
	c, err := net.DialTimeout("tcp", string(address), timeout)
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
