package consumergroup

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/raftka/raftka/broker/group/assignor"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The member epochs with a meaning of their own (ConsumerGroupHeartbeat).
const (
	JoinEpoch        int32 = 0  // a member (re)joining
	LeaveEpoch       int32 = -1 // a member leaving for good
	StaticLeaveEpoch int32 = -2 // a static member leaving for now, to rejoin with its instance id
)

// MemberState is where a member is in its reconciliation.
type MemberState int8

const (
	// Stable: the member owns its target assignment at its epoch.
	Stable MemberState = iota
	// UnrevokedPartitions: the member must first revoke partitions; it
	// stays at its epoch until its heartbeat no longer reports them.
	UnrevokedPartitions
	// UnreleasedPartitions: the member is at the target epoch but some of
	// its target partitions are still held by others.
	UnreleasedPartitions
)

func (s MemberState) String() string {
	switch s {
	case Stable:
		return "stable"
	case UnrevokedPartitions:
		return "unrevoked_partitions"
	case UnreleasedPartitions:
		return "unreleased_partitions"
	}
	return "unknown"
}

// Metadata is the current topic metadata as a heartbeat sees it.
type Metadata interface {
	// Topic resolves a subscribed topic name.
	Topic(name string) (assignor.Topic, bool)
	// TopicNames lists the topics a regular expression may match (the
	// caller leaves out internal topics).
	TopicNames() []string
}

// VersionedMetadata is Metadata that knows which metadata it is: Version
// is the Raft log index of the metadata image (Kafka's image offset),
// which a regex's resolution records. Without it, a resolution's version
// is -1 (not known).
type VersionedMetadata interface {
	Version() int64
}

func metadataVersion(md Metadata) int64 {
	if v, ok := md.(VersionedMetadata); ok {
		return v.Version()
	}
	return -1
}

// RegexResolution is a regular expression some member subscribes with as
// the group last resolved it, what Kafka's ResolvedRegularExpression (and
// its ConsumerGroupRegularExpression record) keeps: the topics it takes,
// the union of what it takes for each member subscribed with it (a topic
// a member may not DESCRIBE is not taken for that member), with the
// metadata's version and the time of the heartbeat that resolved them.
// Kafka resolves regexes in the background and records each refresh;
// here they are matched on every heartbeat, and a resolution changes
// (new version and time) only when its topics do, so steady heartbeats
// leave it, and the group's state, as it was.
type RegexResolution struct {
	Topics      []string // sorted
	Version     int64    // VersionedMetadata.Version of the metadata resolved against; -1 not known
	TimestampMs int64    // the resolving heartbeat's time
}

// RackMetadata is Metadata that knows the racks of each partition's
// replicas (Racks[p]), for the assignors' rack-aware placement. It is
// asked only when a target assignment is computed, not per heartbeat.
type RackMetadata interface {
	Racks(topic string, id assignor.TopicID) [][]string
}

// Config is the coordinator's configuration of one group.
type Config struct {
	SessionTimeout    time.Duration // group.consumer.session.timeout.ms (or the group's override)
	HeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	MaxSize           int           // group.consumer.max.size; 0: no limit
	// Assignors are group.consumer.assignors; the first is the default.
	Assignors []assignor.Assignor
	// NewMemberID names a member whose client sent none (v0).
	NewMemberID func() string
}

// Member is one consumer-protocol member as the coordinator keeps it.
type Member struct {
	ID, InstanceID, RackID string
	ClientID, ClientHost   string
	Epoch, PreviousEpoch   int32
	State                  MemberState
	RebalanceTimeout       time.Duration
	SubscribedTopicNames   []string // sorted, unique
	SubscribedTopicRegex   string   // "" when none; matched against whole topic names
	ServerAssignor         string   // "" when the member names none
	// Assigned are the partitions the member owns; PendingRevocation the
	// ones it still owns but must give up.
	Assigned, PendingRevocation assignor.Assignment
	// Classic is set for a member that speaks the classic protocol
	// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) in this consumer
	// group: KIP-848's online upgrade (classic.go).
	Classic *ClassicMember

	sessionDeadline time.Time
	// joinDeadline: a classic member told to rejoin must do so within its
	// rebalance timeout; syncDeadline: one that joined must sync within it.
	joinDeadline, syncDeadline time.Time
	rebalanceDeadline          time.Time // zero: no revocation pending
	rebalanceEpoch             int32
	regex                      *regexp.Regexp // SubscribedTopicRegex compiled
	// describable is the member's Topic:DESCRIBE check from its last
	// heartbeat (nil: every topic); authKnown is false for a member
	// restored from the image that has not heartbeated since.
	describable func(topic string) bool
	authKnown   bool
	// regexTopics are the topics its regex took at its last heartbeat
	// (sorted): a change (a topic it may now describe, or no longer) bumps
	// the group epoch, as a changed regex resolution does in Kafka.
	regexTopics []string
}

