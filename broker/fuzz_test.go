package broker

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memConn is a net.Conn whose reads come from a fixed input, then EOF, and
// whose writes are collected. It drives the whole connection path (framing,
// header, table, decode, handlers, ordered writer) without sockets.
type memConn struct {
	in *bytes.Reader

	mu     sync.Mutex
	out    bytes.Buffer
	closed bool
}

func (c *memConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return 0, net.ErrClosed
	}
	return c.in.Read(p)
}

func (c *memConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	return c.out.Write(p)
}

func (c *memConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

func (c *memConn) LocalAddr() net.Addr              { return nil }
func (c *memConn) RemoteAddr() net.Addr             { return nil }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzTable serves the real table plus a Produce handler that answers every
// decodable request, with the advertised-but-rejected v0-v2 path, so every
// version of its body reaches a decoder.
func fuzzTable(tb testing.TB) *apiTable {
	return testTable(tb,
		apiEntry{key: 0, advertisedMin: 0, min: 3, max: kmsg.NewPtrProduceRequest().MaxVersion(), handle: nopHandler, reject: nopReject},
	)
}

// fuzzOptions gives the real Metadata handler an image to answer from.
func fuzzOptions(tb testing.TB) Options {
	return Options{
		MaxRequestBytes: 1 << 20,
		NodeID:          1,
		Deps:            Deps{Metadata: staticMetadata{img: clusterImage(tb, 9092)}},
		// The authorizer runs on every request (the image has no ACLs,
		// so everyone is allowed and the other handlers answer as without).
		Authorizer: &metadata.Authorizer{AllowEveryoneIfNoACL: true},
	}
}

func seedFrames() [][]byte {
	var seeds [][]byte
	{
		d := kmsg.NewPtrDescribeACLsRequest()
		d.Version = 3
		d.ResourceType, d.ResourcePatternType, d.Operation, d.PermissionType = 1, 2, 1, 1
		d.ResourceName = kmsg.StringPtr("orders")
		seeds = append(seeds, encodeRequest(d, 300))
		c := kmsg.NewPtrCreateACLsRequest()
		c.Version = 3
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = 2, "orders", 3
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:a", "*", 3, 3
		c.Creations = append(c.Creations, cr)
		seeds = append(seeds, encodeRequest(c, 301))
		q := kmsg.NewPtrDescribeClientQuotasRequest()
		q.Version = 1
		qc := kmsg.NewDescribeClientQuotasRequestComponent()
		qc.EntityType, qc.MatchType = "user", 2
		q.Components = append(q.Components, qc)
		seeds = append(seeds, encodeRequest(q, 302))
	}
	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "fuzz", "1.0"
		seeds = append(seeds, encodeRequest(req, int32(v)))
	}
	for v := int16(0); v <= kmsg.NewPtrMetadataRequest().MaxVersion(); v++ {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("orders")
		req.Topics = append(req.Topics, rt)
		seeds = append(seeds, encodeRequest(req, 100+int32(v)))
	}
	for v := int16(0); v <= kmsg.NewPtrProduceRequest().MaxVersion(); v++ {
		req := kmsg.NewPtrProduceRequest()
		req.Version = v
		req.Acks = -1
		req.TimeoutMillis = 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = bytes.Repeat([]byte{0xab}, 61)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		seeds = append(seeds, encodeRequest(req, 200+int32(v)))
	}
	for i, cursor := range []*kmsg.DescribeTopicPartitionsRequestCursor{nil, {Topic: "orders", Partition: 1}, {Topic: "orders", Partition: -1}} {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit, req.Cursor = 1, cursor
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = "orders"
		req.Topics = append(req.Topics, rt)
		seeds = append(seeds, encodeRequest(req, 300+int32(i)))
	}
	return seeds
}

// FuzzDescribeTopicPartitions decodes arbitrary DescribeTopicPartitions
// bodies and answers them from a fixed image: never a panic, an answer
// that encodes and decodes again, and never more partitions than the limit
// allows.
func FuzzDescribeTopicPartitions(f *testing.F) {
	for _, limit := range []int32{0, 1, 2, 2000} {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = limit
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "orders", Partition: 1}
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = "orders"
		req.Topics = append(req.Topics, rt)
		f.Add(req.AppendTo(nil))
		req.Topics, req.Cursor = nil, nil
		f.Add(req.AppendTo(nil))
	}
	img := clusterImage(f, 9092)
	f.Fuzz(func(t *testing.T, body []byte) {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		if req.ReadFrom(body) != nil {
			return
		}
		resp := describeTopicPartitions(img, "CLIENT", req, topicAccess{})
		n := 0
		for _, rt := range resp.Topics {
			n += len(rt.Partitions)
		}
		if limit := max(min(int(req.ResponsePartitionLimit), maxRequestPartitionSizeLimit), 1); n > limit {
			t.Fatalf("%d partitions answered, limit %d", n, limit)
		}
		back := kmsg.NewPtrDescribeTopicPartitionsResponse()
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("answer does not decode: %v", err)
		}
	})
}

