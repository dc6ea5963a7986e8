package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrNotController is returned for operations submitted to a node that is not
// (or stopped being) the active controller. It unwraps to kerr.NotController,
// which is how broker/kafkacode, which cannot import raftfsm, maps it.
var ErrNotController error = notController{}

type notController struct{}

func (notController) Error() string { return "raftfsm: not the active controller" }
func (notController) Unwrap() error { return kerr.NotController }

// decision is what one controller operation decided: the records to commit
// (none for a rejected or read-only request), the response to send once they
// are committed, and an optional hook the loop runs after a successful
// commit to update its in-memory bookkeeping.
type decision struct {
	recs  []metadata.Record
	resp  kmsg.Response
	after func(index uint64)
}

// decideFunc takes the image as it will be once every earlier operation of
// the batch is committed and returns a decision. It mutates nothing outside
// the controller's loop-owned fields and runs only on the loop goroutine.
type decideFunc func(c *controller, img *metadata.Image, now time.Time) decision

type opResult struct {
	resp  kmsg.Response
	index uint64
	err   error
}

type op struct {
	decide decideFunc
	done   chan opResult // buffered, 1
}

// maxBatchOps bounds how many queued operations one Raft entry carries.
const maxBatchOps = 256

// lease is the controller's memory of one broker's heartbeats. It is not
// replicated: a new active controller starts every broker with a full
// session timeout of grace.
type lease struct {
	lastSeen time.Time
	// heard is when this controller last received the broker's heartbeat
	// or registration (zero before one); lastSeen also counts the grace a
	// new controller gives. A probe's refusal fences only a broker not
	// heard from since the probe started (liveness.go).
	heard    time.Time
	regIndex uint64 // Raft index of the registration, 0 if unknown
}

// controller is the active controller: one goroutine (run) owns every field
// below quit. It exists only while this node leads Raft; a new one starts on
// each leadership gain.
type controller struct {
	n    *Node
	ops  chan *op
	quit chan struct{}
	done chan struct{}

	leases map[int32]*lease
	// features is what each broker last said it supports
	// (controller_features.go); it is not replicated.
	features map[int32]map[string]metadata.FeatureRange
	// startIndex is the last log index when this controller started. A
	// broker whose registration index is unknown (registered under an
	// earlier leader) counts as caught up once it has applied this.
	startIndex uint64

	// watch paces the probes of suspected brokers, prober dials them (nil:
	// no fast death detection), probes counts the probe goroutines stop
	// waits for (liveness.go).
	watch  *deathWatch
	prober Prober
	probes sync.WaitGroup
}

func newController(n *Node) *controller {
	c := &controller{
		n:        n,
		ops:      make(chan *op, maxBatchOps),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		leases:   make(map[int32]*lease),
		features: make(map[int32]map[string]metadata.FeatureRange),
		watch:    newDeathWatch(n.cfg.HeartbeatInterval),
		prober:   n.cfg.Prober,
	}
	go c.run()
	return c
}

func (c *controller) stop() {
	close(c.quit)
	<-c.done
	c.probes.Wait()
}

// submit queues an operation and waits for its commit. The result's err is
// ErrNotController when the controller stopped or the Raft entry did not
// commit under this leader.
func (c *controller) submit(ctx context.Context, d decideFunc) opResult {
	o := &op{decide: d, done: make(chan opResult, 1)}
	select {
	case c.ops <- o:
	case <-c.quit:
		return opResult{err: ErrNotController}
	case <-ctx.Done():
		return opResult{err: ctx.Err()}
	}
	select {
	case r := <-o.done:
		return r
	case <-c.done:
		// The queue is buffered: an op can land in it after the loop has
		// drained it for the last time. The loop answers before it exits,
		// so an op without an answer by now will never get one.
		select {
		case r := <-o.done:
			return r
		default:
			return opResult{err: ErrNotController}
		}
	case <-ctx.Done():
		return opResult{err: ctx.Err()}
	}
}

func (c *controller) run() {
	defer close(c.done)
	log := c.n.log
	// Decide nothing until every entry of earlier terms is applied here.
	if !c.barrier() {
		return
	}
	c.startIndex = c.n.raft.LastIndex()
	now := time.Now()
	img, _ := c.n.pub.Latest()
	for _, b := range img.Brokers() {
		c.leases[b.ID] = &lease{lastSeen: now}
		// The old controller may have died with a broker (a combined
		// node): every broker gets the session's grace, and a probe that
		// fences at once the ones whose listeners are gone.
		c.suspect(img, b.ID, now, 0, "a new controller took over")
	}
	if img.ClusterID() == "" {
		// The bootstrap records (storage format --add-scram) go in the same
		// batch: a cluster never exists without them.
		recs := append([]metadata.Record{&metadata.ClusterID{ID: c.n.cfg.ClusterID}}, c.n.cfg.BootstrapRecords...)
		if err := c.commit(recs); err != nil {
			log.Warn().Err(err).Msg("writing the cluster id")
			return
		}
		log.Info().Str("cluster_id", c.n.cfg.ClusterID).Msg("wrote the cluster id into the metadata log")
	}
	if err := c.bootstrapFeatures(); err != nil {
		log.Warn().Err(err).Msg("finalizing the features of a new cluster")
		return
	}
	if err := c.completeReadyReassignments(); err != nil {
		log.Warn().Err(err).Msg("completing partition reassignments")
		return
	}
	tick := time.NewTicker(c.tickEvery())
	defer tick.Stop()
	// The preferred-leader check runs only with auto.leader.rebalance.enable;
	// a nil channel never fires.
	var rebalance <-chan time.Time
	if c.n.cfg.AutoLeaderRebalance {
		rt := time.NewTicker(c.n.cfg.LeaderImbalanceCheckInterval)
		defer rt.Stop()
		rebalance = rt.C
	}
	expiry := time.NewTicker(c.n.cfg.OffsetsRetentionCheckInterval)
	defer expiry.Stop()
	for {
		select {
		case <-c.quit:
			c.drain()
			return
		case <-tick.C:
			c.process(nil, time.Now())
		case <-expiry.C:
			c.process([]*op{{decide: decideExpireOffsets, done: make(chan opResult, 1)}}, time.Now())
		case <-rebalance:
			c.process([]*op{{decide: decideRebalance, done: make(chan opResult, 1)}}, time.Now())
		case o := <-c.ops:
			batch := []*op{o}
		more:
			for len(batch) < maxBatchOps {
				select {
				case o := <-c.ops:
					batch = append(batch, o)
				default:
					break more
				}
			}
			c.process(batch, time.Now())
		}
	}
}

