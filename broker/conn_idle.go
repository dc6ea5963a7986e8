package broker

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// connections.max.idle.ms: a connection on which no bytes have moved either
// way for the limit is closed, as Kafka's Selector closes idle channels.
// The reader arms a read deadline before each read; when it fires, the
// connection is closed only if nothing was written meanwhile and no request
// is queued or being answered. Kafka makes no such exception, but a request
// held longer than the limit (a long JoinGroup or Fetch wait under a small
// limit) is a client waiting, not an idle connection.

// errIdle closes a connection idle past connections.max.idle.ms.
var errIdle = errors.New("idle past connections.max.idle.ms")

// idleReader returns what the reader reads frames from: the socket itself
// when there is no idle limit.
func (c *conn) idleReader() io.Reader {
	if c.srv.connMaxIdle <= 0 {
		return c.nc
	}
	c.lastActive.Store(time.Now().UnixNano())
	return idleConnReader{c}
}

type idleConnReader struct{ c *conn }

func (r idleConnReader) Read(p []byte) (int, error) {
	c, idle := r.c, r.c.srv.connMaxIdle
	for {
		last := time.Unix(0, c.lastActive.Load())
		if err := c.nc.SetReadDeadline(last.Add(idle)); err != nil {
			return 0, err
		}
		n, err := c.nc.Read(p)
		if n > 0 {
			c.lastActive.Store(time.Now().UnixNano())
			if isTimeout(err) {
				err = nil // the bytes are good; the next Read re-arms
			}
			return n, err
		}
		if !isTimeout(err) {
			return n, err
		}
		if c.pending.Load() > 0 {
			// Waiting for our own answer: not idle. Look again after
			// another full period.
			c.lastActive.Store(time.Now().UnixNano())
			continue
		}
		if time.Since(time.Unix(0, c.lastActive.Load())) < idle {
			continue // a response went out meanwhile
		}
		return 0, fmt.Errorf("%w (%s)", errIdle, idle)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return err != nil && errors.As(err, &ne) && ne.Timeout()
}
