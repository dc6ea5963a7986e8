package broker

import (
	"context"
	"crypto/hmac"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"
)

// SASL on SASL_PLAINTEXT and SASL_SSL listeners, as Kafka's
// SaslServerAuthenticator runs it: before any other request the client
// sends ApiVersions (optional), SaslHandshake naming a mechanism, then the
// mechanism's tokens, in SaslAuthenticate requests (handshake v1) or as
// bare size-prefixed frames (handshake v0, Kafka's legacy form). Any other
// request first closes the connection. A failed authentication is answered
// SASL_AUTHENTICATION_FAILED (v0 frames: just closed) and the connection is
// closed after connection.failed.authentication.delay.ms.
//
// Session lifetimes and re-authentication (KIP-368) are in auth_reauth.go.
//
// Mechanisms: PLAIN against the user_<name> options of the listener's
// listener.name.<l>.plain.sasl.jaas.config, and SCRAM-SHA-256/512 (RFC
// 5802, by github.com/xdg-go/scram) against the credentials in the
// metadata image (UserScramCredential records), read at each login so a
// change through AlterUserScramCredentials applies to the next connection;
// OAUTHBEARER with unsecured JWS tokens (auth_oauth.go).

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// anonymousPrincipal is Kafka's principal of an unauthenticated connection.
const anonymousPrincipal = "User:ANONYMOUS"

// maxSASLFrame bounds a frame before authentication, Kafka's
// sasl.server.max.receive.size default: an unauthenticated client cannot
// make the broker allocate socket.request.max.bytes.
const maxSASLFrame = 512 << 10

// defaultFailedAuthDelay is Kafka's connection.failed.authentication.delay.ms.
const defaultFailedAuthDelay = 100 * time.Millisecond

type saslServer struct {
	mechanisms []string          // enabled, upper-case, in configured order
	plainUsers map[string]string // PLAIN: user -> password
	delay      time.Duration
	scram      func(user string, m metadata.ScramMechanism) (metadata.ScramCredential, bool)
	oauth      *oauthValidator
	// reauth is connections.max.reauth.ms (KIP-368); 0 is off.
	reauth time.Duration
}

func (s *Server) newSASLServer(sec *config.ListenerSecurity) (*saslServer, error) {
	delay := defaultFailedAuthDelay
	var reauth time.Duration
	if s.config != nil {
		delay = s.config.FailedAuthenticationDelay
		reauth = s.config.ConnectionsMaxReauth
	}
	ss, err := newSASLServer(sec, delay, s.scramCredential)
	if err != nil {
		return nil, err
	}
	ss.reauth = reauth
	return ss, nil
}

// newSASLServer is a listener's SASL server: PLAIN users from its JAAS
// config, SCRAM credentials from scram, failed logins held for delay.
func newSASLServer(sec *config.ListenerSecurity, delay time.Duration, scram func(string, metadata.ScramMechanism) (metadata.ScramCredential, bool)) (*saslServer, error) {
	ss := &saslServer{mechanisms: slices.Clone(sec.EnabledMechanisms), delay: delay}
	for _, m := range ss.mechanisms {
		switch m {
		case "PLAIN":
			users, err := plainUsers(sec.JAAS["PLAIN"])
			if err != nil {
				return nil, fmt.Errorf("listener.name.%s.plain.sasl.jaas.config: %w", strings.ToLower(sec.Listener), err)
			}
			ss.plainUsers = users
		case "SCRAM-SHA-256", "SCRAM-SHA-512":
			ss.scram = scram
		case "OAUTHBEARER":
			v, err := newOAuthValidator(sec.JAAS["OAUTHBEARER"])
			if err != nil {
				return nil, fmt.Errorf("listener.name.%s.oauthbearer.sasl.jaas.config: %w", strings.ToLower(sec.Listener), err)
			}
			ss.oauth = v
		default:
			return nil, fmt.Errorf("SASL mechanism %s is not supported", m)
		}
	}
	if len(ss.mechanisms) == 0 {
		return nil, errors.New("no SASL mechanism enabled")
	}
	return ss, nil
}

