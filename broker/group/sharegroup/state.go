package sharegroup

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/raftka/raftka/metadata"
)

// State is a group's durable state, as the image keeps it (records 55-59).
type State = metadata.ShareGroupImage

func toParts(a Assignment) []metadata.ShareGroupPartitions {
	out := make([]metadata.ShareGroupPartitions, 0, len(a))
	for t, ps := range a {
		if len(ps) > 0 {
			out = append(out, metadata.ShareGroupPartitions{TopicID: t, Partitions: slices.Clone(ps)})
		}
	}
	slices.SortFunc(out, func(x, y metadata.ShareGroupPartitions) int {
		return cmp.Compare(string(x.TopicID[:]), string(y.TopicID[:]))
	})
	return out
}

func fromParts(ps []metadata.ShareGroupPartitions) Assignment {
	a := make(Assignment, len(ps))
	for _, p := range ps {
		a[p.TopicID] = slices.Clone(p.Partitions)
	}
	return a
}

// Export is the group's durable state.
func (g *Group) Export() *State {
	st := &State{Epoch: g.epoch, AssignmentEpoch: g.assignmentEpoch,
		Members: make(map[string]metadata.ShareGroupMember, len(g.members)),
		Target:  make(map[string][]metadata.ShareGroupPartitions, len(g.target))}
	for _, name := range slices.Sorted(maps.Keys(g.subscribed)) {
		t := g.subscribed[name]
		st.Topics = append(st.Topics, metadata.ShareGroupTopic{Name: name, ID: t.ID, Partitions: t.Partitions})
	}
	for id, m := range g.members {
		st.Members[id] = metadata.ShareGroupMember{Group: g.id, MemberID: id, RackID: m.RackID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			SubscribedTopicNames: slices.Clone(m.SubscribedTopicNames), MemberEpoch: m.Epoch, PreviousMemberEpoch: m.PreviousEpoch, Assigned: toParts(m.Assigned)}
	}
	for id, a := range g.target {
		st.Target[id] = toParts(a)
	}
	return st
}

// Restore rebuilds a group from its durable state, every member's session
// starting afresh with deadline, as a coordinator that takes the group over.
func Restore(id string, st *State, deadline time.Time) *Group {
	g := New(id)
	g.epoch, g.assignmentEpoch = st.Epoch, st.AssignmentEpoch
	for _, t := range st.Topics {
		g.subscribed[t.Name] = Topic{ID: t.ID, Partitions: t.Partitions}
	}
	for mid, m := range st.Members {
		g.members[mid] = &Member{ID: mid, RackID: m.RackID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			Epoch: m.MemberEpoch, PreviousEpoch: m.PreviousMemberEpoch, SubscribedTopicNames: slices.Clone(m.SubscribedTopicNames),
			Assigned: fromParts(m.Assigned), Deadline: deadline}
	}
	for mid, ps := range st.Target {
		g.target[mid] = fromParts(ps)
	}
	return g
}

// StateFromImage is a share group's durable state in img.
func StateFromImage(img *metadata.Image, id string) (*State, bool) {
	if img == nil {
		return nil, false
	}
	st, ok := img.ShareGroup(id)
	if !ok {
		return nil, false
	}
	return &st, true
}

// ShareGroupsInImage lists img's share groups, sorted.
func ShareGroupsInImage(img *metadata.Image) []string {
	if img == nil {
		return nil
	}
	return img.ShareGroups()
}

// Diff is the records that take a group's durable state from prev (nil: the
// group is new) to next: only what changed, so that a member moving to a
// new epoch costs its own record and nothing else.
//
// A nil next is the group deleted.
func Diff(group string, prev, next *State) []metadata.Record {
	if next == nil {
		if prev == nil {
			return nil
		}
		return []metadata.Record{&metadata.ShareGroupDelete{Group: group}}
	}
	var recs []metadata.Record
	if prev == nil || prev.Epoch != next.Epoch || !slices.Equal(prev.Topics, next.Topics) {
		recs = append(recs, &metadata.ShareGroupEpoch{Group: group, Epoch: next.Epoch, Topics: slices.Clone(next.Topics)})
	}
	var old map[string]metadata.ShareGroupMember
	if prev != nil {
		old = prev.Members
	}
	for _, id := range slices.Sorted(maps.Keys(old)) {
		if _, ok := next.Members[id]; !ok {
			recs = append(recs, &metadata.ShareGroupRemoveMember{Group: group, MemberID: id})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(next.Members)) {
		m := next.Members[id]
		if o, ok := old[id]; !ok || !memberEqual(o, m) {
			recs = append(recs, &m)
		}
	}
	if prev == nil || prev.AssignmentEpoch != next.AssignmentEpoch || !maps.EqualFunc(prev.Target, next.Target, partsEqual) {
		t := &metadata.ShareGroupTargetAssignment{Group: group, AssignmentEpoch: next.AssignmentEpoch, Members: []metadata.ShareGroupMemberTarget{}}
		for _, id := range slices.Sorted(maps.Keys(next.Target)) {
			t.Members = append(t.Members, metadata.ShareGroupMemberTarget{MemberID: id, Partitions: next.Target[id]})
		}
		recs = append(recs, t)
	}
	return recs
}

func partsEqual(a, b []metadata.ShareGroupPartitions) bool {
	return slices.EqualFunc(a, b, func(x, y metadata.ShareGroupPartitions) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions)
	})
}

func memberEqual(a, b metadata.ShareGroupMember) bool {
	return a.RackID == b.RackID && a.ClientID == b.ClientID && a.ClientHost == b.ClientHost &&
		slices.Equal(a.SubscribedTopicNames, b.SubscribedTopicNames) && a.MemberEpoch == b.MemberEpoch &&
		a.PreviousMemberEpoch == b.PreviousMemberEpoch && partsEqual(a.Assigned, b.Assigned)
}

// RecordWriter commits share-group records through the active controller
// (*raftfsm.ControllerClient's WriteShareGroup).
type RecordWriter interface {
	WriteShareGroup(ctx context.Context, recs []metadata.Record) (uint64, error)
}

// NewControllerPersister persists a group's changes as the records Diff
// gives, all of one change in one controller call (one Raft entry).
func NewControllerPersister(w RecordWriter) Persister { return controllerPersister{w} }

type controllerPersister struct{ w RecordWriter }

func (p controllerPersister) PersistShareGroup(ctx context.Context, group string, prev, next *State) error {
	recs := Diff(group, prev, next)
	if len(recs) == 0 {
		return nil
	}
	_, err := p.w.WriteShareGroup(ctx, recs)
	return err
}
