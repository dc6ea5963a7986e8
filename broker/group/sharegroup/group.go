package sharegroup

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The member epochs with a meaning of their own (ShareGroupHeartbeat).
const (
	JoinEpoch  int32 = 0  // a member joining (or rejoining with its id)
	LeaveEpoch int32 = -1 // a member leaving
)

// The share group states as ListGroups and ShareGroupDescribe name them
// (Kafka's ShareGroupState). A share group has no reconciling state: a
// member takes its target assignment on its next heartbeat.
const (
	StateEmpty  = "Empty"
	StateStable = "Stable"
)

// AssignorName is the one assignor group.share.assignors accepts in Kafka 4.2.
const AssignorName = "simple"

// Topic is a subscribed topic as the metadata knows it.
type Topic struct {
	ID         TopicID
	Partitions int32
}

// Topics resolves topic names; the caller builds it from its metadata
// image (leaving out internal topics). A name it does not know is a topic
// that does not exist (yet): subscribed, but nothing to assign.
type Topics interface {
	Topic(name string) (Topic, bool)
}

// Config is the coordinator's configuration of one group: the broker's
// group.share.* values or the group's own overrides.
type Config struct {
	SessionTimeout    time.Duration // group.share.session.timeout.ms
	HeartbeatInterval time.Duration // group.share.heartbeat.interval.ms
	MaxSize           int           // group.share.max.size; 0: no limit
}

// Member is one share-group member as the coordinator keeps it.
type Member struct {
	ID                   string
	RackID               string
	ClientID, ClientHost string
	Epoch, PreviousEpoch int32
	SubscribedTopicNames []string   // sorted, unique
	Assigned             Assignment // its target assignment at Epoch
	// Deadline is when its session ends without a heartbeat; not durable.
	Deadline time.Time
}

func (m *Member) clone() *Member {
	c := *m
	c.SubscribedTopicNames = slices.Clone(m.SubscribedTopicNames)
	c.Assigned = m.Assigned.Clone()
	return &c
}

// HeartbeatRequest is a ShareGroupHeartbeat as the group reads it.
type HeartbeatRequest struct {
	MemberID    string
	MemberEpoch int32
	RackID      *string  // nil: unchanged
	Subscribed  []string // nil: unchanged
	ClientID    string
	ClientHost  string
}

// HeartbeatResult is the answer to a heartbeat.
type HeartbeatResult struct {
	Err               *kerr.Error // nil on success
	ErrMessage        string
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	// Assignment is set (possibly empty) when the answer carries one: on
	// a join and whenever the member's partitions changed.
	Assignment     Assignment
	SendAssignment bool
}

func fail(err *kerr.Error, format string, args ...any) HeartbeatResult {
	return HeartbeatResult{Err: err, ErrMessage: fmt.Sprintf(format, args...)}
}

// Validate checks a heartbeat as Kafka's coordinator does before it looks
// at any group: INVALID_REQUEST for an empty member id, group id or rack,
// a join without subscriptions, or an epoch below -1.
func Validate(groupID string, r HeartbeatRequest) *kerr.Error {
	switch {
	case strings.TrimSpace(r.MemberID) == "":
		return kerr.InvalidRequest
	case strings.TrimSpace(groupID) == "":
		return kerr.InvalidRequest
	case r.RackID != nil && strings.TrimSpace(*r.RackID) == "":
		return kerr.InvalidRequest
	case r.MemberEpoch == JoinEpoch && len(r.Subscribed) == 0:
		return kerr.InvalidRequest
	case r.MemberEpoch < LeaveEpoch:
		return kerr.InvalidRequest
	}
	return nil
}

// Group is one share group. It is not safe for concurrent use: its owner
// (the coordinator) serializes calls. Times are inputs; nothing here
// starts a goroutine or reads a clock.
type Group struct {
	id              string
	epoch           int32 // group epoch
	assignmentEpoch int32 // target assignment epoch
	members         map[string]*Member
	target          map[string]Assignment
	// subscribed is the metadata of the subscribed topics the last target
	// was computed for (name -> id and partitions); a change bumps the epoch.
	subscribed map[string]Topic
	// version counts durable changes, so the owner persists only on change.
	version uint64
}

