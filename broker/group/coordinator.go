package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftka/raftka/broker/coordslot"
	"github.com/raftka/raftka/broker/group/consumergroup"
	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MetadataSource is the node's latest applied metadata image.
type MetadataSource interface {
	Current() (*metadata.Image, uint64)
}

// Controller is what the coordinator needs from the active controller.
// Every call returns once the change is visible in this node's
// MetadataSource (read-your-writes). *raftfsm.ControllerClient satisfies it.
type Controller interface {
	// CreateTopics creates the slots topic on the first FindCoordinator.
	CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error)
	// CommitOffsets stores a group's offsets as given (the controller
	// stamps the commit time); concurrent calls are coalesced into one Raft
	// entry. An offset the controller cannot store fails the call with its
	// Kafka error.
	CommitOffsets(ctx context.Context, group string, offsets []metadata.OffsetCommit) (uint64, error)
	// CommitGroupGeneration records a completed rebalance (a generation
	// not above the recorded one fails).
	CommitGroupGeneration(ctx context.Context, gen *metadata.GroupGeneration) (uint64, error)
	// DeleteGroups removes groups' offsets and generations.
	DeleteGroups(ctx context.Context, groups []string) (uint64, error)
	// DeleteOffsets removes some of a group's committed offsets.
	DeleteOffsets(ctx context.Context, group string, partitions []metadata.TopicPartition) (uint64, error)
}

// CoordinatorConfig configures a Coordinator.
type CoordinatorConfig struct {
	NodeID int32
	Group  Config
	// OffsetsTopicPartitions and OffsetsTopicReplicationFactor are
	// offsets.topic.num.partitions and offsets.topic.replication.factor,
	// used when the slots topic is created. As in Kafka the replication
	// factor is not lowered to fit a small cluster: FindCoordinator answers
	// COORDINATOR_NOT_AVAILABLE until enough brokers are registered (a
	// slots topic created with fewer replicas would stay that way, and its
	// coordinators could not fail over).
	OffsetsTopicPartitions        int32
	OffsetsTopicReplicationFactor int16
	// PersistTimeout bounds one controller call made from a group's loop
	// (10s when zero).
	PersistTimeout time.Duration
	Logger         zerolog.Logger
	// Now is the groups' clock (sessions, rebalance timeouts); time.Now
	// if nil. Tests drive expiry with a fake one.
	Now func() time.Time
	// Observer hears of completed rebalances (stats.go); nil hears
	// nothing.
	Observer Observer
	// LoadScanInterval is how often the groups of this broker's slots that
	// the image records with members, and no loop holds, are loaded (see
	// scanLoaded); a minute when zero.
	LoadScanInterval time.Duration
	// Consumer configures KIP-848 consumer groups.
	Consumer ConsumerConfig
}

// Coordinator coordinates the groups whose slots this broker leads. Its
// methods may be called from any goroutine; see the package doc for the
// loops and locks.
type Coordinator struct {
	cfg  CoordinatorConfig
	md   MetadataSource
	ctrl Controller
	log  zerolog.Logger

	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // guards groups, closed and adding to wg
	groups map[string]*loop
	closed bool
	wg     sync.WaitGroup

	createMu sync.Mutex // one slots-topic creation at a time
}

