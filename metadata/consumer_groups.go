package metadata

import (
	"fmt"
	"slices"
	"strings"
)

// ConsumerGroup is the whole durable state of a KIP-848 consumer group, as
// its coordinator (broker/group) last wrote it: what Kafka keeps in its
// ConsumerGroupMetadata, ConsumerGroupMemberMetadata,
// ConsumerGroupPartitionMetadata, ConsumerGroupTargetAssignment*,
// ConsumerGroupCurrentMemberAssignment and ConsumerGroupRegularExpression
// records, in one record. The
// coordinator writes it only when the state changes (a heartbeat that
// changes nothing writes nothing), before it answers the heartbeat that
// changed it, so a coordinator that takes the group over resumes from
// exactly what the members were told. Session timers are not in it: a new
// coordinator starts every session afresh.
type ConsumerGroup struct {
	Group string
	// CoordinatorEpoch is the leader epoch of the group's coordinator slot
	// when written: a write from an older epoch (a coordinator that lost
	// the slot) is refused, so two coordinators never both move a group.
	CoordinatorEpoch int32
	// Slot is the group's coordinator slot (its __consumer_offsets
	// partition): the controller records a write only while that slot's
	// leader epoch is CoordinatorEpoch, so a coordinator that has not yet
	// learnt it lost the slot cannot write after the new one loaded the
	// group.
	Slot            int32
	Epoch           int32 // the group epoch
	AssignmentEpoch int32 // the target assignment's epoch
	Members         []ConsumerGroupMember
	// Topics are the subscribed topics as the group last resolved them,
	// sorted by name (what a change of theirs is detected against).
	Topics []ConsumerGroupTopic
	// Regexes are the regular expressions the members subscribe with, as
	// the coordinator last resolved each, sorted by Regex and unique; nil
	// (or empty: the same) when no member subscribes by regex. A record
	// with some is version 2.
	Regexes []ConsumerGroupRegex
	// StateTimestampMs is when the controller recorded this state; for a
	// group without members, when it became empty, from which its offsets'
	// retention counts (KIP-211).
	StateTimestampMs int64
}

// ConsumerGroupMember is one member of a ConsumerGroup.
type ConsumerGroupMember struct {
	MemberID, InstanceID, RackID string
	ClientID, ClientHost         string
	Epoch, PreviousEpoch         int32
	State                        int8 // the coordinator's reconciliation state
	RebalanceTimeoutMs           int32
	SubscribedTopicNames         []string
	SubscribedTopicRegex         string
	ServerAssignor               string
	// Assigned is what the member owns, PendingRevocation what it owns and
	// must give up, Target its share of the target assignment.
	Assigned, PendingRevocation, Target []ConsumerGroupPartitions
	// Classic is set for a member that speaks the classic protocol
	// (KIP-848's online upgrade: JoinGroup/SyncGroup in a consumer group),
	// as Kafka's ClassicMemberMetadata. A record with one is version 1.
	Classic *ConsumerGroupClassicMember
}

// ConsumerGroupClassicMember is a classic member's session timeout and
// the assignment protocols of its JoinGroup, with their consumer protocol
// Subscriptions.
type ConsumerGroupClassicMember struct {
	SessionTimeoutMs int32
	Protocols        []ConsumerGroupClassicProtocol
}

// ConsumerGroupClassicProtocol is one protocol of a classic member.
type ConsumerGroupClassicProtocol struct {
	Name     string
	Metadata []byte
}

func (c *ConsumerGroupClassicMember) equal(o *ConsumerGroupClassicMember) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c.SessionTimeoutMs == o.SessionTimeoutMs && slices.EqualFunc(c.Protocols, o.Protocols, func(x, y ConsumerGroupClassicProtocol) bool {
		return x.Name == y.Name && string(x.Metadata) == string(y.Metadata)
	})
}

