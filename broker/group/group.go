package group

import (
	"slices"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Group is the classic (pre-KIP-848) group state machine, as Kafka's
// GroupCoordinator runs it: Empty -> PreparingRebalance (members join) ->
// CompletingRebalance (the leader assigns) -> Stable, back to
// PreparingRebalance whenever membership or subscriptions change, and Empty
// when the last member goes. Dead is a group that was unloaded or deleted.
//
// It is pure: every input carries the current time, it starts no
// goroutine and sets no timer. The caller drives it from one goroutine,
// calls Tick at NextDeadline, persists what TakePersist returns and reports
// the outcome with Persisted. Replies are delivered through the callbacks in
// the requests, from within these calls.
type Group struct {
	id         string
	cfg        Config
	state      State
	generation int32
	protoType  string
	protocol   string
	leader     string

	members map[string]*member
	order   []string          // member ids in join order: leader choice and answers are deterministic
	static  map[string]string // group.instance.id -> member id
	pending map[string]time.Time

	// Rebalance timing while PreparingRebalance. initialDelay marks Kafka's
	// InitialDelayedJoin (a rebalance that started from Empty): it ends only
	// at the deadline, extended while new members keep arriving.
	rebalanceDeadline time.Time
	initialDelay      bool
	delayRemaining    time.Duration
	newMemberAdded    bool

	// The leader's assignment waits here until its generation is persisted.
	pendingAssign map[string][]byte
	persistGen    int32 // generation being persisted, -1 when none
	outbox        *metadata.GroupGeneration

	// loadedMembers: the generation this group was loaded from lists
	// members, which a coordinator does not take over (they rejoin it).
	// orphansDue, when set, is when those members count as gone if none
	// has joined by then (see AwaitLoadedMembers).
	loadedMembers bool
	orphansDue    time.Time

	// rebalanceStarted is when the rebalance in progress entered
	// PreparingRebalance (zero when none is); rebalanced holds the
	// durations of those that reached Stable since the last
	// TakeRebalances (stats.go).
	rebalanceStarted time.Time
	rebalanced       []time.Duration
}

// New returns a group in Empty. loaded, if not nil, is the generation last
// recorded in the metadata image: the group continues from it, so
// generations keep growing across coordinator moves.
func New(id string, cfg Config, loaded *metadata.GroupGeneration) *Group {
	if cfg.NewMemberID == nil {
		cfg.NewMemberID = randomMemberID
	}
	g := &Group{
		id: id, cfg: cfg, state: Empty,
		members: make(map[string]*member), static: make(map[string]string), pending: make(map[string]time.Time),
		persistGen: -1,
	}
	if loaded != nil {
		g.generation = loaded.Generation
		g.protoType = loaded.ProtocolType
		g.loadedMembers = len(loaded.Members) > 0
	}
	return g
}

// AwaitLoadedMembers starts, at the load time now, the wait for the members
// of the generation the group was loaded from, if it lists any. Live ones
// rejoin within their session timeout (at most MaxSessionTimeout); if none
// has by then, the group records a new generation without members, as
// Kafka's coordinator expires loaded members whose heartbeats stopped. The
// image then says the group is empty, and from when, so the retention of
// its offsets (offsets.retention.minutes) starts; without this a group
// whose consumers died while its coordinator moved would look active, and
// keep its offsets, forever.
func (g *Group) AwaitLoadedMembers(now time.Time) {
	if g.loadedMembers {
		g.orphansDue = now.Add(g.cfg.MaxSessionTimeout)
	}
}

// ID returns the group id.
func (g *Group) ID() string { return g.id }

// State returns the current state.
func (g *Group) State() State { return g.state }

// Generation returns the current generation.
func (g *Group) Generation() int32 { return g.generation }

// ProtocolType returns the protocol type ("consumer" for consumer groups).
func (g *Group) ProtocolType() string { return g.protoType }

// Idle reports whether the group holds nothing that is not in the image:
// no members, no member id handed out and awaited, nothing to persist. Its
// driver may drop it and load it again from the image later.
func (g *Group) Idle() bool {
	return (g.state == Empty || g.state == Dead) && len(g.members) == 0 && len(g.pending) == 0 && g.outbox == nil && g.persistGen < 0 &&
		g.orphansDue.IsZero()
}

func (g *Group) queuePersist() {
	rec := &metadata.GroupGeneration{
		Group: g.id, Generation: g.generation, ProtocolType: g.protoType, Protocol: g.protocol, Leader: g.leader,
	}
	for _, id := range g.order {
		rec.Members = append(rec.Members, metadata.GroupMember{MemberID: id, InstanceID: g.members[id].instanceID})
	}
	rec.SubscribedTopics = g.subscribedTopics()
	g.outbox = rec
	g.persistGen = g.generation
	// What the image will hold is the coordinator's own view now.
	g.loadedMembers, g.orphansDue = false, time.Time{}
}

// subscribedTopics is, for a consumer group with members and a protocol,
// the sorted union of the topics they subscribe to, recorded with the
// generation so that offsets of other topics can expire as in Kafka; nil
// when that is unknown.
func (g *Group) subscribedTopics() []string {
	if g.protoType != ConsumerProtocolType || len(g.order) == 0 {
		return nil
	}
	md, ok := g.SubscriptionMetadata()
	if !ok {
		return nil
	}
	set, ok := SubscribedTopics(md)
	if !ok {
		return nil
	}
	topics := make([]string, 0, len(set))
	for t := range set {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	return topics
}

// TakePersist returns the generation record the caller must commit through
// the controller, then report with Persisted; nil when there is none.
func (g *Group) TakePersist() *metadata.GroupGeneration {
	rec := g.outbox
	g.outbox = nil
	return rec
}

// Persisted reports the outcome of committing a generation. On success the
// leader's assignment takes effect and the waiting SyncGroups are answered;
// on failure they get COORDINATOR_NOT_AVAILABLE and the group rebalances, as
// Kafka does when its log append fails.
func (g *Group) Persisted(now time.Time, generation int32, err error) {
	if generation == g.persistGen {
		g.persistGen = -1
	}
	if g.state != CompletingRebalance || generation != g.generation || g.pendingAssign == nil {
		return
	}
	if err != nil {
		g.resetAssignment(kerr.CoordinatorNotAvailable.Code)
		g.prepareRebalance(now)
		return
	}
	for _, id := range g.order {
		m := g.members[id]
		m.assignment = g.pendingAssign[id]
		if m.sync != nil {
			m.sync(SyncResult{ProtocolType: g.protoType, Protocol: g.protocol, Assignment: m.assignment})
			m.sync = nil
			m.deadline = now.Add(m.session)
		}
	}
	g.pendingAssign = nil
	g.state = Stable
	g.rebalanceDone(now)
}

// NextDeadline is the earliest time Tick has something to do.
func (g *Group) NextDeadline() (time.Time, bool) {
	var next time.Time
	set := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if g.state == PreparingRebalance {
		set(g.rebalanceDeadline)
	}
	if !g.orphansDue.IsZero() {
		set(g.orphansDue)
	}
	for _, t := range g.pending {
		set(t)
	}
	for _, m := range g.members {
		if !m.awaiting() {
			set(m.deadline)
		}
	}
	return next, !next.IsZero()
}

// Tick expires what is due at now: reserved member ids never used, member
// sessions without a heartbeat, and the rebalance deadline (which completes
// the join with the members that made it).
func (g *Group) Tick(now time.Time) {
	if !g.orphansDue.IsZero() && !g.orphansDue.After(now) {
		g.orphansDue = time.Time{}
		if g.state == Empty && len(g.members) == 0 && len(g.pending) == 0 && g.persistGen < 0 {
			g.generation++
			g.protocol, g.leader = "", ""
			g.queuePersist()
		}
	}
	for id, t := range g.pending {
		if !t.After(now) {
			delete(g.pending, id)
		}
	}
	for _, id := range slices.Clone(g.order) {
		m, ok := g.members[id]
		if ok && !m.awaiting() && !m.deadline.After(now) {
			g.removeAndRebalance(now, id)
		}
	}
	if g.state != PreparingRebalance {
		return
	}
	// Bounded: each extension consumes delayRemaining, and it only extends
	// while members arrive, which they cannot do inside one Tick.
	for !g.rebalanceDeadline.After(now) {
		if g.initialDelay && g.newMemberAdded && g.delayRemaining > 0 {
			// Kafka's InitialDelayedJoin: someone joined during the
			// delay, so wait another delay (within the rebalance timeout),
			// counted from when the last one ended.
			d := min(g.cfg.InitialRebalanceDelay, g.delayRemaining)
			g.delayRemaining -= d
			g.newMemberAdded = false
			g.rebalanceDeadline = g.rebalanceDeadline.Add(d)
			continue
		}
		g.completeJoin(now)
		return
	}
	g.maybeCompleteJoin(now)
}

// Unload answers everything waiting with code and makes the group Dead:
// this broker no longer coordinates it (or it was deleted).
func (g *Group) Unload(code int16) {
	for _, id := range g.order {
		m := g.members[id]
		if m.join != nil {
			m.join(JoinResult{ErrorCode: code, MemberID: id, Generation: -1})
			m.join = nil
		}
		if m.sync != nil {
			m.sync(SyncResult{ErrorCode: code})
			m.sync = nil
		}
	}
	g.members, g.order, g.static, g.pending = map[string]*member{}, nil, map[string]string{}, map[string]time.Time{}
	g.pendingAssign, g.outbox, g.persistGen = nil, nil, -1
	g.state = Dead
}
