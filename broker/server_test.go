package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franz-go first asks ApiVersions at v5, which we do not serve: it must read
// our KIP-511 answer, retry at v4 and then use what we advertise.
func TestKgoNegotiates(t *testing.T) {
	s, addr := startServer(t, defaultAPIs, Options{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()

	kresp, err := cl.Request(ctx, kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("error %d", resp.ErrorCode)
	}
	var found bool
	for _, k := range resp.ApiKeys {
		if k.ApiKey == apiVersionsKey {
			found = k.MinVersion == 0 && k.MaxVersion == 4
		}
	}
	if !found {
		t.Fatalf("ApiVersions 0-4 not advertised: %+v", resp.ApiKeys)
	}
	c := s.Counters()
	if c.RequestsFor(apiVersionsKey, 5) == 0 {
		t.Error("kgo never sent an unsupported ApiVersions version; the KIP-511 path went untested")
	}
	if c.RequestsFor(apiVersionsKey, 4) < 2 {
		t.Errorf("ApiVersions v4 served %d times, want the handshake and our request", c.RequestsFor(apiVersionsKey, 4))
	}
}

func TestRawAPIVersions(t *testing.T) {
	_, addr := startServer(t, defaultAPIs, Options{})
	rc := dialRaw(t, addr)
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
		rc.send(req, int32(100+v))
		// The response header is v0 at every version: no tag byte even
		// at v3+, which readResponse would otherwise choke on.
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = v
		if corr := rc.readResponse(resp); corr != int32(100+v) {
			t.Fatalf("v%d: correlation %d", v, corr)
		}
		if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(defaultAPIs.entries) {
			t.Fatalf("v%d: error %d, keys %+v", v, resp.ErrorCode, resp.ApiKeys)
		}
	}

	// KIP-511: versions we do not serve get a v0 body with our range, and
	// the connection stays usable.
	for _, v := range []int16{5, 99, -1} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 4
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
		frame := encodeRequest(req, 7)
		binary.BigEndian.PutUint16(frame[6:], uint16(v))
		rc.write(frame)
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if corr := rc.readResponse(resp); corr != 7 {
			t.Fatalf("v%d: correlation %d", v, corr)
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 ||
			resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion != 4 {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "not valid", "1"
	rc.send(req, 8)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	rc.readResponse(resp)
	if resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("bad software name: error %d", resp.ErrorCode)
	}
}

// Five pipelined requests whose first handler finishes last are answered in
// request order.
func TestPipelinedResponsesInOrder(t *testing.T) {
	const n = 5
	var others sync.WaitGroup
	others.Add(n - 1)
	tb := testTable(t, apiEntry{key: 3, max: 12, concurrent: true, handle: func(ctx context.Context, rc *request, req kmsg.Request) (kmsg.Response, error) {
		if rc.correlationID != 1 {
			defer others.Done()
			return req.ResponseKind(), nil
		}
		// The first request waits for all the others to be handled,
		// which also proves they run concurrently with it.
		done := make(chan struct{})
		go func() { others.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.ClusterID = kmsg.StringPtr("slow")
		return resp, nil
	}})
	_, addr := startServer(t, tb, Options{})
	rc := dialRaw(t, addr)
	var frames []byte
	for i := int32(1); i <= n; i++ {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		frames = append(frames, encodeRequest(req, i)...)
	}
	rc.write(frames) // back to back, one write
	for i := int32(1); i <= n; i++ {
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 12
		if corr := rc.readResponse(resp); corr != i {
			t.Fatalf("response %d has correlation %d", i, corr)
		}
		if slow := resp.ClusterID != nil && *resp.ClusterID == "slow"; slow != (i == 1) {
			t.Fatalf("response %d: cluster id %v", i, resp.ClusterID)
		}
	}
}

// An API that is not concurrent runs one request at a time per connection,
// in order, unless its handler releases the connection early.
func TestSerialAPIs(t *testing.T) {
	var (
		active     atomic.Int32
		overlapped atomic.Bool
		order      = make(chan int32, 16)
		releasedOK = make(chan struct{})
	)
	tb := testTable(t, apiEntry{key: 3, max: 12, handle: func(ctx context.Context, rc *request, req kmsg.Request) (kmsg.Response, error) {
		order <- rc.correlationID
		switch rc.correlationID {
		case 10:
			// Releases early, then needs request 11 to start: only
			// possible if release lets the connection move on.
			rc.release()
			select {
			case <-releasedOK:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case 11:
			close(releasedOK)
		default:
			if active.Add(1) != 1 {
				overlapped.Store(true)
			}
			defer active.Add(-1)
		}
		return req.ResponseKind(), nil
	}})
	_, addr := startServer(t, tb, Options{})
	rc := dialRaw(t, addr)
	var frames []byte
	corrs := []int32{1, 2, 3, 4, 10, 11}
	for _, c := range corrs {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		frames = append(frames, encodeRequest(req, c)...)
	}
	rc.write(frames)
	for _, want := range corrs {
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 12
		if corr := rc.readResponse(resp); corr != want {
			t.Fatalf("correlation %d, want %d", corr, want)
		}
		if got := <-order; got != want {
			t.Fatalf("handler for %d started in place of %d", got, want)
		}
	}
	if overlapped.Load() {
		t.Fatal("two handlers of a serial API ran at once on one connection")
	}
}

func TestFrameSizeLimits(t *testing.T) {
	const max = 1000
	s, addr := startServer(t, defaultAPIs, Options{MaxRequestBytes: max})

	// Exactly the limit is served: ApiVersions v0 is the header alone, so
	// a client id of max-10 bytes makes the frame max bytes long.
	req := kmsg.NewPtrApiVersionsRequest()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(strings.Repeat("x", max-10))).AppendRequest(nil, req, 1)
	if got := binary.BigEndian.Uint32(frame); got != max {
		t.Fatalf("test frame is %d bytes", got)
	}
	rc := dialRaw(t, addr)
	rc.write(frame)
	rc.readResponse(kmsg.NewPtrApiVersionsResponse())

	tests := []struct {
		name   string
		prefix uint32
		reason Reason
	}{
		{"one over", max + 1, ReasonFrameTooLarge},
		{"huge", 0x7fffffff, ReasonFrameTooLarge},
		{"negative", 0xffffffff, ReasonFrameNegative},
		{"empty", 0, ReasonBadHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.Counters().RejectedFor(tt.reason)
			rc := dialRaw(t, addr)
			rc.write(binary.BigEndian.AppendUint32(nil, tt.prefix))
			rc.expectClosed()
			waitFor(t, "the rejection to be counted", func() bool { return s.Counters().RejectedFor(tt.reason) == before+1 })
		})
	}
}

// Bad requests close their own connection only.
func TestBadRequestsCloseOnlyTheirConnection(t *testing.T) {
	tb := testTable(t,
		apiEntry{key: 3, max: 12, handle: func(context.Context, *request, kmsg.Request) (kmsg.Response, error) {
			panic("test handler panic")
		}},
		apiEntry{key: 10, max: 4, handle: func(context.Context, *request, kmsg.Request) (kmsg.Response, error) {
			return nil, errors.New("test handler failure")
		}},
		apiEntry{key: 19, max: 7, handle: func(_ context.Context, _ *request, req kmsg.Request) (kmsg.Response, error) {
			return kmsg.NewPtrMetadataResponse(), nil // wrong key: a handler bug
		}},
	)
	s, addr := startServer(t, tb, Options{})
	bystander := dialRaw(t, addr)

	withVersion := func(req kmsg.Request, v int16) []byte {
		f := encodeRequest(req, 1)
		binary.BigEndian.PutUint16(f[6:], uint16(v))
		return f
	}
	garbageAPIVersions := func() []byte {
		// ApiVersions v3 whose compact software name claims 1000 bytes.
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		f := encodeRequest(req, 1)[:4+8+2+len("raw-test")+1]
		f = append(f, 0xe9, 0x07, 'x')
		binary.BigEndian.PutUint32(f, uint32(len(f)-4))
		return f
	}
	tests := []struct {
		name   string
		frame  []byte
		reason Reason
	}{
		{"undecodable body", garbageAPIVersions(), ReasonUndecodable},
		{"frame shorter than a header", append(binary.BigEndian.AppendUint32(nil, 3), 0, 18, 0), ReasonBadHeader},
		{"key not served", encodeRequest(kmsg.NewPtrLeaderAndISRRequest(), 1), ReasonUnknownKey},
		{"key unknown to kmsg", func() []byte {
			f := encodeRequest(kmsg.NewPtrApiVersionsRequest(), 1)
			binary.BigEndian.PutUint16(f[4:], 1000)
			return f
		}(), ReasonUnknownKey},
		{"version above max", withVersion(kmsg.NewPtrFindCoordinatorRequest(), 5), ReasonUnsupportedVersion},
		{"handler panics", encodeRequest(kmsg.NewPtrMetadataRequest(), 1), ReasonHandlerPanic},
		{"handler fails", encodeRequest(kmsg.NewPtrFindCoordinatorRequest(), 1), ReasonHandlerError},
		{"handler answers another key", encodeRequest(kmsg.NewPtrCreateTopicsRequest(), 1), ReasonHandlerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.Counters().RejectedFor(tt.reason)
			rc := dialRaw(t, addr)
			rc.write(tt.frame)
			rc.expectClosed()
			waitFor(t, "the rejection to be counted", func() bool { return s.Counters().RejectedFor(tt.reason) == before+1 })

			// The connection opened before keeps being served.
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 2
			bystander.send(req, 5)
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = 2
			if corr := bystander.readResponse(resp); corr != 5 || resp.ErrorCode != 0 {
				t.Fatalf("bystander: correlation %d error %d", corr, resp.ErrorCode)
			}
		})
	}
}

// A handler may answer nothing (Produce acks=0); the next response follows.
func TestNoResponse(t *testing.T) {
	tb := testTable(t, apiEntry{key: 3, max: 12, handle: func(context.Context, *request, kmsg.Request) (kmsg.Response, error) {
		return nil, nil
	}})
	_, addr := startServer(t, tb, Options{})
	rc := dialRaw(t, addr)
	rc.send(kmsg.NewPtrMetadataRequest(), 1)
	rc.send(kmsg.NewPtrApiVersionsRequest(), 2)
	resp := kmsg.NewPtrApiVersionsResponse() // v0, as the request
	if corr := rc.readResponse(resp); corr != 2 {
		t.Fatalf("correlation %d, want 2", corr)
	}
}

// Produce-style entries advertise versions they only answer with an error.
func TestAdvertisedButRejectedVersions(t *testing.T) {
	var handled atomic.Int32
	tb := testTable(t, apiEntry{
		key: 0, advertisedMin: 0, min: 3, max: 13,
		handle: func(_ context.Context, _ *request, req kmsg.Request) (kmsg.Response, error) {
			handled.Add(1)
			return req.ResponseKind(), nil
		},
		reject: func(kreq kmsg.Request) kmsg.Response {
			req := kreq.(*kmsg.ProduceRequest)
			resp := req.ResponseKind().(*kmsg.ProduceResponse)
			for _, rt := range req.Topics {
				st := kmsg.NewProduceResponseTopic()
				st.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					sp := kmsg.NewProduceResponseTopicPartition()
					sp.Partition = rp.Partition
					sp.ErrorCode = kerr.UnsupportedVersion.Code
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp
		},
	})
	_, addr := startServer(t, tb, Options{})
	rc := dialRaw(t, addr)

	avReq := kmsg.NewPtrApiVersionsRequest()
	rc.send(avReq, 1)
	av := kmsg.NewPtrApiVersionsResponse()
	rc.readResponse(av)
	if k := av.ApiKeys[0]; k.ApiKey != 0 || k.MinVersion != 0 || k.MaxVersion != 13 {
		t.Fatalf("Produce advertised as %+v", k)
	}

	req := kmsg.NewPtrProduceRequest()
	req.Version = 2
	req.Acks = 1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	for p := int32(0); p < 2; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	rc.send(req, 2)
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 2
	rc.readResponse(resp)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("response %+v", resp)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("partition %d: error %d", p.Partition, p.ErrorCode)
		}
	}
	if handled.Load() != 0 {
		t.Error("the handler saw a version below its minimum")
	}
}

