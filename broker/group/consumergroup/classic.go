package consumergroup

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/raftka/raftka/broker/group/assignor"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-848's online upgrade: members that speak the classic protocol
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) in a consumer group, as
// Kafka 4.1's GroupMetadataManager (classicGroupJoinToConsumerGroup,
// classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup,
// classicGroupLeaveToConsumerGroup) and ConsumerGroup.fromClassicGroup.
//
//   - A classic member is a consumer group member like the others: its
//     subscription is the consumer protocol Subscription in its JoinGroup,
//     its assignment comes from the group's server-side assignor, and it
//     reconciles towards its target on each JoinGroup with the partitions
//     its Subscription says it owns (none for an eager client, which gives
//     up everything before it rejoins). Its member epoch is its generation.
//   - JoinGroup answers at once (no join phase): the member's epoch as the
//     generation, no leader work (the member list is empty). SyncGroup
//     answers the member's current assignment as a consumer protocol
//     Assignment.
//   - A rebalance is signalled by Heartbeat (and SyncGroup) answering
//     REBALANCE_IN_PROGRESS when the group epoch is ahead of the member's,
//     when it must revoke, or when partitions it waits for are free; the
//     member then rejoins.
//   - Timers: the member's own session timeout (from its JoinGroup); after
//     REBALANCE_IN_PROGRESS it must rejoin, and after a JoinGroup sync,
//     within its rebalance timeout, or it is fenced.
//   - A classic group with members converts (FromClassic) when a
//     consumer-protocol member joins, if group.consumer.migration.policy
//     allows the upgrade; the coordinator converts the group back to a
//     classic group when only classic members are left (AllClassic), if the
//     policy allows the downgrade.

// ClassicProtocol is one assignment protocol of a classic member's
// JoinGroup, with its consumer protocol Subscription.
type ClassicProtocol struct {
	Name     string
	Metadata []byte
}

// ClassicMember is what a classic member carries beyond a consumer
// member's fields (Kafka's ClassicMemberMetadata).
type ClassicMember struct {
	SessionTimeout time.Duration
	Protocols      []ClassicProtocol // as the JoinGroup listed them; the first is the member's
}

// ClassicJoinRequest is a classic member's JoinGroup.
type ClassicJoinRequest struct {
	MemberID, InstanceID string // "" when absent
	ClientID, ClientHost string
	ProtocolType         string
	Protocols            []ClassicProtocol
	SessionTimeout       time.Duration
	RebalanceTimeout     time.Duration
	// RequireKnownMemberID is JoinGroup v4+ (KIP-394).
	RequireKnownMemberID bool
}

// ClassicJoinResponse answers a ClassicJoinRequest.
type ClassicJoinResponse struct {
	ErrorCode    int16
	ErrorMessage string
	MemberID     string
	Generation   int32 // the member epoch
	ProtocolType string
	Protocol     string
}

// ClassicSyncResponse answers a classic member's SyncGroup.
type ClassicSyncResponse struct {
	ErrorCode              int16
	ErrorMessage           string
	ProtocolType, Protocol string
	Assignment             []byte // a consumer protocol Assignment
}

// ClassicLeaver is one member of a LeaveGroup; a static member may be
// named by its instance id alone.
type ClassicLeaver struct{ MemberID, InstanceID string }

// ConsumerProtocolType is the classic protocol type of consumers.
const ConsumerProtocolType = "consumer"

func classicFail(err *kerr.Error, format string, args ...any) ClassicJoinResponse {
	return ClassicJoinResponse{ErrorCode: err.Code, ErrorMessage: fmt.Sprintf(format, args...), Generation: -1}
}

// decodeSubscription reads a consumer protocol Subscription.
func decodeSubscription(b []byte) (kmsg.ConsumerMemberMetadata, error) {
	var s kmsg.ConsumerMemberMetadata
	err := s.ReadFrom(b)
	return s, err
}

