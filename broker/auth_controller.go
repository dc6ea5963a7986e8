package broker

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The server side of a secured controller listener. raftfsm owns the
// listener and routes each connection to Raft or to the controller RPCs by
// its first byte; before that byte, ControllerHandshake runs TLS and SASL
// on it as the listener's protocol asks, the same way for both, as Kafka's
// controller listener authenticates every connection before its first
// request. The SASL exchange is Kafka's (SaslHandshake v0-1, then the
// mechanism's tokens in SaslAuthenticate v0-2, or as bare frames after a
// v0 handshake); only ApiVersions may come first, once, as Kafka's
// SaslServerAuthenticator allows (so a client such as an admin tool with
// --bootstrap-controller learns the listener's APIs, which the listener's
// owner gives with WithControllerAPIVersions, and SaslHandshake and
// SaslAuthenticate, which the login serves), and no other request is
// served before the login ends. The principal that comes out is what
// raftfsm authorizes (CLUSTER_ACTION).

// ControllerOpt adjusts ControllerHandshake.
type ControllerOpt func(*controllerAuth)

// WithControllerAPIVersions has the SASL login answer an ApiVersions
// request sent before SaslHandshake with fn(version): the controller
// listener's APIs (raftfsm.APIVersionsResponse).
func WithControllerAPIVersions(fn func(version int16) *kmsg.ApiVersionsResponse) ControllerOpt {
	return func(a *controllerAuth) { a.apiVersions = fn }
}

// ControllerHandshake returns the handshake of the controller listener
// (raftfsm.Handshake), or nil when it is PLAINTEXT. SCRAM credentials come
// from scram at each login; failed and refused connections are logged and
// counted in m (nil: not counted).
func ControllerHandshake(cfg *config.Config, scram func(string, metadata.ScramMechanism) (metadata.ScramCredential, bool), m Metrics, log zerolog.Logger, opts ...ControllerOpt) (func(ctx context.Context, c net.Conn) (net.Conn, string, error), error) {
	l, ok := cfg.ControllerListener()
	if !ok {
		return nil, nil
	}
	sec := cfg.Security[l.Name]
	if sec == nil || !sec.TLS() && !sec.SASL() {
		return nil, nil
	}
	a := &controllerAuth{rules: sec.PrincipalRules, metrics: m,
		log: log.With().Str("listener", l.Name).Logger()}
	if sec.TLS() {
		tc, err := ServerTLSConfig(sec, log)
		if err != nil {
			return nil, fmt.Errorf("controller listener %s: %w", l.Name, err)
		}
		a.tls = tc
	}
	if sec.SASL() {
		ss, err := newSASLServer(sec, cfg.FailedAuthenticationDelay, scram)
		if err != nil {
			return nil, fmt.Errorf("controller listener %s: %w", l.Name, err)
		}
		a.sasl = ss
	}
	for _, o := range opts {
		o(a)
	}
	return a.handshake, nil
}

type controllerAuth struct {
	tls     *tls.Config
	sasl    *saslServer
	rules   []config.PrincipalRule
	metrics Metrics
	log     zerolog.Logger
	// apiVersions answers an ApiVersions sent before the SASL handshake
	// (nil: refused like any other request).
	apiVersions func(version int16) *kmsg.ApiVersionsResponse
}

func (a *controllerAuth) rejected(r Reason) {
	if a.metrics != nil {
		a.metrics.Rejected(r)
	}
}

// errControllerAuth is every failed handshake's error; the cause is in
// the log line written where it failed.
var errControllerAuth = errors.New("controller listener: connection refused during its TLS handshake or SASL login")

func (a *controllerAuth) handshake(ctx context.Context, raw net.Conn) (net.Conn, string, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Now()) })
	defer stop()
	log := a.log.With().Str("remote", fmt.Sprint(raw.RemoteAddr())).Logger()
	c, principal := raw, anonymousPrincipal
	if a.tls != nil {
		tc := tls.Server(raw, a.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			var rh tls.RecordHeaderError
			if errors.As(err, &rh) {
				a.rejected(ReasonNotTLS)
				log.Warn().Err(err).Msg("a client that does not speak TLS on the TLS controller listener (plaintext? set its protocol in listener.security.protocol.map on every node); closed")
			} else {
				a.rejected(ReasonTLSHandshake)
				log.Warn().Err(err).Msg("TLS handshake on the controller listener failed; closed")
			}
			return nil, "", errControllerAuth
		}
		c = tc
		if st := tc.ConnectionState(); len(st.PeerCertificates) > 0 {
			dn := st.PeerCertificates[0].Subject.String()
			name := dn
			if a.rules != nil {
				var ok bool
				if name, ok = config.MapPrincipal(a.rules, dn); !ok {
					a.rejected(ReasonTLSHandshake)
					log.Warn().Str("dn", dn).Msg("no ssl.principal.mapping.rules rule matches the certificate's DN; closed")
					return nil, "", errControllerAuth
				}
			}
			principal = "User:" + name
		}
	}
	if a.sasl != nil {
		user, err := a.login(c, log)
		if err != nil {
			return nil, "", errControllerAuth
		}
		principal = "User:" + user
	}
	_ = raw.SetDeadline(time.Time{})
	return c, principal, nil
}