// New is an empty group.
func New(id string) *Group {
	return &Group{id: id, members: map[string]*Member{}, target: map[string]Assignment{}, subscribed: map[string]Topic{}}
}

// ID is the group id.
func (g *Group) ID() string { return g.id }

// Epoch is the group epoch.
func (g *Group) Epoch() int32 { return g.epoch }

// AssignmentEpoch is the epoch of the target assignment.
func (g *Group) AssignmentEpoch() int32 { return g.assignmentEpoch }

// Version rises with every change to the durable state (Export).
func (g *Group) Version() uint64 { return g.version }

// State is Empty or Stable.
func (g *Group) State() string {
	if len(g.members) == 0 {
		return StateEmpty
	}
	return StateStable
}

// Len is the number of members.
func (g *Group) Len() int { return len(g.members) }

// Members are copies of the members, sorted by id.
func (g *Group) Members() []*Member {
	out := make([]*Member, 0, len(g.members))
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		out = append(out, g.members[id].clone())
	}
	return out
}

// Target is a copy of a member's target assignment.
func (g *Group) Target(memberID string) Assignment { return g.target[memberID].Clone() }

// Heartbeat runs one ShareGroupHeartbeat for the group at now. The caller
// has validated r (Validate) and checked the group's kind.
func (g *Group) Heartbeat(now time.Time, cfg Config, topics Topics, r HeartbeatRequest) HeartbeatResult {
	if r.MemberEpoch == LeaveEpoch {
		if _, ok := g.members[r.MemberID]; !ok {
			return fail(kerr.UnknownMemberID, "member %s is not a member of share group %s", r.MemberID, g.id)
		}
		g.remove(r.MemberID)
		return HeartbeatResult{MemberID: r.MemberID, MemberEpoch: LeaveEpoch}
	}
	old, known := g.members[r.MemberID]
	if !known && cfg.MaxSize > 0 && len(g.members) >= cfg.MaxSize {
		return fail(kerr.GroupMaxSizeReached, "the share group has reached its maximum capacity of %d members", cfg.MaxSize)
	}
	var m *Member
	switch {
	case !known && r.MemberEpoch != JoinEpoch:
		return fail(kerr.UnknownMemberID, "member %s is not a member of share group %s", r.MemberID, g.id)
	case !known:
		m = &Member{ID: r.MemberID}
	case r.MemberEpoch == JoinEpoch:
		// A known member joining again (its client lost the membership,
		// e.g. after FENCED_MEMBER_EPOCH, and rejoins with its id as
		// KIP-1082 clients do): it starts afresh, keeping its target.
		m = old.clone()
		m.PreviousEpoch, m.Epoch = 0, 0
	case r.MemberEpoch > old.Epoch:
		return fail(kerr.FencedMemberEpoch, "the share group member has a greater member epoch (%d) than the one known by the group coordinator (%d)", r.MemberEpoch, old.Epoch)
	case r.MemberEpoch < old.Epoch && r.MemberEpoch != old.PreviousEpoch:
		return fail(kerr.FencedMemberEpoch, "the share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d)", r.MemberEpoch, old.Epoch)
	default:
		m = old.clone()
	}

	changed := !known
	if r.RackID != nil && *r.RackID != m.RackID {
		m.RackID, changed = *r.RackID, true
	}
	if r.ClientID != m.ClientID || r.ClientHost != m.ClientHost {
		m.ClientID, m.ClientHost, changed = r.ClientID, r.ClientHost, true
	}
	bump := !known
	if r.Subscribed != nil {
		subs := slices.Sorted(slices.Values(r.Subscribed))
		subs = slices.Compact(subs)
		if !slices.Equal(subs, m.SubscribedTopicNames) {
			m.SubscribedTopicNames, changed, bump = subs, true, true
		}
	}
	g.members[m.ID] = m
	m.Deadline = now.Add(cfg.SessionTimeout)

	// The topics the group subscribes to may have changed under it (created,
	// deleted, grown): that changes the assignment as a subscription does.
	if meta := g.subscriptionMetadata(topics); !maps.Equal(meta, g.subscribed) {
		g.subscribed, bump = meta, true
	}
	if bump {
		g.epoch++
		changed = true
	}
	if g.epoch > g.assignmentEpoch {
		g.computeTarget()
		changed = true
	}
	// No revocation in a share group: the member moves to the target now.
	prevAssigned := m.Assigned
	if m.Epoch != g.assignmentEpoch {
		m.PreviousEpoch, m.Epoch = m.Epoch, g.assignmentEpoch
		changed = true
	}
	if t := g.target[m.ID]; !t.Equal(m.Assigned) {
		m.Assigned = t.Clone()
		changed = true
	}
	if changed {
		g.version++
	}
	res := HeartbeatResult{MemberID: m.ID, MemberEpoch: m.Epoch, HeartbeatInterval: cfg.HeartbeatInterval}
	if r.MemberEpoch == JoinEpoch || !prevAssigned.Equal(m.Assigned) {
		res.Assignment, res.SendAssignment = m.Assigned.Clone(), true
		if res.Assignment == nil {
			res.Assignment = Assignment{}
		}
	}
	return res
}

