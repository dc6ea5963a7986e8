package broker

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseRequestHeader(t *testing.T) {
	id := "client-1"
	fixed := []byte{0, 3, 0, 12, 0, 0, 0, 42} // Metadata v12, correlation 42
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	tests := []struct {
		name     string
		frame    []byte
		flexible bool
		wantID   *string
		wantBody []byte
		wantErr  bool
	}{
		{name: "v1 with id", frame: cat(fixed, []byte{0, 8}, []byte(id), []byte{9, 9}), wantID: &id, wantBody: []byte{9, 9}},
		{name: "v1 null id", frame: cat(fixed, []byte{0xff, 0xff}, []byte{7}), wantBody: []byte{7}},
		{name: "v1 empty id", frame: cat(fixed, []byte{0, 0}), wantID: new(string), wantBody: []byte{}},
		{name: "v2 no tags", frame: cat(fixed, []byte{0, 8}, []byte(id), []byte{0, 5}), flexible: true, wantID: &id, wantBody: []byte{5}},
		{name: "v2 two tags", frame: cat(fixed, []byte{0xff, 0xff}, []byte{2, 0, 1, 0xaa, 7, 2, 1, 2}, []byte{6}), flexible: true, wantBody: []byte{6}},
		{name: "v2 tags are not read in v1", frame: cat(fixed, []byte{0xff, 0xff}, []byte{1, 0, 1, 0xaa}), wantBody: []byte{1, 0, 1, 0xaa}},
		{name: "empty frame", frame: nil, wantErr: true},
		{name: "fixed part short", frame: fixed[:7], wantErr: true},
		{name: "no client id length", frame: fixed, wantErr: true},
		{name: "client id truncated", frame: cat(fixed, []byte{0, 9}, []byte(id)), wantErr: true},
		{name: "client id length -2", frame: cat(fixed, []byte{0xff, 0xfe}), wantErr: true},
		{name: "v2 missing tag count", frame: cat(fixed, []byte{0xff, 0xff}), flexible: true, wantErr: true},
		{name: "v2 tag size beyond frame", frame: cat(fixed, []byte{0xff, 0xff}, []byte{1, 0, 5, 1}), flexible: true, wantErr: true},
		{name: "v2 endless varint", frame: cat(fixed, []byte{0xff, 0xff}, []byte{0x80, 0x80, 0x80}), flexible: true, wantErr: true},
		{name: "v2 varint above 32 bits", frame: cat(fixed, []byte{0xff, 0xff}, []byte{0xff, 0xff, 0xff, 0xff, 0x7f}), flexible: true, wantErr: true},
		{name: "v2 huge tag count", frame: cat(fixed, []byte{0xff, 0xff}, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}), flexible: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, body, err := parseRequestHeader(tt.frame, tt.flexible)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got header %+v, want an error", h)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.key != 3 || h.version != 12 || h.correlationID != 42 {
				t.Errorf("fixed part = %d/%d/%d", h.key, h.version, h.correlationID)
			}
			switch {
			case (h.clientID == nil) != (tt.wantID == nil):
				t.Errorf("client id = %v, want %v", h.clientID, tt.wantID)
			case h.clientID != nil && *h.clientID != *tt.wantID:
				t.Errorf("client id = %q, want %q", *h.clientID, *tt.wantID)
			}
			if !bytes.Equal(body, tt.wantBody) {
				t.Errorf("body = %x, want %x", body, tt.wantBody)
			}
		})
	}
}

// The header parser must agree with kmsg's encoder at every version of
// every request kmsg knows, flexible or not.
func TestParseRequestHeaderMatchesKmsg(t *testing.T) {
	for key := int16(0); key < 100; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			if key == 7 && v == 0 {
				continue // ControlledShutdown v0 has no client id; never served
			}
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("abc")).AppendRequest(nil, req, 77)[4:]
			h, body, err := parseRequestHeader(frame, req.IsFlexible())
			if err != nil {
				t.Fatalf("%s v%d: %v", kmsg.NameForKey(key), v, err)
			}
			if h.key != key || h.version != v || h.correlationID != 77 || h.clientID == nil || *h.clientID != "abc" {
				t.Fatalf("%s v%d: header %+v", kmsg.NameForKey(key), v, h)
			}
			if want := req.AppendTo(nil); !bytes.Equal(body, want) {
				t.Fatalf("%s v%d: body %x, want %x", kmsg.NameForKey(key), v, body, want)
			}
		}
	}
}