// unclean returns the election policy for img's topics (unclean election
// and min.insync.replicas), with this node's dynamic broker config and
// server.properties as the fallbacks.
func (c *controller) unclean(img *metadata.Image) policy {
	if c == nil {
		// Decisions that need no node config run without a controller
		// in tests: never unclean, min.insync.replicas 1.
		return policy{}
	}
	return policy{
		unclean: uncleanPolicy(img, c.n.cfg.NodeID, c.n.cfg.DefaultUncleanLeaderElection),
		minISR:  minISRPolicy(img, c.n.cfg.NodeID, c.n.cfg.DefaultMinInsyncReplicas),
	}
}

// tickEvery is how often the controller looks for expired sessions between
// requests: a thirty-second of the session timeout (280 ms at Kafka's 9 s),
// so a dead broker is fenced within that of its timeout, and its partitions
// get new leaders about as soon as Kafka's controller would give them.
func (c *controller) tickEvery() time.Duration {
	d := c.n.cfg.SessionTimeout / 32
	return max(d, 10*time.Millisecond)
}

func (c *controller) barrier() bool {
	for {
		f := c.n.raft.Barrier(5 * time.Second)
		ch := make(chan error, 1)
		go func() { ch <- f.Error() }()
		select {
		case <-c.quit:
			<-ch
			return false
		case err := <-ch:
			if err == nil {
				return true
			}
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrRaftShutdown) {
				c.n.log.Info().Err(err).Msg("controller start: barrier failed")
				<-c.quit
				return false
			}
		}
	}
}

// drain fails operations still queued when the controller stops.
func (c *controller) drain() {
	for {
		select {
		case o := <-c.ops:
			o.done <- opResult{err: ErrNotController}
		default:
			return
		}
	}
}

// process decides a batch of operations against a scratch image that
// accumulates each one's records, adds the fencing the session timeouts
// require, commits everything as one Raft entry (group commit: one fsync for
// all of them), and then answers every operation.
func (c *controller) process(batch []*op, now time.Time) {
	img, _ := c.n.pub.Latest()
	before := img
	var all []metadata.Record
	decs := make([]decision, len(batch))
	refused := make([]error, len(batch))
	for i, o := range batch {
		d := o.decide(c, img, now)
		if err := metadata.CheckRecords(d.recs, img.FeatureLevel()); err != nil {
			// Nothing is written that a broker at the finalized level
			// could not read; the operation fails UNSUPPORTED_VERSION.
			refused[i] = err
			continue
		}
		if len(d.recs) > 0 {
			img, _ = img.Apply(d.recs)
			all = append(all, d.recs...)
		}
		decs[i] = d
	}
	if fence := c.expireSessions(img, now); len(fence) > 0 {
		all = append(all, fence...)
	}
	var index uint64
	var err error
	if len(all) > 0 {
		index, err = c.commitIndex(all)
		if err == nil {
			observeElections(c.n.cfg.Observer, before, all, time.Since(now))
		}
	} else {
		_, index = c.n.pub.Latest()
	}
	for i, o := range batch {
		if err != nil {
			o.done <- opResult{err: err}
			continue
		}
		if refused[i] != nil {
			o.done <- opResult{err: refused[i]}
			continue
		}
		if decs[i].after != nil {
			decs[i].after(index)
		}
		o.done <- opResult{resp: decs[i].resp, index: index}
	}
}

func (c *controller) commit(recs []metadata.Record) error {
	_, err := c.commitIndex(recs)
	return err
}

func (c *controller) commitIndex(recs []metadata.Record) (uint64, error) {
	data, err := metadata.EncodeRecords(recs)
	if err != nil {
		// A record the controller built that does not encode is a bug here,
		// not a client error; fail the operations rather than the node.
		return 0, fmt.Errorf("raftfsm: encode records: %w", err)
	}
	start := time.Now()
	f := c.n.raft.Apply(data, 10*time.Second)
	if err := f.Error(); err != nil {
		c.n.log.Warn().Err(err).Msg("metadata commit failed")
		return 0, fmt.Errorf("%w: %v", ErrNotController, err)
	}
	c.n.cfg.Observer.Committed(time.Since(start))
	if r, ok := f.Response().(applyResult); ok && r.err != nil {
		return 0, r.err
	}
	return f.Index(), nil
}
