package consumergroup

import (
	"slices"

	"github.com/raftka/raftka/broker/group/assignor"
)

// reconcile moves m towards its target assignment, as Kafka's
// CurrentAssignmentBuilder: owned is what the member's heartbeat reports
// (nil: not sent).
func (g *Group) reconcile(m *Member, owned []TopicPartitions) {
	switch m.State {
	case Stable:
		if m.Epoch != g.assignmentEpoch {
			g.nextAssignment(m, m.Epoch, owned)
		}
	case UnrevokedPartitions:
		// Still reporting a partition it must give up: wait.
		if ownsAny(owned, m.PendingRevocation) {
			return
		}
		// Revoked: the member moves on from its epoch.
		g.nextAssignment(m, m.Epoch+1, owned)
	case UnreleasedPartitions:
		g.nextAssignment(m, m.Epoch, owned)
	}
}

// ownsAny reports whether owned holds one of a's partitions; not knowing
// (owned nil) counts as holding them.
func ownsAny(owned []TopicPartitions, a assignor.Assignment) bool {
	if owned == nil {
		return true
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if slices.Contains(a[t.TopicID], p) {
				return true
			}
		}
	}
	return false
}

// nextAssignment is Kafka's computeNextAssignment: keep what stays, ask to
// revoke what goes (the member stays at epoch), else take what is free and
// move to the target epoch.
func (g *Group) nextAssignment(m *Member, epoch int32, owned []TopicPartitions) {
	target := g.target[m.ID]
	assigned, revoke, add := assignor.Assignment{}, assignor.Assignment{}, assignor.Assignment{}
	unreleased := false
	topics := map[assignor.TopicID]bool{}
	for t := range target {
		topics[t] = true
	}
	for t := range m.Assigned {
		topics[t] = true
	}
	for t := range topics {
		for _, p := range m.Assigned[t] {
			if slices.Contains(target[t], p) {
				assigned[t] = append(assigned[t], p)
			} else {
				revoke[t] = append(revoke[t], p)
			}
		}
		for _, p := range target[t] {
			if slices.Contains(assigned[t], p) {
				continue
			}
			if holder, held := g.owners[tp{t, p}]; held && holder != m.ID {
				unreleased = true
				continue
			}
			add[t] = append(add[t], p)
		}
	}
	g.release(m)
	defer g.hold(m)
	// As Kafka's updateMemberEpoch: the previous epoch is the one before
	// this step, even when the epoch stays.
	setEpoch := func(e int32) { m.PreviousEpoch, m.Epoch = m.Epoch, e }
	if len(revoke) > 0 && ownsAny(owned, revoke) {
		m.State = UnrevokedPartitions
		setEpoch(epoch)
		m.Assigned, m.PendingRevocation = sorted(assigned), sorted(revoke)
		return
	}
	for t, ps := range add {
		assigned[t] = append(assigned[t], ps...)
	}
	m.State = Stable
	if unreleased {
		m.State = UnreleasedPartitions
	}
	setEpoch(g.assignmentEpoch)
	m.Assigned, m.PendingRevocation = sorted(assigned), assignor.Assignment{}
}

func sorted(a assignor.Assignment) assignor.Assignment {
	for t, ps := range a {
		if len(ps) == 0 {
			delete(a, t)
			continue
		}
		slices.Sort(ps)
	}
	return a
}
