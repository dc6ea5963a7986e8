package metadata

import (
	"maps"
	"slices"
)

// Share groups (KIP-932) are records 55-59: a group's epoch and the
// subscribed topics' metadata it was computed for, each member (its
// subscriptions, epochs and current assignment), the target assignment,
// and the removal of a member or of the group. The coordinator writes them
// only when the group changes (a join, a leave, an expiry, a new target,
// a member moving to a new epoch), never per heartbeat, so a coordinator
// that takes a slot over resumes each group with its epochs.
const (
	TypeShareGroupEpoch            RecordType = 55
	TypeShareGroupMember           RecordType = 56
	TypeShareGroupRemoveMember     RecordType = 57
	TypeShareGroupTargetAssignment RecordType = 58
	TypeShareGroupDelete           RecordType = 59
)

func shareRecordTypeName(t RecordType) (string, bool) {
	switch t {
	case TypeShareGroupEpoch:
		return "ShareGroupEpoch", true
	case TypeShareGroupMember:
		return "ShareGroupMember", true
	case TypeShareGroupRemoveMember:
		return "ShareGroupRemoveMember", true
	case TypeShareGroupTargetAssignment:
		return "ShareGroupTargetAssignment", true
	case TypeShareGroupDelete:
		return "ShareGroupDelete", true
	}
	return "", false
}

// ShareGroupTopic is a subscribed topic as the group's last target saw it.
type ShareGroupTopic struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// ShareGroupPartitions is one topic's partitions of an assignment.
type ShareGroupPartitions struct {
	TopicID    [16]byte
	Partitions []int32
}

// ShareGroupEpoch creates the share group if it does not exist and sets its
// group epoch and the subscription metadata (Kafka's ShareGroupMetadata and
// ShareGroupPartitionMetadata values).
type ShareGroupEpoch struct {
	Group  string
	Epoch  int32
	Topics []ShareGroupTopic // sorted by name
}

// ShareGroupMember sets one member of an existing share group (Kafka's
// ShareGroupMemberMetadata and ShareGroupCurrentMemberAssignment values).
type ShareGroupMember struct {
	Group                string
	MemberID             string
	RackID               string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	MemberEpoch          int32
	PreviousMemberEpoch  int32
	Assigned             []ShareGroupPartitions // sorted by topic id
}

// ShareGroupRemoveMember removes a member and its target assignment.
type ShareGroupRemoveMember struct {
	Group    string
	MemberID string
}

// ShareGroupMemberTarget is one member's target assignment.
type ShareGroupMemberTarget struct {
	MemberID   string
	Partitions []ShareGroupPartitions
}

// ShareGroupTargetAssignment replaces a share group's whole target
// assignment and its epoch (Kafka writes it member by member; one record
// keeps a target and its epoch one step).
type ShareGroupTargetAssignment struct {
	Group           string
	AssignmentEpoch int32
	Members         []ShareGroupMemberTarget // sorted by member id
}

// ShareGroupDelete removes a share group.
type ShareGroupDelete struct {
	Group string
}

func (*ShareGroupEpoch) Type() RecordType            { return TypeShareGroupEpoch }
func (*ShareGroupMember) Type() RecordType           { return TypeShareGroupMember }
func (*ShareGroupRemoveMember) Type() RecordType     { return TypeShareGroupRemoveMember }
func (*ShareGroupTargetAssignment) Type() RecordType { return TypeShareGroupTargetAssignment }
func (*ShareGroupDelete) Type() RecordType           { return TypeShareGroupDelete }
func (*ShareGroupEpoch) Version() int16              { return 0 }
func (*ShareGroupMember) Version() int16             { return 0 }
func (*ShareGroupRemoveMember) Version() int16       { return 0 }
func (*ShareGroupTargetAssignment) Version() int16   { return 0 }
func (*ShareGroupDelete) Version() int16             { return 0 }

// ShareGroupImage is one share group's durable state.
type ShareGroupImage struct {
	Epoch           int32
	Topics          []ShareGroupTopic
	Members         map[string]ShareGroupMember
	AssignmentEpoch int32
	Target          map[string][]ShareGroupPartitions
}

func (g *ShareGroupImage) clone() *ShareGroupImage {
	c := *g
	c.Members = maps.Clone(g.Members)
	c.Target = maps.Clone(g.Target)
	if c.Members == nil {
		c.Members = map[string]ShareGroupMember{}
	}
	if c.Target == nil {
		c.Target = map[string][]ShareGroupPartitions{}
	}
	return &c
}

func sharePartsEqual(a, b []ShareGroupPartitions) bool {
	return slices.EqualFunc(a, b, func(x, y ShareGroupPartitions) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions)
	})
}

