package broker

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testControllerAuth(t testing.TB) *controllerAuth {
	t.Helper()
	img := scramImage(t)
	ss, err := newSASLServer(saslListener("PLAIN", "SCRAM-SHA-512"), 0, func(u string, m metadata.ScramMechanism) (metadata.ScramCredential, bool) {
		return img.ScramCredential(u, m)
	})
	if err != nil {
		t.Fatal(err)
	}
	return &controllerAuth{sasl: ss, log: zerolog.Nop()}
}

// The controller listener's SASL login (the server side of a
// SASL_PLAINTEXT controller listener) against raftka's own client login:
// the principal that comes out, and that nothing past the exchange is
// consumed (the next byte, Raft's preface, is still there to route on).
func TestControllerHandshakeLogin(t *testing.T) {
	a := testControllerAuth(t)
	for _, tc := range []struct {
		mech, user, password string
		ok                   bool
	}{
		{"PLAIN", "alice", "alice-secret", true},
		{"PLAIN", "alice", "wrong", false},
		{"PLAIN", "mallory", "alice-secret", false},
		{"SCRAM-SHA-512", "alice", "alice-pw", true},
		{"SCRAM-SHA-512", "bob", "bob-pw", true},
		{"SCRAM-SHA-512", "bob", "alice-pw", false},
		{"SCRAM-SHA-256", "alice", "alice-pw", false}, // not enabled on this listener
	} {
		t.Run(tc.mech+"/"+tc.user+"/"+tc.password, func(t *testing.T) {
			srv, cl := net.Pipe()
			defer srv.Close()
			defer cl.Close()
			clientErr := make(chan error, 1)
			go func() {
				l := &saslLogin{mechanism: tc.mech, user: tc.user, password: tc.password}
				_, err := l.run(context.Background(), cl, 5*time.Second, true)
				if err == nil {
					_, err = cl.Write([]byte{0xFF})
				}
				clientErr <- err
				if err != nil {
					cl.Close()
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, principal, err := a.handshake(ctx, srv)
			if err != nil {
				srv.Close() // as the mux does
				cerr := <-clientErr
				if tc.ok {
					t.Fatalf("login refused: server %v, client %v", err, cerr)
				}
				if cerr == nil {
					t.Fatal("the client was told it logged in")
				}
				return
			}
			if !tc.ok {
				t.Fatalf("login accepted as %s", principal)
			}
			if principal != "User:"+tc.user {
				t.Fatalf("principal %q, want User:%s", principal, tc.user)
			}
			var b [1]byte
			if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != 0xFF {
				t.Fatalf("the byte after the exchange: %x, %v", b, err)
			}
			if cerr := <-clientErr; cerr != nil {
				t.Fatalf("client: %v", cerr)
			}
		})
	}
}

// What the login refuses before it authenticates: a Raft stream, a
// controller RPC, a request the exchange does not allow, garbage.
func TestControllerHandshakeRefuses(t *testing.T) {
	a := testControllerAuth(t)
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.SetVersion(hb.MaxVersion())
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, []byte("\x00alice\x00alice-secret")
	for name, in := range map[string][]byte{
		"raft preface":                  {0xFF, 1, 2, 3, 4, 5},
		"heartbeat first":               encodeRequest(hb, 1),
		"authenticate before handshake": encodeRequest(auth, 1),
		"huge frame":                    {0x00, 0x7f, 0xff, 0xff},
		"closed at once":                nil,
	} {
		t.Run(name, func(t *testing.T) {
			mc := &memConn{in: bytes.NewReader(in)}
			if _, _, err := a.handshake(context.Background(), mc); err == nil {
				t.Fatal("handshake accepted")
			}
			if out := mc.out.Bytes(); len(out) > 0 {
				t.Fatalf("answered %d bytes", len(out))
			}
		})
	}
}

// A handshake v0 exchange: the PLAIN token as a bare frame, answered by a
// bare (empty) frame.
func TestControllerHandshakeV0(t *testing.T) {
	a := testControllerAuth(t)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, "PLAIN"
	tok := "\x00alice\x00alice-secret"
	in := append(encodeRequest(hs, 1), binary.BigEndian.AppendUint32(nil, uint32(len(tok)))...)
	in = append(in, tok...)
	mc := &memConn{in: bytes.NewReader(in)}
	_, principal, err := a.handshake(context.Background(), mc)
	if err != nil || principal != "User:alice" {
		t.Fatalf("v0 login: %q, %v", principal, err)
	}
	if out := mc.out.Bytes(); !bytes.HasSuffix(out, []byte{0, 0, 0, 0}) {
		t.Fatalf("answer does not end in an empty v0 token frame: %x", out)
	}
}

// Any bytes before authentication on the controller listener end the
// handshake, accepted or refused, never a panic or a hang.
func FuzzControllerHandshake(f *testing.F) {
	hs := func(v int16, mech string) []byte {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Version, r.Mechanism = v, mech
		return encodeRequest(r, 1)
	}
	au := func(v int16, tok string) []byte {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.Version, r.SASLAuthBytes = v, []byte(tok)
		return encodeRequest(r, 2)
	}
	f.Add(append(hs(1, "PLAIN"), au(2, "\x00alice\x00alice-secret")...))
	f.Add(append(hs(1, "SCRAM-SHA-512"), au(1, "n,,n=alice,r=abc")...))
	f.Add(append(hs(0, "PLAIN"), 0, 0, 0, 3, 'x', 'y', 'z'))
	f.Add(hs(1, "GSSAPI"))
	f.Add([]byte{0xFF})
	a := testControllerAuth(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, p, err := a.handshake(context.Background(), &memConn{in: bytes.NewReader(data)})
			if err == nil && !strings.HasPrefix(p, "User:") {
				t.Errorf("accepted with principal %q", p)
			}
		}()
		select {
		case <-done:
		case <-time.After(testDeadline):
			t.Fatal("handshake neither accepted nor refused")
		}
	})
}