// NewCoordinator returns a coordinator; Close stops its loops.
func NewCoordinator(cfg CoordinatorConfig, md MetadataSource, ctrl Controller) *Coordinator {
	if cfg.PersistTimeout <= 0 {
		cfg.PersistTimeout = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.OffsetsTopicPartitions <= 0 {
		cfg.OffsetsTopicPartitions = 50
	}
	if cfg.OffsetsTopicReplicationFactor <= 0 {
		cfg.OffsetsTopicReplicationFactor = 3
	}
	if cfg.LoadScanInterval <= 0 {
		cfg.LoadScanInterval = time.Minute
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Coordinator{cfg: cfg, md: md, ctrl: ctrl, log: cfg.Logger, ctx: ctx, cancel: cancel, groups: make(map[string]*loop)}
	c.wg.Add(1)
	go c.scanLoaded()
	return c
}

func (c *Coordinator) now() time.Time { return c.cfg.Now() }

// Close unloads every group (waiting requests get NOT_COORDINATOR) and
// waits for the loops to end.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// errFor turns a state-machine code into an error for the broker's mapping.
func errFor(code int16) error {
	if code == 0 {
		return nil
	}
	return kerr.ErrorForCode(code)
}

// controllerErr keeps a protocol error from the controller and turns any
// other failure (no quorum, a lost connection) into the retriable
// COORDINATOR_NOT_AVAILABLE Kafka answers when its log append fails.
func controllerErr(err error) error {
	var ke *kerr.Error
	if err == nil || errors.As(err, &ke) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, err)
}

// Ownership returns nil when this broker coordinates groupID in img, else
// NOT_COORDINATOR (as a *kerr.Error).
func (c *Coordinator) Ownership(img *metadata.Image, groupID string) error {
	code, _ := ownership(img, c.cfg.NodeID, groupID)
	return errFor(code)
}

// Locate returns the broker that coordinates groupID, creating the slots
// topic on first use as Kafka does. COORDINATOR_NOT_AVAILABLE means the
// slot has no leader yet (or cannot have one: too few brokers).
func (c *Coordinator) Locate(ctx context.Context, groupID string) (int32, error) {
	return coordslot.Locate(ctx, c.md, OffsetsTopic, groupID, c.createSlots)
}

func (c *Coordinator) createSlots(ctx context.Context) error {
	c.createMu.Lock()
	defer c.createMu.Unlock()
	if img, _ := c.md.Current(); img != nil {
		if _, ok := img.Topic(OffsetsTopic); ok {
			return nil
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = OffsetsTopic
	t.NumPartitions = c.cfg.OffsetsTopicPartitions
	t.ReplicationFactor = c.cfg.OffsetsTopicReplicationFactor
	// Kafka's internal-topic configs: the slot leaders write the image's
	// commits here (broker.OffsetsLog), which compaction keeps to the last
	// record per key.
	for _, kv := range [][2]string{{"cleanup.policy", "compact"}, {"compression.type", "producer"}} {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = kv[0], kmsg.StringPtr(kv[1])
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = append(req.Topics, t)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.ctrl.CreateTopics(ctx, req)
	if err != nil {
		c.log.Info().Err(err).Msg("creating the group coordinator slots topic failed; FindCoordinator answers COORDINATOR_NOT_AVAILABLE")
		return kerr.CoordinatorNotAvailable
	}
	for _, rt := range resp.Topics {
		if rt.ErrorCode != 0 && rt.ErrorCode != kerr.TopicAlreadyExists.Code {
			c.log.Info().Int16("error", rt.ErrorCode).Str("message", derefStr(rt.ErrorMessage)).
				Int16("replication_factor", c.cfg.OffsetsTopicReplicationFactor).
				Msg("the group coordinator slots topic cannot be created yet; FindCoordinator answers COORDINATOR_NOT_AVAILABLE")
			return kerr.CoordinatorNotAvailable
		}
	}
	return nil
}

func derefStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// op runs on a group's loop. When this broker does not coordinate the
// group, g is nil and code says why.
type op func(g *Group, now time.Time, img *metadata.Image, code int16)

// commitOp is an OffsetCommit waiting on a group's loop. The loop checks
// it and writes it through the controller before it runs anything else
// (see run), so no change to the group falls between the check and the
// write.
type commitOp struct {
	r    CommitRequest
	done chan error // buffered, 1
}

// queued is one entry of a loop's queue: a classic operation, a consumer
// group operation, or a commit.
type queued struct {
	fn     op
	commit *commitOp
	// consumer is an operation on a KIP-848 group; describeOnly marks one
	// that changes nothing, so it does not turn an empty classic group
	// into a consumer group.
	consumer     cop
	describeOnly bool
	// onConsumer, when set, is what a classic operation does when the
	// group is a consumer group (DescribeGroups, DeleteGroups, ...).
	onConsumer cop
	// classic, when set, is what a classic member's JoinGroup, SyncGroup,
	// Heartbeat or LeaveGroup does in a consumer group with members (the
	// online upgrade, upgrade.go).
	classic func(cs *consumerState, now time.Time, img *metadata.Image)
	// upgrade marks a consumer-protocol heartbeat: it may turn a classic
	// group with members into a consumer group.
	upgrade bool
}

// fail answers a queued entry for a group not coordinated here.
func (q queued) fail(now time.Time, img *metadata.Image, code int16) {
	switch {
	case q.commit != nil:
		q.commit.done <- errFor(code)
	case q.consumer != nil:
		q.consumer(nil, now, img, code, "")
	default:
		q.fn(nil, now, img, code)
	}
}

// loop is one group's event loop.
type loop struct {
	id    string
	mu    sync.Mutex // guards queue
	queue []queued
	wake  chan struct{}
	// state is the group's State after the loop's last round, -1 while
	// no group is loaded; written by the loop, read by Stats.
	state atomic.Int32
}

func (l *loop) take() []queued {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queue
	l.queue = nil
	return q
}

// submit queues fn on the group's loop, starting the loop if needed. fn
// runs exactly once.
func (c *Coordinator) submit(groupID string, fn op) { c.enqueue(groupID, queued{fn: fn}) }

// enqueue queues q on the group's loop, starting the loop if needed. q is
// run or failed exactly once.
func (c *Coordinator) enqueue(groupID string, q queued) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		q.fail(c.now(), nil, kerr.NotCoordinator.Code)
		return
	}
	l := c.groups[groupID]
	if l == nil {
		l = &loop{id: groupID, wake: make(chan struct{}, 1)}
		l.state.Store(-1)
		c.groups[groupID] = l
		c.wg.Add(1)
		go c.run(l)
	}
	l.mu.Lock()
	l.queue = append(l.queue, q)
	l.mu.Unlock()
	c.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// tryExit removes an idle loop from the map unless work arrived meanwhile.
func (c *Coordinator) tryExit(l *loop) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) > 0 {
		return false
	}
	delete(c.groups, l.id)
	return true
}

func (c *Coordinator) run(l *loop) {
	defer c.wg.Done()
	var (
		g     *Group         // a classic group, or
		cs    *consumerState // a KIP-848 group (at most one of them is set)
		epoch int32
	)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-c.ctx.Done():
			if g != nil {
				g.Unload(kerr.NotCoordinator.Code)
			}
			if cs != nil {
				for _, r := range cs.replies {
					r(kerr.NotCoordinator)
				}
			}
			c.mu.Lock()
			delete(c.groups, l.id)
			c.mu.Unlock()
			for _, q := range l.take() {
				q.fail(c.now(), nil, kerr.NotCoordinator.Code)
			}
			return
		case <-l.wake:
		case <-timer.C:
		}
		img, index := c.md.Current()
		code, ep := int16(kerr.NotCoordinator.Code), int32(-1)
		if img != nil {
			code, ep = ownership(img, c.cfg.NodeID, l.id)
		}
		if (g != nil || cs != nil) && (code != 0 || ep != epoch) {
			// The slot moved away, or away and back: members rejoin,
			// and a reloaded group starts from the image.
			c.log.Info().Str("group", l.id).Msg("group unloaded: its coordinator slot moved")
			if g != nil {
				g.Unload(kerr.NotCoordinator.Code)
			}
			g, cs = nil, nil
		}
		// Commits checked and not yet written. They are written, in one
		// controller call, before the loop runs anything that could
		// change the group (another operation, a timer): a commit's
		// member check and its write are one step for the group, as under
		// Kafka's group lock.
		var commits []*commitOp
		for _, q := range l.take() {
			now := c.now()
			if code != 0 {
				q.fail(now, img, code)
				continue
			}
			if g == nil && cs == nil {
				if _, consumer := img.ConsumerGroup(l.id); consumer {
					var err error
					if cs, err = c.loadConsumer(img, l.id); err != nil {
						c.log.Error().Err(err).Str("group", l.id).Msg("the image's consumer group state does not load")
						q.fail(now, img, kerr.CoordinatorNotAvailable.Code)
						continue
					}
				} else {
					g = c.load(img, l.id)
				}
				epoch = ep
			}
			if q.commit != nil && q.commit.r.Write != nil {
				if cs != nil {
					c.writeOwnConsumer(cs, q.commit)
				} else {
					c.writeOwn(g, now, q.commit)
				}
				continue
			}
			if q.commit != nil {
				ok := false
				if cs != nil {
					ok = checkConsumerCommit(cs, q.commit)
				} else {
					ok = checkCommit(g, now, q.commit)
				}
				if ok {
					commits = append(commits, q.commit)
				}
				continue
			}
			commits = c.writeCommits(l.id, commits)
			if q.consumer != nil {
				if g != nil && !q.describeOnly && !g.Idle() && q.upgrade {
					if ncs, handled := c.tryUpgrade(g, q, now, img, index, l.id); handled {
						if ncs != nil {
							g, cs = nil, ncs
						}
						continue
					}
				}
				if g != nil {
					if q.describeOnly || !g.Idle() {
						msg := fmt.Sprintf("Group %s is not a consumer group.", l.id)
						if g.Idle() && !imageHas(img, l.id) {
							msg = fmt.Sprintf("Group %s not found.", l.id)
						}
						q.consumer(nil, now, img, kerr.GroupIDNotFound.Code, msg)
						continue
					}
					// An empty classic group becomes a consumer group when
					// a consumer-protocol member joins, as in Kafka; its
					// first write records it so.
					g, cs = nil, &consumerState{g: consumerNew(c, img, l.id)}
				}
				// A heartbeat is answered after the round's write.
				cs.index = index
				q.consumer(cs, now, img, 0, "")
				if ncs, ng := c.maybeDowngrade(cs, l.id, img); ng != nil || ncs == nil {
					cs, g = ncs, ng
				}
				continue
			}
			if cs != nil {
				cs = c.persistConsumer(cs, l.id, img)
				if cs != nil && q.onConsumer != nil {
					cs.index = index
					q.onConsumer(cs, now, img, 0, "")
					continue
				}
				if cs != nil {
					if len(cs.g.MemberIDs()) > 0 && q.classic != nil {
						cs.index = index
						q.classic(cs, now, img)
						if ncs, ng := c.maybeDowngrade(cs, l.id, img); ng != nil || ncs == nil {
							cs, g = ncs, ng
						}
						continue
					}
					if len(cs.g.MemberIDs()) > 0 {
						q.fn(nil, now, img, kerr.InconsistentGroupProtocol.Code)
						continue
					}
					// An empty consumer group that a classic member joins
					// becomes a classic group again.
					if err := c.removeConsumer(l.id); err != nil {
						q.fn(nil, now, img, kerr.CoordinatorNotAvailable.Code)
						continue
					}
					img, _ = c.md.Current()
				}
				cs = nil
				g = c.load(img, l.id)
			}
			q.fn(g, now, img, 0)
			c.settle(g)
			if g.State() == Dead {
				// Deleted: the next request sees the group as the image
				// now has it (gone), as Kafka's coordinator drops a
				// deleted group, not a Dead one that answers in its place.
				g = nil
			}
		}
		c.writeCommits(l.id, commits)
		if g != nil {
			c.settle(g)
		}
		if cs != nil {
			cs.g.Tick(c.now())
			cs = c.persistConsumer(cs, l.id, img)
			if ncs, ng := c.maybeDowngrade(cs, l.id, img); ng != nil {
				cs, g = ncs, ng
				c.settle(g)
			}
		}
		c.report(l, g)
		if cs == nil && (g == nil || g.Idle()) && c.tryExit(l) {
			return
		}
		if cs != nil && len(cs.g.MemberIDs()) == 0 && g == nil && c.tryExit(l) {
			return
		}
		var next time.Time
		if g != nil {
			if d, ok := g.NextDeadline(); ok {
				next = d
			}
		}
		if cs != nil {
			next = cs.g.NextDeadline()
		}
		if !next.IsZero() {
			timer.Reset(next.Sub(c.now()))
		}
	}
}

