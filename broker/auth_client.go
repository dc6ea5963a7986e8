package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"
)

// The client side of a secured inter-broker listener, for follower fetch:
// TLS with the listener's truststore (and its keystore as the client
// certificate, which mTLS listeners ask for), then SASL with
// sasl.mechanism.inter.broker.protocol and the username and password of
// the listener's JAAS config for that mechanism, as Kafka's brokers log in
// to each other.

// InterBrokerDialer returns the dial function follower fetch uses to reach
// other brokers' inter-broker listener, or nil when that listener is
// PLAINTEXT (a plain TCP dial).
func InterBrokerDialer(cfg *config.Config, dialTimeout time.Duration, log zerolog.Logger) (func(ctx context.Context, addr string) (net.Conn, error), error) {
	return listenerDialer(cfg.Security[cfg.InterBrokerListenerName], cfg.SASLMechanismInterBroker, "inter-broker", dialTimeout, log, true)
}

// ControllerDialer returns the dial function this node uses to reach the
// controller listeners of the others: Raft streams, controller RPCs and
// their forwarding. Like Kafka's, it uses the settings of the first of
// controller.listener.names (truststore, keystore for mTLS,
// ssl.endpoint.identification.algorithm) and logs in with
// sasl.mechanism.controller.protocol as the username and password of that
// listener's JAAS config for the mechanism. nil for PLAINTEXT. Its
// connections do not re-authenticate in place: Raft pipelines several
// requests on one stream, which reauthConn's exchange would cut into.
func ControllerDialer(cfg *config.Config, dialTimeout time.Duration, log zerolog.Logger) (func(ctx context.Context, addr string) (net.Conn, error), error) {
	l, ok := cfg.ControllerListener()
	if !ok {
		return nil, nil
	}
	return listenerDialer(cfg.Security[l.Name], cfg.SASLMechanismController, "controller", dialTimeout, log, false)
}

// listenerDialer dials a listener of sec's settings, logging in with mech
// when it is SASL; what names the listener's role in errors. The client
// certificate and truststore are reloaded when their files change
// (auth_reload.go). With reauth, a connection whose session has a lifetime
// re-authenticates in place (reauthConn).
func listenerDialer(sec *config.ListenerSecurity, mech, what string, dialTimeout time.Duration, log zerolog.Logger, reauth bool) (func(ctx context.Context, addr string) (net.Conn, error), error) {
	if sec == nil || !sec.TLS() && !sec.SASL() {
		return nil, nil
	}
	var tlsConfig func() *tls.Config
	if sec.TLS() {
		r, tc, err := newTLSReloader(tlsFiles(sec), func() (*tls.Config, error) { return clientTLSConfig(sec) },
			log.With().Str("listener", sec.Listener).Str("side", what+" client").Logger())
		if err != nil {
			return nil, fmt.Errorf("%s listener %s: %w", what, sec.Listener, err)
		}
		tlsConfig = func() *tls.Config { return tc }
		if r != nil {
			tlsConfig = r.current
		}
	}
	var login *saslLogin
	if sec.SASL() {
		e, err := parseJAAS(sec.JAAS[mech])
		if err != nil {
			return nil, fmt.Errorf("%s listener %s: %s JAAS config: %w", what, sec.Listener, mech, err)
		}
		login = &saslLogin{mechanism: mech, user: e.Options["username"], password: e.Options["password"]}
		if mech == "OAUTHBEARER" {
			if login.oauth, err = newOAuthLogin(e.Options); err != nil {
				return nil, fmt.Errorf("%s listener %s: OAUTHBEARER JAAS config: %w", what, sec.Listener, err)
			}
			login.user = login.oauth.principal
		} else if login.user == "" || login.password == "" {
			return nil, fmt.Errorf("%s listener %s: the %s JAAS config has no username and password for this node to log in with", what, sec.Listener, mech)
		}
	}
	return func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: dialTimeout}
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		conn := nc
		if tlsConfig != nil {
			c := tlsConfig().Clone()
			if host, _, err := net.SplitHostPort(addr); err == nil && c.ServerName == "" {
				c.ServerName = host
			}
			t := tls.Client(nc, c)
			hctx, cancel := context.WithTimeout(ctx, dialTimeout)
			err := t.HandshakeContext(hctx)
			cancel()
			if err != nil {
				nc.Close()
				return nil, fmt.Errorf("TLS: %w", err)
			}
			conn = t
		}
		if login != nil {
			life, err := login.run(ctx, conn, dialTimeout, true)
			if err != nil {
				conn.Close()
				return nil, fmt.Errorf("SASL %s as %s: %w", login.mechanism, login.user, err)
			}
			if reauth && life > 0 {
				rc := &reauthConn{Conn: conn, login: login, timeout: dialTimeout}
				rc.schedule(life)
				return rc, nil
			}
		}
		return conn, nil
	}, nil
}

