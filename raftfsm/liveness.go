package raftfsm

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fast death detection. The session timeout (broker.session.timeout.ms, 9 s)
// is what it takes to tell a dead broker from a slow one by silence alone. A
// process that dies has its sockets closed by the kernel: its connections
// end (the controller's RPC connections from it, the followers' fetch
// connections to it) and, above all, its listening sockets are gone, so a
// fresh TCP dial to its listener is refused at once. A process that is
// stopped (SIGSTOP), paused by its garbage collector or just slow keeps its
// listening sockets open, and the kernel completes the handshake of a new
// connection into the accept queue whether or not the process runs, so the
// dial succeeds.
//
// So the controller fences early only on proof: a broker is *suspected* (an
// RPC connection it heartbeated on ended, a follower's fetch connection to
// it failed and the follower said so in its heartbeat, its heartbeat is
// overdue, or this controller just took over), the controller dials every
// listener the broker registered (off its loop), and only when every one of
// them refuses, and no heartbeat of that broker arrived after the probe
// started, does it fence that broker epoch and move its leaderships to the
// live ISR in one entry. An answered dial or one that times out (a host that
// is gone, a network partition) proves nothing; the session timeout still
// decides those. A false suspicion costs one loopback-fast dial.

// ProbeOutcome is what dialing a broker's listeners showed.
type ProbeOutcome int8

const (
	// ProbeInconclusive: a dial failed other than by refusal (timeout, no
	// route) and none was answered. Nothing is decided on it.
	ProbeInconclusive ProbeOutcome = iota
	// ProbeAnswered: a listener accepted the connection; a process holds
	// it (alive, stopped, or paused).
	ProbeAnswered
	// ProbeRefused: every listener refused the connection; no process
	// holds any of them.
	ProbeRefused
)

func (o ProbeOutcome) String() string {
	switch o {
	case ProbeAnswered:
		return "answered"
	case ProbeRefused:
		return "refused"
	}
	return "inconclusive"
}

// Prober dials a broker's registered listeners and says what it found. It
// must return by ctx's deadline.
type Prober func(ctx context.Context, eps []metadata.Endpoint) ProbeOutcome

// TCPProber is the Prober for real listeners: a plain TCP connect to each
// endpoint, closed at once (no byte is sent; a TLS listener sees a client
// that went away before its handshake).
func TCPProber(ctx context.Context, eps []metadata.Endpoint) ProbeOutcome {
	if len(eps) == 0 {
		return ProbeInconclusive
	}
	refused := 0
	var d net.Dialer
	for _, e := range eps {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))))
		if err == nil {
			_ = c.Close()
			return ProbeAnswered
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			refused++
		}
	}
	if refused == len(eps) {
		return ProbeRefused
	}
	return ProbeInconclusive
}

// Probe pacing. A suspicion from an event (a lost connection, a follower's
// report, a controller change) starts a probe unless one of that broker is
// in flight or started within eventProbeSpacing; an overdue heartbeat
// starts one at most every half heartbeat interval.
const (
	eventProbeSpacing = 100 * time.Millisecond
	// probeTimeout bounds one probe (all the broker's listeners): a dial
	// to a host that is gone waits this long and decides nothing.
	probeTimeout = time.Second
)

// deathWatch is the controller's probe bookkeeping: pure, time as input,
// owned by the controller loop.
type deathWatch struct {
	heartbeat time.Duration // broker.heartbeat.interval.ms
	probing   map[int32]bool
	lastProbe map[int32]time.Time
}

func newDeathWatch(heartbeat time.Duration) *deathWatch {
	return &deathWatch{heartbeat: heartbeat, probing: map[int32]bool{}, lastProbe: map[int32]time.Time{}}
}

// start reports whether a probe of id starts now, and if so records it;
// spacing is the least time since the last one started.
func (w *deathWatch) start(id int32, now time.Time, spacing time.Duration) bool {
	if w.probing[id] {
		return false
	}
	if last, ok := w.lastProbe[id]; ok && now.Sub(last) < spacing {
		return false
	}
	w.probing[id] = true
	w.lastProbe[id] = now
	return true
}

// finished marks id's probe done.
func (w *deathWatch) finished(id int32) { delete(w.probing, id) }

// forget drops id (unregistered).
func (w *deathWatch) forget(id int32) {
	delete(w.probing, id)
	delete(w.lastProbe, id)
}

// overdue reports whether a broker last heard from at lastSeen is late
// enough at now to be worth a probe: half an interval past its next
// heartbeat.
func (w *deathWatch) overdue(lastSeen, now time.Time) bool {
	return now.Sub(lastSeen) > w.heartbeat+w.heartbeat/2
}

// overdueSpacing is how often an overdue broker is probed again.
func (w *deathWatch) overdueSpacing() time.Duration { return w.heartbeat / 2 }