func consumerNew(c *Coordinator, img *metadata.Image, id string) *consumergroup.Group {
	return consumergroup.New(id, c.consumerConfig(img, id))
}

// removeConsumer records that an empty consumer group is one no more.
func (c *Coordinator) removeConsumer(id string) error {
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.PersistTimeout)
	defer cancel()
	_, err := c.consumerWriter().WriteConsumerGroup(ctx, &metadata.RemoveConsumerGroup{Group: id})
	return controllerErr(err)
}

func (c *Coordinator) load(img *metadata.Image, id string) *Group {
	if gen, ok := img.GroupGeneration(id); ok {
		g := New(id, c.cfg.Group, &gen)
		g.AwaitLoadedMembers(c.now())
		return g
	}
	return New(id, c.cfg.Group, nil)
}

// scanLoaded loads, every LoadScanInterval, the groups of the slots this
// broker leads whose recorded generation lists members and which no loop
// holds: a coordinator that took a slot over learns of such a group only
// from a request, and a group whose consumers are gone sends none. Loaded,
// it waits for its members and records itself empty if none comes back
// (Group.AwaitLoadedMembers), as Kafka's coordinator loads every group of
// a partition it takes over and expires the members that stay silent.
func (c *Coordinator) scanLoaded() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.LoadScanInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		img, _ := c.md.Current()
		if img == nil {
			continue
		}
		for _, id := range img.Groups() {
			gen, classic := img.GroupGeneration(id)
			cg, consumer := img.ConsumerGroup(id)
			if !(consumer && len(cg.Members) > 0) && (consumer || !classic || len(gen.Members) == 0) {
				continue
			}
			if code, _ := ownership(img, c.cfg.NodeID, id); code != 0 {
				continue
			}
			c.mu.Lock()
			_, running := c.groups[id]
			c.mu.Unlock()
			if !running {
				c.submit(id, func(*Group, time.Time, *metadata.Image, int16) {})
			}
		}
	}
}