// RefreshTopics bumps the group epoch when the subscribed topics' metadata
// changed (a topic created, deleted or grown) so that the next heartbeat
// computes a new target; it reports whether it did.
func (g *Group) RefreshTopics(topics Topics) bool {
	if len(g.members) == 0 {
		return false
	}
	meta := g.subscriptionMetadata(topics)
	if maps.Equal(meta, g.subscribed) {
		return false
	}
	g.subscribed = meta
	g.epoch++
	g.version++
	return true
}

func (g *Group) subscriptionMetadata(topics Topics) map[string]Topic {
	meta := map[string]Topic{}
	for _, m := range g.members {
		for _, name := range m.SubscribedTopicNames {
			if _, done := meta[name]; done {
				continue
			}
			if t, ok := topics.Topic(name); ok && t.Partitions > 0 {
				meta[name] = t
			}
		}
	}
	return meta
}

func (g *Group) computeTarget() {
	in := make([]AssignMember, 0, len(g.members))
	parts := make(map[TopicID]int32, len(g.subscribed))
	for _, t := range g.subscribed {
		parts[t.ID] = t.Partitions
	}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		am := AssignMember{ID: id, Current: g.target[id]}
		for _, name := range m.SubscribedTopicNames {
			if t, ok := g.subscribed[name]; ok {
				am.Topics = append(am.Topics, t.ID)
			}
		}
		in = append(in, am)
	}
	g.target = Simple(in, parts)
	g.assignmentEpoch = g.epoch
}

// remove takes a member out (leave or session timeout) and bumps the
// group epoch, as Kafka's shareGroupFenceMember.
func (g *Group) remove(id string) {
	delete(g.members, id)
	delete(g.target, id)
	meta := map[string]Topic{}
	for name, t := range g.subscribed {
		for _, m := range g.members {
			if slices.Contains(m.SubscribedTopicNames, name) {
				meta[name] = t
				break
			}
		}
	}
	g.subscribed = meta
	g.epoch++
	g.version++
}

// NextDeadline is the earliest member session deadline, or the zero time
// when the group has no members.
func (g *Group) NextDeadline() time.Time {
	var next time.Time
	for _, m := range g.members {
		if next.IsZero() || m.Deadline.Before(next) {
			next = m.Deadline
		}
	}
	return next
}

// Tick removes the members whose session ended at or before now and
// returns their ids, sorted.
func (g *Group) Tick(now time.Time) []string {
	var gone []string
	for id, m := range g.members {
		if !m.Deadline.After(now) {
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	for _, id := range gone {
		g.remove(id)
	}
	return gone
}
