package broker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every lifecycle test runs against the controller's own rules (the
// in-memory twin). Where a test needs an answer the controller would not
// give on its own, holdShutdown delegates to the twin and changes only
// that answer.

// holdShutdown is the twin's controller client with a controller that is
// slow to let a broker go: it withholds ShouldShutdown from the first
// hold heartbeats that ask for a shutdown, and counts those heartbeats.
type holdShutdown struct {
	*raftfsm.ControllerClient
	hold  int64
	asked atomic.Int64 // WantShutdown heartbeats answered
}

func (h *holdShutdown) Heartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	resp, err := h.ControllerClient.Heartbeat(ctx, req)
	if err != nil || !req.WantShutdown {
		return resp, err
	}
	if h.asked.Add(1) <= h.hold {
		resp.ShouldShutdown = false
	}
	return resp, nil
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startTwinLifecycle runs a lifecycle for broker id against node, through
// ctrl when set (else node's client), reporting node's applied index.
func startTwinLifecycle(t *testing.T, node *raftfsm.Node, id int32, ctrl LifecycleController) *Lifecycle {
	t.Helper()
	if ctrl == nil {
		ctrl = node.Client()
	}
	img, _ := node.Current()
	l, err := StartLifecycle(LifecycleOptions{
		NodeID: id, ClusterID: img.ClusterID(), Controller: ctrl,
		Applied:  func() uint64 { _, i := node.Current(); return i },
		Interval: 10 * time.Millisecond,
		Logger:   testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func TestLifecycleRegistersThenUnfencesWhenCaughtUp(t *testing.T) {
	node := startTwin(t, imageOf(t, &metadata.ClusterID{ID: "c1"}), nil)
	// The broker reports offset 0 until the test lets it catch up, and
	// counts how often it was asked (once per heartbeat, in order).
	var caughtUp atomic.Bool
	var asked atomic.Int64
	l, err := StartLifecycle(LifecycleOptions{
		NodeID: 7, ClusterID: "c1", Rack: "r1",
		Endpoints:  []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}},
		Controller: node.Client(),
		Applied: func() uint64 {
			asked.Add(1)
			if !caughtUp.Load() {
				return 0
			}
			_, i := node.Current()
			return i
		},
		Interval: 20 * time.Millisecond,
		Logger:   testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	<-l.Registered()
	if l.Epoch() <= 0 {
		t.Fatalf("epoch %d, want a new positive epoch from the controller", l.Epoch())
	}
	img, _ := node.Current()
	reg, ok := img.Broker(7)
	if !ok || reg.Epoch != l.Epoch() || reg.Rack != "r1" || len(reg.Endpoints) != 1 || reg.Endpoints[0].Port != 9092 || reg.Endpoints[0].Host != "127.0.0.1" {
		t.Fatalf("registration in the image: %+v (registered %v), lifecycle epoch %d", reg, ok, l.Epoch())
	}
	// The third call means the controller has answered two heartbeats
	// that reported offset 0, before the registration's own offset.
	waitUntil(t, "two heartbeats behind the metadata log", func() bool { return asked.Load() >= 3 })
	if img, _ := node.Current(); !l.Fenced() || !brokerFenced(img, 7) {
		t.Fatal("a broker behind the metadata log must stay fenced")
	}
	caughtUp.Store(true)
	waitUntil(t, "unfence", func() bool { return !l.Fenced() })
	if img, _ := node.Current(); brokerFenced(img, 7) {
		t.Fatal("lifecycle unfenced, the image still has broker 7 fenced")
	}
}

// The controller stops knowing the lifecycle's epoch when the broker id is
// registered again behind its back; the lifecycle must register for a new
// epoch and be unfenced under it.
func TestLifecycleRegistersAgainOnStaleEpoch(t *testing.T) {
	node := startTwin(t, imageOf(t, &metadata.ClusterID{ID: "c1"}), nil)
	l := startTwinLifecycle(t, node, 1, nil)
	waitUntil(t, "unfence", func() bool { return !l.Fenced() })
	first := l.Epoch()

	// The same incarnation, so the controller takes it as this broker
	// registering again rather than a duplicate.
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID, req.PreviousBrokerEpoch = 1, "c1", l.incarnation, -1
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	resp, err := node.Client().RegisterBroker(ctx, req)
	if err != nil || resp.ErrorCode != 0 || resp.BrokerEpoch <= first {
		t.Fatalf("registering behind the lifecycle's back: %+v, %v", resp, err)
	}
	taken := resp.BrokerEpoch

	waitUntil(t, "a new epoch, registered by the lifecycle and unfenced", func() bool {
		img, _ := node.Current()
		b, ok := img.Broker(1)
		e := l.Epoch()
		return e > taken && !l.Fenced() && ok && b.Epoch == e && !b.Fenced
	})
}

func TestLifecycleControlledShutdownWaitsForController(t *testing.T) {
	node := startTwin(t, imageOf(t, &metadata.ClusterID{ID: "c1"}), nil)
	ctrl := &holdShutdown{ControllerClient: node.Client(), hold: 3}
	l := startTwinLifecycle(t, node, 1, ctrl)
	<-l.Registered()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if err := l.ControlledShutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if asked := ctrl.asked.Load(); asked < 4 {
		t.Fatalf("shutdown confirmed after %d WantShutdown heartbeats; the controller needed 4", asked)
	}
	if img, _ := node.Current(); !brokerFenced(img, 1) {
		t.Fatal("broker 1 not fenced after its controlled shutdown")
	}
}

func TestLifecycleControlledShutdownGivesUpAtDeadline(t *testing.T) {
	node := startTwin(t, imageOf(t, &metadata.ClusterID{ID: "c1"}), nil)
	l := startTwinLifecycle(t, node, 1, &holdShutdown{ControllerClient: node.Client(), hold: 1 << 62})
	<-l.Registered()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := l.ControlledShutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline's error when the controller never confirms", err)
	}
}

func TestStartLifecycleNeedsController(t *testing.T) {
	if _, err := StartLifecycle(LifecycleOptions{}); err == nil {
		t.Fatal("want an error without a controller")
	}
}

// The quorum is gone: the twin stops, so no controller answers.
func TestLifecycleControlledShutdownGivesUpWithoutController(t *testing.T) {
	node := startTwin(t, imageOf(t, &metadata.ClusterID{ID: "c1"}), nil)
	l := startTwinLifecycle(t, node, 1, nil)
	waitUntil(t, "unfence", func() bool { return !l.Fenced() })
	if err := node.Shutdown(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if err := l.ControlledShutdown(ctx); !errors.Is(err, ErrNoController) {
		t.Fatalf("got %v, want ErrNoController well before the deadline", err)
	}
}

// The whole life of a broker with nothing injected: it registers fenced,
// is unfenced once it has applied its registration, and ends a controlled
// shutdown fenced.
func TestLifecycleWithTwin(t *testing.T) {
	node := startTwin(t, imageOf(t, &metadata.ClusterID{ID: "c1"}), nil)
	l, err := StartLifecycle(LifecycleOptions{
		NodeID: 7, ClusterID: "c1",
		Endpoints:  []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}},
		Controller: node.Client(),
		Applied:    func() uint64 { _, i := node.Current(); return i },
		Interval:   10 * time.Millisecond,
		Logger:     testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	<-l.Registered()
	waitUntil(t, "unfence", func() bool { return !l.Fenced() })
	img, _ := node.Current()
	if b, ok := img.Broker(7); !ok || b.Fenced || b.Epoch != l.Epoch() {
		t.Fatalf("broker 7 in the image: %+v (registered %v), lifecycle epoch %d", b, ok, l.Epoch())
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if err := l.ControlledShutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if img, _ := node.Current(); !brokerFenced(img, 7) {
		t.Fatal("broker 7 not fenced after its controlled shutdown")
	}
}

func brokerFenced(img *metadata.Image, id int32) bool {
	b, ok := img.Broker(id)
	return ok && b.Fenced
}

// suspectRecorder is the twin's controller client that records the
// SuspectedBrokersTag of every heartbeat.
type suspectRecorder struct {
	*raftfsm.ControllerClient
	beats    atomic.Int64
	suspects atomic.Pointer[[]byte]
}

func (s *suspectRecorder) Heartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	s.beats.Add(1)
	req.UnknownTags.Each(func(k uint32, v []byte) {
		if k == raftfsm.SuspectedBrokersTag {
			b := append([]byte(nil), v...)
			s.suspects.Store(&b)
		}
	})
	return s.ControllerClient.Heartbeat(ctx, req)
}

// TestLifecycleSuspectSendsHeartbeatAtOnce: with an hour between
// heartbeats, Suspect makes the next one go now, naming the broker; a
// broker never names itself.
func TestLifecycleSuspectSendsHeartbeatAtOnce(t *testing.T) {
	node := startTwin(t, imageOf(t, &metadata.ClusterID{ID: "c1"}), nil)
	rec := &suspectRecorder{ControllerClient: node.Client()}
	l, err := StartLifecycle(LifecycleOptions{
		NodeID: 7, ClusterID: "c1", Controller: rec,
		Applied:      func() uint64 { _, i := node.Current(); return i },
		Interval:     time.Hour,
		Logger:       testLogger(t),
		MarkSuspects: raftfsm.SetSuspectedBrokers,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	waitUntil(t, "unfenced", func() bool { return !l.Fenced() })
	before := rec.beats.Load()
	l.Suspect(7) // itself: nothing to report
	l.Suspect(3)
	waitUntil(t, "a heartbeat naming broker 3", func() bool {
		b := rec.suspects.Load()
		return b != nil && string(*b) == "\x00\x00\x00\x03"
	})
	if n := rec.beats.Load() - before; n != 1 {
		t.Fatalf("%d heartbeats after Suspect, want 1", n)
	}
}