// subscribes reports whether the member subscribes to topic name, by
// name or by its regex (regexMatch); resolved is the group's subscribed
// topics as last resolved.
func (m *Member) subscribes(name string, resolved map[string]topicMeta) bool {
	if _, found := slices.BinarySearch(m.SubscribedTopicNames, name); found {
		return true
	}
	return m.regexMatch(name, resolved)
}

// regexMatch reports whether the member's regex takes topic name: the
// regex matches it and the member may DESCRIBE it, as Kafka 4.1 resolves
// regexes with the subscribing member's authorization (KAFKA-18813), so
// a topic the member may not see is neither subscribed nor assigned. A
// member restored by a new coordinator, whose authorization is not known
// until its next heartbeat, keeps to the topics the group had resolved.
func (m *Member) regexMatch(name string, resolved map[string]topicMeta) bool {
	return m.regex != nil && m.regex.MatchString(name) && m.mayTake(name, resolved)
}

// mayTake is regexMatch's authorization half, for a name its regex
// matches.
func (m *Member) mayTake(name string, resolved map[string]topicMeta) bool {
	if !m.authKnown {
		_, ok := resolved[name]
		return ok
	}
	return m.describable == nil || m.describable(name)
}

// compileRegex compiles a SubscribedTopicRegex as Kafka matches it: the
// whole topic name. Go's regexp is RE2, the syntax RE2/J (Kafka's) follows.
func compileRegex(re string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + re + ")$")
}

func (m *Member) clone() *Member {
	c := *m
	c.SubscribedTopicNames = slices.Clone(m.SubscribedTopicNames)
	c.regexTopics = slices.Clone(m.regexTopics)
	c.Assigned, c.PendingRevocation = cloneAssignment(m.Assigned), cloneAssignment(m.PendingRevocation)
	if m.Classic != nil {
		cl := *m.Classic
		cl.Protocols = slices.Clone(m.Classic.Protocols)
		c.Classic = &cl
	}
	return &c
}

