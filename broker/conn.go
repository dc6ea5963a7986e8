package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// connState is what handlers may know about the connection a request came
// on. Its fields are set before the first request and read-only afterwards,
// except the atomics, which any handler goroutine may update.
type connState struct {
	id       uint64
	listener string
	remote   net.Addr
	srv      *Server

	// software is what the client reported in ApiVersions v3+ (KIP-511).
	software atomic.Pointer[clientSoftware]

	// principal is who the connection authenticated as, in Kafka's form:
	// "User:alice" after SASL, "User:CN=...,O=..." for a verified client
	// certificate, "User:ANONYMOUS" otherwise. tlsPeer is the subject of a
	// verified client certificate. Both are set before the first request
	// is dispatched (auth_conn.go).
	principal string
	tlsPeer   string
	// host is the client's address as ACLs name it (authorized_ops.go).
	host string
	// mutedUntil (unix ns) holds the reader back after a quota throttle.
	mutedUntil atomic.Int64
}

type clientSoftware struct{ name, version string }

// slot is one request's place in the connection's response order. The
// reader creates it, a handler completes it, the writer writes it.
type slot struct {
	rc   *request
	done chan struct{} // closed by complete

	resp   kmsg.Response
	err    error
	reason Reason // why err, for the metric
	// completedAt is when complete ran: the end of the request's local
	// and remote time, the start of its response queue time.
	completedAt time.Time

	// keepVersion marks the KIP-511 reply, the one response deliberately
	// at another version (v0) than its request.
	keepVersion bool
	// written, when set, is closed by the writer once the response is on
	// the wire (a failed re-authentication closes after its answer).
	written chan struct{}
}

func newSlot(rc *request) *slot { return &slot{rc: rc, done: make(chan struct{})} }

// complete is called exactly once per slot.
func (s *slot) complete(resp kmsg.Response, err error, reason Reason) {
	s.resp, s.err, s.reason = resp, err, reason
	s.completedAt = time.Now()
	close(s.done)
}

// dispose releases what a response pins if it will not be written.
func (s *slot) dispose() {
	select {
	case <-s.done:
		if fr, ok := s.resp.(*filesResponse); ok {
			fr.done()
		}
	default:
	}
}

// connError is the reason a connection went away, for its log line.
type connError struct {
	reason Reason
	err    error
}