// settle runs the group's due timers and persists the generations it asks
// for. Each round is bounded; a persist failure feeds back into the group.
func (c *Coordinator) settle(g *Group) {
	for range 8 {
		g.Tick(c.now())
		rec := g.TakePersist()
		if rec == nil {
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.PersistTimeout)
		_, err := c.ctrl.CommitGroupGeneration(ctx, rec)
		cancel()
		if err != nil {
			c.log.Warn().Err(err).Str("group", g.ID()).Int32("generation", rec.Generation).Msg("persisting a group generation failed")
		}
		g.Persisted(c.now(), rec.Generation, err)
	}
}

// imageHas reports whether the image knows the group (a recorded generation
// or committed offsets).
func imageHas(img *metadata.Image, id string) bool {
	if img == nil {
		return false
	}
	if _, ok := img.GroupGeneration(id); ok {
		return true
	}
	_, found := slices.BinarySearch(img.Groups(), id)
	return found
}

// callBoth runs fn on the group's loop and waits for it (or ctx), or
// onConsumer instead when the group is a consumer group.
func callBoth[T any](ctx context.Context, c *Coordinator, groupID string, fn func(g *Group, now time.Time, img *metadata.Image, code int16) T,
	onConsumer func(cs *consumerState, now time.Time, img *metadata.Image) T) (T, error) {
	ch := make(chan T, 1)
	c.enqueue(groupID, queued{
		fn: func(g *Group, now time.Time, img *metadata.Image, code int16) { ch <- fn(g, now, img, code) },
		onConsumer: func(cs *consumerState, now time.Time, img *metadata.Image, _ int16, _ string) {
			ch <- onConsumer(cs, now, img)
		},
	})
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Join queues a JoinGroup; the answer arrives on the channel once the
// rebalance completes (r.Reply is replaced). The request is queued when
// Join returns, so the caller may let its connection go on. In a consumer
// group with members the JoinGroup is a classic member's (upgrade.go).
func (c *Coordinator) Join(groupID string, r JoinRequest) <-chan JoinResult {
	ch := make(chan JoinResult, 1)
	r.Reply = func(res JoinResult) { ch <- res }
	c.enqueue(groupID, queued{fn: func(g *Group, now time.Time, _ *metadata.Image, code int16) {
		if code != 0 {
			r.Reply(JoinResult{ErrorCode: code, MemberID: r.MemberID, Generation: -1})
			return
		}
		g.Join(now, r)
	}, classic: func(cs *consumerState, now time.Time, img *metadata.Image) { c.classicJoin(cs, now, img, r) }})
	return ch
}

// Sync queues a SyncGroup; see Join.
func (c *Coordinator) Sync(groupID string, r SyncRequest) <-chan SyncResult {
	ch := make(chan SyncResult, 1)
	r.Reply = func(res SyncResult) { ch <- res }
	c.enqueue(groupID, queued{fn: func(g *Group, now time.Time, _ *metadata.Image, code int16) {
		if code != 0 {
			r.Reply(SyncResult{ErrorCode: code})
			return
		}
		g.Sync(now, r)
	}, classic: func(cs *consumerState, now time.Time, _ *metadata.Image) { c.classicSync(cs, now, r) }})
	return ch
}

// Heartbeat handles a Heartbeat.
func (c *Coordinator) Heartbeat(ctx context.Context, groupID, memberID, instanceID string, generation int32) error {
	ch := make(chan int16, 1)
	c.enqueue(groupID, queued{fn: func(g *Group, now time.Time, _ *metadata.Image, code int16) {
		if code != 0 {
			ch <- code
			return
		}
		ch <- g.Heartbeat(now, memberID, instanceID, generation)
	}, classic: func(cs *consumerState, now time.Time, _ *metadata.Image) {
		code, _ := cs.g.ClassicHeartbeat(now, memberID, instanceID, generation)
		ch <- code
	}})
	select {
	case code := <-ch:
		return errFor(code)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LeaveMember is one member of a LeaveGroup.
type LeaveMember struct{ MemberID, InstanceID string }

// Leave handles a LeaveGroup: a group-level error (NOT_COORDINATOR), or one
// error per member.
func (c *Coordinator) Leave(ctx context.Context, groupID string, members []LeaveMember) ([]error, error) {
	ch := make(chan []int16, 1)
	c.enqueue(groupID, queued{fn: func(g *Group, now time.Time, _ *metadata.Image, code int16) {
		if code != 0 {
			ch <- []int16{code}
			return
		}
		out := make([]int16, len(members))
		for i, m := range members {
			out[i] = g.Leave(now, m.MemberID, m.InstanceID)
		}
		ch <- out
	}, classic: func(cs *consumerState, _ time.Time, _ *metadata.Image) {
		ls := make([]consumergroup.ClassicLeaver, len(members))
		for i, m := range members {
			ls[i] = consumergroup.ClassicLeaver{MemberID: m.MemberID, InstanceID: m.InstanceID}
		}
		out := cs.g.ClassicLeave(ls)
		cs.afterWrite(func(err error) {
			if err != nil {
				out = []int16{writeErrCode(err)}
			}
			ch <- out
		})
	}})
	var codes []int16
	select {
	case codes = <-ch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if len(codes) != len(members) {
		return nil, errFor(codes[0])
	}
	errs := make([]error, len(codes))
	for i, code := range codes {
		errs[i] = errFor(code)
	}
	return errs, nil
}

// CommitRequest is the group part of an OffsetCommit plus the offsets that
// passed the per-partition checks.
type CommitRequest struct {
	Group                string
	MemberID, InstanceID string
	Generation           int32 // the member epoch, for a consumer group
	Offsets              []metadata.OffsetCommit
	// Version is the OffsetCommit's: a consumer-protocol member must use
	// v9 or above (not asked of a transactional commit).
	Version int16
	// Transactional marks a TxnOffsetCommit: a consumer group checks its
	// member epoch as for OffsetCommit, without the version rule (Kafka's
	// ConsumerGroup.validateOffsetCommit with isTransactional).
	Transactional bool
	// Write, when set, stores the commit instead of Offsets: it runs on
	// the group's loop right after the member check passes, so a member
	// fenced after the check cannot slip in between (TxnOffsetCommit's
	// offsets, which the transaction coordinator holds pending).
	Write func(ctx context.Context) error
}

// Commit checks the member and generation on the group's loop and writes
// the offsets through the controller from the loop, before the group can
// change: a member fenced (removed, replaced, or outgrown by a new
// generation) before its commit is checked gets Kafka's error
// (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION) and writes
// nothing, and one fenced after waits for the commit to be stored. Commits
// of one group queued together leave in one controller call, and the
// controller coalesces the calls of all groups into one Raft entry. The
// error applies to every offset in the request.
func (c *Coordinator) Commit(ctx context.Context, r CommitRequest) error {
	co := &commitOp{r: r, done: make(chan error, 1)}
	c.enqueue(r.Group, queued{commit: co})
	select {
	case err := <-co.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeOwn checks a commit that brings its own writer against the group
// and, if it passes, runs the writer on the group's loop and answers with
// its outcome.
func (c *Coordinator) writeOwn(g *Group, now time.Time, co *commitOp) {
	if code := g.ValidateCommit(now, co.r.MemberID, co.r.InstanceID, co.r.Generation); code != 0 {
		co.done <- errFor(code)
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.PersistTimeout)
	defer cancel()
	co.done <- co.r.Write(ctx)
}

// checkCommit checks a commit against the group; a commit that fails, or
// has nothing to write, is answered here.
func checkCommit(g *Group, now time.Time, co *commitOp) bool {
	code := g.ValidateCommit(now, co.r.MemberID, co.r.InstanceID, co.r.Generation)
	if code != 0 || len(co.r.Offsets) == 0 {
		co.done <- errFor(code)
		return false
	}
	return true
}

// writeCommits writes checked commits of one group in one controller call
// and answers each with the outcome. It runs on the group's loop, which
// waits for it (as it waits for a generation to persist). It returns
// commits emptied, for reuse.
func (c *Coordinator) writeCommits(groupID string, commits []*commitOp) []*commitOp {
	if len(commits) == 0 {
		return commits
	}
	var offsets []metadata.OffsetCommit
	for _, co := range commits {
		offsets = append(offsets, co.r.Offsets...)
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.PersistTimeout)
	_, err := c.ctrl.CommitOffsets(ctx, groupID, offsets)
	cancel()
	err = controllerErr(err)
	if err != nil && c.ctx.Err() != nil {
		// Closing cut the write short. As for every request waiting on a
		// closing coordinator, NOT_COORDINATOR: the client commits again
		// at the next one (the same offsets, if this write went through).
		err = kerr.NotCoordinator
	}
	for _, co := range commits {
		co.done <- err
	}
	return commits[:0]
}

// Describe returns a group as DescribeGroups shows it. A group that exists
// neither here nor in the image is GROUP_ID_NOT_FOUND.
func (c *Coordinator) Describe(ctx context.Context, groupID string) (Description, error) {
	type result struct {
		d    Description
		code int16
	}
	res, err := callBoth(ctx, c, groupID, func(g *Group, _ time.Time, img *metadata.Image, code int16) result {
		if code != 0 {
			return result{code: code}
		}
		d := g.Describe()
		if d.State == Empty && !imageHas(img, groupID) {
			return result{code: kerr.GroupIDNotFound.Code}
		}
		return result{d: d}
	}, func(*consumerState, time.Time, *metadata.Image) result {
		// Kafka's DescribeGroups describes classic groups only
		// (GroupMetadataManager.classicGroup); a consumer group, with
		// classic members or not, is ConsumerGroupDescribe's.
		return result{d: Description{NotClassic: true}, code: kerr.GroupIDNotFound.Code}
	})
	if err != nil {
		return Description{}, err
	}
	return res.d, errFor(res.code)
}

// Listing is one group in ListGroups.
type Listing struct {
	Group        string
	State        State // a classic group's
	ProtocolType string
	// Type is "classic" or "consumer" (ListGroups v5, KIP-1043);
	// StateName the state as ListGroups shows it, for either type.
	Type, StateName string
}

// List returns the groups this broker coordinates: loaded ones with their
// state, and those only the image knows as Empty.
func (c *Coordinator) List(ctx context.Context) ([]Listing, error) {
	img, _ := c.md.Current()
	if img == nil {
		return nil, nil
	}
	c.mu.Lock()
	loaded := make(map[string]bool, len(c.groups))
	for id := range c.groups {
		loaded[id] = true
	}
	c.mu.Unlock()
	names := img.Groups()
	for id := range loaded {
		if _, found := slices.BinarySearch(names, id); !found {
			names = append(names, id)
		}
	}
	slices.Sort(names)
	var out []Listing
	for _, id := range names {
		if code, _ := ownership(img, c.cfg.NodeID, id); code != 0 {
			continue
		}
		if !loaded[id] {
			l := Listing{Group: id, State: Empty, StateName: Empty.String(), Type: "classic"}
			if gen, ok := img.GroupGeneration(id); ok {
				l.ProtocolType = gen.ProtocolType
			}
			if cg, ok := img.ConsumerGroup(id); ok {
				l.Type, l.ProtocolType, l.StateName = "consumer", ConsumerProtocolType, "Empty"
				if len(cg.Members) > 0 {
					l.StateName = "Stable" // as recorded; the loop will know better once loaded
				}
			}
			out = append(out, l)
			continue
		}
		type result struct {
			l    Listing
			code int16
		}
		res, err := callBoth(ctx, c, id, func(g *Group, _ time.Time, img *metadata.Image, code int16) result {
			if code != 0 {
				return result{code: code}
			}
			d := g.Describe()
			if d.State == Empty && !imageHas(img, id) {
				return result{code: kerr.GroupIDNotFound.Code}
			}
			return result{l: Listing{Group: id, State: d.State, StateName: d.State.String(), ProtocolType: d.ProtocolType, Type: "classic"}}
		}, func(cs *consumerState, _ time.Time, img *metadata.Image) result {
			if cs.written == nil && len(cs.g.MemberIDs()) == 0 {
				return result{code: kerr.GroupIDNotFound.Code}
			}
			return result{l: Listing{Group: id, State: Empty, StateName: cs.g.State(), ProtocolType: ConsumerProtocolType, Type: "consumer"}}
		})
		if err == nil {
			err = errFor(res.code)
		}
		switch {
		case errors.Is(err, kerr.GroupIDNotFound), errors.Is(err, kerr.NotCoordinator):
			continue
		case err != nil:
			return nil, err
		}
		out = append(out, res.l)
	}
	return out, nil
}

// Delete deletes groups that have no members (NON_EMPTY_GROUP otherwise),
// with their offsets; one error per group. Groups are deleted in parallel,
// so their controller commits coalesce.
func (c *Coordinator) Delete(ctx context.Context, groups []string) []error {
	chans := make([]chan error, len(groups))
	for i, id := range groups {
		ch := make(chan error, 1)
		chans[i] = ch
		c.enqueue(id, queued{onConsumer: func(cs *consumerState, _ time.Time, img *metadata.Image, _ int16, _ string) {
			switch {
			case len(cs.g.MemberIDs()) > 0:
				ch <- kerr.NonEmptyGroup
			case !imageHas(img, id):
				ch <- kerr.GroupIDNotFound
			default:
				dctx, cancel := context.WithTimeout(c.ctx, c.cfg.PersistTimeout)
				_, err := c.ctrl.DeleteGroups(dctx, []string{id})
				cancel()
				if err == nil {
					// Gone from the image: the loop holds a fresh group,
					// which writes nothing until a member joins.
					cs.g, cs.written = consumerNew(c, img, id), nil
				}
				ch <- controllerErr(err)
			}
		}, fn: func(g *Group, _ time.Time, img *metadata.Image, code int16) {
			switch {
			case code != 0:
				ch <- errFor(code)
			case g.State() != Empty:
				ch <- kerr.NonEmptyGroup
			case !imageHas(img, id):
				ch <- kerr.GroupIDNotFound
			default:
				dctx, cancel := context.WithTimeout(c.ctx, c.cfg.PersistTimeout)
				_, err := c.ctrl.DeleteGroups(dctx, []string{id})
				cancel()
				if err == nil {
					g.Unload(kerr.NotCoordinator.Code)
				}
				ch <- controllerErr(err)
			}
		}})
	}
	errs := make([]error, len(groups))
	for i, ch := range chans {
		select {
		case errs[i] = <-ch:
		case <-ctx.Done():
			errs[i] = ctx.Err()
		}
	}
	return errs
}

// DeleteOffsets handles OffsetDelete: a group-level error, or per
// partition either nil or GROUP_SUBSCRIBED_TO_TOPIC (a member of a
// non-empty consumer group subscribes to the topic). The others are deleted.
func (c *Coordinator) DeleteOffsets(ctx context.Context, groupID string, parts []metadata.TopicPartition) ([]error, error) {
	type result struct {
		code       int16
		subscribed func(topic string) bool
	}
	res, err := callBoth(ctx, c, groupID, func(g *Group, _ time.Time, img *metadata.Image, code int16) result {
		switch {
		case code != 0:
			return result{code: code}
		case g.State() == Empty && !imageHas(img, groupID):
			return result{code: kerr.GroupIDNotFound.Code}
		case g.State() == Empty:
			return result{subscribed: func(string) bool { return false }}
		case g.ProtocolType() == ConsumerProtocolType:
			md, ok := g.SubscriptionMetadata()
			var topics map[string]bool
			if ok {
				topics, ok = SubscribedTopics(md)
			}
			if !ok {
				return result{subscribed: func(string) bool { return true }}
			}
			return result{subscribed: func(t string) bool { return topics[t] }}
		default:
			return result{code: kerr.NonEmptyGroup.Code}
		}
	}, func(cs *consumerState, _ time.Time, img *metadata.Image) result {
		// Kafka's ConsumerGroup.isSubscribedToTopic: a topic some member
		// subscribes to, as the group last resolved the subscriptions.
		if len(cs.g.MemberIDs()) == 0 {
			if !imageHas(img, groupID) {
				return result{code: kerr.GroupIDNotFound.Code}
			}
			return result{subscribed: func(string) bool { return false }}
		}
		topics := cs.g.Export().Topics
		return result{subscribed: func(t string) bool { _, ok := topics[t]; return ok }}
	})
	if err != nil {
		return nil, err
	}
	if res.code != 0 {
		return nil, errFor(res.code)
	}
	errs := make([]error, len(parts))
	var del []metadata.TopicPartition
	for i, p := range parts {
		if res.subscribed(p.Topic) {
			errs[i] = kerr.GroupSubscribedToTopic
			continue
		}
		del = append(del, p)
	}
	if len(del) > 0 {
		if _, err := c.ctrl.DeleteOffsets(ctx, groupID, del); err != nil {
			return nil, controllerErr(err)
		}
	}
	return errs, nil
}