// scramCredential reads a credential from the current metadata image.
func (s *Server) scramCredential(user string, m metadata.ScramMechanism) (metadata.ScramCredential, bool) {
	if s.deps.Metadata == nil {
		return metadata.ScramCredential{}, false
	}
	img, _ := s.deps.Metadata.Current()
	return img.ScramCredential(user, m)
}

// saslMech is one mechanism's server side of one exchange.
type saslMech interface {
	// step takes the client's next token and returns the server's; done
	// means authenticated. An error means the authentication failed.
	step(token []byte) (out []byte, done bool, err error)
	user() string
}

// authError is a failed authentication whose cause goes to the broker's
// log but not to the client.
type authError struct{ public, cause error }

func (e *authError) Error() string { return e.public.Error() }

// errAuthFailed is the message a failed authentication is answered with;
// it names no reason a password guesser could use.
func errAuthFailed(mech string) error {
	return fmt.Errorf("authentication failed during authentication due to invalid credentials with SASL mechanism %s", mech)
}

func (ss *saslServer) start(mech string) saslMech {
	switch mech {
	case "PLAIN":
		return &plainMech{users: ss.plainUsers}
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		m, _ := metadata.ScramMechanismByName(mech)
		return newScramMech(mech, m, ss.scram)
	case "OAUTHBEARER":
		return &oauthMech{v: ss.oauth}
	}
	return nil
}

type plainMech struct {
	users map[string]string
	name  string
}

func (p *plainMech) user() string { return p.name }

func (p *plainMech) step(token []byte) ([]byte, bool, error) {
	_, user, password, err := parsePlain(token)
	if err != nil {
		return nil, false, err
	}
	want, ok := p.users[user]
	// Compare even for an unknown user, so the answer takes as long.
	if !ok {
		want = "\x00" + password
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(password)) != 1 || !ok {
		return nil, false, errors.New("authentication failed: invalid username or password")
	}
	p.name = user
	return []byte{}, true, nil
}

type scramMech struct {
	name   string
	mech   metadata.ScramMechanism
	lookup func(string, metadata.ScramMechanism) (metadata.ScramCredential, bool)
	conv   *scram.ServerConversation

	// What the librdkafka quirk path (finalQuirk) needs from the first
	// round: the client-first message, the server-first message and the
	// nonces in it.
	clientFirst, serverFirst string
	clientNonce, nonce       string
	authzUser                string
	done                     bool
}

func newScramMech(name string, m metadata.ScramMechanism, lookup func(string, metadata.ScramMechanism) (metadata.ScramCredential, bool)) *scramMech {
	gen := scram.SHA256
	if m == metadata.ScramSHA512 {
		gen = scram.SHA512
	}
	srv, err := gen.NewServer(func(user string) (scram.StoredCredentials, error) {
		c, ok := lookup(user, m)
		if !ok {
			return scram.StoredCredentials{}, errors.New("unknown user")
		}
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: int(c.Iterations)},
			StoredKey:  c.StoredKey, ServerKey: c.ServerKey,
		}, nil
	})
	if err != nil {
		// NewServer fails only for a nil lookup; ours is not.
		panic(err)
	}
	return &scramMech{name: name, mech: m, lookup: lookup, conv: srv.NewConversation()}
}

func (s *scramMech) user() string {
	if s.authzUser != "" {
		return s.authzUser
	}
	return s.conv.Username()
}

func (s *scramMech) step(token []byte) ([]byte, bool, error) {
	if s.clientFirst != "" && !s.done {
		if out, ok, err := s.finalQuirk(string(token)); ok {
			return out, err == nil, err
		}
	}
	if s.clientFirst == "" && strings.Contains(string(token), ",tokenauth=true") {
		// Kafka's extension for delegation tokens, which raftka does not
		// issue: the name is a token id, not a user.
		return nil, false, &authError{public: errAuthFailed(s.name), cause: errors.New("delegation token authentication (tokenauth=true) is not supported")}
	}
	out, err := s.conv.Step(string(token))
	if err != nil {
		return nil, false, &authError{public: errAuthFailed(s.name), cause: err}
	}
	if !s.conv.Done() {
		s.clientFirst, s.serverFirst = string(token), out
		s.nonce, _ = scramAttr(out, 'r')
		if i := strings.Index(s.clientFirst, ",r="); i >= 0 {
			s.clientNonce, _, _ = strings.Cut(s.clientFirst[i+3:], ",")
		}
		return []byte(out), false, nil
	}
	s.done = true
	if !s.conv.Valid() {
		return nil, false, errAuthFailed(s.name)
	}
	if az := s.conv.AuthzID(); az != "" && az != s.conv.Username() {
		return nil, false, errors.New("authentication failed: client requested an authorization id that is different from username")
	}
	return []byte(out), true, nil
}

