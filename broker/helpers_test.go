package broker

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testDeadline bounds every wait in these tests; it is a liveness bound, not
// a timing assertion.
const testDeadline = 20 * time.Second

// startServer serves table on a loopback listener until the test ends.
func startServer(t testing.TB, table *apiTable, opts Options) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Listeners = []Listener{{Name: "CLIENT", Listener: ln}}
	opts.Logger = testLogger(t)
	s, err := newServer(opts, table)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return s, ln.Addr().String()
}

// testLogger writes the server's log into the test's output.
func testLogger(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// testTable is the default table with test-only entries added or put in
// place of the real ones.
func testTable(t testing.TB, extra ...apiEntry) *apiTable {
	t.Helper()
	tb := defaultAPIs.clone()
	for _, e := range extra {
		delete(tb.entries, e.key)
		if err := tb.add(e); err != nil {
			t.Fatal(err)
		}
	}
	return tb
}

// rawClient speaks the protocol byte by byte, to check framing exactly.
type rawClient struct {
	t testing.TB
	c net.Conn
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testDeadline)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(testDeadline))
	t.Cleanup(func() { _ = c.Close() })
	return &rawClient{t: t, c: c}
}

func encodeRequest(req kmsg.Request, corr int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test")).AppendRequest(nil, req, corr)
}

func (r *rawClient) write(b []byte) {
	r.t.Helper()
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawClient) send(req kmsg.Request, corr int32) {
	r.t.Helper()
	r.write(encodeRequest(req, corr))
}

// readFrame returns the correlation id and what follows it.
func (r *rawClient) readFrame() (int32, []byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r.c, sz[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(sz[:])
	if n < 4 || n > 1<<26 {
		return 0, nil, errors.New("bad response size")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.c, b); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:], nil
}

// readResponse reads one response into resp (at resp's version), skipping
// the header tags when the header is flexible.
func (r *rawClient) readResponse(resp kmsg.Response) int32 {
	r.t.Helper()
	corr, body, err := r.readFrame()
	if err != nil {
		r.t.Fatalf("reading response: %v", err)
	}
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		if body, err = skipTags(body); err != nil {
			r.t.Fatalf("response header tags: %v", err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		r.t.Fatalf("decoding %T v%d: %v", resp, resp.GetVersion(), err)
	}
	return corr
}

// expectClosed waits for the server to close the connection.
func (r *rawClient) expectClosed() {
	r.t.Helper()
	var buf [512]byte
	for {
		_, err := r.c.Read(buf[:])
		if err == nil {
			continue // drain anything answered before the close
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			r.t.Fatal("connection still open at the deadline")
		}
		return
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
