package raftfsm

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// t0 is the fake clock's origin for the decision tests.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestConfirmsDeath(t *testing.T) {
	live := metadata.BrokerRegistration{ID: 2, Epoch: 40}
	fenced := live
	fenced.Fenced = true
	started := t0.Add(5 * time.Second)
	before := started.Add(-300 * time.Millisecond)
	for _, tc := range []struct {
		name       string
		b          metadata.BrokerRegistration
		registered bool
		epoch      int64
		out        ProbeOutcome
		heard      time.Time
		want       bool
	}{
		{"every listener refused, silent since before the probe", live, true, 40, ProbeRefused, before, true},
		{"refused, never heard by this controller", live, true, 40, ProbeRefused, time.Time{}, true},
		{"a listener answered (stopped or paused process)", live, true, 40, ProbeAnswered, before, false},
		{"dial timed out (host gone or partitioned): session timeout decides", live, true, 40, ProbeInconclusive, before, false},
		{"heartbeat at the probe's start", live, true, 40, ProbeRefused, started, false},
		{"heartbeat during the probe", live, true, 40, ProbeRefused, started.Add(time.Millisecond), false},
		{"re-registered since (a new process, new epoch)", live, true, 39, ProbeRefused, before, false},
		{"already fenced", fenced, true, 40, ProbeRefused, before, false},
		{"unregistered", metadata.BrokerRegistration{}, false, 40, ProbeRefused, before, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := confirmsDeath(tc.b, tc.registered, tc.epoch, tc.out, started, tc.heard); got != tc.want {
				t.Fatalf("confirmsDeath = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeathWatchPacing(t *testing.T) {
	w := newDeathWatch(2 * time.Second)
	now := t0
	if !w.start(1, now, eventProbeSpacing) {
		t.Fatal("first suspicion did not start a probe")
	}
	if w.start(1, now.Add(time.Second), 0) {
		t.Fatal("a second probe started while one is in flight")
	}
	if !w.start(2, now, eventProbeSpacing) {
		t.Fatal("another broker's probe waits on the first's")
	}
	w.finished(1)
	if w.start(1, now.Add(50*time.Millisecond), eventProbeSpacing) {
		t.Fatal("a probe started within eventProbeSpacing of the last")
	}
	if !w.start(1, now.Add(eventProbeSpacing), eventProbeSpacing) {
		t.Fatal("no probe after eventProbeSpacing")
	}
	w.finished(1)
	if w.start(1, now.Add(eventProbeSpacing+500*time.Millisecond), w.overdueSpacing()) {
		t.Fatal("an overdue probe repeated within half a heartbeat interval")
	}
	if !w.start(1, now.Add(eventProbeSpacing+time.Second), w.overdueSpacing()) {
		t.Fatal("no overdue probe after half a heartbeat interval")
	}
	w.forget(1)
	if !w.start(1, now.Add(eventProbeSpacing+time.Second), eventProbeSpacing) {
		t.Fatal("a forgotten broker is still paced")
	}
}

func TestDeathWatchOverdue(t *testing.T) {
	w := newDeathWatch(2 * time.Second)
	for _, tc := range []struct {
		since time.Duration
		want  bool
	}{
		{0, false}, {2 * time.Second, false}, {3 * time.Second, false}, {3*time.Second + time.Millisecond, true}, {8 * time.Second, true},
	} {
		if got := w.overdue(t0, t0.Add(tc.since)); got != tc.want {
			t.Errorf("overdue after %v = %v, want %v", tc.since, got, tc.want)
		}
	}
}

func TestSuspectedBrokersTag(t *testing.T) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	if got := suspectedBrokers(req); got != nil {
		t.Fatalf("no tag read as %v", got)
	}
	SetSuspectedBrokers(req, []int32{3, 1, 70000})
	req.SetVersion(req.MaxVersion())
	// Through the wire, as a forwarded heartbeat goes.
	b := req.AppendTo(nil)
	back := kmsg.NewPtrBrokerHeartbeatRequest()
	back.SetVersion(req.MaxVersion())
	if err := back.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if got := suspectedBrokers(back); !slices.Equal(got, []int32{3, 1, 70000}) {
		t.Fatalf("round trip: %v", got)
	}
	bad := kmsg.NewPtrBrokerHeartbeatRequest()
	bad.UnknownTags.Set(SuspectedBrokersTag, []byte{1, 2, 3})
	if got := suspectedBrokers(bad); got != nil {
		t.Fatalf("malformed tag read as %v", got)
	}
}

// TestTCPProber checks the three outcomes on real sockets: a listener that
// is open answers even when nothing accepts (the kernel's accept queue, as
// for a SIGSTOPped process), a closed port refuses.
func TestTCPProber(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // never Accept: a stopped process does not either
	open := endpointOf(t, ln.Addr().String())
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := endpointOf(t, gone.Addr().String())
	gone.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got := TCPProber(ctx, []metadata.Endpoint{open}); got != ProbeAnswered {
		t.Errorf("open listener: %v", got)
	}
	if got := TCPProber(ctx, []metadata.Endpoint{closed}); got != ProbeRefused {
		t.Errorf("closed port: %v", got)
	}
	if got := TCPProber(ctx, []metadata.Endpoint{closed, open}); got != ProbeAnswered {
		t.Errorf("one of two listeners open: %v", got)
	}
	if got := TCPProber(ctx, nil); got != ProbeInconclusive {
		t.Errorf("no endpoints: %v", got)
	}
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if got := TCPProber(done, []metadata.Endpoint{open}); got != ProbeInconclusive {
		t.Errorf("ended context: %v", got)
	}
}

func endpointOf(t *testing.T, addr string) metadata.Endpoint {
	t.Helper()
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(ps)
	return metadata.Endpoint{Listener: "CLIENT", Host: host, Port: uint16(p)}
}

// TestControllerFencesOnRefusedProbe runs the decision on a real
// controller: with a 30 s session timeout, a broker that stops
// heartbeating and whose listeners refuse (the prober says so) is fenced,
// with its leaderships moved, once its heartbeat is overdue; one whose
// listeners answer (a stopped process) is probed just as often and stays
// unfenced.
func TestControllerFencesOnRefusedProbe(t *testing.T) {
	var mu sync.Mutex
	dead := map[uint16]bool{}
	probes := map[uint16]int{}
	tc := startCluster(t, 3, func(c *Config) {
		c.SessionTimeout = 30 * time.Second
		c.Prober = func(_ context.Context, eps []metadata.Endpoint) ProbeOutcome {
			mu.Lock()
			defer mu.Unlock()
			probes[eps[0].Port]++
			if dead[eps[0].Port] {
				return ProbeRefused
			}
			return ProbeAnswered
		}
	})
	tc.leader(10 * time.Second)
	brokers := startBrokers(t, tc, 3)
	c := NewControllerClient(ClientConfig{Voters: tc.voters, Waiter: tc.nodes[0]})
	defer c.Close()
	mustCreate(t, c, "probed", 6, 3)
	port := func(b *fakeBroker) uint16 { return uint16(9000 + b.id) }
	stopped, killed := brokers[0], brokers[1]

	mu.Lock()
	dead[port(killed)] = true
	mu.Unlock()
	stopped.pause(true)
	killed.pause(true)
	start := time.Now()
	waitFor(t, 10*time.Second, "the broker whose listeners refuse fenced", func() bool {
		img, _ := tc.nodes[0].Current()
		b, ok := img.Broker(killed.id)
		return ok && b.Fenced && ledBy(img, killed.id) == 0
	})
	t.Logf("fenced %v after its heartbeats stopped (session timeout 30 s)", time.Since(start).Round(time.Millisecond))
	waitFor(t, 10*time.Second, "the stopped broker probed again and again", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return probes[port(stopped)] >= 3
	})
	img, _ := tc.nodes[0].Current()
	if b, ok := img.Broker(stopped.id); !ok || b.Fenced {
		t.Fatalf("the broker whose listeners answer was fenced: %+v", b)
	}
	if ledBy(img, stopped.id) == 0 {
		t.Fatalf("the stopped broker lost its leaderships")
	}
}
