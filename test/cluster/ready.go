package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ServingReady is the default readiness check: the node answers ApiVersions
// and its /readyz says it is serving (a metadata quorum leader is known and
// the controller has registered and unfenced its broker). Without the second
// half a test could create a replicated topic before every broker counts as
// available.
func ServingReady(ctx context.Context, n *Node) error {
	if err := ApiVersionsReady(ctx, n); err != nil {
		return err
	}
	if n.MetricsAddr() == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.MetricsAddr()+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s", bytes.TrimSpace(body))
	}
	return nil
}

// ApiVersionsReady checks: the node's client port
// accepts a connection and answers an ApiVersions request, the first thing
// every Kafka client sends, with a list of APIs.
func ApiVersionsReady(ctx context.Context, n *Node) error {
	keys, err := ApiVersions(ctx, n.ClientAddr())
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return errors.New("ApiVersions answered with no APIs")
	}
	return nil
}

// ApiVersions sends one ApiVersions v3 request to addr, framed by hand
// (size, request header v2, body), and returns the advertised API keys.
// A broker that does not speak v3 answers in v0 with UNSUPPORTED_VERSION
// and its key list, which counts as an answer too.
func ApiVersions(ctx context.Context, addr string) ([]kmsg.ApiVersionsResponseApiKey, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	conn.SetDeadline(deadline)

	const correlationID = 7
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "raftka-test-cluster"
	req.ClientSoftwareVersion = "1"
	frame := make([]byte, 4, 64)
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Version))
	frame = binary.BigEndian.AppendUint32(frame, correlationID)
	clientID := "raftka-test-cluster"
	frame = binary.BigEndian.AppendUint16(frame, uint16(len(clientID)))
	frame = append(frame, clientID...)
	if req.IsFlexible() {
		frame = append(frame, 0) // no tagged fields in the header
	}
	frame = req.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := conn.Write(frame); err != nil {
		return nil, err
	}

	body, err := readFrame(conn, 1<<20)
	if err != nil {
		return nil, err
	}
	if len(body) < 4 || binary.BigEndian.Uint32(body) != correlationID {
		return nil, fmt.Errorf("ApiVersions answer with a bad correlation id")
	}
	body = body[4:] // ApiVersions responses always use header v0, even when flexible
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.Version = req.Version
	if err := resp.ReadFrom(body); err != nil || resp.ErrorCode == 35 {
		resp = kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if err := resp.ReadFrom(body); err != nil {
			return nil, fmt.Errorf("ApiVersions answer does not decode: %w", err)
		}
		if resp.ErrorCode == 35 { // UNSUPPORTED_VERSION, with the versions it does support
			return resp.ApiKeys, nil
		}
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("ApiVersions answered error code %d", resp.ErrorCode)
	}
	return resp.ApiKeys, nil
}

// readFrame reads one size-prefixed frame of at most limit bytes.
func readFrame(r io.Reader, limit int) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || int(n) > limit {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