// finalQuirk verifies a client-final message whose nonce is the client
// nonce followed by the whole server nonce: librdkafka before 2.6.1 (Debian
// 12 ships 2.0.2) prepends its nonce a second time (librdkafka#4895). RFC
// 5802 wants the server nonce alone; Kafka 3.8.1 to 3.9 accepted the
// librdkafka form (a suffix check), Kafka 4 refuses it. raftka accepts
// exactly these two forms: the server's random part is still bound, so a
// replayed final message still fails. ok is false for any other message,
// which goes to the library's strict path.
func (s *scramMech) finalQuirk(final string) (out []byte, ok bool, err error) {
	r, found := scramAttr(final, 'r')
	if !found || s.clientNonce == "" || r != s.clientNonce+s.nonce {
		return nil, false, nil
	}
	s.done = true
	fail := func(cause error) ([]byte, bool, error) {
		return nil, true, &authError{public: errAuthFailed(s.name), cause: cause}
	}
	pi := strings.LastIndex(final, ",p=")
	if pi < 0 {
		return fail(errors.New("client-final message without a proof"))
	}
	proof, err := base64.StdEncoding.DecodeString(final[pi+3:])
	if err != nil {
		return fail(fmt.Errorf("client proof: %w", err))
	}
	// The gs2 header: "n,," or "y,," or with an authzid "n,a=name,".
	gs2End := strings.Index(s.clientFirst, ",n=")
	if gs2End < 0 || !strings.HasPrefix(s.clientFirst, "n,") && !strings.HasPrefix(s.clientFirst, "y,") {
		return fail(errors.New("client-first message without a gs2 header"))
	}
	gs2 := s.clientFirst[:gs2End+1]
	if cb, _ := scramAttr(final, 'c'); cb != base64.StdEncoding.EncodeToString([]byte(gs2)) {
		return fail(errors.New("channel binding does not match the gs2 header"))
	}
	cred, known := s.lookup(s.conv.Username(), s.mech)
	if !known {
		return fail(errors.New("unknown user"))
	}
	h := s.mech.Hash()
	authMsg := s.clientFirst[gs2End+1:] + "," + s.serverFirst + "," + final[:pi]
	mac := hmac.New(h, cred.StoredKey)
	mac.Write([]byte(authMsg))
	sig := mac.Sum(nil)
	if len(proof) != len(sig) {
		return fail(errors.New("client proof of the wrong length"))
	}
	for i := range sig {
		sig[i] ^= proof[i] // now the client key
	}
	stored := h()
	stored.Write(sig)
	if subtle.ConstantTimeCompare(stored.Sum(nil), cred.StoredKey) != 1 {
		return fail(errors.New("challenge proof invalid"))
	}
	if az, _ := scramAttr(gs2, 'a'); az != "" && az != s.conv.Username() {
		return nil, true, errors.New("authentication failed: client requested an authorization id that is different from username")
	}
	s.authzUser = s.conv.Username()
	smac := hmac.New(h, cred.ServerKey)
	smac.Write([]byte(authMsg))
	return []byte("v=" + base64.StdEncoding.EncodeToString(smac.Sum(nil))), true, nil
}

// scramAttr returns the value of attribute k ("k=value") of a
// comma-separated SCRAM message.
func scramAttr(msg string, k byte) (string, bool) {
	for _, f := range strings.Split(msg, ",") {
		if len(f) >= 2 && f[0] == k && f[1] == '=' {
			return f[2:], true
		}
	}
	return "", false
}

