package raftfsm

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func encodeRequest(req kmsg.Request, clientID string) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, 7)
}

func TestRequestFrameRoundTrip(t *testing.T) {
	req := createTopicReq("x", 2, 1)
	req.SetVersion(7)
	frame := encodeRequest(req, "c1")
	got, err := readFrame(bytes.NewReader(frame))
	if err != nil {
		t.Fatal(err)
	}
	h, parsed, err := parseRequest(got)
	if err != nil {
		t.Fatal(err)
	}
	if h.key != 19 || h.version != 7 || h.correlationID != 7 || h.clientID != "c1" {
		t.Fatalf("header %+v", h)
	}
	if p := parsed.(*kmsg.CreateTopicsRequest); p.Topics[0].Topic != "x" || p.Topics[0].NumPartitions != 2 {
		t.Fatalf("body %+v", p)
	}

	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	setIndexTag(&resp.UnknownTags, 1234)
	out := appendResponse(nil, 7, resp)
	rf, err := readFrame(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	back, err := parseResponse(rf, 7, req)
	if err != nil {
		t.Fatal(err)
	}
	if idx := indexFromTags(respTags(back)); idx != 1234 {
		t.Fatalf("index tag %d, want 1234", idx)
	}
}

func TestReadFrameRejectsBadSizes(t *testing.T) {
	for _, b := range [][]byte{{0, 0, 0, 0}, {0xff, 0xff, 0xff, 0xff}, {0x7f, 0, 0, 0}} {
		if _, err := readFrame(bytes.NewReader(b)); err == nil {
			t.Fatalf("size %x accepted", b)
		}
	}
}

// FuzzParseRequest feeds arbitrary frames to the controller listener's
// request decoder: it returns an error or a request, never panics.
func FuzzParseRequest(f *testing.F) {
	for _, req := range []kmsg.Request{
		createTopicReq("t", 1, 1),
		kmsg.NewPtrBrokerHeartbeatRequest(),
		kmsg.NewPtrBrokerRegistrationRequest(),
		kmsg.NewPtrAlterPartitionRequest(),
		kmsg.NewPtrDescribeQuorumRequest(),
		kmsg.NewPtrSyncGroupRequest(),
		kmsg.NewPtrDeleteGroupsRequest(),
		kmsg.NewPtrOffsetCommitRequest(),
	} {
		req.SetVersion(req.MaxVersion())
		frame := encodeRequest(req, "fuzz")
		f.Add(frame[4:])
		f.Add(frame[4 : len(frame)/2])
	}
	f.Add([]byte{})
	f.Add([]byte{0, 19, 0, 7, 0, 0, 0, 1, 0xff, 0xff, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, req, err := parseRequest(b)
		if err == nil && req == nil {
			t.Fatal("nil request without an error")
		}
		// And as a whole stream with a size prefix.
		sized := append([]byte{byte(len(b) >> 24), byte(len(b) >> 16), byte(len(b) >> 8), byte(len(b))}, b...)
		if fr, err := readFrame(bytes.NewReader(sized)); err == nil {
			_, _, _ = parseRequest(fr)
		}
	})
}
