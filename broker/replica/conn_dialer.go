package replica

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConnDialer is TCPDialer with the connection made by dial, which returns it
// ready for requests: on a secured inter-broker listener dial runs the TLS
// handshake and SASL authentication (the broker package builds it from the
// listener's settings) before the fetcher's first request.
func ConnDialer(clientID string, dial func(ctx context.Context, addr string) (net.Conn, error)) Dialer {
	return func(ctx context.Context, id int32, ep metadata.Endpoint) (LeaderEndpoint, error) {
		addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
		c, err := dial(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("replica: dial broker %d at %s: %w", id, addr, err)
		}
		return &tcpEndpoint{conn: c, addr: addr, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}, nil
	}
}
