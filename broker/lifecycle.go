package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LifecycleController is what the broker's registration and heartbeats need
// from the active controller. *raftfsm.ControllerClient satisfies it.
type LifecycleController interface {
	RegisterBroker(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error)
	Heartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error)
}

// LifecycleOptions configure a Lifecycle.
type LifecycleOptions struct {
	NodeID    int32
	ClusterID string
	Rack      string
	// Endpoints are the advertised listeners other brokers and clients dial.
	Endpoints  []metadata.Endpoint
	Controller LifecycleController
	// Applied is the Raft index of the newest metadata this node applied:
	// the controller unfences the broker once it has caught up.
	Applied func() uint64
	// Interval is broker.heartbeat.interval.ms.
	Interval time.Duration
	Logger   zerolog.Logger
	// MarkSuspects, when set, puts the brokers Suspect named into a
	// heartbeat request (raftfsm.SetSuspectedBrokers); without it Suspect
	// does nothing.
	MarkSuspects func(req *kmsg.BrokerHeartbeatRequest, ids []int32)
	// MarkOffline, when set, puts this broker's failed log dirs and the
	// replicas that were in them into every heartbeat (OfflineLogDirs,
	// raftfsm.SetOfflineReplicas), so the controller moves them away and
	// a new controller learns them from the next heartbeat.
	MarkOffline func(req *kmsg.BrokerHeartbeatRequest)
}