func shareMemberEqual(a, b ShareGroupMember) bool {
	return a.Group == b.Group && a.MemberID == b.MemberID && a.RackID == b.RackID && a.ClientID == b.ClientID &&
		a.ClientHost == b.ClientHost && slices.Equal(a.SubscribedTopicNames, b.SubscribedTopicNames) &&
		a.MemberEpoch == b.MemberEpoch && a.PreviousMemberEpoch == b.PreviousMemberEpoch && sharePartsEqual(a.Assigned, b.Assigned)
}

func (g *ShareGroupImage) equal(o *ShareGroupImage) bool {
	return g.Epoch == o.Epoch && g.AssignmentEpoch == o.AssignmentEpoch && slices.Equal(g.Topics, o.Topics) &&
		maps.EqualFunc(g.Members, o.Members, shareMemberEqual) && maps.EqualFunc(g.Target, o.Target, sharePartsEqual)
}

// ShareGroup returns a share group's durable state; the maps and slices in
// it are shared with the image and must not be modified.
func (img *Image) ShareGroup(id string) (ShareGroupImage, bool) {
	g, ok := img.shareGroups[id]
	if !ok {
		return ShareGroupImage{}, false
	}
	return *g, true
}

// ShareGroups returns the ids of the share groups, sorted.
func (img *Image) ShareGroups() []string {
	return slices.Sorted(maps.Keys(img.shareGroups))
}

// shareGroupApplier replays share-group records. Share groups change on
// joins, leaves and rebalances, not per heartbeat, so the map of groups is
// copied on the first change of a batch, and each group on its first change.
type shareGroupApplier struct {
	img     *Image
	owned   bool
	touched map[string]bool // groups copied in this batch
	changed map[string]bool
}

func (a *shareGroupApplier) own(group string) *ShareGroupImage {
	if !a.owned {
		a.img.shareGroups = maps.Clone(a.img.shareGroups)
		if a.img.shareGroups == nil {
			a.img.shareGroups = map[string]*ShareGroupImage{}
		}
		a.owned = true
	}
	mark(&a.changed, group)
	g := a.img.shareGroups[group]
	if g == nil {
		return nil
	}
	if !a.touched[group] {
		g = g.clone()
		a.img.shareGroups[group] = g
		mark(&a.touched, group)
	}
	return g
}

func (a *shareGroupApplier) apply(rec Record) (bool, error) {
	switch r := rec.(type) {
	case *ShareGroupEpoch:
		if r.Group == "" {
			return true, invalid("share group epoch without a group id")
		}
		if _, ok := a.img.shareGroups[r.Group]; !ok && IsClassicGroup(a.img, r.Group) {
			return true, invalid("group %s is a classic group, not a share group", r.Group)
		}
		g := a.own(r.Group)
		if g == nil {
			g = &ShareGroupImage{Members: map[string]ShareGroupMember{}, Target: map[string][]ShareGroupPartitions{}}
			a.img.shareGroups[r.Group] = g
			mark(&a.touched, r.Group)
		}
		g.Epoch, g.Topics = r.Epoch, slices.Clone(r.Topics)
	case *ShareGroupMember:
		if _, ok := a.img.shareGroups[r.Group]; !ok {
			return true, invalid("member %s of share group %s, which does not exist", r.MemberID, r.Group)
		}
		g := a.own(r.Group)
		g.Members[r.MemberID] = *r
	case *ShareGroupRemoveMember:
		if _, ok := a.img.shareGroups[r.Group]; !ok {
			return true, invalid("member %s of share group %s, which does not exist", r.MemberID, r.Group)
		}
		g := a.own(r.Group)
		delete(g.Members, r.MemberID)
		delete(g.Target, r.MemberID)
	case *ShareGroupTargetAssignment:
		if _, ok := a.img.shareGroups[r.Group]; !ok {
			return true, invalid("target assignment of share group %s, which does not exist", r.Group)
		}
		g := a.own(r.Group)
		g.AssignmentEpoch = r.AssignmentEpoch
		g.Target = make(map[string][]ShareGroupPartitions, len(r.Members))
		for _, m := range r.Members {
			g.Target[m.MemberID] = m.Partitions
		}
	case *ShareGroupDelete:
		if _, ok := a.img.shareGroups[r.Group]; !ok {
			return true, invalid("share group %s does not exist", r.Group)
		}
		a.own(r.Group)
		delete(a.img.shareGroups, r.Group)
		if len(a.img.shareGroups) == 0 {
			a.img.shareGroups = nil
			a.owned = false
		}
	default:
		return false, nil
	}
	return true, nil
}

