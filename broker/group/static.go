package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// replaceStatic gives a known group.instance.id a new member id, as Kafka
// does for a static member that restarts: the old id is fenced, and a
// stable group stays stable unless the member's new protocols change the
// protocol the group would select. That holds for the leader too: KIP-345
// exists so that a restarting member, leader or not, does not revoke
// everyone's partitions.
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
	leaderBefore := g.leader
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
	g.updateMember(m, r)
	switch g.state {
	case Stable:
		if g.selectProtocol() != g.protocol {
			g.prepareRebalance(now)
			return
		}
		// No record to persist: the image keeps generations, not member
		// ids (a group loaded elsewhere starts Empty and its members join
		// again), and this generation is already recorded.
		m.join = nil
		m.deadline = now.Add(m.session)
		r.Reply(g.staticRejoinResult(newID, leaderBefore, r.SupportsSkipAssignment))
	case PreparingRebalance:
		g.maybeCompleteJoin(now)
	default:
		// CompletingRebalance: the leader may be assigning to the old id,
		// so its plan would miss the new one; start over, as Kafka does.
		g.prepareRebalance(now)
	}
}

// staticRejoinResult answers a static member that rejoined a Stable group
// without a rebalance. A v9+ (KIP-814) leader is told it leads, gets the
// members and is told to skip the assignment, so it can watch metadata
// without assigning. Older clients always get the leader id from before
// the rejoin: a restarted leader sees an id that is not its own, acts as a
// follower and syncs for the assignment it had; were it told it leads, it
// would compute a plan that a Stable group never hands out.
func (g *Group) staticRejoinResult(newID, leaderBefore string, skipAssignment bool) JoinResult {
	if !skipAssignment {
		res := g.joinResult(newID, false, false)
		res.Leader = leaderBefore
		return res
	}
	isLeader := newID == g.leader
	return g.joinResult(newID, isLeader, isLeader)
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

// leaveStatic removes a static member by its instance id; the member id,
// when given, must be the instance's current one.
func (g *Group) leaveStatic(now time.Time, memberID, instanceID string) int16 {
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