// Lifecycle keeps a broker registered with the active controller, as a KRaft
// broker does: register for a new epoch (fenced), heartbeat every interval
// with the applied metadata offset (the controller unfences a caught-up
// broker and fences a silent one), register again when the controller no
// longer knows the epoch, and on shutdown ask to leave cleanly.
//
// One goroutine runs the heartbeats; Epoch, Fenced and ControlledShutdown
// may be called from any goroutine.
type Lifecycle struct {
	opts        LifecycleOptions
	incarnation [16]byte
	epoch       atomic.Int64
	fenced      atomic.Bool
	lastAnswer  atomic.Int64  // unix nanos of the controller's last answer
	registered  chan struct{} // closed after the first successful registration
	regOnce     sync.Once

	shutdownMu   sync.Mutex
	wantShutdown bool
	shouldStop   chan struct{} // closed when the controller says ShouldShutdown
	stopOnce     sync.Once

	// suspects are the brokers to name in the next heartbeat, which
	// nudge sends early (Suspect).
	suspectMu sync.Mutex
	suspects  []int32
	nudge     chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

// StartLifecycle registers in the background and heartbeats until Close.
func StartLifecycle(opts LifecycleOptions) (*Lifecycle, error) {
	if opts.Controller == nil || opts.Applied == nil {
		return nil, errors.New("broker: lifecycle needs a controller client and an applied-offset source")
	}
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	l := &Lifecycle{opts: opts, registered: make(chan struct{}), shouldStop: make(chan struct{}), done: make(chan struct{}),
		nudge: make(chan struct{}, 1)}
	if _, err := rand.Read(l.incarnation[:]); err != nil {
		return nil, fmt.Errorf("broker: incarnation id: %w", err)
	}
	l.epoch.Store(-1)
	l.fenced.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go l.run(ctx)
	return l, nil
}

// Epoch is the broker epoch of the current registration, -1 before one.
func (l *Lifecycle) Epoch() int64 { return l.epoch.Load() }

// Fenced reports whether the controller has this broker fenced (true until
// the first heartbeat that unfences it).
func (l *Lifecycle) Fenced() bool { return l.fenced.Load() }

// Registered is closed once the broker holds an epoch.
func (l *Lifecycle) Registered() <-chan struct{} { return l.registered }

// ControlledShutdown asks the controller to move this broker's leaderships
// away and take it out of the ISRs, and waits until the controller says it
// may stop or ctx ends. Heartbeats continue meanwhile, faster than usual.
func (l *Lifecycle) ControlledShutdown(ctx context.Context) error {
	l.shutdownMu.Lock()
	l.wantShutdown = true
	l.shutdownMu.Unlock()
	// With no controller answering there is nobody to move leaderships to
	// or to confirm the shutdown (the last node of a cluster being stopped
	// is the usual case): waiting out the whole deadline would only delay
	// the stop, so give up once the controller has been silent for a few
	// heartbeat intervals.
	silence := max(3*l.opts.Interval, time.Second)
	l.lastAnswer.CompareAndSwap(0, time.Now().UnixNano())
	tick := time.NewTicker(l.opts.Interval / 2)
	defer tick.Stop()
	for {
		select {
		case <-l.shouldStop:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("broker: controlled shutdown not confirmed: %w", ctx.Err())
		case <-l.done:
			return errors.New("broker: lifecycle closed before controlled shutdown finished")
		case <-tick.C:
			if quiet := time.Since(time.Unix(0, l.lastAnswer.Load())); quiet > silence {
				return fmt.Errorf("%w for %v", ErrNoController, quiet.Round(time.Millisecond))
			}
		}
	}
}

// ErrNoController is ControlledShutdown giving up because no controller
// answered: the metadata quorum is gone, so nothing can be moved.
var ErrNoController = errors.New("broker: controlled shutdown abandoned: no controller has answered")

// Suspect reports that this broker's connection to broker id broke the way
// a dead process's does (a follower's fetch connection to its leader): the
// next heartbeat, sent now rather than at the interval, names it, and the
// controller probes it (raftfsm liveness.go). It does not block.
func (l *Lifecycle) Suspect(id int32) {
	if l.opts.MarkSuspects == nil || id == l.opts.NodeID {
		return
	}
	l.suspectMu.Lock()
	if !slices.Contains(l.suspects, id) {
		l.suspects = append(l.suspects, id)
	}
	l.suspectMu.Unlock()
	select {
	case l.nudge <- struct{}{}:
	default:
	}
}

// Nudge sends the next heartbeat now rather than at the interval (a log
// dir failed: the controller should move its partitions at once). It
// does not block.
func (l *Lifecycle) Nudge() {
	select {
	case l.nudge <- struct{}{}:
	default:
	}
}

// takeSuspects returns and clears the brokers to name.
func (l *Lifecycle) takeSuspects() []int32 {
	l.suspectMu.Lock()
	defer l.suspectMu.Unlock()
	ids := l.suspects
	l.suspects = nil
	return ids
}

// Close stops the heartbeats. The controller fences the broker once its
// session times out, unless a controlled shutdown came first.
func (l *Lifecycle) Close() {
	l.cancel()
	<-l.done
}

func (l *Lifecycle) shuttingDown() bool {
	l.shutdownMu.Lock()
	defer l.shutdownMu.Unlock()
	return l.wantShutdown
}

func (l *Lifecycle) run(ctx context.Context) {
	defer close(l.done)
	log := l.opts.Logger
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if l.epoch.Load() < 0 {
			if err := l.register(ctx); err != nil {
				if ctx.Err() == nil {
					log.Warn().Err(err).Msg("broker registration failed; retrying")
				}
				if !sleepCtx(ctx, backoff) {
					return
				}
				backoff = min(2*backoff, l.opts.Interval)
				continue
			}
			backoff = 100 * time.Millisecond
		}
		if err := l.heartbeat(ctx); err != nil && ctx.Err() == nil {
			log.Warn().Err(err).Msg("broker heartbeat failed")
		}
		wait := l.opts.Interval
		if l.shuttingDown() || l.fenced.Load() {
			// Catching up and shutting down are both waits on the
			// controller's answer: ask more often than the session
			// heartbeat needs.
			wait = min(wait, 200*time.Millisecond)
		}
		if !l.sleepOrNudge(ctx, wait) {
			return
		}
	}
}

