package raftfsm

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// slowServer answers ApiVersions v0 after a pause.
type slowServer struct {
	ln net.Listener
	wg sync.WaitGroup
}

// countedConn is a client connection counted open until its first Close.
type countedConn struct {
	net.Conn
	once sync.Once
	open *atomic.Int32
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

func startSlowServer(t *testing.T, pause time.Duration) *slowServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &slowServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					var size [4]byte
					if _, err := io.ReadFull(r, size[:]); err != nil {
						return
					}
					body := make([]byte, binary.BigEndian.Uint32(size[:]))
					if _, err := io.ReadFull(r, body); err != nil {
						return
					}
					time.Sleep(pause)
					resp := kmsg.NewPtrApiVersionsResponse()
					out := binary.BigEndian.AppendUint32(nil, 0)
					out = append(out, body[4:8]...) // correlation id
					out = resp.AppendTo(out)
					binary.BigEndian.PutUint32(out, uint32(len(out)-4))
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

// Many round trips at once to one address open at most maxBusyPerAddr
// connections (plus the idle ones kept for reuse); the rest wait their
// turn and all succeed.
func TestConnPoolBoundsConnectionsPerAddress(t *testing.T) {
	srv := startSlowServer(t, 5*time.Millisecond)
	var open, most atomic.Int32
	p := newConnPool(func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := plainDial(ctx, addr)
		if err != nil {
			return nil, err
		}
		n := open.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		return &countedConn{Conn: c, open: &open}, nil
	})
	defer p.close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const calls = 1000
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 0
			if _, err := p.roundTrip(ctx, srv.ln.Addr().String(), "test", req); err != nil {
				failed.Add(1)
				t.Log(err)
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d round trips failed", n, calls)
	}
	if m := most.Load(); m > maxBusyPerAddr {
		t.Fatalf("%d connections open at once; want at most %d", m, maxBusyPerAddr)
	}
	t.Logf("%d round trips, at most %d connections open at once", calls, most.Load())
}