func (c *ConsumerGroupClassicMember) clone() *ConsumerGroupClassicMember {
	if c == nil {
		return nil
	}
	out := &ConsumerGroupClassicMember{SessionTimeoutMs: c.SessionTimeoutMs}
	for _, p := range c.Protocols {
		out.Protocols = append(out.Protocols, ConsumerGroupClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
	}
	return out
}

// hasClassic reports whether a member speaks the classic protocol, which
// takes version 1 of the record.
func (g *ConsumerGroup) hasClassic() bool {
	for _, m := range g.Members {
		if m.Classic != nil {
			return true
		}
	}
	return false
}

// ConsumerGroupPartitions is one topic's partitions in an assignment.
type ConsumerGroupPartitions struct {
	TopicID    [16]byte
	Partitions []int32
}

// ConsumerGroupRegex is one regular expression some member subscribes
// with (SubscribedTopicRegex) and its resolution, what Kafka's
// ConsumerGroupRegularExpression record keeps (ResolvedRegularExpression:
// topics, version, timestamp). The coordinator records a new resolution
// only when the topics it takes change, so a steady group writes nothing.
type ConsumerGroupRegex struct {
	Regex  string
	Topics []string // the topics it took, sorted by name
	// Version is the Raft log index of the metadata image the coordinator
	// resolved it against: raftka's counterpart of Kafka's metadata image
	// offset (MetadataImage.provenance().lastContainedOffset()), which
	// Kafka records; -1 when the coordinator did not know it.
	Version int64
	// TimestampMs is the coordinator's clock at the heartbeat that
	// resolved it, as Kafka records the resolution's start time.
	TimestampMs int64
}

// ConsumerGroupTopic is one subscribed topic as the group resolved it.
type ConsumerGroupTopic struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// RemoveConsumerGroup drops a consumer group's state and keeps its
// committed offsets: an empty consumer group that a classic member joins
// becomes a classic group, as in Kafka.
type RemoveConsumerGroup struct {
	Group string
}

// CheckConsumerGroup is what a consumer group write needs, checked by the
// controller before it records one and by replay: a group id, a
// coordinator epoch not below the recorded one (ErrGroupCoordinatorFenced),
// a group epoch that does not go back and is not behind its assignment,
// members sorted by id and unique, regexes sorted and unique, and no
// partition held by two members
// (assigned or pending revocation): a state that breaks the protocol's
// one-owner rule is never stored.
func CheckConsumerGroup(cur *ConsumerGroup, next *ConsumerGroup) error {
	if next.Group == "" {
		return invalid("consumer group without a group id")
	}
	if next.Epoch < 0 || next.AssignmentEpoch < 0 || next.AssignmentEpoch > next.Epoch {
		return invalid("consumer group %q epoch %d assignment epoch %d", next.Group, next.Epoch, next.AssignmentEpoch)
	}
	for i, r := range next.Regexes {
		if r.Regex == "" || (i > 0 && next.Regexes[i-1].Regex >= r.Regex) {
			return invalid("consumer group %q: regexes empty, unsorted or repeated", next.Group)
		}
	}
	if cur != nil {
		if next.CoordinatorEpoch < cur.CoordinatorEpoch {
			return fmt.Errorf("%w: consumer group %q written by coordinator epoch %d, recorded %d", ErrGroupCoordinatorFenced, next.Group, next.CoordinatorEpoch, cur.CoordinatorEpoch)
		}
		if next.Epoch < cur.Epoch {
			return fmt.Errorf("%w: consumer group %q epoch %d, recorded %d", ErrStaleRecord, next.Group, next.Epoch, cur.Epoch)
		}
	}
	type tp struct {
		t [16]byte
		p int32
	}
	owners := map[tp]string{}
	for i, m := range next.Members {
		if m.MemberID == "" || (i > 0 && next.Members[i-1].MemberID >= m.MemberID) {
			return invalid("consumer group %q: member ids empty, unsorted or repeated", next.Group)
		}
		for _, a := range [][]ConsumerGroupPartitions{m.Assigned, m.PendingRevocation} {
			for _, t := range a {
				for _, p := range t.Partitions {
					if o, held := owners[tp{t.TopicID, p}]; held {
						return invalid("consumer group %q: a partition held by %s and %s", next.Group, o, m.MemberID)
					}
					owners[tp{t.TopicID, p}] = m.MemberID
				}
			}
		}
	}
	return nil
}

// OffsetsTopic is the internal topic whose partitions are the group
// coordinator slots.
const OffsetsTopic = "__consumer_offsets"

// CheckConsumerGroupWriter is the controller's check that the writer still
// coordinates the group: its slot's leader epoch is the record's
// CoordinatorEpoch (ErrGroupCoordinatorFenced otherwise).
func CheckConsumerGroupWriter(img *Image, r *ConsumerGroup) error {
	t, ok := img.Topic(OffsetsTopic)
	if !ok || r.Slot < 0 || int(r.Slot) >= len(t.Partitions) || t.Partitions[r.Slot].LeaderEpoch != r.CoordinatorEpoch {
		return fmt.Errorf("%w: consumer group %q: slot %d is not at leader epoch %d", ErrGroupCoordinatorFenced, r.Group, r.Slot, r.CoordinatorEpoch)
	}
	return nil
}

// ConsumerGroup returns a consumer group's recorded state.
func (img *Image) ConsumerGroup(group string) (ConsumerGroup, bool) {
	g, ok := img.groups.get(group, hashString(group))
	if !ok || g.consumer == nil {
		return ConsumerGroup{}, false
	}
	return *g.consumer, true
}

// SubscribedTopicNames is the sorted names of the group's resolved
// subscribed topics.
func (g *ConsumerGroup) SubscribedTopicNames() []string {
	out := make([]string, 0, len(g.Topics))
	for _, t := range g.Topics {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

func (a *groupApplier) consumerGroup(r *ConsumerGroup) error {
	var cur *ConsumerGroup
	if g, ok := a.groups.get(r.Group, hashString(r.Group)); ok {
		cur = g.consumer
	}
	if err := CheckConsumerGroup(cur, r); err != nil {
		return err
	}
	g := a.own(r.Group)
	c := cloneConsumerGroup(r)
	slices.SortFunc(c.Topics, func(x, y ConsumerGroupTopic) int { return strings.Compare(x.Name, y.Name) })
	g.consumer = c
	mark(&a.touched, r.Group)
	return nil
}

func (a *groupApplier) consumerGroupDelta(d *ConsumerGroupDelta) error {
	var cur *ConsumerGroup
	if g, ok := a.groups.get(d.Group, hashString(d.Group)); ok {
		cur = g.consumer
	}
	next, err := d.Merge(cur)
	if err != nil {
		return err
	}
	return a.consumerGroup(next)
}

func (a *groupApplier) removeConsumerGroup(r *RemoveConsumerGroup) error {
	g, ok := a.groups.get(r.Group, hashString(r.Group))
	if !ok || g.consumer == nil {
		return nil
	}
	a.own(r.Group).consumer = nil
	mark(&a.touched, r.Group)
	return nil
}

func cloneParts(in []ConsumerGroupPartitions) []ConsumerGroupPartitions {
	if in == nil {
		return nil
	}
	out := make([]ConsumerGroupPartitions, len(in))
	for i, t := range in {
		out[i] = ConsumerGroupPartitions{TopicID: t.TopicID, Partitions: slices.Clone(t.Partitions)}
	}
	return out
}

func cloneConsumerGroup(r *ConsumerGroup) *ConsumerGroup {
	c := *r
	c.Topics = slices.Clone(r.Topics)
	c.Regexes = cloneRegexes(r.Regexes)
	if r.Members != nil {
		c.Members = make([]ConsumerGroupMember, len(r.Members))
		for i, m := range r.Members {
			m.SubscribedTopicNames = slices.Clone(m.SubscribedTopicNames)
			m.Assigned, m.PendingRevocation, m.Target = cloneParts(m.Assigned), cloneParts(m.PendingRevocation), cloneParts(m.Target)
			m.Classic = m.Classic.clone()
			c.Members[i] = m
		}
	}
	return &c
}

func cloneRegexes(in []ConsumerGroupRegex) []ConsumerGroupRegex {
	if len(in) == 0 {
		return nil
	}
	out := make([]ConsumerGroupRegex, len(in))
	for i, r := range in {
		r.Topics = slices.Clone(r.Topics)
		out[i] = r
	}
	return out
}

// regexesEqual compares two groups' regexes, nil and empty alike (the
// encoding writes neither).
func regexesEqual(a, b []ConsumerGroupRegex) bool {
	return slices.EqualFunc(a, b, func(x, y ConsumerGroupRegex) bool {
		return x.Regex == y.Regex && x.Version == y.Version && x.TimestampMs == y.TimestampMs && slices.Equal(x.Topics, y.Topics)
	})
}

func partsEqual(a, b []ConsumerGroupPartitions) bool {
	return (a == nil) == (b == nil) && slices.EqualFunc(a, b, func(x, y ConsumerGroupPartitions) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions) && (x.Partitions == nil) == (y.Partitions == nil)
	})
}

// Equal reports whether two consumer group states are identical.
func (g *ConsumerGroup) Equal(o *ConsumerGroup) bool {
	if g == nil || o == nil {
		return g == o
	}
	return g.Group == o.Group && g.CoordinatorEpoch == o.CoordinatorEpoch && g.Slot == o.Slot && g.Epoch == o.Epoch &&
		g.AssignmentEpoch == o.AssignmentEpoch && g.StateTimestampMs == o.StateTimestampMs &&
		slices.Equal(g.Topics, o.Topics) && regexesEqual(g.Regexes, o.Regexes) && (g.Members == nil) == (o.Members == nil) &&
		slices.EqualFunc(g.Members, o.Members, func(x, y ConsumerGroupMember) bool {
			return x.MemberID == y.MemberID && x.InstanceID == y.InstanceID && x.RackID == y.RackID &&
				x.ClientID == y.ClientID && x.ClientHost == y.ClientHost && x.Epoch == y.Epoch &&
				x.PreviousEpoch == y.PreviousEpoch && x.State == y.State && x.RebalanceTimeoutMs == y.RebalanceTimeoutMs &&
				slices.Equal(x.SubscribedTopicNames, y.SubscribedTopicNames) &&
				(x.SubscribedTopicNames == nil) == (y.SubscribedTopicNames == nil) &&
				x.SubscribedTopicRegex == y.SubscribedTopicRegex && x.ServerAssignor == y.ServerAssignor &&
				partsEqual(x.Assigned, y.Assigned) && partsEqual(x.PendingRevocation, y.PendingRevocation) && partsEqual(x.Target, y.Target) &&
				x.Classic.equal(y.Classic)
		})
}

func writeParts(w *writer, ps []ConsumerGroupPartitions) {
	w.count(len(ps), ps == nil)
	for _, t := range ps {
		w.uuid(t.TopicID)
		w.int32s(t.Partitions)
	}
}

func readParts(r *reader) []ConsumerGroupPartitions {
	n, ok := r.count(17)
	if !ok {
		return nil
	}
	out := make([]ConsumerGroupPartitions, n)
	for i := range out {
		out[i] = ConsumerGroupPartitions{TopicID: r.uuid(), Partitions: r.int32s()}
	}
	return out
}

func writeConsumerGroup(w *writer, g *ConsumerGroup) { writeConsumerGroupAt(w, g, g.Version()) }

func writeConsumerGroupAt(w *writer, g *ConsumerGroup, ver int16) {
	w.str(g.Group)
	w.i32(g.CoordinatorEpoch)
	w.i32(g.Slot)
	w.i32(g.Epoch)
	w.i32(g.AssignmentEpoch)
	w.count(len(g.Members), g.Members == nil)
	for _, m := range g.Members {
		w.str(m.MemberID)
		w.str(m.InstanceID)
		w.str(m.RackID)
		w.str(m.ClientID)
		w.str(m.ClientHost)
		w.i32(m.Epoch)
		w.i32(m.PreviousEpoch)
		w.i8(m.State)
		w.i32(m.RebalanceTimeoutMs)
		w.count(len(m.SubscribedTopicNames), m.SubscribedTopicNames == nil)
		for _, n := range m.SubscribedTopicNames {
			w.str(n)
		}
		w.str(m.SubscribedTopicRegex)
		w.str(m.ServerAssignor)
		writeParts(w, m.Assigned)
		writeParts(w, m.PendingRevocation)
		writeParts(w, m.Target)
		if ver >= 1 {
			// Version 1: each member says whether it is a classic one.
			w.bool(m.Classic != nil)
			if m.Classic != nil {
				w.i32(m.Classic.SessionTimeoutMs)
				w.count(len(m.Classic.Protocols), false)
				for _, p := range m.Classic.Protocols {
					w.str(p.Name)
					w.str(string(p.Metadata))
				}
			}
		}
	}
	w.count(len(g.Topics), g.Topics == nil)
	for _, t := range g.Topics {
		w.str(t.Name)
		w.uuid(t.ID)
		w.i32(t.Partitions)
	}
	w.i64(g.StateTimestampMs)
	if ver >= 2 {
		// Version 2: the regexes' resolutions.
		w.count(len(g.Regexes), false)
		for _, r := range g.Regexes {
			w.str(r.Regex)
			w.count(len(r.Topics), false)
			for _, t := range r.Topics {
				w.str(t)
			}
			w.i64(r.Version)
			w.i64(r.TimestampMs)
		}
	}
}

func readConsumerGroup(r *reader, ver int16) *ConsumerGroup {
	g := &ConsumerGroup{Group: r.str(), CoordinatorEpoch: r.i32(), Slot: r.i32(), Epoch: r.i32(), AssignmentEpoch: r.i32()}
	if n, ok := r.count(24); ok {
		g.Members = make([]ConsumerGroupMember, n)
		for i := range g.Members {
			m := ConsumerGroupMember{MemberID: r.str(), InstanceID: r.str(), RackID: r.str(), ClientID: r.str(), ClientHost: r.str(),
				Epoch: r.i32(), PreviousEpoch: r.i32(), State: r.i8(), RebalanceTimeoutMs: r.i32()}
			if k, ok := r.count(1); ok {
				m.SubscribedTopicNames = make([]string, k)
				for j := range m.SubscribedTopicNames {
					m.SubscribedTopicNames[j] = r.str()
				}
			}
			m.SubscribedTopicRegex, m.ServerAssignor = r.str(), r.str()
			m.Assigned, m.PendingRevocation, m.Target = readParts(r), readParts(r), readParts(r)
			if ver >= 1 && r.bool() {
				m.Classic = &ConsumerGroupClassicMember{SessionTimeoutMs: r.i32()}
				if k, ok := r.count(2); ok {
					m.Classic.Protocols = make([]ConsumerGroupClassicProtocol, k)
					for j := range m.Classic.Protocols {
						m.Classic.Protocols[j] = ConsumerGroupClassicProtocol{Name: r.str(), Metadata: []byte(r.str())}
					}
				}
			}
			g.Members[i] = m
		}
	}
	if n, ok := r.count(21); ok {
		g.Topics = make([]ConsumerGroupTopic, n)
		for i := range g.Topics {
			g.Topics[i] = ConsumerGroupTopic{Name: r.str(), ID: r.uuid(), Partitions: r.i32()}
		}
	}
	g.StateTimestampMs = r.i64()
	if ver >= 2 {
		if n, ok := r.count(18); ok && n > 0 {
			g.Regexes = make([]ConsumerGroupRegex, n)
			for i := range g.Regexes {
				x := ConsumerGroupRegex{Regex: r.str()}
				if k, ok := r.count(1); ok {
					x.Topics = make([]string, k)
					for j := range x.Topics {
						x.Topics[j] = r.str()
					}
				}
				x.Version, x.TimestampMs = r.i64(), r.i64()
				g.Regexes[i] = x
			}
		}
	}
	return g
}

// ConsumerGroupDelta is a change of a recorded ConsumerGroup: the group's
// header (epochs, slot and coordinator epoch, the resolved topics and
// regexes) in full, and of its members only those that joined or changed (Members,
// sorted by id) and the ids of those that left (Removed). A heartbeat of a
// large group changes one member, so its write carries one member instead
// of the whole group. It applies only to a recorded group; the result is
// checked as a whole ConsumerGroup (CheckConsumerGroup).
type ConsumerGroupDelta struct {
	Group            string
	CoordinatorEpoch int32
	Slot             int32
	Epoch            int32
	AssignmentEpoch  int32
	Topics           []ConsumerGroupTopic
	Regexes          []ConsumerGroupRegex // in full, as Topics
	Members          []ConsumerGroupMember
	Removed          []string
	StateTimestampMs int64
}

// Merge is the group cur with d applied; an error when d's group is not
// cur's or d names a member twice.
func (d *ConsumerGroupDelta) Merge(cur *ConsumerGroup) (*ConsumerGroup, error) {
	if cur == nil || cur.Group != d.Group {
		return nil, invalid("consumer group delta of %q, which is not recorded", d.Group)
	}
	next := &ConsumerGroup{Group: d.Group, CoordinatorEpoch: d.CoordinatorEpoch, Slot: d.Slot, Epoch: d.Epoch,
		AssignmentEpoch: d.AssignmentEpoch, Topics: slices.Clone(d.Topics), Regexes: d.Regexes, StateTimestampMs: d.StateTimestampMs,
		Members: []ConsumerGroupMember{}}
	if next.Topics == nil {
		next.Topics = []ConsumerGroupTopic{}
	}
	changed := make(map[string]int, len(d.Members)+len(d.Removed))
	for i, m := range d.Members {
		if _, dup := changed[m.MemberID]; dup {
			return nil, invalid("consumer group delta of %q names member %s twice", d.Group, m.MemberID)
		}
		changed[m.MemberID] = i
	}
	for _, id := range d.Removed {
		if _, dup := changed[id]; dup {
			return nil, invalid("consumer group delta of %q names member %s twice", d.Group, id)
		}
		changed[id] = -1
	}
	for _, m := range cur.Members {
		if _, ok := changed[m.MemberID]; !ok {
			next.Members = append(next.Members, m)
		}
	}
	next.Members = append(next.Members, d.Members...)
	slices.SortFunc(next.Members, func(x, y ConsumerGroupMember) int { return strings.Compare(x.MemberID, y.MemberID) })
	return cloneConsumerGroup(next), nil
}

// DeltaOf is the delta that turns prev into next (both the same group),
// and whether it is smaller than next: a member unchanged is left out.
func DeltaOf(prev, next *ConsumerGroup) (*ConsumerGroupDelta, bool) {
	d := &ConsumerGroupDelta{Group: next.Group, CoordinatorEpoch: next.CoordinatorEpoch, Slot: next.Slot, Epoch: next.Epoch,
		AssignmentEpoch: next.AssignmentEpoch, Topics: next.Topics, Regexes: next.Regexes, StateTimestampMs: next.StateTimestampMs,
		Members: []ConsumerGroupMember{}, Removed: []string{}}
	old := make(map[string]*ConsumerGroupMember, len(prev.Members))
	for i := range prev.Members {
		old[prev.Members[i].MemberID] = &prev.Members[i]
	}
	for _, m := range next.Members {
		if o, ok := old[m.MemberID]; ok {
			delete(old, m.MemberID)
			if memberEqual(o, &m) {
				continue
			}
		}
		d.Members = append(d.Members, m)
	}
	for id := range old {
		d.Removed = append(d.Removed, id)
	}
	slices.Sort(d.Removed)
	return d, len(d.Members) < len(next.Members)
}

func memberEqual(x, y *ConsumerGroupMember) bool {
	a := ConsumerGroup{Members: []ConsumerGroupMember{*x}}
	b := ConsumerGroup{Members: []ConsumerGroupMember{*y}}
	return a.Equal(&b)
}

func writeConsumerGroupDelta(w *writer, d *ConsumerGroupDelta) {
	// The header and members as a ConsumerGroup's, then the removed ids.
	writeConsumerGroupAt(w, &ConsumerGroup{Group: d.Group, CoordinatorEpoch: d.CoordinatorEpoch, Slot: d.Slot, Epoch: d.Epoch,
		AssignmentEpoch: d.AssignmentEpoch, Members: d.Members, Topics: d.Topics, Regexes: d.Regexes, StateTimestampMs: d.StateTimestampMs}, d.Version())
	w.count(len(d.Removed), d.Removed == nil)
	for _, id := range d.Removed {
		w.str(id)
	}
}

func readConsumerGroupDelta(r *reader, ver int16) *ConsumerGroupDelta {
	g := readConsumerGroup(r, ver)
	d := &ConsumerGroupDelta{Group: g.Group, CoordinatorEpoch: g.CoordinatorEpoch, Slot: g.Slot, Epoch: g.Epoch,
		AssignmentEpoch: g.AssignmentEpoch, Members: g.Members, Topics: g.Topics, Regexes: g.Regexes, StateTimestampMs: g.StateTimestampMs}
	if n, ok := r.count(1); ok {
		d.Removed = make([]string, n)
		for i := range d.Removed {
			d.Removed[i] = r.str()
		}
	}
	return d
}
