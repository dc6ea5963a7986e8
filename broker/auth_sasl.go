package broker

import (
	"errors"

	"github.com/raftka/raftka/broker/config"
)

// anonymousPrincipal is Kafka's principal of an unauthenticated connection.
const anonymousPrincipal = "User:ANONYMOUS"

type saslServer struct{}

func (s *Server) newSASLServer(*config.ListenerSecurity) (*saslServer, error) {
	return nil, errors.New("SASL listeners are not served yet")
}

// authenticate runs SASL on a SASL listener; it reports whether the
// connection may go on to the request pipeline.
func (c *conn) authenticate() bool { return true }