// FuzzFrame feeds arbitrary bytes to a connection. The property: the
// connection answers or closes, never panics (the recover handlers count a
// panic, which fails the input), leaves no goroutine behind (serveConn waits
// for all of them), and whatever it writes is whole response frames whose
// correlation ids follow the requests' order. With nothing rejected, every
// request is answered.
func FuzzFrame(f *testing.F) {
	seeds := seedFrames()
	for _, s := range seeds {
		f.Add(s)
		f.Add(s[:len(s)/2])
	}
	f.Add(bytes.Join(seeds, nil))
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0})
	f.Add(append(append([]byte(nil), seeds[3]...), 0, 0, 0, 3, 0, 18, 0))

	opts := fuzzOptions(f)
	opts.Logger = zerolog.Nop()
	srv, err := newServer(opts, fuzzTable(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = srv.Close() })
	counters := srv.Counters()

	f.Fuzz(func(t *testing.T, data []byte) {
		before := counters.Snapshot()
		mc := &memConn{in: bytes.NewReader(data)}
		done := make(chan struct{})
		go func() { defer close(done); srv.serveConn(mc, "FUZZ") }()
		select {
		case <-done:
		case <-time.After(testDeadline):
			t.Fatal("connection neither answered nor closed")
		}
		after := counters.Snapshot()
		if after.Rejected[ReasonHandlerPanic.String()] != before.Rejected[ReasonHandlerPanic.String()] {
			t.Fatal("a panic was recovered while serving the input")
		}
		if after.ConnsOpen != 0 {
			t.Fatalf("%d connections open after serveConn returned", after.ConnsOpen)
		}

		reqCorrs := frameCorrelations(data)
		out := mc.out.Bytes()
		var respCorrs []int32
		for len(out) > 0 {
			if len(out) < 8 {
				t.Fatalf("partial response frame %x", out)
			}
			n := int(binary.BigEndian.Uint32(out))
			if n < 4 || n > len(out)-4 {
				t.Fatalf("response frame of %d bytes with %d left", n, len(out)-4)
			}
			respCorrs = append(respCorrs, int32(binary.BigEndian.Uint32(out[4:])))
			out = out[4+n:]
		}
		i := 0
		for _, c := range respCorrs {
			for i < len(reqCorrs) && reqCorrs[i] != c {
				i++
			}
			if i == len(reqCorrs) {
				t.Fatalf("responses %v are not in the order of requests %v", respCorrs, reqCorrs)
			}
			i++
		}
		rejected := func(s CounterSnapshot) (n uint64) {
			for _, v := range s.Rejected {
				n += v
			}
			return n
		}
		if rejected(after) == rejected(before) && bytes.Equal(data, wholeFrames(data)) && len(respCorrs) != len(reqCorrs) {
			t.Fatalf("%d requests, %d responses, nothing rejected", len(reqCorrs), len(respCorrs))
		}
	})
}

// frameCorrelations splits data into frames the way a server would and
// returns each whole frame's correlation id (0 for frames too short to have
// one).
func frameCorrelations(data []byte) []int32 {
	var corrs []int32
	for len(data) >= 4 {
		n := int(int32(binary.BigEndian.Uint32(data)))
		if n < 0 || n > len(data)-4 {
			break
		}
		var corr int32
		if n >= 8 {
			corr = int32(binary.BigEndian.Uint32(data[8:]))
		}
		corrs = append(corrs, corr)
		data = data[4+n:]
	}
	return corrs
}

// wholeFrames returns the prefix of data made of whole frames.
func wholeFrames(data []byte) []byte {
	rest := data
	for len(rest) >= 4 {
		n := int(int32(binary.BigEndian.Uint32(rest)))
		if n < 0 || n > len(rest)-4 {
			break
		}
		rest = rest[4+n:]
	}
	return data[:len(data)-len(rest)]
}

// The seeds themselves must be served in full: this keeps the fuzz
// property honest about its "every request is answered" half.
func TestFuzzSeedsAnswered(t *testing.T) {
	opts := fuzzOptions(t)
	opts.Logger = testLogger(t)
	srv, err := newServer(opts, fuzzTable(t))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	seeds := seedFrames()
	mc := &memConn{in: bytes.NewReader(bytes.Join(seeds, nil))}
	srv.serveConn(mc, "TEST")
	if got := len(frameCorrelations(mc.out.Bytes())); got != len(seeds) {
		t.Fatalf("%d answers to %d requests", got, len(seeds))
	}
	if n := srv.Counters().Snapshot().Rejected; len(n) != 0 {
		t.Fatalf("rejections %v; the ApiVersions v5 seed is answered, not rejected", n)
	}
}