// supportsClassic is Kafka's ConsumerGroup.supportsClassicProtocols: the
// consumer protocol type, and (when the group has other classic members)
// one protocol every one of them supports too.
func (g *Group) supportsClassic(memberID, protoType string, protos []ClassicProtocol) bool {
	if protoType != ConsumerProtocolType || len(protos) == 0 {
		return false
	}
	for _, p := range protos {
		all := true
		for id, m := range g.members {
			if id == memberID || m.Classic == nil {
				continue
			}
			if !slices.ContainsFunc(m.Classic.Protocols, func(q ClassicProtocol) bool { return q.Name == p.Name }) {
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

// ownedOf maps a Subscription's owned partitions (by topic name) to topic
// ids; topics the metadata does not know are left out. Never nil: the
// member reports what it owns, possibly nothing.
func ownedOf(s *kmsg.ConsumerMemberMetadata, md Metadata) []TopicPartitions {
	out := []TopicPartitions{}
	for _, o := range s.OwnedPartitions {
		if t, ok := md.Topic(o.Topic); ok {
			out = append(out, TopicPartitions{TopicID: t.ID, Partitions: slices.Clone(o.Partitions)})
		}
	}
	return out
}

// ClassicJoin handles a classic member's JoinGroup at now.
func (g *Group) ClassicJoin(now time.Time, r ClassicJoinRequest, md Metadata) ClassicJoinResponse {
	id := r.MemberID
	unknown := id == ""
	if unknown {
		id = g.cfg.NewMemberID()
	}
	if _, in := g.members[id]; g.cfg.MaxSize > 0 && len(g.members) >= g.cfg.MaxSize && !in {
		return classicFail(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", g.cfg.MaxSize)
	}
	if !g.supportsClassic(id, r.ProtocolType, r.Protocols) {
		return classicFail(kerr.InconsistentGroupProtocol, "Member %s's protocols are not supported.", id)
	}
	if r.RequireKnownMemberID && unknown && r.InstanceID == "" {
		return ClassicJoinResponse{ErrorCode: kerr.MemberIDRequired.Code, MemberID: id, Generation: -1}
	}
	sub, err := decodeSubscription(r.Protocols[0].Metadata)
	if err != nil {
		return classicFail(kerr.InconsistentGroupProtocol, "Member %s's consumer protocol subscription does not decode: %v.", id, err)
	}

	var member *Member
	replaced := ""
	if r.InstanceID == "" {
		member = g.members[id]
	} else {
		oldID, known := g.static[r.InstanceID]
		switch {
		case known && unknown:
			// A known instance rejoining under a new member id replaces its
			// old member (whichever protocol that one spoke), taking over
			// its assignment at epoch 0.
			member = g.members[oldID].clone()
			member.ID, member.Epoch, member.PreviousEpoch = id, 0, 0
			replaced = oldID
		case known && oldID != id:
			return classicFail(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", id, r.InstanceID, oldID)
		case known:
			member = g.members[oldID]
		case !unknown:
			if _, in := g.members[id]; !in {
				return classicFail(kerr.UnknownMemberID, "Member %s is not a member of group %s.", id, g.id)
			}
			member = g.members[id]
		}
	}

	updated := &Member{ID: id, Assigned: assignor.Assignment{}, PendingRevocation: assignor.Assignment{}}
	if member != nil {
		updated = member.clone()
	}
	updated.InstanceID = r.InstanceID
	if sub.Rack != nil && *sub.Rack != "" {
		updated.RackID = *sub.Rack
	}
	if r.RebalanceTimeout > 0 {
		updated.RebalanceTimeout = r.RebalanceTimeout
	} else {
		updated.RebalanceTimeout = r.SessionTimeout // JoinGroup v0 has none
	}
	names := slices.Clone(sub.Topics)
	slices.Sort(names)
	updated.SubscribedTopicNames = slices.Compact(names)
	if updated.SubscribedTopicNames == nil {
		updated.SubscribedTopicNames = []string{}
	}
	updated.SubscribedTopicRegex, updated.regex = "", nil
	updated.ClientID, updated.ClientHost = r.ClientID, r.ClientHost
	updated.describable, updated.authKnown = nil, true
	updated.Classic = &ClassicMember{SessionTimeout: r.SessionTimeout, Protocols: slices.Clone(r.Protocols)}
	bump := member == nil || !slices.Equal(member.SubscribedTopicNames, updated.SubscribedTopicNames) ||
		member.SubscribedTopicRegex != ""
	if resp, ok := g.step(now, updated, replaced, bump, ownedOf(&sub, md), md); !ok {
		return ClassicJoinResponse{ErrorCode: resp.ErrorCode, ErrorMessage: resp.ErrorMessage, Generation: -1}
	}
	updated.joinDeadline = time.Time{}
	updated.syncDeadline = now.Add(updated.RebalanceTimeout)
	return ClassicJoinResponse{MemberID: id, Generation: updated.Epoch, ProtocolType: ConsumerProtocolType, Protocol: r.Protocols[0].Name}
}

// classicMember finds the classic member a SyncGroup, Heartbeat or
// LeaveGroup names (Kafka's validateConsumerGroupMember and
// throwIfMemberDoesNotUseClassicProtocol): an unknown member, or one that
// speaks the consumer protocol, is UNKNOWN_MEMBER_ID; a member id that is
// not the one holding its instance id FENCED_INSTANCE_ID.
func (g *Group) classicMember(memberID, instanceID string) (*Member, *kerr.Error, string) {
	var m *Member
	if instanceID == "" {
		m = g.members[memberID]
		if m == nil {
			return nil, kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", memberID, g.id)
		}
	} else {
		id, ok := g.static[instanceID]
		if !ok {
			return nil, kerr.UnknownMemberID, fmt.Sprintf("Member with instance id %s is not a member of group %s.", instanceID, g.id)
		}
		if memberID != "" && id != memberID {
			return nil, kerr.FencedInstanceID, fmt.Sprintf("Static member %s with instance id %s was fenced by member %s.", memberID, instanceID, id)
		}
		m = g.members[id]
	}
	if m.Classic == nil {
		return nil, kerr.UnknownMemberID, fmt.Sprintf("Member %s does not use the classic protocol.", m.ID)
	}
	return m, nil, ""
}

// waitingOnUnreleased reports whether a partition of m's target that it
// does not own yet is still held by another member.
func (g *Group) waitingOnUnreleased(m *Member) bool {
	for t, ps := range g.target[m.ID] {
		for _, p := range ps {
			if slices.Contains(m.Assigned[t], p) {
				continue
			}
			if holder, held := g.owners[tp{t, p}]; held && holder != m.ID {
				return true
			}
		}
	}
	return false
}

// ClassicSync handles a classic member's SyncGroup at now. protoType and
// protocol are SyncGroup v5's (nil before).
func (g *Group) ClassicSync(now time.Time, memberID, instanceID string, generation int32, protoType, protocol *string) ClassicSyncResponse {
	fail := func(err *kerr.Error, format string, args ...any) ClassicSyncResponse {
		return ClassicSyncResponse{ErrorCode: err.Code, ErrorMessage: fmt.Sprintf(format, args...)}
	}
	m, kerrv, msg := g.classicMember(memberID, instanceID)
	if kerrv != nil {
		return ClassicSyncResponse{ErrorCode: kerrv.Code, ErrorMessage: msg}
	}
	if generation != m.Epoch {
		return fail(kerr.IllegalGeneration, "The request generation id %d is not equal to the member epoch %d of member %s.", generation, m.Epoch, m.ID)
	}
	name := m.Classic.Protocols[0].Name
	if protoType != nil && *protoType != ConsumerProtocolType {
		return fail(kerr.InconsistentGroupProtocol, "The protocol type %s from member %s request is not equal to the group protocol type %s.", *protoType, m.ID, ConsumerProtocolType)
	}
	if protocol != nil && *protocol != name {
		return fail(kerr.InconsistentGroupProtocol, "The protocol name %s from member %s request is not equal to the protocol name %s returned in the join response.", *protocol, m.ID, name)
	}
	if g.epoch > m.Epoch && m.State != UnrevokedPartitions {
		if m.joinDeadline.IsZero() {
			m.joinDeadline = now.Add(m.RebalanceTimeout)
		}
		return fail(kerr.RebalanceInProgress, "A new rebalance is triggered in group %s and member %s should rejoin to catch up.", g.id, m.ID)
	}
	m.syncDeadline = time.Time{}
	m.sessionDeadline = now.Add(g.sessionTimeout(m))
	return ClassicSyncResponse{ProtocolType: ConsumerProtocolType, Protocol: name, Assignment: g.classicAssignment(m.Assigned, m.Classic)}
}

// classicAssignment encodes partitions as a consumer protocol Assignment
// at the version of the member's Subscription (at most 3), topics by
// name; a topic the group no longer resolves is left out.
func (g *Group) classicAssignment(a assignor.Assignment, c *ClassicMember) []byte {
	version := int16(0)
	if c != nil && len(c.Protocols) > 0 && len(c.Protocols[0].Metadata) >= 2 {
		version = min(max(int16(c.Protocols[0].Metadata[0])<<8|int16(c.Protocols[0].Metadata[1]), 0), 3)
	}
	names := map[assignor.TopicID]string{}
	for n, t := range g.metadata {
		names[t.id] = n
	}
	out := kmsg.NewConsumerMemberAssignment()
	out.Version = version
	for _, id := range sortedTopics(a) {
		n, ok := names[id]
		if !ok || len(a[id]) == 0 {
			continue
		}
		t := kmsg.NewConsumerMemberAssignmentTopic()
		t.Topic, t.Partitions = n, slices.Sorted(slices.Values(a[id]))
		out.Topics = append(out.Topics, t)
	}
	sort.Slice(out.Topics, func(i, j int) bool { return out.Topics[i].Topic < out.Topics[j].Topic })
	return out.AppendTo(nil)
}

// ClassicHeartbeat handles a classic member's Heartbeat at now. It asks
// the member to rejoin (REBALANCE_IN_PROGRESS) when the group epoch is
// ahead of its epoch, when it must revoke, or when it waits for
// partitions that are free now.
func (g *Group) ClassicHeartbeat(now time.Time, memberID, instanceID string, generation int32) (int16, string) {
	m, kerrv, msg := g.classicMember(memberID, instanceID)
	if kerrv != nil {
		return kerrv.Code, msg
	}
	if generation != m.Epoch {
		return kerr.IllegalGeneration.Code, fmt.Sprintf("The request generation id %d is not equal to the member epoch %d of member %s.", generation, m.Epoch, m.ID)
	}
	m.sessionDeadline = now.Add(g.sessionTimeout(m))
	if m.Epoch < g.epoch || m.State == UnrevokedPartitions || (m.State == UnreleasedPartitions && !g.waitingOnUnreleased(m)) {
		if m.joinDeadline.IsZero() {
			m.joinDeadline = now.Add(m.RebalanceTimeout)
		}
		return kerr.RebalanceInProgress.Code, ""
	}
	return 0, ""
}

// ClassicLeave handles a LeaveGroup: one code per member; the group epoch
// rises once if any left.
func (g *Group) ClassicLeave(ls []ClassicLeaver) []int16 {
	codes := make([]int16, len(ls))
	left := false
	for i, l := range ls {
		m, kerrv, _ := g.classicMember(l.MemberID, l.InstanceID)
		if kerrv != nil {
			codes[i] = kerrv.Code
			continue
		}
		g.remove(m.ID)
		left = true
	}
	if left {
		var members []*Member
		for _, id := range g.MemberIDs() {
			members = append(members, g.members[id])
		}
		g.setMetadata(subscriptionMetadataOf(g.metadata, members), members)
		g.dropUnusedRegexes()
		g.epoch++
	}
	return codes
}

// AllClassic reports whether the group has members and every one speaks
// the classic protocol: the last consumer-protocol member is gone, and the
// coordinator may convert the group back to a classic group.
func (g *Group) AllClassic() bool {
	if len(g.members) == 0 {
		return false
	}
	for _, m := range g.members {
		if m.Classic == nil {
			return false
		}
	}
	return true
}

// UpgradeMember is one member of a classic group, as the online upgrade
// takes it over (FromClassic) and the downgrade gives it back
// (DowngradeMembers).
type UpgradeMember struct {
	ID, InstanceID       string
	ClientID, ClientHost string
	SessionTimeout       time.Duration
	RebalanceTimeout     time.Duration
	Protocols            []ClassicProtocol
	// Assignment is the member's consumer protocol Assignment: what it
	// was given in its last SyncGroup (FromClassic), or its share of the
	// target assignment (DowngradeMembers); nil or empty for none.
	Assignment []byte
}

// FromClassic is Kafka's ConsumerGroup.fromClassicGroup: a classic group
// with members at generation, whose chosen protocol is protocol ("" when
// none was chosen yet), as a consumer group. Every member is stable at the
// generation as its epoch with its last assignment as its current and
// target assignment; the group and target epochs are the generation. A
// Subscription or Assignment that does not decode, or a partition given
// to two members, fails the conversion.
func FromClassic(id string, cfg Config, generation int32, protocol string, members []UpgradeMember, md Metadata, now time.Time) (*Group, error) {
	g := New(id, cfg)
	g.epoch, g.assignmentEpoch = generation, generation
	for _, um := range members {
		meta := []byte(nil)
		for _, p := range um.Protocols {
			if p.Name == protocol {
				meta = p.Metadata
			}
		}
		if meta == nil && len(um.Protocols) > 0 {
			meta = um.Protocols[0].Metadata
		}
		sub, err := decodeSubscription(meta)
		if err != nil {
			return nil, fmt.Errorf("member %s: the consumer protocol subscription does not decode: %w", um.ID, err)
		}
		assigned := assignor.Assignment{}
		if len(um.Assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(um.Assignment); err != nil {
				return nil, fmt.Errorf("member %s: the consumer protocol assignment does not decode: %w", um.ID, err)
			}
			for _, t := range a.Topics {
				if ti, ok := md.Topic(t.Topic); ok {
					assigned[ti.ID] = append(assigned[ti.ID], t.Partitions...)
				}
			}
		}
		names := slices.Clone(sub.Topics)
		slices.Sort(names)
		m := &Member{
			ID: um.ID, InstanceID: um.InstanceID, ClientID: um.ClientID, ClientHost: um.ClientHost,
			Epoch: generation, PreviousEpoch: generation, State: Stable, RebalanceTimeout: um.RebalanceTimeout,
			SubscribedTopicNames: slices.Compact(names), Assigned: sorted(assigned), PendingRevocation: assignor.Assignment{},
			Classic: &ClassicMember{SessionTimeout: um.SessionTimeout, Protocols: slices.Clone(um.Protocols)},
		}
		if m.SubscribedTopicNames == nil {
			m.SubscribedTopicNames = []string{}
		}
		if sub.Rack != nil && *sub.Rack != "" {
			m.RackID = *sub.Rack
		}
		if _, dup := g.members[m.ID]; dup {
			return nil, fmt.Errorf("member %s appears twice", m.ID)
		}
		for t, ps := range m.Assigned {
			for _, p := range ps {
				if holder, held := g.owners[tp{t, p}]; held {
					return nil, fmt.Errorf("partition %x-%d assigned to %s and %s", t[:], p, holder, m.ID)
				}
			}
		}
		m.sessionDeadline = now.Add(g.sessionTimeout(m))
		g.put(m)
		g.target[m.ID] = cloneAssignment(m.Assigned)
	}
	var all []*Member
	for _, mid := range g.MemberIDs() {
		all = append(all, g.members[mid])
	}
	metadata, _ := subscriptionMetadata(all, md, nil) // classic members subscribe by name
	g.setMetadata(metadata, all)
	return g, nil
}

// DowngradeMembers is the group's members as a classic group takes them
// back (Kafka's ClassicGroup.fromConsumerGroup), each with its share of
// the target assignment encoded for it; only meaningful when AllClassic.
func (g *Group) DowngradeMembers() []UpgradeMember {
	var out []UpgradeMember
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		um := UpgradeMember{ID: m.ID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost, RebalanceTimeout: m.RebalanceTimeout}
		if m.Classic != nil {
			um.SessionTimeout, um.Protocols = m.Classic.SessionTimeout, slices.Clone(m.Classic.Protocols)
		}
		um.Assignment = g.classicAssignment(g.target[m.ID], m.Classic)
		out = append(out, um)
	}
	return out
}