// confirmsDeath is the decision a probe result leads to: fence the broker
// epoch that was probed only if every listener refused, the registration is
// still that epoch and unfenced, and nothing was heard from the broker since
// the probe started (heard is its last heartbeat or registration as this
// controller received it; zero if none).
func confirmsDeath(b metadata.BrokerRegistration, registered bool, epoch int64, out ProbeOutcome, started, heard time.Time) bool {
	return out == ProbeRefused && registered && b.Epoch == epoch && !b.Fenced && heard.Before(started)
}

// suspect starts a probe of broker id if the pacing allows it. It runs on
// the controller loop; the dial runs on a goroutine of its own and submits
// its outcome as an operation (decideProbed).
func (c *controller) suspect(img *metadata.Image, id int32, now time.Time, spacing time.Duration, why string) {
	if c.prober == nil {
		return
	}
	b, ok := img.Broker(id)
	if !ok || b.Fenced || len(b.Endpoints) == 0 {
		return
	}
	if !c.watch.start(id, now, spacing) {
		return
	}
	eps, epoch := b.Endpoints, b.Epoch
	c.n.log.Debug().Int32("broker", id).Str("why", why).Msg("probing a suspected broker's listeners")
	c.probes.Add(1)
	go func() {
		defer c.probes.Done()
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		go func() { // a controller that stops does not wait out the dial
			select {
			case <-c.quit:
				cancel()
			case <-ctx.Done():
			}
		}()
		out := c.prober(ctx, eps)
		cancel()
		c.submit(context.Background(), decideProbed(id, epoch, out, now, why))
	}()
}

func decideProbed(id int32, epoch int64, out ProbeOutcome, started time.Time, why string) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		c.watch.finished(id)
		b, ok := img.Broker(id)
		var heard time.Time
		if l := c.leases[id]; l != nil {
			heard = l.heard
		}
		if !confirmsDeath(b, ok, epoch, out, started, heard) {
			if out != ProbeAnswered {
				c.n.log.Debug().Int32("broker", id).Stringer("outcome", out).Str("why", why).Msg("probe of a suspected broker decided nothing")
			}
			return decision{}
		}
		ev := c.n.log.Warn().Int32("broker", id).Int64("broker_epoch", epoch).Str("why", why)
		if !heard.IsZero() {
			ev = ev.Dur("since_heartbeat", now.Sub(heard))
		}
		ev.Msg("every listener of the broker refuses connections: its process is gone; fencing")
		recs := []metadata.Record{&metadata.FenceBroker{BrokerID: id, BrokerEpoch: epoch}}
		next, _ := img.Apply(recs)
		recs = append(recs, evacuate(next, id, metadata.ReasonBrokerFenced, c.unclean(next))...)
		return decision{recs: recs}
	}
}

// decideConnLost is the suspicion of a broker whose RPC connection to this
// controller ended.
func decideConnLost(id int32) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		c.suspect(img, id, now, eventProbeSpacing, "its controller connection closed")
		return decision{}
	}
}

// brokerConnLost is called when an RPC connection on which broker id
// heartbeated ends. Only the active controller acts on it (a forwarding
// voter's connection says nothing the followers' reports and the overdue
// probe do not); the operation is queued without waiting.
func (n *Node) brokerConnLost(id int32) {
	c := n.activeController()
	if c == nil || c.prober == nil {
		return
	}
	select {
	case c.ops <- &op{decide: decideConnLost(id), done: make(chan opResult, 1)}:
	default: // a full queue has better things to do; other triggers remain
	}
}

// SuspectedBrokersTag carries, in a BrokerHeartbeat request, the brokers
// whose connections the sender saw fail (a follower's fetch connection to
// its leader): big-endian int32 broker ids. The controller probes them.
const SuspectedBrokersTag uint32 = 10005

// SetSuspectedBrokers puts ids in req's SuspectedBrokersTag.
func SetSuspectedBrokers(req *kmsg.BrokerHeartbeatRequest, ids []int32) {
	if len(ids) == 0 {
		return
	}
	b := make([]byte, 0, 4*len(ids))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint32(b, uint32(id))
	}
	req.UnknownTags.Set(SuspectedBrokersTag, b)
}

// suspectedBrokers reads SuspectedBrokersTag; a malformed tag reads as
// none (it only ever asks for a probe).
func suspectedBrokers(req *kmsg.BrokerHeartbeatRequest) []int32 {
	var ids []int32
	req.UnknownTags.Each(func(k uint32, v []byte) {
		if k != SuspectedBrokersTag || len(v)%4 != 0 || len(v) > 4*1024 {
			return
		}
		for i := 0; i+4 <= len(v); i += 4 {
			ids = append(ids, int32(binary.BigEndian.Uint32(v[i:])))
		}
	})
	return ids
}
