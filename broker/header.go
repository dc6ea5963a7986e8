package broker

import (
	"encoding/binary"
	"errors"
	"math"
)

// A request frame after its 4-byte size prefix is
//
//	api_key int16 | api_version int16 | correlation_id int32 |
//	client_id nullable string (int16 length, -1 = null) |
//	[tagged fields, only in header v2] | body
//
// Header v2 is used exactly when the request body is flexible (KIP-482) at
// that key and version; the client id stays a classic int16-length string
// even then.

var errShortHeader = errors.New("broker: request header truncated")

// requestHeader is a parsed request header.
type requestHeader struct {
	key, version  int16
	correlationID int32
	clientID      *string
}

// fixedHeaderLen is the part of every request header that precedes the
// client id.
const fixedHeaderLen = 8

// peekHeader reads the fixed part of a request header. It is enough to
// look up the API and to answer or reject the request by correlation id.
func peekHeader(frame []byte) (key, version int16, correlationID int32, ok bool) {
	if len(frame) < fixedHeaderLen {
		return 0, 0, 0, false
	}
	return int16(binary.BigEndian.Uint16(frame)),
		int16(binary.BigEndian.Uint16(frame[2:])),
		int32(binary.BigEndian.Uint32(frame[4:])),
		true
}

// parseRequestHeader parses the header at the start of frame and returns it
// with the body that follows. flexible selects header v2 (tagged fields).
func parseRequestHeader(frame []byte, flexible bool) (requestHeader, []byte, error) {
	var h requestHeader
	var ok bool
	h.key, h.version, h.correlationID, ok = peekHeader(frame)
	if !ok {
		return h, nil, errShortHeader
	}
	rest := frame[fixedHeaderLen:]
	if len(rest) < 2 {
		return h, nil, errShortHeader
	}
	n := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	switch {
	case n == -1:
	case n < -1:
		return h, nil, errors.New("broker: request header client id has a negative length")
	case int(n) > len(rest):
		return h, nil, errShortHeader
	default:
		id := string(rest[:n])
		h.clientID = &id
		rest = rest[n:]
	}
	if flexible {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return h, nil, err
		}
	}
	return h, rest, nil
}

// skipTags skips a KIP-482 tagged-field section: an unsigned varint count,
// then per field an unsigned varint tag, an unsigned varint size and size
// bytes.
func skipTags(b []byte) ([]byte, error) {
	count, b, err := uvarint(b)
	if err != nil {
		return nil, err
	}
	for range count {
		if _, b, err = uvarint(b); err != nil {
			return nil, err
		}
		var size uint32
		if size, b, err = uvarint(b); err != nil {
			return nil, err
		}
		if uint64(size) > uint64(len(b)) {
			return nil, errors.New("broker: tagged field longer than the request header")
		}
		b = b[size:]
	}
	return b, nil
}

// uvarint reads a Kafka unsigned varint, which holds at most 32 bits.
func uvarint(b []byte) (uint32, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > math.MaxUint32 {
		return 0, nil, errors.New("broker: bad unsigned varint in request header")
	}
	return uint32(v), b[n:], nil
}