func (e *connError) Error() string { return e.reason.String() + ": " + e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

// conn serves one client connection with three kinds of goroutine:
//
//   - the reader (the goroutine that called serve) reads frames, decodes
//     them, puts a slot for each in queue in arrival order, and starts the
//     handler; for an API that is not concurrent it waits for the handler's
//     release before reading on;
//   - one handler goroutine per request, which completes its slot;
//   - the writer, which takes slots from queue in order, waits for each to
//     complete and writes its response.
//
// queue is bounded, so a client that pipelines faster than it is answered
// stops being read (TCP backpressure) instead of growing memory. Any failure
// cancels ctx, which closes the socket and so unblocks every goroutine.
type conn struct {
	srv   *Server
	nc    net.Conn
	state *connState
	log   zerolog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	queue  chan *slot

	handlers sync.WaitGroup

	// For connections.max.idle.ms (conn_idle.go): when bytes last moved
	// either way (unix nanoseconds), and how many requests are queued or
	// being answered.
	lastActive atomic.Int64
	pending    atomic.Int32

	// auth is the listener's TLS and SASL (auth_conn.go); nil for PLAINTEXT.
	auth *listenerAuth
	// session is the SASL session's state for KIP-368 (auth_reauth.go);
	// the reader goroutine's alone.
	session saslSession

	closeOnce sync.Once
	closeErr  error
}

func (s *Server) newConn(nc net.Conn, listener string) *conn {
	id := s.nextConnID.Add(1)
	ctx, cancel := context.WithCancel(s.ctx)
	c := &conn{
		srv: s,
		nc:  nc,
		state: &connState{
			id:        id,
			listener:  listener,
			remote:    nc.RemoteAddr(),
			srv:       s,
			principal: anonymousPrincipal,
			host:      aclHost(nc.RemoteAddr()),
		},
		ctx:    ctx,
		cancel: cancel,
		queue:  make(chan *slot, s.maxInFlight),
	}
	c.log = s.log.With().Uint64("conn", id).Str("listener", listener).Stringer("remote", addrString{nc.RemoteAddr()}).Logger()
	return c
}

// addrString tolerates a nil address (net.Pipe and test conns).
type addrString struct{ a net.Addr }

func (a addrString) String() string {
	if a.a == nil {
		return ""
	}
	return a.a.String()
}

// serve runs the connection until the client goes away, a protocol error
// closes it, or the server shuts down. It returns after every goroutine it
// started has finished.
//
// A client that closes its side at a frame boundary still gets the answers
// to the requests it sent (the writer drains the queue first); any other end
// drops what is unanswered, as Kafka does.
func (c *conn) serve() {
	c.srv.metrics.ConnOpened(c.state.listener)
	defer c.srv.metrics.ConnClosed(c.state.listener)
	// Before the socket is shared: the TLS handshake replaces c.nc.
	if !c.startTLS() {
		c.logClose()
		return
	}
	stop := context.AfterFunc(c.ctx, func() { _ = c.nc.Close() })
	defer stop()
	if !c.authenticate() {
		_ = c.nc.Close()
		c.logClose()
		return
	}

	var held *slot
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		held = c.writeLoop()
	}()

	if c.readLoop() {
		close(c.queue) // the reader is the only sender
		select {
		case <-writerDone:
		case <-c.ctx.Done():
		}
	}
	c.cancel()
	c.handlers.Wait()
	<-writerDone
	_ = c.nc.Close()
	// A share session lives as long as its connection (share_sessions.go).
	if c.srv.shares != nil {
		c.srv.shares.connClosed(c.state.id)
	}

	// Every handler has finished, so every slot still here is complete;
	// release what their responses pin.
	if held != nil {
		held.dispose()
	}
	for drained := false; !drained; {
		select {
		case s, ok := <-c.queue:
			if !ok {
				drained = true
				break
			}
			s.dispose()
		default:
			drained = true
		}
	}
	c.logClose()
}

// fail records why the connection closes (first reason wins) and closes it.
func (c *conn) fail(reason Reason, err error) {
	c.srv.metrics.Rejected(reason)
	c.closeWith(&connError{reason: reason, err: err})
}

func (c *conn) closeWith(err error) {
	c.closeOnce.Do(func() { c.closeErr = err })
	c.cancel()
}

func (c *conn) logClose() {
	var ce *connError
	switch err := c.closeErr; {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.log.Debug().Msg("connection closed")
	case errors.As(err, &ce):
		c.log.Warn().Err(err).Str("reason", ce.reason.String()).Msg("connection closed on bad request")
	default:
		c.log.Debug().Err(err).Msg("connection closed")
	}
}

// readLoop reads and dispatches frames until the connection fails. It
// returns true when the client ended the stream cleanly at a frame boundary.
func (c *conn) readLoop() (eof bool) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Interface("panic", r).Bytes("stack", debug.Stack()).Msg("panic in connection reader")
			c.fail(ReasonHandlerPanic, fmt.Errorf("reader panic: %v", r))
		}
	}()
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(c.idleReader())
	defer func() {
		br.Reset(nil) // hold no connection in the pool
		readerPool.Put(br)
	}()
	for c.ctx.Err() == nil {
		c.waitUnmuted() // a quota throttle (quota.go)
		fb, err := readFrame(br, c.srv.maxRequestBytes)
		if err != nil {
			var ce *connError
			switch {
			case errors.As(err, &ce):
				c.fail(ce.reason, ce.err)
			case err == io.EOF:
				c.closeOnce.Do(func() { c.closeErr = err })
				return true
			case c.ctx.Err() == nil:
				c.closeWith(err)
			}
			return false
		}
		ok, reusable := c.dispatch(fb.b)
		if reusable {
			fb.put()
		}
		if !ok {
			return false
		}
	}
	return false
}

// readerPool holds the connections' 32 KiB read buffers. A client that
// connects, logs in and leaves (a SCRAM-over-TLS login is a few small
// frames) made one each: in a profile of 2,000 new SASL_SSL connections
// they were an eighth of the bytes the broker allocated, and the garbage
// collector's work with them.
var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// smallFrame is the size up to which a frame's buffer is allocated at once;
// bigger frames grow as their bytes arrive, so a size prefix alone cannot
// make us allocate socket.request.max.bytes.
const smallFrame = 64 << 10