// IsClassicGroup says whether img holds groupID as a classic group
// (committed offsets or a generation).
func IsClassicGroup(img *Image, groupID string) bool {
	if _, ok := img.GroupGeneration(groupID); ok {
		return true
	}
	return len(img.Offsets(groupID)) > 0
}

// shareGroupRecords is the image's share groups as records, for snapshots.
func (img *Image) shareGroupRecords() []Record {
	var recs []Record
	for _, id := range img.ShareGroups() {
		g := img.shareGroups[id]
		recs = append(recs, &ShareGroupEpoch{Group: id, Epoch: g.Epoch, Topics: slices.Clone(g.Topics)})
		for _, mid := range slices.Sorted(maps.Keys(g.Members)) {
			m := g.Members[mid]
			recs = append(recs, &m)
		}
		t := &ShareGroupTargetAssignment{Group: id, AssignmentEpoch: g.AssignmentEpoch, Members: []ShareGroupMemberTarget{}}
		for _, mid := range slices.Sorted(maps.Keys(g.Target)) {
			t.Members = append(t.Members, ShareGroupMemberTarget{MemberID: mid, Partitions: g.Target[mid]})
		}
		recs = append(recs, t)
	}
	return recs
}

func (w *writer) shareParts(ps []ShareGroupPartitions) {
	w.count(len(ps), ps == nil)
	for _, p := range ps {
		w.uuid(p.TopicID)
		w.int32s(p.Partitions)
	}
}

func (r *reader) shareParts() []ShareGroupPartitions {
	n, ok := r.count(17)
	if !ok {
		return nil
	}
	out := make([]ShareGroupPartitions, n)
	for i := range out {
		out[i] = ShareGroupPartitions{TopicID: r.uuid(), Partitions: r.int32s()}
	}
	return out
}

func (w *writer) strs(v []string) {
	w.count(len(v), v == nil)
	for _, s := range v {
		w.str(s)
	}
}

func (r *reader) strs() []string {
	n, ok := r.count(1)
	if !ok {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

func encodeShareGroup(w *writer, rec Record) bool {
	switch r := rec.(type) {
	case *ShareGroupEpoch:
		w.str(r.Group)
		w.i32(r.Epoch)
		w.count(len(r.Topics), r.Topics == nil)
		for _, t := range r.Topics {
			w.str(t.Name)
			w.uuid(t.ID)
			w.i32(t.Partitions)
		}
	case *ShareGroupMember:
		w.str(r.Group)
		w.str(r.MemberID)
		w.str(r.RackID)
		w.str(r.ClientID)
		w.str(r.ClientHost)
		w.strs(r.SubscribedTopicNames)
		w.i32(r.MemberEpoch)
		w.i32(r.PreviousMemberEpoch)
		w.shareParts(r.Assigned)
	case *ShareGroupRemoveMember:
		w.str(r.Group)
		w.str(r.MemberID)
	case *ShareGroupTargetAssignment:
		w.str(r.Group)
		w.i32(r.AssignmentEpoch)
		w.count(len(r.Members), r.Members == nil)
		for _, m := range r.Members {
			w.str(m.MemberID)
			w.shareParts(m.Partitions)
		}
	case *ShareGroupDelete:
		w.str(r.Group)
	default:
		return false
	}
	return true
}

func decodeShareGroup(r *reader, typ RecordType) (Record, bool) {
	switch typ {
	case TypeShareGroupEpoch:
		x := &ShareGroupEpoch{Group: r.str(), Epoch: r.i32()}
		if n, ok := r.count(21); ok {
			x.Topics = make([]ShareGroupTopic, n)
			for i := range x.Topics {
				x.Topics[i] = ShareGroupTopic{Name: r.str(), ID: r.uuid(), Partitions: r.i32()}
			}
		}
		return x, true
	case TypeShareGroupMember:
		return &ShareGroupMember{Group: r.str(), MemberID: r.str(), RackID: r.str(), ClientID: r.str(), ClientHost: r.str(),
			SubscribedTopicNames: r.strs(), MemberEpoch: r.i32(), PreviousMemberEpoch: r.i32(), Assigned: r.shareParts()}, true
	case TypeShareGroupRemoveMember:
		return &ShareGroupRemoveMember{Group: r.str(), MemberID: r.str()}, true
	case TypeShareGroupTargetAssignment:
		x := &ShareGroupTargetAssignment{Group: r.str(), AssignmentEpoch: r.i32()}
		if n, ok := r.count(2); ok {
			x.Members = make([]ShareGroupMemberTarget, n)
			for i := range x.Members {
				x.Members[i] = ShareGroupMemberTarget{MemberID: r.str(), Partitions: r.shareParts()}
			}
		}
		return x, true
	case TypeShareGroupDelete:
		return &ShareGroupDelete{Group: r.str()}, true
	}
	return nil, false
}