// login runs the SASL exchange on c and returns the user; it has logged
// and counted a failure.
func (a *controllerAuth) login(c net.Conn, log zerolog.Logger) (string, error) {
	ss := a.sasl
	var (
		mech     saslMech
		mechName string
		rawV0    bool
		versions bool // ApiVersions answered
	)
	refuse := func(r Reason, err error) (string, error) {
		a.rejected(r)
		log.Warn().Err(err).Msg("SASL login on the controller listener refused; closed")
		return "", err
	}
	failed := func(err error) (string, error) {
		a.rejected(ReasonAuthFailed)
		ev := log.Warn().Err(err).Str("mechanism", mechName)
		var ae *authError
		if errors.As(err, &ae) {
			ev = ev.AnErr("cause", ae.cause)
		}
		ev.Msg("SASL authentication on the controller listener failed; closed")
		if ss.delay > 0 {
			time.Sleep(ss.delay) // connection.failed.authentication.delay.ms
		}
		return "", err
	}
	for {
		frame, err := readSASLFrame(c)
		if err != nil {
			if errors.Is(err, io.EOF) {
				a.rejected(ReasonSASLState)
				log.Warn().Msg("connection closed before its SASL login on the controller listener ended")
				return "", err
			}
			return refuse(ReasonSASLState, fmt.Errorf("before SASL authentication: %w", err))
		}
		if rawV0 {
			out, done, err := mech.step(frame)
			if err != nil {
				return failed(err) // Kafka closes a failed v0 exchange without an answer
			}
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], uint32(len(out)))
			if _, err := c.Write(append(hdr[:], out...)); err != nil {
				return "", err
			}
			if done {
				return mech.user(), nil
			}
			continue
		}
		key, version, _, ok := peekHeader(frame)
		if !ok {
			return refuse(ReasonBadHeader, errShortHeader)
		}
		switch {
		case key == apiVersionsKey && mech == nil && !versions && a.apiVersions != nil:
			resp := a.apiVersions(version)
			// After UNSUPPORTED_VERSION the client retries with a version
			// from the answer, as Kafka's SaslServerAuthenticator allows.
			versions = resp.ErrorCode == 0
			if resp.ErrorCode == 0 {
				// What this exchange serves next (clients look for
				// them before they log in).
				for _, k := range [][3]int16{{saslHandshakeKey, 0, 1}, {saslAuthenticateKey, 0, 2}} {
					ak := kmsg.NewApiVersionsResponseApiKey()
					ak.ApiKey, ak.MinVersion, ak.MaxVersion = k[0], k[1], k[2]
					resp.ApiKeys = append(resp.ApiKeys, ak)
				}
				slices.SortFunc(resp.ApiKeys, func(x, y kmsg.ApiVersionsResponseApiKey) int { return int(x.ApiKey) - int(y.ApiKey) })
			}
			corr := int32(0)
			if version == resp.Version { // a version it serves decodes
				req := kmsg.NewPtrApiVersionsRequest()
				hdr, ok := decodeSASLRequest(frame, req, version)
				if !ok {
					return refuse(ReasonUndecodable, errors.New("ApiVersions does not decode"))
				}
				corr = hdr.correlationID
			} else if _, _, c, ok := peekHeader(frame); ok {
				corr = c // UNSUPPORTED_VERSION in a v0 answer
			}
			if err := writeSASLResponse(c, corr, resp); err != nil {
				return "", err
			}
		case key == saslHandshakeKey && mech == nil && version >= 0 && version <= 1:
			req := kmsg.NewPtrSASLHandshakeRequest()
			hdr, ok := decodeSASLRequest(frame, req, version)
			if !ok {
				return refuse(ReasonUndecodable, errors.New("SaslHandshake does not decode"))
			}
			resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
			resp.SetVersion(version)
			resp.SupportedMechanisms = slices.Clone(ss.mechanisms)
			name := strings.ToUpper(req.Mechanism)
			if !slices.Contains(ss.mechanisms, name) {
				resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
				_ = writeSASLResponse(c, hdr.correlationID, resp)
				return refuse(ReasonAuthFailed, fmt.Errorf("SASL mechanism %s is not enabled (the listener enables %v)", req.Mechanism, ss.mechanisms))
			}
			if err := writeSASLResponse(c, hdr.correlationID, resp); err != nil {
				return "", err
			}
			mech, mechName, rawV0 = ss.start(name), name, version == 0
		case key == saslAuthenticateKey && mech != nil && version >= 0 && version <= 2:
			req := kmsg.NewPtrSASLAuthenticateRequest()
			hdr, ok := decodeSASLRequest(frame, req, version)
			if !ok {
				return refuse(ReasonUndecodable, errors.New("SaslAuthenticate does not decode"))
			}
			resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
			resp.SetVersion(version)
			out, done, err := mech.step(req.SASLAuthBytes)
			if err != nil {
				resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
				resp.ErrorMessage = kmsg.StringPtr(err.Error())
				_ = writeSASLResponse(c, hdr.correlationID, resp)
				return failed(err)
			}
			resp.SASLAuthBytes = out
			if err := writeSASLResponse(c, hdr.correlationID, resp); err != nil {
				return "", err
			}
			if done {
				return mech.user(), nil
			}
		default:
			return refuse(ReasonSASLState, fmt.Errorf("unexpected %s v%d request during SASL authentication", kmsg.NameForKey(key), version))
		}
	}
}

// readSASLFrame reads one size-prefixed frame, unbuffered (nothing past
// the exchange is consumed) and bounded by maxSASLFrame.
func readSASLFrame(r io.Reader) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 || n > maxSASLFrame {
		return nil, fmt.Errorf("frame of %d bytes before authentication (a Raft stream or a request without SASL on a SASL listener?)", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

func decodeSASLRequest(frame []byte, req kmsg.Request, version int16) (requestHeader, bool) {
	req.SetVersion(version)
	hdr, body, err := parseRequestHeader(frame, req.IsFlexible())
	if err != nil {
		return hdr, false
	}
	return hdr, req.ReadFrom(body) == nil
}

// writeSASLResponse frames resp (header v0, or v1 when flexible; always
// v0 for ApiVersions) and writes it.
func writeSASLResponse(w io.Writer, corr int32, resp kmsg.Response) error {
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err := w.Write(b)
	return err
}