// Frame buffers are pooled by power-of-two size class. Produce frames are
// the bulk of what a broker reads (1 MiB batches are common), and kmsg's
// decoded Records alias the frame, so without reuse every produced byte
// costs an allocation, a zeroing, and (for frames read in growing steps)
// copies: profiles of a one-node produce run at 1 KiB records put
// readFrame's allocations at nearly all bytes allocated and a third of the
// broker's CPU. A buffer goes back to the pool only when dispatch says no
// handler can still see it (see reusesFrame); every other frame is simply
// left to the garbage collector, as before.
const (
	minFrameClass = 12 // 4 KiB: smaller frames are cheap to allocate
	maxFrameClass = 24 // 16 MiB: larger ones are rare; do not pin them
)

var framePools [maxFrameClass + 1]sync.Pool // of *frameBuf, indexed by class

// frameBuf is a frame's bytes and, when they came from or may go to a pool,
// the handle that returns them.
type frameBuf struct {
	b []byte
}

// frameClass is the smallest class whose buffers hold n bytes, or -1.
func frameClass(n int) int {
	k := max(bits.Len(uint(max(n, 1)-1)), minFrameClass)
	if k > maxFrameClass {
		return -1
	}
	return k
}

// getFrameBuf returns a pooled buffer with room for n bytes, or nil.
func getFrameBuf(n int) *frameBuf {
	k := frameClass(n)
	if k < 0 {
		return nil
	}
	if fb, ok := framePools[k].Get().(*frameBuf); ok {
		return fb
	}
	return nil
}

// put returns the buffer to the class its capacity fills (the largest
// class not above it), so a Get from a class always has room.
func (fb *frameBuf) put() {
	c := cap(fb.b)
	if c < 1<<minFrameClass {
		return
	}
	k := bits.Len(uint(c)) - 1
	if k > maxFrameClass {
		return
	}
	fb.b = fb.b[:0]
	framePools[k].Put(fb)
}

