package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

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
	if g.rebalanceStarted.IsZero() {
		// A rebalance restarted before it completed is the same one.
		g.rebalanceStarted = now
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
		g.rebalanceStarted = time.Time{} // ended with nobody: not completed
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
		return g.leaveStatic(now, memberID, instanceID)
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
