package invariants

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ClientSecurity is how this package's clients reach a cluster whose client
// listeners are secured: Opts are added to every franz-go client (TLS and
// SASL, kgo.DialTLSConfig and kgo.SASL), and Dial opens the connections of
// RawRequest, already through TLS and logged in. The zero value is
// PLAINTEXT.
type ClientSecurity struct {
	Opts []kgo.Opt
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

var clientSecurity atomic.Pointer[ClientSecurity]

// UseClientSecurity makes every client, workload and raw request of this
// package connect with s until t ends. Tests that use it must not run in
// parallel with others of this package's users: test/e2e keeps them
// sequential (its "Parallel tests" comment in main_test.go), as a parallel
// test's harness would otherwise dial its own cluster with s.
func UseClientSecurity(t testing.TB, s ClientSecurity) {
	clientSecurity.Store(&s)
	t.Cleanup(func() { clientSecurity.Store(nil) })
}

// newClient is kgo.NewClient with the client security in force first.
func newClient(opts ...kgo.Opt) (*kgo.Client, error) {
	if s := clientSecurity.Load(); s != nil {
		opts = append(append([]kgo.Opt(nil), s.Opts...), opts...)
	}
	return kgo.NewClient(opts...)
}

// dialRaw opens a raw request's connection.
func dialRaw(ctx context.Context, addr string) (net.Conn, error) {
	if s := clientSecurity.Load(); s != nil && s.Dial != nil {
		return s.Dial(ctx, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}