func cloneAssignment(a assignor.Assignment) assignor.Assignment {
	out := make(assignor.Assignment, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

type tp struct {
	topic     assignor.TopicID
	partition int32
}

type topicMeta struct {
	id         assignor.TopicID
	partitions int32
}

// Group is one consumer group's state. Its methods are not safe for
// concurrent use: the coordinator runs them on the group's loop.
type Group struct {
	id              string
	cfg             Config
	epoch           int32
	assignmentEpoch int32
	members         map[string]*Member
	static          map[string]string // instance id -> member id
	target          map[string]assignor.Assignment
	owners          map[tp]string // partition -> the member holding it (assigned or pending revocation)
	metadata        map[string]topicMeta
	missing         []string // subscribed names the metadata did not have
	regexes         int      // members subscribed by regex
	// resolutions are the regexes the members subscribe with, resolved;
	// one is dropped when its last member leaves or changes regex.
	resolutions map[string]RegexResolution
	// targetChangedAt is when the target assignment last changed (in
	// memory only: a loaded group starts without one), which
	// heartbeatInterval reads.
	targetChangedAt time.Time
}

// heartbeatInterval is the interval a heartbeat's answer gives m: the
// configured one, or a tenth of it (at least 100 ms) while the group is
// converging: its target assignment changed within the last interval, or
// m is not yet reconciled to it. A member learns that it must revoke or
// may take partitions only from a heartbeat's answer, so at the
// configured pace a rebalance waits up to one interval for the owner to
// hear of the revocation and another for the new owner to hear of the
// release: a new group of 10 members took about 1.1 s to start at 1 s
// intervals (BenchmarkRebalance). Kafka answers the configured interval
// always; the protocol leaves the interval to the coordinator on every
// answer, and the clients (the Java consumer, librdkafka, franz-go) adopt
// the one each answer gives. The cost is heartbeats at ten times the pace
// for one interval after a change, none in a steady group.
func (g *Group) heartbeatInterval(now time.Time, m *Member) time.Duration {
	d := g.cfg.HeartbeatInterval
	if now.Sub(g.targetChangedAt) >= d && m.Epoch == g.assignmentEpoch && m.State == Stable {
		return d
	}
	return min(d, max(d/10, 100*time.Millisecond))
}

// setMetadata records the subscribed topics and which subscribed names
// did not exist, so a steady heartbeat can tell cheaply whether either
// moved.
func (g *Group) setMetadata(metadata map[string]topicMeta, members []*Member) {
	g.metadata, g.missing, g.regexes = metadata, nil, 0
	seen := map[string]bool{}
	for _, m := range members {
		if m.regex != nil {
			g.regexes++
		}
		for _, n := range m.SubscribedTopicNames {
			if _, ok := metadata[n]; !ok && !seen[n] {
				seen[n] = true
				g.missing = append(g.missing, n)
			}
		}
	}
}

// metadataMoved reports whether a known topic changed or a missing one
// appeared.
func (g *Group) metadataMoved(md Metadata) bool {
	for n, meta := range g.metadata {
		if t, ok := md.Topic(n); !ok || t.ID != meta.id || t.Partitions != meta.partitions {
			return true
		}
	}
	for _, n := range g.missing {
		if _, ok := md.Topic(n); ok {
			return true
		}
	}
	return false
}

// New returns an empty group.
func New(id string, cfg Config) *Group {
	return &Group{
		id: id, cfg: cfg,
		members: map[string]*Member{}, static: map[string]string{},
		target: map[string]assignor.Assignment{}, owners: map[tp]string{},
		metadata: map[string]topicMeta{}, resolutions: map[string]RegexResolution{},
	}
}

// SetTimeouts changes the session timeout and heartbeat interval (a
// group's dynamic config changed); they apply from the next heartbeat.
func (g *Group) SetTimeouts(session, heartbeat time.Duration) {
	g.cfg.SessionTimeout, g.cfg.HeartbeatInterval = session, heartbeat
}

// Epoch is the group epoch.
func (g *Group) Epoch() int32 { return g.epoch }

// AssignmentEpoch is the epoch of the current target assignment.
func (g *Group) AssignmentEpoch() int32 { return g.assignmentEpoch }

// State is the group's state as ConsumerGroupDescribe and ListGroups name
// it: Empty, Assigning (a new target is due), Reconciling (a member is not
// at the target yet), Stable.
func (g *Group) State() string {
	switch {
	case len(g.members) == 0:
		return "Empty"
	case g.epoch != g.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range g.members {
		if m.Epoch != g.assignmentEpoch || m.State != Stable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// Member returns a copy of a member.
func (g *Group) Member(id string) (Member, bool) {
	m, ok := g.members[id]
	if !ok {
		return Member{}, false
	}
	return *m.clone(), true
}

// MemberIDs lists the members, sorted.
func (g *Group) MemberIDs() []string { return slices.Sorted(maps.Keys(g.members)) }

// Target returns a member's target assignment.
func (g *Group) Target(id string) assignor.Assignment { return cloneAssignment(g.target[id]) }

// TopicPartitions is one topic's partitions in a heartbeat.
type TopicPartitions struct {
	TopicID    assignor.TopicID
	Partitions []int32
}

// HeartbeatRequest is a ConsumerGroupHeartbeat's fields; a nil pointer or
// slice is a field the client did not send (null), as Kafka reads them.
type HeartbeatRequest struct {
	Version              int16 // of ConsumerGroupHeartbeat: from v1 the client names itself
	MemberID             string
	MemberEpoch          int32
	InstanceID           *string
	RackID               *string
	RebalanceTimeoutMs   int32 // -1: not sent
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	ServerAssignor       *string
	Owned                []TopicPartitions // the partitions the client owns; nil: not sent
	ClientID, ClientHost string
	// Describable is the member's Topic:DESCRIBE authorization, which its
	// regex's matches are filtered by; nil allows every topic (no
	// authorizer).
	Describable func(topic string) bool
}

// HeartbeatResponse is the answer; Assignment is sent only when
// HasAssignment.
type HeartbeatResponse struct {
	ErrorCode           int16
	ErrorMessage        string
	MemberID            string
	MemberEpoch         int32
	HeartbeatIntervalMs int32
	HasAssignment       bool
	Assignment          assignor.Assignment
}

func fail(err *kerr.Error, format string, args ...any) HeartbeatResponse {
	return HeartbeatResponse{ErrorCode: err.Code, ErrorMessage: fmt.Sprintf(format, args...), MemberEpoch: -1}
}

// memberIDRequiredVersion is the ConsumerGroupHeartbeat version from
// which clients name themselves (KIP-1082).
const memberIDRequiredVersion = 1

// validate is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (g *Group) validate(r *HeartbeatRequest) (HeartbeatResponse, bool) {
	if (r.Version >= memberIDRequiredVersion || r.MemberEpoch > 0 || r.MemberEpoch == LeaveEpoch) && r.MemberID == "" {
		return fail(kerr.InvalidRequest, "MemberId can't be empty."), false
	}
	switch {
	case r.InstanceID != nil && *r.InstanceID == "":
		return fail(kerr.InvalidRequest, "InstanceId can't be empty."), false
	case r.RackID != nil && *r.RackID == "":
		return fail(kerr.InvalidRequest, "RackId can't be empty."), false
	}
	switch e := r.MemberEpoch; {
	case e == JoinEpoch:
		switch {
		case r.RebalanceTimeoutMs == -1:
			return fail(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."), false
		case r.Owned == nil || len(r.Owned) > 0:
			return fail(kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."), false
		case r.SubscribedTopicNames == nil && r.SubscribedTopicRegex == nil:
			// An empty list or regex is a member subscribed to nothing, which
			// Kafka accepts; null for both is not a join.
			return fail(kerr.InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."), false
		}
	case e == StaticLeaveEpoch:
		if r.InstanceID == nil {
			return fail(kerr.InvalidRequest, "InstanceId can't be null."), false
		}
		if r.MemberID == "" {
			return fail(kerr.InvalidRequest, "MemberId can't be empty."), false
		}
	case e < StaticLeaveEpoch:
		return fail(kerr.InvalidRequest, "MemberEpoch is invalid."), false
	}
	if r.ServerAssignor != nil && g.assignor(*r.ServerAssignor) == nil {
		var names []string
		for _, a := range g.cfg.Assignors {
			names = append(names, a.Name())
		}
		return fail(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %s.", *r.ServerAssignor, joinNames(names)), false
	}
	return HeartbeatResponse{}, true
}

func joinNames(ns []string) string {
	out := ""
	for i, n := range ns {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

func (g *Group) assignor(name string) assignor.Assignor {
	for _, a := range g.cfg.Assignors {
		if a.Name() == name {
			return a
		}
	}
	return nil
}

// checkEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a
// member may come back with its previous epoch when the answer that
// bumped it was lost, provided it owns no more than its assignment.
func checkEpoch(m *Member, epoch int32, owned []TopicPartitions) (HeartbeatResponse, bool) {
	switch {
	case epoch > m.Epoch:
		return fail(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.Epoch), false
	case epoch < m.Epoch && (epoch != m.PreviousEpoch || !isSubset(owned, m.Assigned)):
		return fail(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.Epoch), false
	}
	return HeartbeatResponse{}, true
}

func isSubset(owned []TopicPartitions, a assignor.Assignment) bool {
	if owned == nil {
		return false
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if !slices.Contains(a[t.TopicID], p) {
				return false
			}
		}
	}
	return true
}

// Heartbeat handles one ConsumerGroupHeartbeat at now against the current
// topic metadata md.
func (g *Group) Heartbeat(now time.Time, r HeartbeatRequest, md Metadata) HeartbeatResponse {
	if resp, ok := g.validate(&r); !ok {
		return resp
	}
	if r.MemberEpoch == LeaveEpoch || r.MemberEpoch == StaticLeaveEpoch {
		return g.leave(r)
	}
	joining := r.MemberEpoch == JoinEpoch
	// A full group refuses whoever is not already in it (Kafka's
	// throwIfConsumerGroupIsFull, before the member is looked up).
	if _, in := g.members[r.MemberID]; g.cfg.MaxSize > 0 && len(g.members) >= g.cfg.MaxSize && (r.MemberID == "" || !in) {
		return fail(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", g.cfg.MaxSize)
	}
	if r.MemberID == "" {
		r.MemberID = g.cfg.NewMemberID()
	}
	var member *Member // the member before this heartbeat; nil for a new one
	replaced := ""     // the member id a static member replaces
	if r.InstanceID == nil {
		m, ok := g.members[r.MemberID]
		switch {
		case !ok && !joining:
			return fail(kerr.UnknownMemberID, "Member %s is not a member of group %s.", r.MemberID, g.id)
		case ok:
			if resp, ok := checkEpoch(m, r.MemberEpoch, r.Owned); !ok {
				return resp
			}
			member = m
		}
	} else {
		inst := *r.InstanceID
		oldID, known := g.static[inst]
		switch {
		case joining && known:
			old := g.members[oldID]
			if old.Epoch != StaticLeaveEpoch {
				return fail(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", r.MemberID, inst, oldID)
			}
			// The instance comes back under a new member id: it takes over
			// the old member's assignment, at epoch 0.
			member = old.clone()
			member.ID, member.Epoch, member.PreviousEpoch = r.MemberID, 0, 0
			replaced = oldID
		case joining:
			if m, ok := g.members[r.MemberID]; ok {
				if resp, ok := checkEpoch(m, r.MemberEpoch, r.Owned); !ok {
					return resp
				}
				member = m
			}
		case !known:
			return fail(kerr.UnknownMemberID, "Instance id %s is unknown.", inst)
		case oldID != r.MemberID:
			return fail(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", r.MemberID, inst, oldID)
		default:
			m := g.members[oldID]
			if resp, ok := checkEpoch(m, r.MemberEpoch, r.Owned); !ok {
				return resp
			}
			member = m
		}
	}

	// 1. The member's new fields; a subscription change bumps the epoch.
	updated := &Member{ID: r.MemberID, Assigned: assignor.Assignment{}, PendingRevocation: assignor.Assignment{}}
	if member != nil {
		updated = member.clone()
	}
	if r.InstanceID != nil {
		updated.InstanceID = *r.InstanceID
	}
	if r.RackID != nil {
		updated.RackID = *r.RackID
	}
	if r.RebalanceTimeoutMs != -1 {
		updated.RebalanceTimeout = time.Duration(r.RebalanceTimeoutMs) * time.Millisecond
	}
	if r.ServerAssignor != nil {
		updated.ServerAssignor = *r.ServerAssignor
	}
	if r.SubscribedTopicNames != nil {
		names := slices.Clone(r.SubscribedTopicNames)
		slices.Sort(names)
		updated.SubscribedTopicNames = slices.Compact(names)
	}
	if r.SubscribedTopicRegex != nil && *r.SubscribedTopicRegex != updated.SubscribedTopicRegex {
		var re *regexp.Regexp // an empty regex is none, as Kafka's isNotEmpty checks and Restore take it
		if *r.SubscribedTopicRegex != "" {
			var err error
			if re, err = compileRegex(*r.SubscribedTopicRegex); err != nil {
				return fail(kerr.InvalidRegularExpression, "SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *r.SubscribedTopicRegex, err)
			}
		}
		updated.SubscribedTopicRegex, updated.regex = *r.SubscribedTopicRegex, re
	}
	updated.ClientID, updated.ClientHost = r.ClientID, r.ClientHost
	updated.describable, updated.authKnown = r.Describable, true
	bump := member == nil || !slices.Equal(member.SubscribedTopicNames, updated.SubscribedTopicNames) ||
		member.SubscribedTopicRegex != updated.SubscribedTopicRegex
	if updated.regex != nil {
		var topics []string
		for _, n := range md.TopicNames() {
			if updated.regexMatch(n, g.metadata) {
				topics = append(topics, n)
			}
		}
		slices.Sort(topics)
		if member != nil && member.authKnown && !slices.Equal(member.regexTopics, topics) {
			bump = true
		}
		updated.regexTopics = topics
	}
	if resp, ok := g.step(now, updated, replaced, bump, r.Owned, md); !ok {
		return resp
	}

	resp := HeartbeatResponse{MemberID: updated.ID, MemberEpoch: updated.Epoch, HeartbeatIntervalMs: int32(g.heartbeatInterval(now, updated) / time.Millisecond)}
	full := joining || (r.RebalanceTimeoutMs != -1 && r.SubscribedTopicNames != nil && r.Owned != nil)
	if full || member == nil || !equalAssignment(member.Assigned, updated.Assigned) {
		resp.HasAssignment, resp.Assignment = true, cloneAssignment(updated.Assigned)
	}
	return resp
}

// step is what a heartbeat and a classic member's JoinGroup share once the
// member's new self (updated) is known: the subscribed topics resolved
// against the metadata (a change bumps the group epoch, as bump does), a
// new target assignment when the epoch is ahead of it, the member stored
// (replacing the static member replaced, if any) and reconciled towards
// its target with what it reports owning, its session renewed. Only a
// failed target computation fails it, before anything changed.
func (g *Group) step(now time.Time, updated *Member, replaced string, bump bool, owned []TopicPartitions, md Metadata) (HeartbeatResponse, bool) {
	// 2. The subscribed topics as the metadata has them now: a topic
	// created, deleted or grown bumps the epoch too.
	// A steady heartbeat of a group without regexes only checks the topics
	// it knows and the names it misses (the hot path: no member walk).
	members := func() []*Member { return g.membersWith(updated, replaced) }
	metadata := g.metadata
	var regexTopics map[string][]string
	resolved := false // whether the subscriptions were resolved again
	if bump || replaced != "" || updated.regex != nil || g.regexes > 0 || g.metadataMoved(md) {
		metadata, regexTopics = subscriptionMetadata(members(), md, g.metadata)
		resolved = true
		if !maps.Equal(metadata, g.metadata) {
			bump = true
		}
	}
	epoch := g.epoch
	if bump {
		epoch++
	}

	// 3. A new target assignment when the group epoch is ahead of it.
	target := g.target
	if epoch > g.assignmentEpoch {
		var err error
		if target, err = g.computeTarget(members(), metadata, replaced, md); err != nil {
			return fail(kerr.UnknownServerError, "Failed to compute a new target assignment for epoch %d: %v", epoch, err), false
		}
	}

	// Commit: nothing below fails.
	if replaced != "" {
		if epoch <= g.assignmentEpoch {
			// No new target: the instance's target carries over to its new id.
			g.target[updated.ID] = g.target[replaced]
		}
		g.remove(replaced)
	}
	if resolved {
		g.resolve(regexTopics, now, metadataVersion(md))
	}
	if !maps.Equal(metadata, g.metadata) || bump {
		g.setMetadata(metadata, members())
	}
	g.epoch = epoch
	if epoch > g.assignmentEpoch {
		g.target, g.assignmentEpoch, g.targetChangedAt = target, epoch, now
	}
	g.put(updated)

	// 4. Reconcile the member towards its target.
	before := updated.clone()
	if updated.Epoch != g.assignmentEpoch || updated.State != Stable {
		g.reconcile(updated, owned)
		if !sameMember(before, updated) {
			if updated.State == UnrevokedPartitions {
				updated.rebalanceDeadline, updated.rebalanceEpoch = now.Add(updated.RebalanceTimeout), updated.Epoch
			} else {
				updated.rebalanceDeadline = time.Time{}
			}
		}
	}
	updated.sessionDeadline = now.Add(g.sessionTimeout(updated))
	return HeartbeatResponse{}, true
}

func sameMember(a, b *Member) bool {
	return a.Epoch == b.Epoch && a.PreviousEpoch == b.PreviousEpoch && a.State == b.State &&
		equalAssignment(a.Assigned, b.Assigned) && equalAssignment(a.PendingRevocation, b.PendingRevocation)
}

func equalAssignment(a, b assignor.Assignment) bool {
	count := func(x assignor.Assignment) int {
		n := 0
		for _, ps := range x {
			n += len(ps)
		}
		return n
	}
	if count(a) != count(b) {
		return false
	}
	for t, ps := range a {
		for _, p := range ps {
			if !slices.Contains(b[t], p) {
				return false
			}
		}
	}
	return true
}

// membersWith is the group's members with updated in place of its old
// self (and of the member it replaces), sorted by id.
func (g *Group) membersWith(updated *Member, replaced string) []*Member {
	var out []*Member
	for id, m := range g.members {
		if id != updated.ID && id != replaced {
			out = append(out, m)
		}
	}
	out = append(out, updated)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// subscriptionMetadata is every topic some member subscribes to, by name
// or by its regular expression, that exists now; and for each regex the
// members subscribe with, the topics it takes for one of them at least
// (sorted; empty when none: a regex matching nothing is resolved too),
// nil when no member subscribes by regex.
func subscriptionMetadata(members []*Member, md Metadata, resolved map[string]topicMeta) (map[string]topicMeta, map[string][]string) {
	out := map[string]topicMeta{}
	add := func(n string) {
		if _, done := out[n]; done {
			return
		}
		if t, ok := md.Topic(n); ok {
			out[n] = topicMeta{id: t.ID, partitions: t.Partitions}
		}
	}
	// The members by regex: those of one regex share it, so one match
	// decides for all of them, then the first that may take the topic.
	type regexMembers struct {
		re string
		ms []*Member
	}
	var byRegex []regexMembers
	for _, m := range members {
		for _, n := range m.SubscribedTopicNames {
			add(n)
		}
		if m.regex == nil || m.SubscribedTopicRegex == "" {
			continue
		}
		i := 0
		for i < len(byRegex) && byRegex[i].re != m.SubscribedTopicRegex {
			i++
		}
		if i == len(byRegex) {
			byRegex = append(byRegex, regexMembers{re: m.SubscribedTopicRegex})
		}
		byRegex[i].ms = append(byRegex[i].ms, m)
	}
	if len(byRegex) == 0 {
		return out, nil
	}
	regexTopics := make(map[string][]string, len(byRegex))
	for _, r := range byRegex {
		regexTopics[r.re] = []string{}
	}
	for _, n := range md.TopicNames() {
		for _, r := range byRegex {
			if !r.ms[0].regex.MatchString(n) {
				continue
			}
			for _, m := range r.ms {
				if m.mayTake(n, resolved) {
					add(n)
					regexTopics[r.re] = append(regexTopics[r.re], n)
					break
				}
			}
		}
	}
	for _, ts := range regexTopics {
		slices.Sort(ts)
	}
	return out, regexTopics
}

// resolve records the regexes' topics as a heartbeat at now resolved them
// against the metadata at version: a regex whose topics changed (or that
// is new) gets the new version and time, one no member subscribes with
// any more is dropped.
func (g *Group) resolve(regexTopics map[string][]string, now time.Time, version int64) {
	for re := range g.resolutions {
		if _, ok := regexTopics[re]; !ok {
			delete(g.resolutions, re)
		}
	}
	for re, ts := range regexTopics {
		if old, ok := g.resolutions[re]; ok && slices.Equal(old.Topics, ts) {
			continue
		}
		g.resolutions[re] = RegexResolution{Topics: ts, Version: version, TimestampMs: now.UnixMilli()}
	}
}

// dropUnusedRegexes drops the resolutions of the regexes no member
// subscribes with any more (a member left), as Kafka tombstones a regex
// when its last member goes; the others stay as resolved.
func (g *Group) dropUnusedRegexes() {
	for re := range g.resolutions {
		used := false
		for _, m := range g.members {
			if m.SubscribedTopicRegex == re {
				used = true
				break
			}
		}
		if !used {
			delete(g.resolutions, re)
		}
	}
}

// computeTarget runs the preferred assignor over members: the one most
// members name (ties by name), else the configured default, as Kafka's
// computePreferredServerAssignor.
func (g *Group) computeTarget(members []*Member, metadata map[string]topicMeta, replaced string, md Metadata) (map[string]assignor.Assignment, error) {
	a := g.preferred(members)
	if a == nil {
		return nil, fmt.Errorf("no assignor configured")
	}
	in := assignor.Group{Topics: map[assignor.TopicID]assignor.Topic{}}
	for n, meta := range metadata {
		t := assignor.Topic{ID: meta.id, Partitions: meta.partitions}
		// The replicas' racks, for rack-aware assignment, as the metadata
		// has them now (the partition count is the group's resolved one).
		if rm, ok := md.(RackMetadata); ok {
			t.Name, t.Racks = n, rm.Racks(n, meta.id)
		}
		in.Topics[meta.id] = t
	}
	for _, m := range members {
		am := assignor.Member{ID: m.ID, InstanceID: m.InstanceID, Rack: m.RackID, Current: g.target[m.ID]}
		if am.Current == nil && replaced != "" && m.InstanceID != "" && g.static[m.InstanceID] == replaced {
			am.Current = g.target[replaced]
		}
		for _, n := range slices.Sorted(maps.Keys(metadata)) {
			if m.subscribes(n, g.metadata) {
				am.Topics = append(am.Topics, metadata[n].id)
			}
		}
		in.Members = append(in.Members, am)
	}
	return a.Assign(in)
}

// preferred is the assignor most members name (ties by name), else the
// configured default, as Kafka's computePreferredServerAssignor.
func (g *Group) preferred(members []*Member) assignor.Assignor {
	counts := map[string]int{}
	for _, m := range members {
		if m.ServerAssignor != "" {
			counts[m.ServerAssignor]++
		}
	}
	if len(counts) > 0 {
		names := slices.Sorted(maps.Keys(counts))
		best := names[0]
		for _, n := range names[1:] {
			if counts[n] > counts[best] {
				best = n
			}
		}
		if a := g.assignor(best); a != nil {
			return a
		}
	}
	if len(g.cfg.Assignors) > 0 {
		return g.cfg.Assignors[0]
	}
	return nil
}

// put stores m and records which partitions it holds.
func (g *Group) put(m *Member) {
	if old, ok := g.members[m.ID]; ok {
		g.release(old)
	}
	g.members[m.ID] = m
	if m.InstanceID != "" {
		g.static[m.InstanceID] = m.ID
	}
	g.hold(m)
}

func (g *Group) release(m *Member) {
	for _, a := range []assignor.Assignment{m.Assigned, m.PendingRevocation} {
		for t, ps := range a {
			for _, p := range ps {
				if g.owners[tp{t, p}] == m.ID {
					delete(g.owners, tp{t, p})
				}
			}
		}
	}
}

func (g *Group) hold(m *Member) {
	for _, a := range []assignor.Assignment{m.Assigned, m.PendingRevocation} {
		for t, ps := range a {
			for _, p := range ps {
				g.owners[tp{t, p}] = m.ID
			}
		}
	}
}

// remove drops a member and frees its partitions, without an epoch bump.
func (g *Group) remove(id string) {
	m, ok := g.members[id]
	if !ok {
		return
	}
	g.release(m)
	delete(g.members, id)
	delete(g.target, id)
	if m.InstanceID != "" && g.static[m.InstanceID] == id {
		delete(g.static, m.InstanceID)
	}
}

// fence removes a member for good and bumps the group epoch, as Kafka's
// consumerGroupFenceMember.
func (g *Group) fence(id string) {
	g.remove(id)
	var members []*Member
	for _, m := range g.members {
		members = append(members, m)
	}
	g.setMetadata(subscriptionMetadataOf(g.metadata, members), members)
	g.dropUnusedRegexes()
	g.epoch++
}

// subscriptionMetadataOf keeps the topics some member still subscribes to.
func subscriptionMetadataOf(old map[string]topicMeta, members []*Member) map[string]topicMeta {
	out := map[string]topicMeta{}
	for n, meta := range old {
		for _, m := range members {
			if m.subscribes(n, old) {
				out[n] = meta
				break
			}
		}
	}
	return out
}

// leave handles epochs -1 and -2 (Kafka's consumerGroupLeave).
func (g *Group) leave(r HeartbeatRequest) HeartbeatResponse {
	resp := HeartbeatResponse{MemberID: r.MemberID, MemberEpoch: r.MemberEpoch}
	if r.InstanceID == nil {
		if _, ok := g.members[r.MemberID]; !ok {
			return fail(kerr.UnknownMemberID, "Member %s is not a member of group %s.", r.MemberID, g.id)
		}
		g.fence(r.MemberID)
		return resp
	}
	id, ok := g.static[*r.InstanceID]
	switch {
	case !ok:
		return fail(kerr.UnknownMemberID, "Instance id %s is unknown.", *r.InstanceID)
	case id != r.MemberID:
		return fail(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", r.MemberID, *r.InstanceID, id)
	case r.MemberEpoch == StaticLeaveEpoch:
		// The instance keeps its assignment for its next member id; what it
		// was revoking is no longer its own.
		m := g.members[id]
		g.release(m)
		m.Epoch, m.PendingRevocation, m.rebalanceDeadline = StaticLeaveEpoch, assignor.Assignment{}, time.Time{}
		g.hold(m)
		resp.MemberEpoch = StaticLeaveEpoch
		return resp
	}
	g.fence(id)
	return resp
}

// sessionTimeout is the member's: a classic member's own, from its
// JoinGroup, else the group's.
func (g *Group) sessionTimeout(m *Member) time.Duration {
	if m.Classic != nil && m.Classic.SessionTimeout > 0 {
		return m.Classic.SessionTimeout
	}
	return g.cfg.SessionTimeout
}

// NextDeadline is the earliest timer of the group; zero when none.
func (g *Group) NextDeadline() time.Time {
	var next time.Time
	for _, m := range g.members {
		for _, d := range []time.Time{m.sessionDeadline, m.rebalanceDeadline, m.joinDeadline, m.syncDeadline} {
			if !d.IsZero() && (next.IsZero() || d.Before(next)) {
				next = d
			}
		}
	}
	return next
}

// Tick fences the members whose session expired, or that did not revoke
// within their rebalance timeout, at now; it returns their ids, sorted.
func (g *Group) Tick(now time.Time) []string {
	var fenced []string
	for _, id := range g.MemberIDs() {
		m := g.members[id]
		expired := !m.sessionDeadline.IsZero() && !now.Before(m.sessionDeadline)
		stuck := !m.rebalanceDeadline.IsZero() && !now.Before(m.rebalanceDeadline) && m.Epoch == m.rebalanceEpoch
		late := (!m.joinDeadline.IsZero() && !now.Before(m.joinDeadline)) || (!m.syncDeadline.IsZero() && !now.Before(m.syncDeadline))
		if expired || stuck || late {
			g.fence(id)
			fenced = append(fenced, id)
		}
	}
	return fenced
}