// authenticate runs the SASL exchange on a SASL listener before the request
// pipeline starts; it reports whether the connection may go on.
func (c *conn) authenticate() bool {
	if c.auth == nil || c.auth.sasl == nil {
		return true
	}
	ss := c.auth.sasl
	var (
		mech     saslMech
		mechName string
		rawV0    bool // handshake v0: tokens come as bare frames
		buf      []byte
	)
	// Unbuffered (nothing past the exchange is consumed here), and under
	// connections.max.idle.ms like every read of the connection.
	r := c.idleReader()
	for c.ctx.Err() == nil {
		fb, err := readFrame(r, maxSASLFrame)
		if err != nil {
			var ce *connError
			if errors.As(err, &ce) {
				c.fail(ce.reason, fmt.Errorf("before SASL authentication: %w", ce.err))
			} else {
				c.closeWith(err)
			}
			return false
		}
		frame := fb.b
		if rawV0 {
			out, done, err := mech.step(frame)
			if err != nil {
				// Kafka answers a failed v0 exchange by closing.
				c.authFailed(mechName, err)
				return false
			}
			if done {
				c.startSession(mech, mechName, time.Now())
			}
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], uint32(len(out)))
			if _, err := c.nc.Write(append(hdr[:], out...)); err != nil {
				c.closeWith(err)
				return false
			}
			if done {
				return c.authenticated(mech, mechName)
			}
			continue
		}
		key, version, corr, ok := peekHeader(frame)
		if !ok {
			c.fail(ReasonBadHeader, errShortHeader)
			return false
		}
		switch {
		case key == apiVersionsKey && mech == nil:
			if !c.answerAPIVersions(&buf, frame, key, version, corr) {
				return false
			}
		case key == saslHandshakeKey && mech == nil:
			req, hdr, ok := c.decodeAuthRequest(frame, key, version)
			if !ok {
				return false
			}
			hs := req.(*kmsg.SASLHandshakeRequest)
			resp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
			resp.SupportedMechanisms = slices.Clone(ss.mechanisms)
			name := strings.ToUpper(hs.Mechanism)
			if !slices.Contains(ss.mechanisms, name) {
				resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
				c.writeAuthResponse(&buf, hdr, key, version, resp)
				c.srv.metrics.Rejected(ReasonAuthFailed)
				c.log.Warn().Str("mechanism", hs.Mechanism).Strs("enabled", ss.mechanisms).Msg("client asked for a SASL mechanism this listener does not enable; closed")
				c.closeOnce.Do(func() { c.closeErr = errSASLClosed })
				return false
			}
			if !c.writeAuthResponse(&buf, hdr, key, version, resp) {
				return false
			}
			mech, mechName, rawV0 = ss.start(name), name, version == 0
		case key == saslAuthenticateKey && mech != nil:
			req, hdr, ok := c.decodeAuthRequest(frame, key, version)
			if !ok {
				return false
			}
			ar := req.(*kmsg.SASLAuthenticateRequest)
			resp := ar.ResponseKind().(*kmsg.SASLAuthenticateResponse)
			out, done, err := mech.step(ar.SASLAuthBytes)
			if err != nil {
				resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
				resp.ErrorMessage = kmsg.StringPtr(err.Error())
				c.writeAuthResponse(&buf, hdr, key, version, resp)
				c.authFailed(mechName, err)
				return false
			}
			resp.SASLAuthBytes = out
			if done {
				resp.SessionLifetimeMillis = c.startSession(mech, mechName, time.Now())
			}
			if !c.writeAuthResponse(&buf, hdr, key, version, resp) {
				return false
			}
			if done {
				return c.authenticated(mech, mechName)
			}
		default:
			// Kafka: "Unexpected Kafka request of type X during SASL
			// handshake", and the connection is closed.
			c.fail(ReasonSASLState, fmt.Errorf("unexpected %s request during SASL authentication", kmsg.NameForKey(key)))
			return false
		}
	}
	return false
}

// errSASLClosed marks a connection the SASL exchange closed and logged.
var errSASLClosed = errors.New("closed during SASL authentication")

