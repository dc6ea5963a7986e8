package broker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeLifecycleController plays the active controller's side of the
// registration protocol with rules set per test.
type fakeLifecycleController struct {
	mu         sync.Mutex
	epoch      int64
	regs       []*kmsg.BrokerRegistrationRequest
	beats      []*kmsg.BrokerHeartbeatRequest
	unfenceAt  int64 // applied offset at which the broker is unfenced
	staleOnce  bool  // answer the next heartbeat STALE_BROKER_EPOCH
	leadsUntil int   // number of shutdown heartbeats before ShouldShutdown
}

func (f *fakeLifecycleController) RegisterBroker(_ context.Context, req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.regs = append(f.regs, req)
	f.epoch += 10
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = f.epoch
	return resp, nil
}

func (f *fakeLifecycleController) Heartbeat(_ context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beats = append(f.beats, req)
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	if req.BrokerEpoch != f.epoch || f.staleOnce {
		f.staleOnce = false
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	resp.IsCaughtUp = req.CurrentMetadataOffset >= f.unfenceAt
	resp.IsFenced = !resp.IsCaughtUp
	if req.WantShutdown {
		if f.leadsUntil > 0 {
			f.leadsUntil--
		} else {
			resp.ShouldShutdown = true
		}
	}
	return resp, nil
}

func (f *fakeLifecycleController) snapshot() (regs int, beats []*kmsg.BrokerHeartbeatRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.regs), append([]*kmsg.BrokerHeartbeatRequest(nil), f.beats...)
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

func TestLifecycleRegistersThenUnfencesWhenCaughtUp(t *testing.T) {
	fc := &fakeLifecycleController{unfenceAt: 5}
	var applied sync.Mutex
	offset := uint64(0)
	l, err := StartLifecycle(LifecycleOptions{
		NodeID: 7, ClusterID: "c1", Rack: "r1",
		Endpoints:  []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}},
		Controller: fc,
		Applied:    func() uint64 { applied.Lock(); defer applied.Unlock(); return offset },
		Interval:   20 * time.Millisecond,
		Logger:     testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	<-l.Registered()
	if l.Epoch() != 10 {
		t.Fatalf("epoch %d, want 10", l.Epoch())
	}
	if !l.Fenced() {
		t.Fatal("a broker behind the metadata log must stay fenced")
	}
	fc.mu.Lock()
	reg := fc.regs[0]
	fc.mu.Unlock()
	if reg.BrokerID != 7 || reg.ClusterID != "c1" || reg.Rack == nil || *reg.Rack != "r1" || len(reg.Listeners) != 1 || reg.Listeners[0].Port != 9092 {
		t.Fatalf("registration carried %+v", reg)
	}
	applied.Lock()
	offset = 5
	applied.Unlock()
	waitUntil(t, "unfence", func() bool { return !l.Fenced() })
}

func TestLifecycleRegistersAgainOnStaleEpoch(t *testing.T) {
	fc := &fakeLifecycleController{}
	l, err := StartLifecycle(LifecycleOptions{NodeID: 1, Controller: fc, Applied: func() uint64 { return 1 }, Interval: 10 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	waitUntil(t, "unfence", func() bool { return !l.Fenced() })
	fc.mu.Lock()
	fc.staleOnce = true
	fc.mu.Unlock()
	waitUntil(t, "second registration", func() bool { n, _ := fc.snapshot(); return n >= 2 })
	waitUntil(t, "new epoch unfenced", func() bool { return l.Epoch() == 20 && !l.Fenced() })
}

func TestLifecycleControlledShutdownWaitsForController(t *testing.T) {
	fc := &fakeLifecycleController{leadsUntil: 3}
	l, err := StartLifecycle(LifecycleOptions{NodeID: 1, Controller: fc, Applied: func() uint64 { return 1 }, Interval: 10 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	<-l.Registered()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if err := l.ControlledShutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_, beats := fc.snapshot()
	var asked int
	for _, b := range beats {
		if b.WantShutdown {
			asked++
		}
	}
	if asked < 4 {
		t.Fatalf("shutdown confirmed after %d WantShutdown heartbeats; the controller needed 4", asked)
	}
}

func TestLifecycleControlledShutdownGivesUpAtDeadline(t *testing.T) {
	fc := &fakeLifecycleController{leadsUntil: 1 << 30}
	l, err := StartLifecycle(LifecycleOptions{NodeID: 1, Controller: fc, Applied: func() uint64 { return 1 }, Interval: 10 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := l.ControlledShutdown(ctx); err == nil {
		t.Fatal("want an error when the controller never confirms")
	}
}

func TestStartLifecycleNeedsController(t *testing.T) {
	if _, err := StartLifecycle(LifecycleOptions{}); err == nil {
		t.Fatal("want an error without a controller")
	}
}

// silentController answers nothing: the quorum is gone.
type silentController struct{ fakeLifecycleController }

func (s *silentController) Heartbeat(context.Context, *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	return nil, context.DeadlineExceeded
}

func TestLifecycleControlledShutdownGivesUpWithoutController(t *testing.T) {
	sc := &silentController{}
	l, err := StartLifecycle(LifecycleOptions{NodeID: 1, Controller: sc, Applied: func() uint64 { return 1 }, Interval: 20 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	<-l.Registered()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	err = l.ControlledShutdown(ctx)
	if !errors.Is(err, ErrNoController) {
		t.Fatalf("got %v, want ErrNoController well before the deadline", err)
	}
}

// The tests above script the controller's answers; this one runs the
// lifecycle against the controller's own rules (the in-memory twin): the
// broker registers fenced, is unfenced once it has applied its
// registration, and ends a controlled shutdown fenced.
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
