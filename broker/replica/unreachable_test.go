package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

func TestConnectionLost(t *testing.T) {
	wrap := func(err error) error {
		return fmt.Errorf("replica: 127.0.0.1:9092: %w", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", err)})
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"EOF", fmt.Errorf("replica: x: %w", io.EOF), true},
		{"short read", fmt.Errorf("replica: x: %w", io.ErrUnexpectedEOF), true},
		{"reset by peer", wrap(syscall.ECONNRESET), true},
		{"dial refused", wrap(syscall.ECONNREFUSED), true},
		{"broken pipe", wrap(syscall.EPIPE), true},
		{"timeout (a stopped leader)", wrap(os.ErrDeadlineExceeded), false},
		{"our cancel", context.Canceled, false},
		{"our close", wrap(net.ErrClosed), false},
		{"an error code", errors.New("replica: fetch from broker 2: NOT_LEADER_OR_FOLLOWER"), false},
	} {
		if got := connectionLost(tc.err); got != tc.want {
			t.Errorf("%s: connectionLost = %v, want %v", tc.name, got, tc.want)
		}
	}
}