func (c *conn) authenticated(mech saslMech, mechName string) bool {
	c.state.principal = "User:" + mech.user()
	c.log = c.log.With().Str("principal", c.state.principal).Logger()
	c.log.Debug().Str("mechanism", mechName).Msg("SASL authentication succeeded")
	return true
}

// authFailed counts and logs a failed login, then holds the connection open
// for connection.failed.authentication.delay.ms before it closes, as Kafka
// does, to slow down password guessing.
func (c *conn) authFailed(mech string, err error) {
	c.srv.metrics.Rejected(ReasonAuthFailed)
	ev := c.log.Warn().Err(err).Str("mechanism", mech)
	var ae *authError
	if errors.As(err, &ae) {
		ev = ev.AnErr("cause", ae.cause)
	}
	ev.Msg("SASL authentication failed")
	c.closeOnce.Do(func() { c.closeErr = errSASLClosed })
	if d := c.auth.sasl.delay; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.ctx.Done():
		}
	}
}

// decodeAuthRequest decodes a SaslHandshake or SaslAuthenticate request;
// a version we do not serve or a body that does not decode closes the
// connection.
func (c *conn) decodeAuthRequest(frame []byte, key, version int16) (kmsg.Request, requestHeader, bool) {
	entry := c.srv.table.lookup(key)
	if entry == nil || entry.check(version) != versionOK {
		c.fail(ReasonUnsupportedVersion, fmt.Errorf("%s v%d not served", kmsg.NameForKey(key), version))
		return nil, requestHeader{}, false
	}
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	hdr, body, err := parseRequestHeader(frame, req.IsFlexible())
	if err != nil {
		c.fail(ReasonBadHeader, err)
		return nil, requestHeader{}, false
	}
	if err := req.ReadFrom(body); err != nil {
		c.fail(ReasonUndecodable, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(key), version, err))
		return nil, requestHeader{}, false
	}
	c.srv.metrics.RequestReceived(key, version, len(frame)+4)
	return req, hdr, true
}

// writeAuthResponse writes a response during authentication, when nothing
// else is in flight on the connection.
func (c *conn) writeAuthResponse(buf *[]byte, hdr requestHeader, key, version int16, resp kmsg.Response) bool {
	s := newSlot(c.newRequest(key, version, hdr.correlationID, hdr.clientID))
	s.resp = resp
	sendStart := time.Now()
	n, err := c.writeResponse(buf, s)
	c.completed(s, sendStart)
	if err != nil {
		c.closeWith(err)
		return false
	}
	c.srv.metrics.ResponseSent(key, resp.GetVersion(), n)
	return true
}

// answerAPIVersions answers ApiVersions before authentication, through the
// same handler (and the same KIP-511 reply to an unknown version) as after.
func (c *conn) answerAPIVersions(buf *[]byte, frame []byte, key, version int16, corr int32) bool {
	entry := c.srv.table.lookup(key)
	if entry == nil {
		c.fail(ReasonUnknownKey, errors.New("ApiVersions not served"))
		return false
	}
	if entry.check(version) == versionUnsupported {
		c.srv.metrics.RequestReceived(key, version, len(frame)+4)
		s := newSlot(c.newRequest(key, version, corr, nil))
		s.keepVersion = true
		s.resp = unsupportedAPIVersionsResponse(c.srv.table)
		sendStart := time.Now()
		n, err := c.writeResponse(buf, s)
		c.completed(s, sendStart)
		if err != nil {
			c.closeWith(err)
			return false
		}
		c.srv.metrics.ResponseSent(key, 0, n)
		return true
	}
	req, hdr, ok := c.decodeAuthRequest(frame, key, version)
	if !ok {
		return false
	}
	rc := c.newRequest(key, version, corr, hdr.clientID)
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	resp, err := entry.handle(ctx, rc, req)
	rc.release()
	if err != nil {
		c.requestDone(key, requestTimes(rc, time.Time{}, time.Time{}, time.Now()), nil)
		c.fail(ReasonHandlerError, err)
		return false
	}
	return c.writeAuthResponse(buf, hdr, key, version, resp)
}
