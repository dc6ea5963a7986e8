package group

import (
	"bytes"
	"slices"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a classic group's state, as Kafka names them in DescribeGroups
// and ListGroups.
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState maps a ListGroups states-filter entry to a State; Kafka matches
// case-insensitively.
func ParseState(s string) (State, bool) {
	for i, n := range stateNames {
		if bytes.EqualFold([]byte(n), []byte(s)) {
			return State(i), true
		}
	}
	return Dead, false
}

// Config holds the broker settings a group checks its members against.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout are group.min/max.session.timeout.ms.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: the first
	// rebalance of an empty group waits this long for more members, again
	// each time one arrives, up to the rebalance timeout.
	InitialRebalanceDelay time.Duration
	// MaxSize is group.max.size (0: unbounded).
	MaxSize int
	// NewMemberID returns a fresh member id with the given prefix (the
	// client id, or the instance id of a static member). Nil uses
	// prefix + "-" + a random UUID, as Kafka does; tests make it
	// deterministic.
	NewMemberID func(prefix string) string
}

// Protocol is one assignment protocol a member supports, with its
// subscription metadata.
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest is a JoinGroup from one member.
type JoinRequest struct {
	MemberID, InstanceID string // "" when absent
	ClientID, ClientHost string
	ProtocolType         string
	Protocols            []Protocol
	SessionTimeout       time.Duration
	RebalanceTimeout     time.Duration
	// RequireKnownMemberID is KIP-394 (JoinGroup v4+): a new dynamic member
	// gets its id in a MEMBER_ID_REQUIRED answer and must join again with it.
	RequireKnownMemberID bool
	// SupportsSkipAssignment is JoinGroup v9+ (KIP-814): a static leader
	// that rejoins a stable group gets the member list without a rebalance
	// and is told not to assign again.
	SupportsSkipAssignment bool
	// Reply is called exactly once, from the goroutine that drives the
	// group, possibly much later (when the rebalance completes).
	Reply func(JoinResult)
}

// JoinResult answers a JoinRequest.
type JoinResult struct {
	ErrorCode      int16
	Generation     int32
	ProtocolType   string
	Protocol       string
	Leader         string
	MemberID       string
	Members        []JoinedMember // the leader's answer only
	SkipAssignment bool
}

// JoinedMember is one member as the leader sees it in its JoinGroup answer.
type JoinedMember struct {
	MemberID, InstanceID string
	Metadata             []byte
}

// SyncRequest is a SyncGroup from one member.
type SyncRequest struct {
	MemberID, InstanceID string
	Generation           int32
	// ProtocolType and Protocol are checked when set (SyncGroup v5+).
	ProtocolType, Protocol string
	// Assignments is the leader's plan, by member id; others send none.
	Assignments map[string][]byte
	Reply       func(SyncResult)
}

// SyncResult answers a SyncRequest.
type SyncResult struct {
	ErrorCode    int16
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// member is one joined member. Fields are owned by the Group.
type member struct {
	id, instanceID       string
	clientID, clientHost string
	protocols            []Protocol
	session, rebalance   time.Duration
	assignment           []byte
	join                 func(JoinResult) // set while awaiting a JoinGroup answer
	sync                 func(SyncResult) // set while awaiting a SyncGroup answer
	// deadline is when the session expires, counted from the last
	// heartbeat, commit or sync; a member awaiting an answer does not
	// expire (the rebalance deadline or the leader's expiry moves it on).
	deadline time.Time
}

func (m *member) awaiting() bool { return m.join != nil || m.sync != nil }

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func sameProtocols(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool {
		return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata)
	})
}

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
	}
	return g
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
	return (g.state == Empty || g.state == Dead) && len(g.members) == 0 && len(g.pending) == 0 && g.outbox == nil && g.persistGen < 0
}