// clientTLSConfig is the TLS client of a listener's settings. With
// ssl.endpoint.identification.algorithm empty the chain is still verified
// against the truststore, only the host name check is skipped, as Kafka
// does.
func clientTLSConfig(sec *config.ListenerSecurity) (*tls.Config, error) {
	tc := &tls.Config{}
	if sec.TruststoreLocation != "" || sec.TruststoreCertificates != "" {
		pool, err := loadTruststore(sec)
		if err != nil {
			return nil, fmt.Errorf("truststore: %w", err)
		}
		tc.RootCAs = pool
	}
	// A broker's TLS listener always has a keystore; a client
	// (ClientDialer) has one only for mTLS.
	if sec.KeystoreLocation != "" || sec.KeystoreCertificateChain != "" {
		cert, err := loadKeystore(sec)
		if err != nil {
			return nil, fmt.Errorf("keystore: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	var err error
	if tc.MinVersion, tc.MaxVersion, err = tlsVersions(sec.EnabledProtocols); err != nil {
		return nil, err
	}
	if tc.CipherSuites, err = cipherSuites(sec.CipherSuites, tc.MaxVersion); err != nil {
		return nil, err
	}
	if sec.EndpointIdentification == "" {
		roots := tc.RootCAs
		tc.InsecureSkipVerify = true // the chain is verified below, without the host name
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the broker sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return tc, nil
}

// saslLogin is a SASL client login: SaslHandshake v1, then the
// mechanism's tokens in SaslAuthenticate v2.
type saslLogin struct {
	mechanism, user, password string
	oauth                     *oauthLogin // OAUTHBEARER: the unsecured token's claims

	// scram is made on the first SCRAM login and kept: it caches the
	// salted password per salt and iteration count (safe for concurrent
	// use), so a redial does not derive it again.
	scramOnce sync.Once
	scram     *scram.Client
	scramErr  error
}

// run logs in on c and returns the session lifetime the broker gave (0:
// none). clearDeadline resets c's deadline afterwards.
func (l *saslLogin) run(ctx context.Context, c net.Conn, timeout time.Duration, clearDeadline bool) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.SetDeadline(deadline); err != nil {
		return 0, err
	}
	if clearDeadline {
		defer c.SetDeadline(time.Time{})
	}
	var life time.Duration
	err := l.exchange(c, &life)
	return life, err
}

func (l *saslLogin) exchange(c net.Conn, life *time.Duration) error {
	rt := &rawRoundTripper{c: c, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raftka-inter-broker"))}

	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, l.mechanism
	hresp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if err := rt.roundTrip(hs, hresp); err != nil {
		return err
	}
	if err := kerr.ErrorForCode(hresp.ErrorCode); err != nil {
		return fmt.Errorf("handshake: %w (the listener enables %v)", err, hresp.SupportedMechanisms)
	}
	step := func(in []byte) ([]byte, error) {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 2, in
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		if err := rt.roundTrip(req, resp); err != nil {
			return nil, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if resp.ErrorMessage != nil {
				return nil, fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
			}
			return nil, err
		}
		if resp.SessionLifetimeMillis > 0 {
			*life = time.Duration(resp.SessionLifetimeMillis) * time.Millisecond
		}
		return resp.SASLAuthBytes, nil
	}
	switch l.mechanism {
	case "PLAIN":
		_, err := step([]byte("\x00" + l.user + "\x00" + l.password))
		return err
	case "OAUTHBEARER":
		out, err := step(l.oauth.initial(time.Now()))
		if err != nil {
			return err
		}
		if len(out) != 0 {
			// The broker refused the token (RFC 7628's error status);
			// acknowledging it ends the exchange with the error.
			if _, err := step([]byte{0x01}); err != nil {
				return err
			}
			return fmt.Errorf("the broker refused the token: %s", out)
		}
		return nil
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		sc, err := l.scramClient()
		if err != nil {
			return err
		}
		conv := sc.NewConversation()
		msg, err := conv.Step("")
		if err != nil {
			return err
		}
		for !conv.Done() {
			in, err := step([]byte(msg))
			if err != nil {
				return err
			}
			if msg, err = conv.Step(string(in)); err != nil {
				return fmt.Errorf("the broker's SCRAM answer does not verify: %w", err)
			}
		}
		return nil
	}
	return fmt.Errorf("SASL mechanism %s has no client here", l.mechanism)
}

// scramClient is the login's SCRAM client, made once.
func (l *saslLogin) scramClient() (*scram.Client, error) {
	l.scramOnce.Do(func() {
		gen := scram.SHA256
		if l.mechanism == "SCRAM-SHA-512" {
			gen = scram.SHA512
		}
		l.scram, l.scramErr = gen.NewClient(l.user, l.password, "")
	})
	return l.scram, l.scramErr
}

// rawRoundTripper sends one request at a time on a connection and reads
// its response.
type rawRoundTripper struct {
	c    net.Conn
	fmtr *kmsg.RequestFormatter
	corr int32
	buf  []byte
}

func (r *rawRoundTripper) roundTrip(req kmsg.Request, resp kmsg.Response) error {
	r.corr++
	r.buf = r.fmtr.AppendRequest(r.buf[:0], req, r.corr)
	if _, err := r.c.Write(r.buf); err != nil {
		return err
	}
	var sz [4]byte
	if _, err := io.ReadFull(r.c, sz[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(sz[:])
	if n < 4 || n > maxSASLFrame {
		return fmt.Errorf("response frame of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.c, body); err != nil {
		return err
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != r.corr {
		return fmt.Errorf("response to correlation id %d, want %d", corr, r.corr)
	}
	body = body[4:]
	if resp.IsFlexible() {
		var err error
		if body, err = skipTags(body); err != nil {
			return err
		}
	}
	return resp.ReadFrom(body)
}

// ClientDialer is InterBrokerDialer for a Kafka client's settings (the
// CLI's --command-config): TLS with the truststore (and the keystore as
// client certificate when one is given, for mTLS), then SASL with
// sasl.mechanism as the username and password of sasl.jaas.config. nil
// for PLAINTEXT. Its connections do not re-authenticate: a client that
// keeps connections past a session lifetime uses NewClientLogin.
func ClientDialer(cs *config.ClientSecurity, dialTimeout time.Duration) (func(ctx context.Context, addr string) (net.Conn, error), error) {
	sec := cs.Listener
	sec.Listener = "CLIENT"
	return listenerDialer(&sec, cs.Mechanism, "client", dialTimeout, zerolog.Nop(), false)
}

// ClientLogin is a Kafka client's settings split for a client that runs
// the SASL exchange itself, as kgo does so that it can re-authenticate a
// pipelined connection in place (KIP-368) when the broker gives the
// session a lifetime: Dial opens the TCP and TLS connection (nil for
// SASL_PLAINTEXT and PLAINTEXT), SASL logs in (nil without SASL).
type ClientLogin struct {
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	SASL *ClientSASL
}

// NewClientLogin reads a client's settings into a ClientLogin.
func NewClientLogin(cs *config.ClientSecurity, dialTimeout time.Duration) (*ClientLogin, error) {
	sec := cs.Listener
	sec.Listener = "CLIENT"
	out := &ClientLogin{}
	if sec.SASL() {
		full, err := listenerDialer(&sec, cs.Mechanism, "client", dialTimeout, zerolog.Nop(), false)
		if err != nil || full == nil {
			return nil, err
		}
		e, err := parseJAAS(sec.JAAS[cs.Mechanism])
		if err != nil {
			return nil, err
		}
		l := &saslLogin{mechanism: cs.Mechanism, user: e.Options["username"], password: e.Options["password"]}
		if l.mechanism == "OAUTHBEARER" {
			if l.oauth, err = newOAuthLogin(e.Options); err != nil {
				return nil, err
			}
		}
		out.SASL = &ClientSASL{l: l}
		// The same settings without SASL: TLS only, or nothing.
		if sec.TLS() {
			sec.Protocol = "SSL"
		} else {
			sec.Protocol = "PLAINTEXT"
		}
	}
	d, err := listenerDialer(&sec, "", "client", dialTimeout, zerolog.Nop(), false)
	if err != nil {
		return nil, err
	}
	out.Dial = d
	return out, nil
}

// ClientSASL is one client login (PLAIN, SCRAM-SHA-256/512 or
// OAUTHBEARER) for a client that frames the exchange itself. It keeps
// the SCRAM salted password per salt and iteration count, so a
// re-authentication or redial does not run PBKDF2 again.
type ClientSASL struct{ l *saslLogin }

// Mechanism is the SASL mechanism's name.
func (s *ClientSASL) Mechanism() string { return s.l.mechanism }

// Start begins one authentication: the first message to send and the
// function that takes each server answer and returns whether the exchange
// is done and the next message.
func (s *ClientSASL) Start(now time.Time) ([]byte, func(challenge []byte) (bool, []byte, error), error) {
	l := s.l
	switch l.mechanism {
	case "PLAIN":
		return []byte("\x00" + l.user + "\x00" + l.password), func([]byte) (bool, []byte, error) { return true, nil, nil }, nil
	case "OAUTHBEARER":
		return l.oauth.initial(now), func(in []byte) (bool, []byte, error) {
			if len(in) != 0 {
				return false, nil, fmt.Errorf("the broker refused the token: %s", in)
			}
			return true, nil, nil
		}, nil
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		sc, err := l.scramClient()
		if err != nil {
			return nil, nil, err
		}
		conv := sc.NewConversation()
		first, err := conv.Step("")
		if err != nil {
			return nil, nil, err
		}
		return []byte(first), func(in []byte) (bool, []byte, error) {
			msg, err := conv.Step(string(in))
			if err != nil {
				return false, nil, fmt.Errorf("the broker's SCRAM answer does not verify: %w", err)
			}
			return conv.Done(), []byte(msg), nil
		}, nil
	}
	return nil, nil, fmt.Errorf("SASL mechanism %s has no client here", l.mechanism)
}

// reauthConn is an inter-broker connection whose SASL session has a
// lifetime: the first Write after reauthAt re-authenticates first. Its
// user sets deadlines before writing; they are remembered and put back
// after the exchange, which runs under its own.
type reauthConn struct {
	net.Conn
	login   *saslLogin
	timeout time.Duration

	mu       sync.Mutex
	reauthAt time.Time
	deadline time.Time // the user's last SetDeadline (read and write)
}

// schedule sets the next re-authentication at 85% of the session's
// lifetime, as Kafka's clients do (they pick 85-95%).
func (c *reauthConn) schedule(life time.Duration) {
	c.reauthAt = time.Now().Add(life * 85 / 100)
}

func (c *reauthConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *reauthConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	due := !c.reauthAt.IsZero() && !time.Now().Before(c.reauthAt)
	deadline := c.deadline
	c.mu.Unlock()
	if due {
		life, err := c.login.run(context.Background(), c.Conn, c.timeout, false)
		if rerr := c.Conn.SetDeadline(deadline); err == nil {
			err = rerr
		}
		if err != nil {
			return 0, fmt.Errorf("SASL re-authentication as %s: %w", c.login.user, err)
		}
		c.mu.Lock()
		if life > 0 {
			c.schedule(life)
		} else {
			c.reauthAt = time.Time{}
		}
		c.mu.Unlock()
	}
	return c.Conn.Write(b)
}
