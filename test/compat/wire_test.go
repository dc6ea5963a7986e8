package compat

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// wire sends requests at exactly the version set on them (a client library
// would negotiate its own) and decodes the answers at that version.
type wire struct {
	t    *testing.T
	c    net.Conn
	corr int32
	fmtr *kmsg.RequestFormatter
}

func dial(t *testing.T, addr string) *wire {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &wire{t: t, c: c, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raftka-conformance"))}
}

func (w *wire) do(req kmsg.Request) (kmsg.Response, error) {
	w.corr++
	if err := w.c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := w.c.Write(w.fmtr.AppendRequest(nil, req, w.corr)); err != nil {
		return nil, err
	}
	var sz [4]byte
	if _, err := io.ReadFull(w.c, sz[:]); err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(w.c, frame); err != nil {
		return nil, err
	}
	if len(frame) < 4 || int32(binary.BigEndian.Uint32(frame)) != w.corr {
		return nil, fmt.Errorf("answer for another correlation id")
	}
	body := frame[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// The response header has tagged fields when the body is flexible,
	// except ApiVersions' (KIP-511).
	if resp.IsFlexible() && req.Key() != 18 {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decoding %s v%d: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

func skipTags(b []byte) ([]byte, error) {
	n, l := binary.Uvarint(b)
	if l <= 0 {
		return nil, fmt.Errorf("bad tag count")
	}
	b = b[l:]
	for range n {
		_, l := binary.Uvarint(b)
		if l <= 0 {
			return nil, fmt.Errorf("bad tag key")
		}
		b = b[l:]
		size, l := binary.Uvarint(b)
		if l <= 0 || uint64(len(b)-l) < size {
			return nil, fmt.Errorf("bad tag size")
		}
		b = b[l+int(size):]
	}
	return b, nil
}
