package raftfsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxFrameBytes bounds a controller RPC frame. Controller requests are small
// (a CreateTopics with explicit assignments for thousands of partitions is a
// few hundred KiB); anything larger is refused before allocation.
const maxFrameBytes = 16 << 20

// IndexTag is the tagged field that carries the Raft index of a controller
// RPC's commit in the flexible response (value: 8-byte big-endian uint64).
// Kafka's own tags for these messages are small numbers; 10000 stays clear of
// them.
const IndexTag uint32 = 10000

// NonvoterTag marks an AddRaftVoter request that asks for a Raft non-voter
// (a broker-only node) rather than a voter (value: one byte, 1).
const NonvoterTag uint32 = 10001

// forwardClientID marks a request a follower forwarded to the leader; the
// leader answers NOT_CONTROLLER rather than forwarding it again.
const forwardClientID = "raftka-controller-forward"

var (
	errFrameSize = errors.New("raftfsm: bad frame size")
	errBadFrame  = errors.New("raftfsm: malformed request frame")
)

// readFrame reads one size-prefixed Kafka frame.
func readFrame(r io.Reader) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n <= 0 || n > maxFrameBytes {
		return nil, fmt.Errorf("%w: %d", errFrameSize, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// requestHeader is Kafka's request header v1/v2.
type requestHeader struct {
	key           int16
	version       int16
	correlationID int32
	clientID      string
}

// parseRequest decodes a request frame (without its size prefix). Header v2
// (with tagged fields) is used when kmsg says the request version is
// flexible. An unknown key or version or a body that does not decode is an
// error; the header is returned whenever it parsed, so the caller can answer.
func parseRequest(frame []byte) (requestHeader, kmsg.Request, error) {
	var h requestHeader
	if len(frame) < 10 {
		return h, nil, fmt.Errorf("%w: %d-byte header", errBadFrame, len(frame))
	}
	h.key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.correlationID = int32(binary.BigEndian.Uint32(frame[4:]))
	cl := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	if cl > 0 {
		if int(cl) > len(rest) {
			return h, nil, fmt.Errorf("%w: client id length %d", errBadFrame, cl)
		}
		h.clientID = string(rest[:cl])
		rest = rest[cl:]
	} else if cl < -1 {
		return h, nil, fmt.Errorf("%w: client id length %d", errBadFrame, cl)
	}
	req := kmsg.RequestForKey(h.key)
	if req == nil {
		return h, nil, fmt.Errorf("%w: unknown api key %d", errBadFrame, h.key)
	}
	if h.version < 0 || h.version > req.MaxVersion() {
		return h, nil, fmt.Errorf("%w: %s v%d unsupported", errBadFrame, kmsg.NameForKey(h.key), h.version)
	}
	req.SetVersion(h.version)
	if req.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return h, nil, err
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return h, nil, fmt.Errorf("%w: %s body: %v", errBadFrame, kmsg.NameForKey(h.key), err)
	}
	return h, req, nil
}

// skipTags skips a tagged-field section (uvarint count, then per field a
// uvarint tag, a uvarint length and the bytes).
func skipTags(b []byte) ([]byte, error) {
	n, sz := binary.Uvarint(b)
	if sz <= 0 || n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: tag count", errBadFrame)
	}
	b = b[sz:]
	for i := uint64(0); i < n; i++ {
		_, sz := binary.Uvarint(b)
		if sz <= 0 {
			return nil, fmt.Errorf("%w: tag", errBadFrame)
		}
		b = b[sz:]
		l, sz := binary.Uvarint(b)
		if sz <= 0 || l > uint64(len(b)-sz) {
			return nil, fmt.Errorf("%w: tag length", errBadFrame)
		}
		b = b[sz+int(l):]
	}
	return b, nil
}

// appendResponse frames a response: size, correlation id, header v1 tags when
// the response is flexible, then the body.
func appendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != 18 { // ApiVersions' header is always v0
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// parseResponse decodes a response frame for req into a fresh response.
func parseResponse(frame []byte, correlationID int32, req kmsg.Request) (kmsg.Response, error) {
	if len(frame) < 4 {
		return nil, fmt.Errorf("%w: short response", errBadFrame)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != correlationID {
		return nil, fmt.Errorf("%w: correlation id %d, want %d", errBadFrame, got, correlationID)
	}
	rest := frame[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && resp.Key() != 18 {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("%w: %s response: %v", errBadFrame, kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// setIndexTag stores the commit index in a flexible response's tags.
func setIndexTag(tags *kmsg.Tags, index uint64) {
	tags.Set(IndexTag, binary.BigEndian.AppendUint64(nil, index))
}

// indexFromTags returns the commit index a response carries, 0 if none.
func indexFromTags(tags *kmsg.Tags) uint64 {
	var idx uint64
	tags.Each(func(k uint32, v []byte) {
		if k == IndexTag && len(v) == 8 {
			idx = binary.BigEndian.Uint64(v)
		}
	})
	return idx
}
