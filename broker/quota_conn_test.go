package broker

import (
	"errors"
	"math"
	"net"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/config"
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

// The accept throttle of KIP-612 with a fake clock: a listener's own
// limit holds that listener only, the inter-broker listener included; the
// broker-wide limit holds every listener but the inter-broker one; the
// longer of the two throttles wins.
func TestAcceptThrottle(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	for _, tc := range []struct {
		name        string
		broker      float64
		perListener map[string]float64
		listener    string
		interBroker bool
		conns       int
		wantLast    bool // the last connection is throttled
	}{
		{"listener limit: under it", 0, map[string]float64{"EXTERNAL": 3}, "EXTERNAL", false, 3, false},
		{"listener limit: over it", 0, map[string]float64{"EXTERNAL": 3}, "EXTERNAL", false, 4, true},
		{"listener limit: another listener is free", 0, map[string]float64{"EXTERNAL": 1}, "INTERNAL", false, 10, false},
		{"listener limit applies to the inter-broker listener", 0, map[string]float64{"INTERNAL": 1}, "INTERNAL", true, 2, true},
		{"broker limit skips the inter-broker listener", 1, nil, "INTERNAL", true, 10, false},
		{"broker limit holds another listener", 1, nil, "EXTERNAL", false, 2, true},
		{"unset: max int32 is no limit", math.MaxInt32, map[string]float64{"EXTERNAL": math.MaxInt32}, "EXTERNAL", false, 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &connectionRates{m: newQuotaManager(time.Second, 11, clock), limit: tc.broker, perListen: tc.perListener}
			var d time.Duration
			for i := range tc.conns {
				d = cr.acceptThrottle(tc.listener, tc.interBroker)
				if i < tc.conns-1 && d > 0 && !tc.wantLast {
					t.Fatalf("connection %d throttled %v", i, d)
				}
			}
			if (d > 0) != tc.wantLast {
				t.Fatalf("last of %d connections: throttle %v, want throttled %v", tc.conns, d, tc.wantLast)
			}
		})
	}
	// Both limits: the longer throttle wins.
	cr := &connectionRates{m: newQuotaManager(time.Second, 11, clock), limit: 2, perListen: map[string]float64{"EXTERNAL": 1}}
	only := &connectionRates{m: newQuotaManager(time.Second, 11, clock), limit: 2}
	var both, broker time.Duration
	for range 3 {
		both, broker = cr.acceptThrottle("EXTERNAL", false), only.acceptThrottle("EXTERNAL", false)
	}
	if both <= broker {
		t.Fatalf("throttle with the listener limit too %v, broker limit alone %v: want longer", both, broker)
	}
}

// listener.name.<l>.max.connection.creation.rate reaches the server, and
// the accept loop of that listener is throttled by it.
func TestListenerMaxConnectionCreationRateApplied(t *testing.T) {
	cfg, warnings, err := config.Parse([]byte(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:9093
listeners=CLIENT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
listener.security.protocol.map=CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=CLIENT
controller.listener.names=CONTROLLER
log.dirs=x
listener.name.client.max.connection.creation.rate=2
`), nil)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("config: %v %v", err, warnings)
	}
	s, addr := startServer(t, defaultAPIs, Options{Config: cfg, Deps: Deps{Metadata: staticMetadata{img: imageOf(t)}}})
	for i := range 3 {
		if !connServed(t, addr) {
			t.Fatalf("connection %d refused: the limit delays accepting, it never refuses", i)
		}
	}
	s.connRates.mu.Lock()
	defer s.connRates.mu.Unlock()
	// CLIENT is the inter-broker listener: the broker-wide rate skips it.
	if s.connRates.listeners["CLIENT"] == nil || s.connRates.broker != nil {
		t.Fatalf("samplers: listener %v, broker %v; want the CLIENT listener's only", s.connRates.listeners, s.connRates.broker)
	}
}
