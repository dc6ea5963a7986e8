package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/raftka/raftka/broker/config"
)

// listenerAuth is what a secured listener does to a connection before its
// first request is dispatched: the TLS handshake (SSL, SASL_SSL) and SASL
// authentication (SASL_PLAINTEXT, SASL_SSL). Both run on the connection's
// reader goroutine before the pipeline starts, so the request pipeline in
// conn.go never sees an unauthenticated request.
type listenerAuth struct {
	protocol string
	tls      *tls.Config // nil without TLS
	sasl     *saslServer // nil without SASL
	// principalRules maps a client certificate's DN to a principal name;
	// nil is Kafka's DEFAULT (the DN itself).
	principalRules []config.PrincipalRule
}

// tlsHandshakeTimeout bounds a TLS handshake, so a client that connects and
// says nothing cannot hold a connection slot.
const tlsHandshakeTimeout = 10 * time.Second

func (s *Server) newListenerAuth(sec *config.ListenerSecurity) (*listenerAuth, error) {
	if sec == nil || sec.Protocol == "" || sec.Protocol == "PLAINTEXT" {
		return nil, nil
	}
	a := &listenerAuth{protocol: sec.Protocol, principalRules: sec.PrincipalRules}
	if sec.TLS() {
		tc, err := ServerTLSConfig(sec, s.log)
		if err != nil {
			return nil, err
		}
		a.tls = tc
	}
	if sec.SASL() {
		ss, err := s.newSASLServer(sec)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", sec.Listener, err)
		}
		a.sasl = ss
	}
	return a, nil
}

// startTLS runs the server side of the TLS handshake on a TLS listener and
// replaces c.nc with the TLS connection. A client that does not speak TLS
// (a plaintext Kafka client sends a size-prefixed request, never a TLS
// record) is told apart from one that fails the handshake, in the log and
// in the metric, because the fix differs: client configuration versus
// certificates.
func (c *conn) startTLS() bool {
	if c.auth == nil || c.auth.tls == nil {
		return true
	}
	tc := tls.Server(c.nc, c.auth.tls)
	ctx, cancel := context.WithTimeout(c.ctx, tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.nc.Close()
		var rh tls.RecordHeaderError
		if errors.Is(err, io.EOF) {
			// Connected and went away before a byte: a TCP health check,
			// or the controller's probe of a suspected broker (raftfsm
			// liveness.go); nothing failed.
			c.log.Debug().Msg("connection closed before its TLS handshake")
		} else if errors.As(err, &rh) {
			c.srv.metrics.Rejected(ReasonNotTLS)
			c.log.Warn().Err(err).Msg("client does not speak TLS on a TLS listener (a plaintext client? set security.protocol=SSL or SASL_SSL); closed")
		} else if c.ctx.Err() == nil {
			c.srv.metrics.Rejected(ReasonTLSHandshake)
			c.log.Warn().Err(err).Msg("TLS handshake failed; closed")
		}
		c.closeOnce.Do(func() { c.closeErr = errTLSClosed })
		return false
	}
	c.nc = tc
	st := tc.ConnectionState()
	if len(st.PeerCertificates) > 0 {
		// Kafka's principal of an SSL connection with a client certificate
		// is its subject DN in RFC 2253 form through
		// ssl.principal.mapping.rules (DefaultKafkaPrincipalBuilder); SASL
		// replaces it with the user name.
		c.state.tlsPeer = st.PeerCertificates[0].Subject.String()
		name := c.state.tlsPeer
		if c.auth.principalRules != nil {
			var ok bool
			if name, ok = config.MapPrincipal(c.auth.principalRules, c.state.tlsPeer); !ok {
				c.srv.metrics.Rejected(ReasonTLSHandshake)
				c.log.Warn().Str("dn", c.state.tlsPeer).Msg("no ssl.principal.mapping.rules rule matches the client certificate's DN; closed")
				_ = tc.Close()
				c.closeOnce.Do(func() { c.closeErr = errTLSClosed })
				return false
			}
		}
		c.state.principal = "User:" + name
	}
	return true
}

// errTLSClosed marks a connection startTLS already logged.
var errTLSClosed = errors.New("closed during the TLS handshake")
