package raftfsm

import (
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// failingListener fails its first n Accepts with EMFILE, as a node out of
// descriptors does, then accepts for real.
type failingListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// The controller listener keeps accepting after errors that pass (here
// EMFILE): it used to stop on any error but a timeout, and the node's
// Raft and controller RPCs then timed out until it was restarted.
func TestMuxAcceptsAfterEMFILE(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &failingListener{Listener: inner}
	ln.fails.Store(3)
	served := make(chan struct{}, 1)
	m := newMux(ln, func(c net.Conn, _ string) {
		served <- struct{}{}
	}, nil, nil, zerolog.Nop())
	defer m.close()
	c, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{0}); err != nil { // not RaftPreface: an RPC connection
		t.Fatal(err)
	}
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection served after three EMFILE accepts")
	}
	if ln.fails.Load() >= 0 {
		t.Fatalf("accept retried only %d times", 3-ln.fails.Load())
	}
}