// minNudgeGap spaces heartbeats sent early for suspects, so a fetcher
// failing in a loop cannot turn them into a flood.
const minNudgeGap = 50 * time.Millisecond

// sleepOrNudge waits d, or less once a suspect is to be reported (but at
// least minNudgeGap); false when ctx ends.
func (l *Lifecycle) sleepOrNudge(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	case <-l.nudge:
		return sleepCtx(ctx, min(d, minNudgeGap))
	}
}

func (l *Lifecycle) register(ctx context.Context) error {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID = l.opts.NodeID
	req.ClusterID = l.opts.ClusterID
	req.IncarnationID = l.incarnation
	if l.opts.Rack != "" {
		rack := l.opts.Rack
		req.Rack = &rack
	}
	for _, e := range l.opts.Endpoints {
		ln := kmsg.NewBrokerRegistrationRequestListener()
		ln.Name, ln.Host, ln.Port, ln.SecurityProtocol = e.Listener, e.Host, e.Port, e.SecurityProtocol
		req.Listeners = append(req.Listeners, ln)
	}
	req.PreviousBrokerEpoch = -1
	rctx, cancel := context.WithTimeout(ctx, 4*l.opts.Interval)
	defer cancel()
	resp, err := l.opts.Controller.RegisterBroker(rctx, req)
	if err != nil {
		return err
	}
	l.lastAnswer.Store(time.Now().UnixNano())
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	l.epoch.Store(resp.BrokerEpoch)
	l.fenced.Store(true)
	l.regOnce.Do(func() { close(l.registered) })
	l.opts.Logger.Info().Int64("broker_epoch", resp.BrokerEpoch).Msg("registered with the controller")
	return nil
}

func (l *Lifecycle) heartbeat(ctx context.Context) error {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID = l.opts.NodeID
	req.BrokerEpoch = l.epoch.Load()
	req.CurrentMetadataOffset = int64(l.opts.Applied())
	req.WantShutdown = l.shuttingDown()
	suspects := l.takeSuspects()
	if len(suspects) > 0 {
		l.opts.MarkSuspects(req, suspects)
	}
	if l.opts.MarkOffline != nil {
		l.opts.MarkOffline(req)
	}
	hctx, cancel := context.WithTimeout(ctx, 2*l.opts.Interval)
	defer cancel()
	resp, err := l.opts.Controller.Heartbeat(hctx, req)
	if err != nil {
		if len(suspects) > 0 {
			// Name them again in the next one.
			l.suspectMu.Lock()
			for _, id := range suspects {
				if !slices.Contains(l.suspects, id) {
					l.suspects = append(l.suspects, id)
				}
			}
			l.suspectMu.Unlock()
		}
		return err
	}
	l.lastAnswer.Store(time.Now().UnixNano())
	switch err := kerr.ErrorForCode(resp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.StaleBrokerEpoch), errors.Is(err, kerr.BrokerIDNotRegistered):
		// The controller no longer knows this registration (fenced and
		// replaced, or a restored image): register for a new epoch.
		l.opts.Logger.Warn().Err(err).Msg("controller dropped our registration; registering again")
		l.epoch.Store(-1)
		l.fenced.Store(true)
		return nil
	default:
		return err
	}
	if was := l.fenced.Swap(resp.IsFenced); was != resp.IsFenced {
		if resp.IsFenced && resp.ShouldShutdown {
			l.opts.Logger.Info().Msg("controlled shutdown granted: broker fenced, leaderships moved")
		} else if resp.IsFenced {
			l.opts.Logger.Warn().Msg("broker fenced by the controller")
		} else {
			l.opts.Logger.Info().Msg("broker unfenced: serving as a member of the cluster")
		}
	}
	if resp.ShouldShutdown {
		l.stopOnce.Do(func() { close(l.shouldStop) })
	}
	return nil
}

// sleepCtx waits d or until ctx ends; it reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