// readFrame reads one size-prefixed frame, into a pooled buffer when one
// has room. Size errors come back as *connError with their reason.
func readFrame(r io.Reader, max int32) (*frameBuf, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(sz[:]))
	switch {
	case size < 0:
		return nil, &connError{ReasonFrameNegative, fmt.Errorf("frame size %d", size)}
	case size > max:
		return nil, &connError{ReasonFrameTooLarge, fmt.Errorf("frame size %d above socket.request.max.bytes %d", size, max)}
	}
	if fb := getFrameBuf(int(size)); fb != nil {
		// Room that exists already: a size prefix alone costs nothing.
		fb.b = fb.b[:size]
		if _, err := io.ReadFull(r, fb.b); err != nil {
			fb.put()
			return nil, unexpectedEOF(err)
		}
		return fb, nil
	}
	if size <= smallFrame {
		c := int(size)
		if c >= 1<<minFrameClass {
			// A whole class, so the buffer can serve any frame of its
			// class once it is returned.
			c = 1 << frameClass(c)
		}
		buf := make([]byte, size, c)
		_, err := io.ReadFull(r, buf)
		return &frameBuf{b: buf}, unexpectedEOF(err)
	}
	// Grow to a whole class (when the frame has one), so the buffer can be
	// pooled for frames of its class; each step at most doubles what the
	// bytes received so far justify.
	want := int(size)
	if k := frameClass(want); k >= 0 {
		want = 1 << k
	}
	buf := make([]byte, 0, smallFrame)
	for len(buf) < int(size) {
		if cap(buf) == len(buf) {
			grown := make([]byte, len(buf), min(want, 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		next := min(int(size), cap(buf))
		n, err := io.ReadFull(r, buf[len(buf):next])
		buf = buf[:len(buf)+n]
		if err != nil {
			return nil, unexpectedEOF(err)
		}
	}
	return &frameBuf{b: buf}, nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// dispatch decodes one frame, queues its slot and starts its handler. It
// returns ok false when the connection must close, and reusable true when
// nothing can reference frame any more, so the reader may reuse its bytes.
func (c *conn) dispatch(frame []byte) (ok, reusable bool) {
	key, version, corr, hdrOK := peekHeader(frame)
	if !hdrOK {
		c.fail(ReasonBadHeader, errShortHeader)
		return false, false
	}
	if handled, ok := c.sessionFrame(frame, key, version); handled || !ok {
		return ok, false
	}
	entry := c.srv.table.lookup(key)
	if entry == nil {
		// Kafka fails the header parse for an unknown key and closes.
		c.fail(ReasonUnknownKey, fmt.Errorf("api key %d (%s) not served", key, kmsg.NameForKey(key)))
		return false, false
	}
	check := entry.check(version)
	if check == versionUnsupported {
		if key != apiVersionsKey {
			// Kafka 4 (SocketServer.parseRequestHeader) refuses a version
			// it does not enable with InvalidRequestException, which closes
			// the connection; only ApiVersions is answered (KIP-511).
			c.fail(ReasonUnsupportedVersion, fmt.Errorf("%s v%d not served (advertised %d-%d)", kmsg.NameForKey(key), version, entry.advertisedMin, entry.max))
			return false, false
		}
		// Every kgo connection starts this way; it is a request, not a
		// rejection.
		c.srv.metrics.RequestReceived(key, version, len(frame)+4)
		rc := c.newRequest(key, version, corr, nil)
		s := newSlot(rc)
		s.keepVersion = true
		s.complete(unsupportedAPIVersionsResponse(c.srv.table), nil, 0)
		return c.enqueue(s), true
	}

	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	hdr, body, err := parseRequestHeader(frame, req.IsFlexible())
	if err != nil {
		c.fail(ReasonBadHeader, err)
		return false, false
	}
	if err := req.ReadFrom(body); err != nil {
		c.fail(ReasonUndecodable, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(key), version, err))
		return false, false
	}
	c.srv.metrics.RequestReceived(key, version, len(frame)+4)

	rc := c.newRequest(key, version, corr, hdr.clientID)
	s := newSlot(rc)
	if !c.enqueue(s) {
		return false, false
	}
	if check == versionRejected {
		// The reject func has answered, on this goroutine.
		c.rejectOld(entry, req, s)
		return true, reusesFrame(key)
	}
	c.handlers.Add(1)
	go c.run(entry, rc, req, s)
	if entry.concurrent {
		return true, false
	}
	select {
	case <-rc.released:
		return true, reusesFrame(key)
	case <-c.ctx.Done():
		return false, false
	}
}

// reusesFrame reports whether an API's handler is done with its request's
// bytes once it releases the connection, so the reader may reuse the frame
// for the next request. Only Produce is listed: its record batches alias the
// frame (kmsg does not copy byte fields) and are in the log file by the time
// it releases, after which it reads only the request's scalar fields.
// Handlers that keep request bytes past their release (JoinGroup and
// SyncGroup keep member metadata and assignments) must not be listed.
func reusesFrame(key int16) bool { return key == produceKey }

func (c *conn) newRequest(key, version int16, corr int32, clientID *string) *request {
	rc := &request{
		conn:          c.state,
		key:           key,
		version:       version,
		correlationID: corr,
		received:      time.Now(),
		released:      make(chan struct{}),
	}
	if clientID != nil {
		rc.clientID = *clientID
	}
	return rc
}

func (c *conn) enqueue(s *slot) bool {
	c.pending.Add(1)
	select {
	case c.queue <- s:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// rejectOld answers an advertised-but-refused version on the reader
// goroutine; reject functions only build an error response.
func (c *conn) rejectOld(e *apiEntry, req kmsg.Request, s *slot) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Interface("panic", r).Bytes("stack", debug.Stack()).Int16("key", e.key).Msg("panic in reject func")
			s.complete(nil, fmt.Errorf("reject panic: %v", r), ReasonHandlerPanic)
		}
	}()
	s.complete(e.reject(req), nil, 0)
}

// run is a handler goroutine. A panic here closes this connection only.
func (c *conn) run(e *apiEntry, rc *request, req kmsg.Request, s *slot) {
	rc.dequeued = time.Now()
	defer c.handlers.Done()
	defer rc.release()
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Interface("panic", r).Bytes("stack", debug.Stack()).
				Int16("key", rc.key).Int16("version", rc.version).Msg("panic in request handler")
			s.complete(nil, fmt.Errorf("handler panic: %v", r), ReasonHandlerPanic)
		}
	}()
	resp, err := e.handle(c.ctx, rc, req)
	if err != nil {
		s.complete(nil, err, ReasonHandlerError)
		return
	}
	rc.chargeRequestTime(c.ctx, req, resp) // request_percentage (quota.go)
	s.complete(resp, nil, 0)
}

