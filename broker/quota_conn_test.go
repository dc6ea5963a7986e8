package broker

import (
	"errors"
	"net"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// connServed reports whether a new connection gets its ApiVersions answer
// (false: closed unserved).
func connServed(t *testing.T, addr string) bool {
	t.Helper()
	r := dialRaw(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	r.send(req, 1)
	_, _, err := r.readFrame()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("neither answered nor closed: %v", err)
	}
	return err == nil // EOF or a reset: closed unserved
}

// connection_creation_rate on the default ip entity: the connections over
// the rate are closed unserved and counted; they do not use the budget.
func TestConnectionCreationRatePerIP(t *testing.T) {
	img := imageOf(t, &metadata.ClientQuota{Entity: metadata.QuotaEntity{{Type: metadata.QuotaEntityIP, Default: true}}, Key: metadata.QuotaConnectionCreationRate, Value: 3})
	s, addr := startServer(t, defaultAPIs, Options{Deps: Deps{Metadata: staticMetadata{img: img}}})
	served := 0
	for range 8 {
		if connServed(t, addr) {
			served++
		}
	}
	// The window is at least one second and the dials take far less: 3
	// served, 5 refused (a slower machine can only serve more, up to
	// the rate over the time taken).
	if served < 3 || served > 5 {
		t.Fatalf("%d of 8 connections served at connection_creation_rate=3", served)
	}
	if got := s.Counters().RejectedFor(ReasonConnectionThrottled); got != uint64(8-served) {
		t.Fatalf("%d throttled connections counted, want %d", got, 8-served)
	}
}

// Without a quota every connection is served.
func TestConnectionCreationRateUnset(t *testing.T) {
	_, addr := startServer(t, defaultAPIs, Options{Deps: Deps{Metadata: staticMetadata{img: imageOf(t)}}})
	for i := range 8 {
		if !connServed(t, addr) {
			t.Fatalf("connection %d refused without a quota", i)
		}
	}
}

// max.connection.creation.rate delays accepting, never refuses: every
// connection is served.
func TestMaxConnectionCreationRateDelaysAccepting(t *testing.T) {
	cfg := nodeConfig(t, "max.connection.creation.rate=2\n")
	s, addr := startServer(t, defaultAPIs, Options{Config: cfg, Deps: Deps{Metadata: staticMetadata{img: imageOf(t)}}})
	for i := range 4 {
		if !connServed(t, addr) {
			t.Fatalf("connection %d refused", i)
		}
	}
	if n := s.connRates.broker; n == nil {
		t.Fatal("the broker-wide rate was not measured")
	}
}

// request_percentage: a client over its share of handler time gets
// throttle_time_ms; a client without the quota beside it does not.
func TestRequestPercentageThrottles(t *testing.T) {
	img := imageOf(t, &metadata.ClientQuota{Entity: metadata.QuotaEntity{{Type: metadata.QuotaEntityClientID, Name: "greedy"}}, Key: metadata.QuotaRequestPercentage, Value: 0.0001})
	_, addr := startServer(t, defaultAPIs, Options{Deps: Deps{Metadata: staticMetadata{img: img}}})
	throttled := func(clientID string, n int) int32 {
		r := dialRaw(t, addr)
		var most int32
		for i := range n {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 12
			r.write(kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, int32(i)))
			resp := kmsg.NewPtrMetadataResponse()
			resp.Version = 12
			r.readResponse(resp)
			most = max(most, resp.ThrottleMillis)
		}
		return most
	}
	// One request: the answer carries the throttle and the connection's
	// next request would wait it out (up to the whole window).
	if got := throttled("greedy", 1); got <= 0 {
		t.Fatalf("greedy client: throttle_time_ms %d, want > 0", got)
	}
	if got := throttled("other", 5); got != 0 {
		t.Fatalf("client without a quota: throttle_time_ms %d", got)
	}
}