// Close returns once handlers blocked on their context have given up.
func TestCloseWaitsForBlockedHandlers(t *testing.T) {
	started := make(chan struct{})
	tb := testTable(t, apiEntry{key: 3, max: 12, handle: func(ctx context.Context, _ *request, _ kmsg.Request) (kmsg.Response, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	s, addr := startServer(t, tb, Options{})
	rc := dialRaw(t, addr)
	rc.send(kmsg.NewPtrMetadataRequest(), 1)
	<-started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rc.expectClosed()
	if err := s.Serve(); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
	if got := s.Counters().Snapshot().ConnsOpen; got != 0 {
		t.Fatalf("%d connections still open after Close", got)
	}
}

func TestNewFailsOnBadListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{Listeners: []Listener{
		{Name: "A", Listener: ln},
		{Name: "B", Addr: ln.Addr().String()}, // already taken
	}})
	if err == nil {
		t.Fatal("New bound an address in use")
	}
	// The listener handed in was closed with the failed server.
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on the handed-in listener: %v", err)
	}
	if _, err := New(Options{MaxRequestBytes: -1}); err == nil {
		t.Fatal("negative socket.request.max.bytes accepted")
	}
}

// Requests on different connections are handled in parallel: two
// connections each wait for the other's request to arrive.
func TestConnectionsRunInParallel(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(2)
	tb := testTable(t, apiEntry{key: 3, max: 12, handle: func(ctx context.Context, _ *request, req kmsg.Request) (kmsg.Response, error) {
		arrived.Done()
		done := make(chan struct{})
		go func() { arrived.Wait(); close(done) }()
		select {
		case <-done:
			return req.ResponseKind(), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}})
	_, addr := startServer(t, tb, Options{})
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	a.send(kmsg.NewPtrMetadataRequest(), 1)
	b.send(kmsg.NewPtrMetadataRequest(), 2)
	for i, c := range []*rawClient{a, b} {
		if corr := c.readResponse(kmsg.NewPtrMetadataResponse()); corr != int32(i+1) {
			t.Fatalf("conn %d: correlation %d", i, corr)
		}
	}
}

func TestFilesResponse(t *testing.T) {
	dir := t.TempDir()
	content := make([]byte, 3<<20)
	for i := range content {
		content[i] = byte(i*7 + i>>11)
	}
	f := createFile(t, dir, content)

	const off, length = 12345, 2 << 20 // bigger than a socket buffer: sendfile must wait for space
	prefix, suffix := []byte("prefix-bytes"), []byte("suffix")
	var released atomic.Int32
	short := false
	tb := testTable(t, apiEntry{key: 1, advertisedMin: 4, min: 4, max: 16, handle: func(_ context.Context, rc *request, req kmsg.Request) (kmsg.Response, error) {
		resp := req.ResponseKind()
		n := int64(length)
		if short {
			n = int64(len(content)) // runs past the end of the file
		}
		return newFilesResponse(resp, func() { released.Add(1) },
			partBytes(prefix), partFile(f, off, n), partBytes(suffix)), nil
	}})
	_, addr := startServer(t, tb, Options{})

	rc := dialRaw(t, addr)
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12 // flexible: the response header carries a tag byte
	before := sendfileBytes.Load()
	rc.send(req, 9)
	corr, body, err := rc.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte{0}, prefix...), content[off:off+length]...), suffix...)
	if corr != 9 || !bytes.Equal(body, want) {
		t.Fatalf("correlation %d, %d bytes; want 9 and %d identical bytes", corr, len(body), len(want))
	}
	waitFor(t, "release", func() bool { return released.Load() == 1 })
	checkSendfileUsed(t, before, length)

	// A section past the end of its file cannot be framed honestly: the
	// connection closes (the client would otherwise wait for bytes that
	// never come) and the response is still released.
	short = true
	rc2 := dialRaw(t, addr)
	rc2.send(req, 10)
	rc2.expectClosed()
	waitFor(t, "release", func() bool { return released.Load() == 2 })
}