// An SSL controller listener with mTLS: a node dials with its keystore as
// client certificate (ControllerDialer, the host name checked), and the
// principal is the certificate's DN through ssl.principal.mapping.rules,
// as Kafka's; a peer without a certificate is refused.
func TestControllerHandshakeMTLS(t *testing.T) {
	set := testCerts(t)
	text := `process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:9093
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL
controller.listener.names=CONTROLLER
log.dirs=x
listener.name.controller.ssl.keystore.location=` + set.Files.ServerPEM + `
listener.name.controller.ssl.truststore.location=` + set.Files.CAPEM + `
listener.name.controller.ssl.client.auth=required
listener.name.controller.ssl.principal.mapping.rules=RULE:^CN=([^,]*).*$/$1/U,DEFAULT
`
	cfg, _, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := ControllerHandshake(cfg, nil, nil, zerolog.Nop())
	if err != nil || hs == nil {
		t.Fatalf("handshake: %v", err)
	}
	dial, err := ControllerDialer(cfg, 5*time.Second, zerolog.Nop())
	if err != nil || dial == nil {
		t.Fatalf("dialer: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		principal string
		err       error
	}
	results := make(chan result, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, p, err := hs(ctx, c)
				results <- result{p, err}
			}()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dial(ctx, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if r := <-results; r.err != nil || r.principal != "User:LOCALHOST" {
		t.Fatalf("node's principal %q, %v; want User:LOCALHOST", r.principal, r.err)
	}
	// Without a client certificate the server refuses the handshake.
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(nc, &tls.Config{RootCAs: set.Pool(), ServerName: "127.0.0.1"})
	_ = tc.HandshakeContext(ctx)
	_, _ = tc.Read(make([]byte, 1)) // TLS 1.3: the refusal arrives after the client's handshake
	tc.Close()
	if r := <-results; r.err == nil {
		t.Fatalf("accepted a peer without a certificate as %q", r.principal)
	}
}

// The cost of one new connection to a SASL_SSL controller listener: TCP,
// the TLS handshake (ECDSA P-256) and a SCRAM-SHA-512 login of 4096
// iterations, both sides in this process. Raft and the controller client
// pool their connections, so this is paid on (re)connects only.
func BenchmarkControllerHandshakeSASLSSL(b *testing.B) {
	set := testCerts(b)
	img := scramImage(b)
	text := `process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:9093
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL
controller.listener.names=CONTROLLER
log.dirs=x
ssl.keystore.location=` + set.Files.ServerPEM + `
ssl.truststore.location=` + set.Files.CAPEM + `
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.controller.protocol=SCRAM-SHA-512
listener.name.controller.scram-sha-512.sasl.jaas.config=x required username="alice" password="alice-pw";
`
	cfg, _, err := config.Parse([]byte(text), nil)
	if err != nil {
		b.Fatal(err)
	}
	hs, err := ControllerHandshake(cfg, img.ScramCredential, nil, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	dial, err := ControllerDialer(cfg, 5*time.Second, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if sc, _, err := hs(ctx, c); err == nil {
					_, _ = sc.Read(make([]byte, 1)) // until the client closes
				}
			}()
		}
	}()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		c, err := dial(ctx, ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// ApiVersions before the SASL handshake, as Kafka clients send it: with
// the listener's list (WithControllerAPIVersions) it is answered once, in
// a v0-header frame, then the login goes on (after UNSUPPORTED_VERSION
// the client may retry); a second one, or one while no list was given, is
// refused like any request before the login.
func TestControllerHandshakeAPIVersionsFirst(t *testing.T) {
	list := func(v int16) *kmsg.ApiVersionsResponse {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(v)
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey, ak.MaxVersion = 62, 4 // BrokerRegistration
		resp.ApiKeys = append(resp.ApiKeys, ak)
		if v > 3 {
			resp.SetVersion(0)
			resp.ErrorCode = 35
		}
		return resp
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version, av.ClientSoftwareName, av.ClientSoftwareVersion = 3, "kafka-admin", "4.1"
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, "PLAIN"
	tok := "\x00alice\x00alice-secret"
	login := append(encodeRequest(hs, 2), binary.BigEndian.AppendUint32(nil, uint32(len(tok)))...)
	login = append(login, tok...)

	a := testControllerAuth(t)
	WithControllerAPIVersions(list)(a)
	for _, v := range []int16{3, 7} {
		av.Version = v
		mc := &memConn{in: bytes.NewReader(append(encodeRequest(av, 1), login...))}
		_, principal, err := a.handshake(context.Background(), mc)
		if err != nil || principal != "User:alice" {
			t.Fatalf("ApiVersions v%d, then the login: %q, %v", v, principal, err)
		}
		out := mc.out.Bytes()
		size := int(binary.BigEndian.Uint32(out))
		if len(out) < 4+size || binary.BigEndian.Uint32(out[4:]) != 1 {
			t.Fatalf("v%d: no ApiVersions answer with correlation id 1 first: %x", v, out)
		}
		resp, want := kmsg.NewPtrApiVersionsResponse(), int16(0)
		resp.SetVersion(v)
		if v > 3 {
			resp.SetVersion(0)
			want = 35 // UNSUPPORTED_VERSION
		}
		if err := resp.ReadFrom(out[8 : 4+size]); err != nil {
			t.Fatalf("v%d: ApiVersions answer: %v", v, err)
		}
		var keys []int16
		for _, k := range resp.ApiKeys {
			keys = append(keys, k.ApiKey)
		}
		// The listener's list, and what the login serves.
		if want := []int16{17, 36, 62}; v > 3 && !slices.Equal(keys, []int16{62}) || v <= 3 && !slices.Equal(keys, want) {
			t.Fatalf("v%d: ApiVersions lists %v", v, keys)
		}
		if resp.ErrorCode != want {
			t.Fatalf("v%d: error code %d, want %d", v, resp.ErrorCode, want)
		}
	}
	// A version it does not serve, then one it does (the client's retry):
	// both answered, then the login.
	av.Version = 7
	retry := encodeRequest(av, 1)
	av.Version = 3
	retry = append(retry, encodeRequest(av, 2)...)
	if _, p, err := a.handshake(context.Background(), &memConn{in: bytes.NewReader(append(retry, login...))}); err != nil || p != "User:alice" {
		t.Fatalf("ApiVersions retried with a served version, then the login: %q, %v", p, err)
	}
	twice := append(encodeRequest(av, 1), encodeRequest(av, 2)...)
	if _, _, err := a.handshake(context.Background(), &memConn{in: bytes.NewReader(append(twice, login...))}); err == nil {
		t.Fatal("a second ApiVersions before the login was accepted")
	}
	if _, _, err := testControllerAuth(t).handshake(context.Background(), &memConn{in: bytes.NewReader(append(encodeRequest(av, 1), login...))}); err == nil {
		t.Fatal("ApiVersions accepted by a handshake without the listener's list")
	}
}