// writeLoop writes completed slots in queue order. It returns the slot it
// held unwritten when the connection closed, if any, so serve can release it.
func (c *conn) writeLoop() (held *slot) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Interface("panic", r).Bytes("stack", debug.Stack()).Msg("panic in connection writer")
			c.fail(ReasonHandlerPanic, fmt.Errorf("writer panic: %v", r))
		}
	}()
	var buf []byte
	for {
		var s *slot
		select {
		case next, ok := <-c.queue:
			if !ok {
				return nil // the client is done and every answer is written
			}
			s = next
		case <-c.ctx.Done():
			return nil
		}
		select {
		case <-s.done:
		case <-c.ctx.Done():
			return s
		}
		if s.err != nil {
			c.completed(s, time.Time{})
			c.fail(s.reason, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(s.rc.key), s.rc.version, s.err))
			return nil
		}
		if s.resp == nil {
			c.completed(s, time.Time{})
			c.pending.Add(-1)
			continue // no response on the wire (Produce acks=0)
		}
		sendStart := time.Now()
		n, err := c.writeResponse(&buf, s)
		c.completed(s, sendStart)
		c.pending.Add(-1)
		c.lastActive.Store(time.Now().UnixNano())
		if fr, ok := s.resp.(*filesResponse); ok {
			fr.done()
		}
		if err != nil {
			var ce *connError
			if errors.As(err, &ce) {
				c.fail(ce.reason, ce.err)
			} else if c.ctx.Err() == nil {
				c.closeWith(err)
			}
			return nil
		}
		c.srv.metrics.ResponseSent(s.rc.key, s.resp.GetVersion(), n)
		if s.written != nil {
			close(s.written)
		}
		if cap(buf) > 1<<20 {
			buf = nil // do not keep one huge response's buffer per connection
		}
	}
}

// writeResponse frames and writes one response:
//
//	size int32 | correlation_id int32 | [tagged fields, header v1 only] | body
//
// The response header is v1 (flexible) exactly when the response is flexible,
// except ApiVersions, whose response header is always v0 so that a client
// can read it before it knows our versions (KIP-511).
func (c *conn) writeResponse(buf *[]byte, s *slot) (int64, error) {
	resp := s.resp
	if resp.Key() != s.rc.key {
		return 0, &connError{ReasonHandlerError, fmt.Errorf("handler for key %d answered with key %d", s.rc.key, resp.Key())}
	}
	fr, files := resp.(*filesResponse)
	switch {
	case files && fr.GetVersion() != s.rc.version:
		// Its parts are already encoded; a wrong version cannot be fixed.
		return 0, &connError{ReasonHandlerError, fmt.Errorf("handler for %s v%d encoded v%d", kmsg.NameForKey(s.rc.key), s.rc.version, fr.GetVersion())}
	case !files && !s.keepVersion:
		resp.SetVersion(s.rc.version)
	}
	b := append((*buf)[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(s.rc.correlationID))
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		b = append(b, 0) // no tagged fields in the header
	}
	if files {
		total := int64(len(b)-4) + fr.bodySize()
		if total > math.MaxInt32 {
			return 0, &connError{ReasonHandlerError, fmt.Errorf("response of %d bytes cannot be framed", total)}
		}
		binary.BigEndian.PutUint32(b, uint32(total))
		*buf = b
		return writeParts(c.nc, b, fr.parts)
	}
	b = resp.AppendTo(b)
	if len(b)-4 > math.MaxInt32 {
		return 0, &connError{ReasonHandlerError, fmt.Errorf("response of %d bytes cannot be framed", len(b)-4)}
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	*buf = b
	n, err := c.nc.Write(b)
	return int64(n), err
}
