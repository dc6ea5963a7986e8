package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

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
