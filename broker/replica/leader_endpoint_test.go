package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchResponseFrame encodes a v12 Fetch response frame body (no size).
func fetchResponseFrame(corr int32, withTag bool) []byte {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = fetchVersion
	t := kmsg.NewFetchResponseTopic()
	t.Topic = "t"
	p := kmsg.NewFetchResponseTopicPartition()
	p.HighWatermark, p.LogStartOffset, p.RecordBatches = 7, 1, batchOf("x")
	p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 3, 5
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	out := binary.BigEndian.AppendUint32(nil, uint32(corr))
	if withTag {
		out = append(out, 1, 9, 2, 0xab, 0xcd) // one header tag, #9, two bytes
	} else {
		out = append(out, 0)
	}
	return resp.AppendTo(out)
}

func TestDecodeResponse(t *testing.T) {
	for _, withTag := range []bool{false, true} {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = fetchVersion
		if err := decodeResponse(fetchResponseFrame(42, withTag), 42, true, resp); err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.HighWatermark != 7 || p.DivergingEpoch.EndOffset != 5 || len(p.RecordBatches) == 0 {
			t.Fatalf("decoded %+v", p)
		}
	}
	bad := map[string][]byte{
		"empty":               nil,
		"wrong correlation":   fetchResponseFrame(41, false),
		"tag past the end":    append(binary.BigEndian.AppendUint32(nil, 42), 1, 9, 200),
		"tag count too large": append(binary.BigEndian.AppendUint32(nil, 42), 0xff, 0xff, 0xff, 0x0f),
		"truncated body":      fetchResponseFrame(42, false)[:20],
	}
	for name, b := range bad {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = fetchVersion
		if err := decodeResponse(b, 42, true, resp); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

// FuzzDecodeResponse: any frame body either fails to decode or decodes to
// a response whose encoding decodes again to the same encoding; never a
// panic.
func FuzzDecodeResponse(f *testing.F) {
	f.Add(fetchResponseFrame(1, false), true)
	f.Add(fetchResponseFrame(1, true), true)
	f.Add(fetchResponseFrame(1, false)[:30], true)
	f.Add([]byte{0, 0, 0, 1}, false)
	f.Add([]byte{}, true)
	f.Add(append(fetchResponseFrame(1, false), 0xde, 0xad), true)
	f.Fuzz(func(t *testing.T, body []byte, fetch bool) {
		var resp kmsg.Response
		if fetch {
			r := kmsg.NewPtrFetchResponse()
			r.Version = fetchVersion
			resp = r
		} else {
			r := kmsg.NewPtrOffsetForLeaderEpochResponse()
			r.Version = offsetForLeaderEpochVersion
			resp = r
		}
		if err := decodeResponse(body, 1, true, resp); err != nil {
			return
		}
		enc := resp.AppendTo(nil)
		var back kmsg.Response
		if fetch {
			r := kmsg.NewPtrFetchResponse()
			r.Version = fetchVersion
			back = r
		} else {
			r := kmsg.NewPtrOffsetForLeaderEpochResponse()
			r.Version = offsetForLeaderEpochVersion
			back = r
		}
		frame := append(binary.BigEndian.AppendUint32(nil, 1), 0)
		if err := decodeResponse(append(frame, enc...), 1, true, back); err != nil {
			t.Fatalf("re-encoded response does not decode: %v", err)
		}
		if !bytes.Equal(back.AppendTo(nil), enc) {
			t.Fatal("re-encoded response changed on a second round trip")
		}
	})
}

func TestTCPEndpointCancelAndGarbage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan struct{})
	gotFirst := make(chan struct{})
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		// Read the first request and never answer it; answer the second
		// with a frame claiming an absurd size.
		var size [4]byte
		for i := 0; i < 2; i++ {
			if _, err := readFull(c, size[:]); err != nil {
				return
			}
			buf := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := readFull(c, buf); err != nil {
				return
			}
			if i == 0 {
				close(gotFirst)
			}
			if i == 1 {
				_, _ = c.Write([]byte{0x7f, 0xff, 0xff, 0xff})
			}
		}
		_, _ = c.Read(size[:]) // until the client closes
	}()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	ep, err := TCPDialer("test", time.Second)(context.Background(), 1, metadata.Endpoint{Host: "127.0.0.1", Port: port})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		req := kmsg.NewPtrFetchRequest()
		req.Version = fetchVersion
		_, err := ep.Fetch(ctx, req)
		errc <- err
	}()
	// Cancel only once the request is on the wire: cancelled earlier, the
	// fetch would fail before writing it and the server would take the
	// next request for the first.
	select {
	case <-gotFirst:
	case <-time.After(20 * time.Second):
		t.Fatal("the fetch never reached the server")
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled fetch: %v", err)
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = offsetForLeaderEpochVersion
	if _, err := ep.OffsetForLeaderEpoch(context.Background(), req); err == nil {
		t.Fatal("an oversized frame was accepted")
	}
	ep.Close()
	<-served
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := c.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// TestTCPEndpointResponsesAcrossReusedBuffer: consecutive fetches over one
// endpoint, larger and smaller than the last, each decode to exactly what
// the leader sent, although the endpoint reads them into one reused buffer.
func TestTCPEndpointResponsesAcrossReusedBuffer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sizes := []int{5000, 100, 70000, 3000, 70000}
	records := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, sizes[i]) }
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		for i := range sizes {
			var size [4]byte
			if _, err := readFull(c, size[:]); err != nil {
				served <- err
				return
			}
			req := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := readFull(c, req); err != nil {
				served <- err
				return
			}
			corr := int32(binary.BigEndian.Uint32(req[4:8]))
			resp := kmsg.NewPtrFetchResponse()
			resp.Version = fetchVersion
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = "t"
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.RecordBatches = records(i)
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
			body := resp.AppendTo(append(binary.BigEndian.AppendUint32(nil, uint32(corr)), 0))
			if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
				served <- err
				return
			}
		}
		served <- nil
	}()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	ep, err := TCPDialer("test", time.Second)(context.Background(), 1, metadata.Endpoint{Host: "127.0.0.1", Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range sizes {
		req := kmsg.NewPtrFetchRequest()
		req.Version = fetchVersion
		resp, err := ep.Fetch(ctx, req)
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		if got := resp.Topics[0].Partitions[0].RecordBatches; !bytes.Equal(got, records(i)) {
			t.Fatalf("fetch %d: %d record bytes differ from the %d sent", i, len(got), sizes[i])
		}
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
