package broker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL session lifetimes and re-authentication (KIP-368), as Kafka's
// SaslServerAuthenticator and KafkaChannel run them.
//
// A SASL session has a lifetime when connections.max.reauth.ms is set or
// the credential expires (an OAUTHBEARER token's exp): the smaller of the
// two. The final SaslAuthenticate answer (v1+) carries it as
// session_lifetime_ms; without either it is 0 and the session never ends.
//
// A request that arrives after the session's end closes the connection
// unanswered (Kafka's "Disconnecting expired channel", counted as
// session_expired). Before that, and at most once a second, the client may
// re-authenticate on the open connection: SaslHandshake v1 naming the
// mechanism it first used, then SaslAuthenticate. Both are answered on the
// reader goroutine in request order (clients send them with nothing in
// flight; franz-go drains first); any other request during the exchange
// closes the connection, as does a different mechanism
// (UNSUPPORTED_SASL_MECHANISM) or a different principal
// (SASL_AUTHENTICATION_FAILED), or a failed login, after its answer and
// connection.failed.authentication.delay.ms. On success the session's
// lifetime starts again. A SaslHandshake on a connection whose session has
// no lifetime, or within a second of the last re-authentication, goes to
// the request table, which answers ILLEGAL_SASL_STATE as Kafka does.

// minReauthInterval is Kafka's MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS.
const minReauthInterval = time.Second

// saslSession is a SASL connection's session, owned by the reader
// goroutine.
type saslSession struct {
	mechanism string
	// expiry is when the session ends; zero means never.
	expiry time.Time
	// lastReauth is when the last re-authentication began.
	lastReauth time.Time
	// exchange is the mechanism of a re-authentication under way.
	exchange saslMech
}

// credentialExpirer is a mechanism whose credential expires (OAUTHBEARER).
type credentialExpirer interface {
	credentialExpiry() time.Time
}

func (o *oauthMech) credentialExpiry() time.Time { return o.tok.expiry }

// sessionLifetime is the session's lifetime after a successful exchange at
// now, as Kafka computes it; ok is false when the session never ends.
func (ss *saslServer) sessionLifetime(mech saslMech, now time.Time) (time.Duration, bool) {
	var life time.Duration
	ok := false
	if ss.reauth > 0 {
		life, ok = ss.reauth, true
	}
	if ce, has := mech.(credentialExpirer); has {
		d := max(ce.credentialExpiry().Sub(now), 0)
		if !ok || d < life {
			life = d
		}
		ok = true
	}
	return life, ok
}

// startSession records a successful (re-)authentication's lifetime and
// returns it in milliseconds for session_lifetime_ms.
func (c *conn) startSession(mech saslMech, mechName string, now time.Time) int64 {
	c.session.mechanism = mechName
	life, ok := c.auth.sasl.sessionLifetime(mech, now)
	if !ok {
		c.session.expiry = time.Time{}
		return 0
	}
	c.session.expiry = now.Add(life)
	return life.Milliseconds()
}

// errSessionExpired marks a connection closed for an expired session.
var errSessionExpired = errors.New("SASL session expired without re-authentication")

// sessionFrame handles a frame on an authenticated SASL connection before
// dispatch: the session's end and re-authentication. handled means the
// frame was taken; ok false means the connection must close.
func (c *conn) sessionFrame(frame []byte, key, version int16) (handled, ok bool) {
	if c.auth == nil || c.auth.sasl == nil {
		return false, true
	}
	s := &c.session
	if s.exchange != nil {
		if key != saslAuthenticateKey {
			c.fail(ReasonSASLState, fmt.Errorf("unexpected %s request during SASL re-authentication", kmsg.NameForKey(key)))
			return true, false
		}
		return true, c.reauthStep(frame, key, version)
	}
	now := time.Now()
	if key == saslHandshakeKey && !s.expiry.IsZero() && (s.lastReauth.IsZero() || now.Sub(s.lastReauth) >= minReauthInterval) {
		return true, c.reauthBegin(frame, key, version, now)
	}
	if !s.expiry.IsZero() && !now.Before(s.expiry) {
		c.srv.metrics.Rejected(ReasonSessionExpired)
		c.log.Info().Time("expired", s.expiry).Str("request", kmsg.NameForKey(key)).
			Msg("SASL session expired and the client did not re-authenticate (connections.max.reauth.ms or the token's exp); closed")
		c.closeOnce.Do(func() { c.closeErr = errSessionExpired })
		c.cancel()
		return true, false
	}
	return false, true
}

// answerNow queues an answer made on the reader goroutine.
func (c *conn) answerNow(hdr requestHeader, key, version int16, resp kmsg.Response) (*slot, bool) {
	sl := newSlot(c.newRequest(key, version, hdr.correlationID, hdr.clientID))
	sl.written = make(chan struct{})
	sl.complete(resp, nil, 0)
	return sl, c.enqueue(sl)
}

// closeAfter waits until a queued answer is written, then holds the
// connection connection.failed.authentication.delay.ms as a failed login
// does, and reports that the connection must close.
func (c *conn) closeAfter(sl *slot, mech string, err error) bool {
	select {
	case <-sl.written:
	case <-c.ctx.Done():
		return false
	}
	c.authFailed(mech, err)
	return false
}

func (c *conn) reauthBegin(frame []byte, key, version int16, now time.Time) bool {
	req, hdr, ok := c.decodeAuthRequest(frame, key, version)
	if !ok {
		return false
	}
	hs := req.(*kmsg.SASLHandshakeRequest)
	resp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
	ss := c.auth.sasl
	resp.SupportedMechanisms = append([]string(nil), ss.mechanisms...)
	if version == 0 {
		// v0 sends the tokens as bare frames, which KIP-368 does not use.
		c.fail(ReasonSASLState, errors.New("re-authentication with SaslHandshake v0"))
		return false
	}
	name := strings.ToUpper(hs.Mechanism)
	if name != c.session.mechanism {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		sl, ok := c.answerNow(hdr, key, version, resp)
		if !ok {
			return false
		}
		return c.closeAfter(sl, name, fmt.Errorf("SASL mechanism %q requested by the client is not supported for re-authentication of mechanism %s", hs.Mechanism, c.session.mechanism))
	}
	c.session.lastReauth = now
	c.session.exchange = ss.start(name)
	_, ok = c.answerNow(hdr, key, version, resp)
	return ok
}

func (c *conn) reauthStep(frame []byte, key, version int16) bool {
	req, hdr, ok := c.decodeAuthRequest(frame, key, version)
	if !ok {
		return false
	}
	ar := req.(*kmsg.SASLAuthenticateRequest)
	resp := ar.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	mech, name := c.session.exchange, c.session.mechanism
	out, done, err := mech.step(ar.SASLAuthBytes)
	if err == nil && done && "User:"+mech.user() != c.state.principal {
		err = fmt.Errorf("cannot change principals during re-authentication from %s to User:%s", c.state.principal, mech.user())
	}
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		sl, ok := c.answerNow(hdr, key, version, resp)
		if !ok {
			return false
		}
		return c.closeAfter(sl, name, err)
	}
	resp.SASLAuthBytes = out
	if done {
		c.session.exchange = nil
		resp.SessionLifetimeMillis = c.startSession(mech, name, time.Now())
		c.log.Debug().Str("mechanism", name).Int64("session_lifetime_ms", resp.SessionLifetimeMillis).Msg("SASL re-authentication succeeded")
	}
	_, ok = c.answerNow(hdr, key, version, resp)
	return ok
}