func TestWritePartsOverPipe(t *testing.T) {
	content := []byte("0123456789abcdef")
	f := createFile(t, t.TempDir(), content)
	var buf bytes.Buffer
	n, err := writeParts(&buf, []byte("hd"), []bodyPart{partBytes([]byte("a")), partBytes([]byte("b")), partFile(f, 3, 5), partBytes(nil), partFile(f, 0, 2), partBytes([]byte("z"))})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "hdab34567"+"01"+"z"; got != want || n != int64(len(want)) {
		t.Fatalf("wrote %q (%d), want %q", got, n, want)
	}
	if _, err := writeParts(&buf, nil, []bodyPart{partFile(f, 10, 100)}); err == nil {
		t.Fatal("a section past the end of the file was written without error")
	}
}

func TestServeTwice(t *testing.T) {
	s, _ := startServer(t, defaultAPIs, Options{})
	waitFor(t, "Serve to start", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.serving })
	if err := s.Serve(); err == nil || errors.Is(err, ErrServerClosed) {
		t.Fatalf("second Serve: %v", err)
	}
}

func ExampleServer() {
	s, err := New(Options{Listeners: []Listener{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"}}})
	if err != nil {
		panic(err)
	}
	go func() { _ = s.Serve() }()
	fmt.Println(len(s.Addrs()))
	_ = s.Close()
	// Output: 1
}
