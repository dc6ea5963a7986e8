package broker

import (
	"context"
	"github.com/rs/zerolog"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// nodeConfig parses a one-node config with extra lines.
func nodeConfig(t testing.TB, extra string) *config.Config {
	t.Helper()
	cfg, _, err := config.Parse([]byte(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:9093
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
controller.listener.names=CONTROLLER
log.dirs=x
`+extra), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// rawLogin runs SaslHandshake v1 and SaslAuthenticate v2 with a PLAIN
// token and returns the authenticate answer.
func rawLogin(r *rawClient, corr int32, mech string, token []byte) (*kmsg.SASLHandshakeResponse, *kmsg.SASLAuthenticateResponse) {
	r.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech
	r.send(hs, corr)
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	hresp.Version = 1
	r.readResponse(hresp)
	if hresp.ErrorCode != 0 {
		return hresp, nil
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 2, token
	r.send(au, corr+1)
	aresp := kmsg.NewPtrSASLAuthenticateResponse()
	aresp.Version = 2
	r.readResponse(aresp)
	return hresp, aresp
}

func rawMetadata(r *rawClient, corr int32) {
	r.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	r.send(req, corr)
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 12
	if got := r.readResponse(resp); got != corr {
		r.t.Fatalf("answer to %d, want %d", got, corr)
	}
}

// SaslAuthenticate v1+ carries connections.max.reauth.ms as the session
// lifetime; re-authenticating on the open connection restarts it, and a
// request after the end without re-authenticating closes the connection.
func TestSessionLifetimeAndReauthentication(t *testing.T) {
	cfg := nodeConfig(t, "connections.max.reauth.ms=1500\nconnection.failed.authentication.delay.ms=0\n")
	s, addr := startSecured(t, saslListener("PLAIN", "OAUTHBEARER"), Options{Config: cfg})

	r := dialRaw(t, addr)
	_, a := rawLogin(r, 1, "PLAIN", []byte("\x00alice\x00alice-secret"))
	if a.ErrorCode != 0 || a.SessionLifetimeMillis != 1500 {
		t.Fatalf("login: code %d lifetime %d, want 0 and 1500", a.ErrorCode, a.SessionLifetimeMillis)
	}
	rawMetadata(r, 3)
	// Re-authentication restarts the lifetime; another within a second of
	// it is not taken, and the request table answers ILLEGAL_SASL_STATE.
	_, a = rawLogin(r, 4, "PLAIN", []byte("\x00alice\x00alice-secret"))
	if a.ErrorCode != 0 || a.SessionLifetimeMillis != 1500 {
		t.Fatalf("re-authentication: code %d lifetime %d", a.ErrorCode, a.SessionLifetimeMillis)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	r.send(hs, 6)
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	hresp.Version = 1
	r.readResponse(hresp)
	if hresp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("second re-authentication within a second: code %d, want ILLEGAL_SASL_STATE", hresp.ErrorCode)
	}
	rawMetadata(r, 7)

	// Past the lifetime, the next request closes the connection.
	time.Sleep(1600 * time.Millisecond)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	r.send(req, 8)
	r.expectClosed()
	waitFor(t, "session_expired counted", func() bool { return s.Counters().RejectedFor(ReasonSessionExpired) == 1 })
}

// Kafka's refusals during re-authentication: another mechanism, another
// principal, another request in the middle; each answered (or not) and
// closed.
func TestReauthenticationRefusals(t *testing.T) {
	cfg := nodeConfig(t, "connections.max.reauth.ms=60000\nconnection.failed.authentication.delay.ms=0\n")
	tok := unsecuredJWS(`{"alg":"none"}`, `{"sub":"alice","exp":`+secs(time.Now().Add(time.Hour).Unix())+`}`)
	_, addr := startSecured(t, saslListener("PLAIN", "OAUTHBEARER"), Options{Config: cfg})
	login := func() *rawClient {
		r := dialRaw(t, addr)
		if _, a := rawLogin(r, 1, "PLAIN", []byte("\x00alice\x00alice-secret")); a == nil || a.ErrorCode != 0 {
			t.Fatal("first login failed")
		}
		return r
	}

	r := login()
	h, _ := rawLogin(r, 3, "OAUTHBEARER", []byte("n,,\x01auth=Bearer "+tok+"\x01\x01"))
	if h.ErrorCode != kerr.UnsupportedSaslMechanism.Code {
		t.Fatalf("other mechanism: code %d, want UNSUPPORTED_SASL_MECHANISM", h.ErrorCode)
	}
	r.expectClosed()

	r = login()
	if _, a := rawLogin(r, 3, "PLAIN", []byte("\x00admin\x00admin-secret")); a.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("other principal: code %d, want SASL_AUTHENTICATION_FAILED", a.ErrorCode)
	}
	r.expectClosed()

	r = login()
	if _, a := rawLogin(r, 3, "PLAIN", []byte("\x00alice\x00wrong")); a.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("wrong password: code %d", a.ErrorCode)
	}
	r.expectClosed()

	r = login()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	r.send(hs, 3)
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	hresp.Version = 1
	r.readResponse(hresp)
	r.send(kmsg.NewPtrMetadataRequest(), 4)
	r.expectClosed()
}

// Without connections.max.reauth.ms a PLAIN session never ends and a
// SaslHandshake after the login is ILLEGAL_SASL_STATE; an OAUTHBEARER
// session still ends at the token's exp.
func TestSessionLifetimeWithoutReauthConfig(t *testing.T) {
	_, addr := startSecured(t, saslListener("PLAIN", "OAUTHBEARER"), Options{Config: nodeConfig(t, "")})
	r := dialRaw(t, addr)
	if _, a := rawLogin(r, 1, "PLAIN", []byte("\x00alice\x00alice-secret")); a.ErrorCode != 0 || a.SessionLifetimeMillis != 0 {
		t.Fatalf("PLAIN: code %d lifetime %d, want 0 and 0", a.ErrorCode, a.SessionLifetimeMillis)
	}
	if h, _ := rawLogin(r, 3, "PLAIN", nil); h.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake after login: code %d, want ILLEGAL_SASL_STATE", h.ErrorCode)
	}
	rawMetadata(r, 4)

	r = dialRaw(t, addr)
	exp := time.Now().Add(time.Hour)
	tok := unsecuredJWS(`{"alg":"none"}`, `{"sub":"alice","exp":`+secs(exp.Unix())+`}`)
	_, a := rawLogin(r, 1, "OAUTHBEARER", []byte("n,,\x01auth=Bearer "+tok+"\x01\x01"))
	if want := time.Until(exp).Milliseconds(); a.ErrorCode != 0 || a.SessionLifetimeMillis <= 0 || a.SessionLifetimeMillis > want+1000 {
		t.Fatalf("OAUTHBEARER: code %d lifetime %d, want about %d", a.ErrorCode, a.SessionLifetimeMillis, want)
	}
}

// franz-go re-authenticates on its open connection before the lifetime
// ends (KIP-368), so a client that keeps working past several lifetimes
// does so on one connection without an error.
func TestReauthenticationWithFranzGo(t *testing.T) {
	cfg := nodeConfig(t, "connections.max.reauth.ms=2500\n")
	tok := unsecuredJWS(`{"alg":"none"}`, `{"sub":"alice","exp":`+secs(time.Now().Add(time.Hour).Unix())+`}`)
	for _, m := range []struct {
		name string
		opt  kgo.Opt
	}{
		{"PLAIN", kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())},
		{"OAUTHBEARER", kgo.SASL(oauth.Auth{Token: tok}.AsMechanism())},
	} {
		t.Run(m.name, func(t *testing.T) {
			s, addr := startSecured(t, saslListener("PLAIN", "OAUTHBEARER"), Options{Config: cfg})
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), m.opt)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			// Until the session was renewed twice on the first connection,
			// bounded by a count and by the test's deadline.
			deadline := time.Now().Add(testDeadline)
			for i := 0; s.Counters().RequestsFor(saslHandshakeKey, 1) < 3; i++ {
				if i > 400 || time.Now().After(deadline) {
					t.Fatalf("%d handshakes after %d requests", s.Counters().RequestsFor(saslHandshakeKey, 1), i)
				}
				ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
				_, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
				cancel()
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if n := s.Counters().Snapshot().ConnsTotal; n != 1 {
				t.Fatalf("%d connections, want the one, re-authenticated", n)
			}
			if n := s.Counters().RejectedFor(ReasonSessionExpired); n != 0 {
				t.Fatalf("%d sessions expired", n)
			}
		})
	}
}

// The brokers' own connections (follower fetch, InterBrokerClient)
// re-authenticate in place before their session ends, so a connection kept
// past several lifetimes is never closed for it.
func TestInterBrokerConnectionReauthenticates(t *testing.T) {
	cfg := nodeConfig(t, "connections.max.reauth.ms=1500\n")
	s, addr := startSecured(t, saslListener("PLAIN"), Options{Config: cfg})
	sec := saslListener("PLAIN")
	sec.Listener = "CLIENT"
	dial, err := InterBrokerDialer(&config.Config{
		InterBrokerListenerName:  "CLIENT",
		Security:                 map[string]*config.ListenerSecurity{"CLIENT": sec},
		SASLMechanismInterBroker: "PLAIN",
	}, testDeadline, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	c, err := dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rt := &rawRoundTripper{c: c, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID("peer"))}
	// Bounded: until two re-authentications, at most 100 requests.
	for i := 0; s.Counters().RequestsFor(saslHandshakeKey, 1) < 3; i++ {
		if i >= 100 {
			t.Fatalf("%d handshakes after %d requests", s.Counters().RequestsFor(saslHandshakeKey, 1), i)
		}
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		if err := rt.roundTrip(req, req.ResponseKind()); err != nil {
			t.Fatalf("request %d on the re-authenticating connection: %v", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := s.Counters().RejectedFor(ReasonSessionExpired); n != 0 {
		t.Fatalf("%d sessions expired", n)
	}
	if n := s.Counters().Snapshot().ConnsTotal; n != 1 {
		t.Fatalf("%d connections, want the one", n)
	}
}