// Join handles a JoinGroup.
func (g *Group) Join(now time.Time, r JoinRequest) {
	fail := func(code int16) {
		r.Reply(JoinResult{ErrorCode: code, MemberID: r.MemberID, Generation: -1})
	}
	switch {
	case g.state == Dead:
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	case r.SessionTimeout < g.cfg.MinSessionTimeout || r.SessionTimeout > g.cfg.MaxSessionTimeout:
		fail(kerr.InvalidSessionTimeout.Code)
		return
	case !g.supports(r.MemberID, r.ProtocolType, r.Protocols):
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	if r.MemberID == "" {
		g.joinNew(now, r, fail)
		return
	}
	if _, ok := g.pending[r.MemberID]; ok {
		delete(g.pending, r.MemberID)
		g.addMember(now, r.MemberID, r)
		return
	}
	if code := g.validateMember(r.MemberID, r.InstanceID); code != 0 {
		fail(code)
		return
	}
	m := g.members[r.MemberID]
	switch g.state {
	case PreparingRebalance:
		g.updateMember(m, r)
		g.maybeCompleteJoin(now)
	case CompletingRebalance:
		if sameProtocols(m.protocols, r.Protocols) {
			// A retried JoinGroup: answer with the generation it missed.
			r.Reply(g.joinResult(m.id, m.id == g.leader, false))
			return
		}
		g.updateMember(m, r)
		g.prepareRebalance(now)
	case Stable:
		if m.id == g.leader || !sameProtocols(m.protocols, r.Protocols) {
			// The leader rejoining means it wants to reassign (a
			// subscription changed on its side): rebalance.
			g.updateMember(m, r)
			g.prepareRebalance(now)
			return
		}
		m.deadline = now.Add(m.session)
		r.Reply(g.joinResult(m.id, false, false))
	default:
		fail(kerr.UnknownMemberID.Code)
	}
}

func (g *Group) joinNew(now time.Time, r JoinRequest, fail func(int16)) {
	if r.InstanceID != "" {
		if old, ok := g.static[r.InstanceID]; ok {
			g.replaceStatic(now, old, r)
			return
		}
	}
	if g.cfg.MaxSize > 0 && len(g.members)+len(g.pending) >= g.cfg.MaxSize {
		fail(kerr.GroupMaxSizeReached.Code)
		return
	}
	if r.InstanceID != "" {
		g.addMember(now, g.cfg.NewMemberID(r.InstanceID), r)
		return
	}
	id := g.cfg.NewMemberID(r.ClientID)
	if r.RequireKnownMemberID {
		// KIP-394: the id is reserved for one session timeout; a client
		// that never comes back with it does not hold up a rebalance
		// longer than that.
		g.pending[id] = now.Add(r.SessionTimeout)
		r.Reply(JoinResult{ErrorCode: kerr.MemberIDRequired.Code, MemberID: id, Generation: -1})
		return
	}
	g.addMember(now, id, r)
}

// replaceStatic gives a known group.instance.id a new member id, as Kafka
// does for a static member that restarts: the old id is fenced, and a
// stable group skips the rebalance when nothing about the member changed.
func (g *Group) replaceStatic(now time.Time, oldID string, r JoinRequest) {
	m := g.members[oldID]
	if m.join != nil {
		m.join(JoinResult{ErrorCode: kerr.FencedInstanceID.Code, MemberID: oldID, Generation: -1})
		m.join = nil
	}
	if m.sync != nil {
		m.sync(SyncResult{ErrorCode: kerr.FencedInstanceID.Code})
		m.sync = nil
	}
	newID := g.cfg.NewMemberID(r.InstanceID)
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	g.order[slices.Index(g.order, oldID)] = newID
	g.static[r.InstanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	if g.pendingAssign != nil {
		if a, ok := g.pendingAssign[oldID]; ok {
			delete(g.pendingAssign, oldID)
			g.pendingAssign[newID] = a
		}
	}
	unchanged := sameProtocols(m.protocols, r.Protocols)
	switch {
	case g.state == Stable && unchanged && (newID != g.leader || r.SupportsSkipAssignment):
		m.clientID, m.clientHost = r.ClientID, r.ClientHost
		m.session, m.rebalance = r.SessionTimeout, r.RebalanceTimeout
		m.deadline = now.Add(m.session)
		isLeader := newID == g.leader
		r.Reply(g.joinResult(newID, isLeader, isLeader))
	case g.state == PreparingRebalance:
		g.updateMember(m, r)
		g.maybeCompleteJoin(now)
	default:
		g.updateMember(m, r)
		g.prepareRebalance(now)
	}
}

func (g *Group) addMember(now time.Time, id string, r JoinRequest) {
	if len(g.members) == 0 {
		g.protoType = r.ProtocolType
	}
	m := &member{id: id, instanceID: r.InstanceID}
	g.members[id] = m
	g.order = append(g.order, id)
	if r.InstanceID != "" {
		g.static[r.InstanceID] = id
	}
	if g.leader == "" {
		g.leader = id
	}
	g.updateMember(m, r)
	if g.state == PreparingRebalance {
		g.newMemberAdded = true
		g.maybeCompleteJoin(now)
		return
	}
	g.prepareRebalance(now)
}

func (g *Group) updateMember(m *member, r JoinRequest) {
	if m.join != nil {
		// The member sent JoinGroup again before the first was answered;
		// only the newest can be completed.
		m.join(JoinResult{ErrorCode: kerr.RebalanceInProgress.Code, MemberID: m.id, Generation: -1})
	}
	m.clientID, m.clientHost = r.ClientID, r.ClientHost
	m.protocols = r.Protocols
	m.session = r.SessionTimeout
	m.rebalance = r.RebalanceTimeout
	if m.rebalance <= 0 {
		m.rebalance = m.session // JoinGroup v0 has no rebalance timeout
	}
	m.join = r.Reply
}

// validateMember checks a request's member id (and instance id, for a
// static member) against the group.
func (g *Group) validateMember(memberID, instanceID string) int16 {
	if instanceID != "" {
		cur, ok := g.static[instanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case cur != memberID:
			return kerr.FencedInstanceID.Code
		}
		return 0
	}
	if _, ok := g.members[memberID]; !ok {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// supports is Kafka's supportsProtocols: an empty group takes any non-empty
// protocol type and list; otherwise the type must match and one protocol
// must be supported by every other member too.
func (g *Group) supports(memberID, protoType string, protos []Protocol) bool {
	if len(protos) == 0 || protoType == "" {
		return false
	}
	others := 0
	for id := range g.members {
		if id != memberID {
			others++
		}
	}
	if others == 0 {
		return true
	}
	if protoType != g.protoType {
		return false
	}
	for _, p := range protos {
		all := true
		for id, m := range g.members {
			if id != memberID && !hasProtocol(m.protocols, p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func hasProtocol(ps []Protocol, name string) bool {
	return slices.ContainsFunc(ps, func(p Protocol) bool { return p.Name == name })
}

// selectProtocol is Kafka's: among the protocols every member supports,
// each member votes for the first it lists; most votes wins. Ties go to the
// protocol the earliest-joined member prefers, so the choice is
// deterministic.
func (g *Group) selectProtocol() string {
	var candidates []string
	first := g.members[g.order[0]]
	for _, p := range first.protocols {
		all := true
		for _, m := range g.members {
			if !hasProtocol(m.protocols, p.Name) {
				all = false
				break
			}
		}
		if all {
			candidates = append(candidates, p.Name)
		}
	}
	if len(candidates) == 0 {
		return ""
	}
	votes := make(map[string]int, len(candidates))
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if slices.Contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := candidates[0]
	for _, c := range candidates[1:] {
		if votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func (g *Group) prepareRebalance(now time.Time) {
	if g.state == CompletingRebalance {
		g.resetAssignment(kerr.RebalanceInProgress.Code)
	}
	maxRebalance := time.Duration(0)
	for _, m := range g.members {
		maxRebalance = max(maxRebalance, m.rebalance)
	}
	if g.state == Empty {
		delay := g.cfg.InitialRebalanceDelay
		g.initialDelay = true
		g.newMemberAdded = false
		g.delayRemaining = max(maxRebalance-delay, 0)
		g.rebalanceDeadline = now.Add(delay)
	} else {
		g.initialDelay = false
		g.rebalanceDeadline = now.Add(maxRebalance)
	}
	g.state = PreparingRebalance
	g.maybeCompleteJoin(now)
}

// resetAssignment drops a leader's plan that was not persisted yet and
// answers the members waiting in SyncGroup with code.
func (g *Group) resetAssignment(code int16) {
	g.pendingAssign = nil
	for _, id := range g.order {
		m := g.members[id]
		m.assignment = nil
		if m.sync != nil {
			m.sync(SyncResult{ErrorCode: code})
			m.sync = nil
		}
	}
}

func (g *Group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.join == nil {
			return false
		}
	}
	return true
}

func (g *Group) maybeCompleteJoin(now time.Time) {
	if g.state == PreparingRebalance && !g.initialDelay && g.allJoined() {
		g.completeJoin(now)
	}
}

// completeJoin ends PreparingRebalance: members that did not rejoin are
// removed, the generation advances, and every waiting JoinGroup is answered
// (the leader with the member list).
func (g *Group) completeJoin(now time.Time) {
	for _, id := range slices.Clone(g.order) {
		if g.members[id].join == nil {
			g.removeMember(id, kerr.UnknownMemberID.Code)
		}
	}
	g.initialDelay = false
	g.generation++
	if len(g.members) == 0 {
		g.state = Empty
		g.protocol, g.leader = "", ""
		g.queuePersist()
		return
	}
	g.state = CompletingRebalance
	g.protocol = g.selectProtocol()
	if _, ok := g.members[g.leader]; !ok {
		g.leader = g.order[0]
	}
	for _, id := range g.order {
		m := g.members[id]
		m.deadline = now.Add(m.session)
		reply := m.join
		m.join = nil
		reply(g.joinResult(id, id == g.leader, false))
	}
}

func (g *Group) joinResult(memberID string, withMembers, skip bool) JoinResult {
	res := JoinResult{
		Generation: g.generation, ProtocolType: g.protoType, Protocol: g.protocol,
		Leader: g.leader, MemberID: memberID, SkipAssignment: skip,
	}
	if withMembers {
		res.Members = make([]JoinedMember, 0, len(g.order))
		for _, id := range g.order {
			m := g.members[id]
			res.Members = append(res.Members, JoinedMember{MemberID: id, InstanceID: m.instanceID, Metadata: m.metadataFor(g.protocol)})
		}
	}
	return res
}

// removeMember drops a member; a reply it still waits for gets code.
func (g *Group) removeMember(id string, code int16) {
	m, ok := g.members[id]
	if !ok {
		return
	}
	if m.join != nil {
		m.join(JoinResult{ErrorCode: code, MemberID: id, Generation: -1})
	}
	if m.sync != nil {
		m.sync(SyncResult{ErrorCode: code})
	}
	delete(g.members, id)
	g.order = slices.DeleteFunc(g.order, func(s string) bool { return s == id })
	if m.instanceID != "" && g.static[m.instanceID] == id {
		delete(g.static, m.instanceID)
	}
	if g.leader == id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

// removeAndRebalance removes a member that left or expired and moves the
// group on: a settled group rebalances, a rebalancing one may now be done.
func (g *Group) removeAndRebalance(now time.Time, id string) {
	g.removeMember(id, kerr.UnknownMemberID.Code)
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance(now)
	case PreparingRebalance:
		g.maybeCompleteJoin(now)
	}
}

// Sync handles a SyncGroup.
func (g *Group) Sync(now time.Time, r SyncRequest) {
	fail := func(code int16) { r.Reply(SyncResult{ErrorCode: code}) }
	if g.state == Dead {
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	if code := g.validateMember(r.MemberID, r.InstanceID); code != 0 {
		fail(code)
		return
	}
	if r.Generation != g.generation {
		fail(kerr.IllegalGeneration.Code)
		return
	}
	if (r.ProtocolType != "" && r.ProtocolType != g.protoType) || (r.Protocol != "" && r.Protocol != g.protocol) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	m := g.members[r.MemberID]
	switch g.state {
	case PreparingRebalance:
		fail(kerr.RebalanceInProgress.Code)
	case CompletingRebalance:
		if m.sync != nil {
			m.sync(SyncResult{ErrorCode: kerr.RebalanceInProgress.Code})
		}
		m.sync = r.Reply
		m.deadline = now.Add(m.session)
		if m.id == g.leader && g.pendingAssign == nil {
			// Members the leader left out get an empty assignment, as in
			// Kafka; those it assigned get exactly its bytes.
			g.pendingAssign = make(map[string][]byte, len(g.members))
			for id := range g.members {
				a := r.Assignments[id]
				if a == nil {
					a = []byte{}
				}
				g.pendingAssign[id] = a
			}
			g.queuePersist()
		}
	case Stable:
		m.deadline = now.Add(m.session)
		r.Reply(SyncResult{ProtocolType: g.protoType, Protocol: g.protocol, Assignment: m.assignment})
	default:
		fail(kerr.UnknownMemberID.Code)
	}
}

func (g *Group) queuePersist() {
	rec := &metadata.GroupGeneration{
		Group: g.id, Generation: g.generation, ProtocolType: g.protoType, Protocol: g.protocol, Leader: g.leader,
	}
	for _, id := range g.order {
		rec.Members = append(rec.Members, metadata.GroupMember{MemberID: id, InstanceID: g.members[id].instanceID})
	}
	g.outbox = rec
	g.persistGen = g.generation
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
}

// Heartbeat handles a Heartbeat and returns its error code.
func (g *Group) Heartbeat(now time.Time, memberID, instanceID string, generation int32) int16 {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if code := g.validateMember(memberID, instanceID); code != 0 {
		return code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	m := g.members[memberID]
	m.deadline = now.Add(m.session)
	if g.state == PreparingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// Leave handles one member of a LeaveGroup and returns its error code. A
// static member may leave by instance id alone (memberID empty).
func (g *Group) Leave(now time.Time, memberID, instanceID string) int16 {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if instanceID != "" {
		cur, ok := g.static[instanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case memberID != "" && memberID != cur:
			return kerr.FencedInstanceID.Code
		}
		g.removeAndRebalance(now, cur)
		return 0
	}
	if _, ok := g.pending[memberID]; ok {
		delete(g.pending, memberID)
		g.maybeCompleteJoin(now)
		return 0
	}
	if _, ok := g.members[memberID]; !ok {
		return kerr.UnknownMemberID.Code
	}
	g.removeAndRebalance(now, memberID)
	return 0
}

// ValidateCommit checks an OffsetCommit's member and generation, as Kafka's
// handleCommitOffsets: a commit with a negative generation to an Empty group
// is a standalone ("simple") commit and always allowed; otherwise the
// member must belong to the current generation, and commits are refused
// only while the leader's assignment is awaited. A valid commit counts as a
// heartbeat.
func (g *Group) ValidateCommit(now time.Time, memberID, instanceID string, generation int32) int16 {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if generation < 0 && g.state == Empty {
		return 0
	}
	if code := g.validateMember(memberID, instanceID); code != 0 {
		return code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	if g.state == CompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	m := g.members[memberID]
	m.deadline = now.Add(m.session)
	return 0
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

// MemberDescription is one member in DescribeGroups.
type MemberDescription struct {
	MemberID, InstanceID, ClientID, ClientHost string
	Metadata, Assignment                       []byte
}

// Description is a group as DescribeGroups shows it.
type Description struct {
	State        State
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

// Describe summarizes the group. Like Kafka, only a Stable group shows the
// protocol and each member's metadata and assignment.
func (g *Group) Describe() Description {
	d := Description{State: g.state, ProtocolType: g.protoType}
	stable := g.state == Stable
	if stable {
		d.Protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		md := MemberDescription{MemberID: id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			md.Metadata, md.Assignment = m.metadataFor(g.protocol), m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d
}

// SubscriptionMetadata returns each member's metadata for the selected
// protocol (for OffsetDelete's subscription check); ok is false when no
// protocol is selected.
func (g *Group) SubscriptionMetadata() (md [][]byte, ok bool) {
	if g.protocol == "" {
		return nil, false
	}
	for _, id := range g.order {
		md = append(md, g.members[id].metadataFor(g.protocol))
	}
	return md, true
}
