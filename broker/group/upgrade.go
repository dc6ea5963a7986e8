package group

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/raftka/raftka/broker/group/consumergroup"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// KIP-848's online upgrade on the group loops: classic members
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) in a consumer group with
// members run on the consumer group's state machine
// (consumergroup/classic.go); a classic group with members becomes a
// consumer group when a consumer-protocol member joins, and a consumer
// group whose last consumer-protocol member left becomes a classic group
// again, as group.consumer.migration.policy allows.

// classicProtocols turns a JoinGroup's protocols into the consumer group's.
func classicProtocols(ps []Protocol) []consumergroup.ClassicProtocol {
	out := make([]consumergroup.ClassicProtocol, len(ps))
	for i, p := range ps {
		out[i] = consumergroup.ClassicProtocol{Name: p.Name, Metadata: p.Metadata}
	}
	return out
}

// afterWrite answers once the round's write is in the image: a failed
// write answers with its error (as a Kafka code) instead.
func (cs *consumerState) afterWrite(reply func(err error)) { cs.replies = append(cs.replies, reply) }

func writeErrCode(err error) int16 {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.CoordinatorNotAvailable.Code
	}
	return ke.Code
}

// classicJoin is a JoinGroup to a consumer group with members.
func (c *Coordinator) classicJoin(cs *consumerState, now time.Time, img *metadata.Image, r JoinRequest) {
	if r.SessionTimeout < c.cfg.Group.MinSessionTimeout || r.SessionTimeout > c.cfg.Group.MaxSessionTimeout {
		r.Reply(JoinResult{ErrorCode: kerr.InvalidSessionTimeout.Code, MemberID: r.MemberID, Generation: -1})
		return
	}
	resp := cs.g.ClassicJoin(now, consumergroup.ClassicJoinRequest{
		MemberID: r.MemberID, InstanceID: r.InstanceID, ClientID: r.ClientID, ClientHost: r.ClientHost,
		ProtocolType: r.ProtocolType, Protocols: classicProtocols(r.Protocols),
		SessionTimeout: r.SessionTimeout, RebalanceTimeout: r.RebalanceTimeout,
		RequireKnownMemberID: r.RequireKnownMemberID,
	}, imageMetadata{img: img, index: cs.index})
	res := JoinResult{ErrorCode: resp.ErrorCode, MemberID: resp.MemberID, Generation: resp.Generation,
		ProtocolType: resp.ProtocolType, Protocol: resp.Protocol}
	if res.MemberID == "" {
		res.MemberID = r.MemberID
	}
	cs.afterWrite(func(err error) {
		if err != nil && res.ErrorCode == 0 {
			res = JoinResult{ErrorCode: writeErrCode(err), MemberID: r.MemberID, Generation: -1}
		}
		r.Reply(res)
	})
}

// classicSync is a SyncGroup to a consumer group with members: the
// member's current assignment, from the server-side assignor.
func (c *Coordinator) classicSync(cs *consumerState, now time.Time, r SyncRequest) {
	var pt, pn *string
	if r.ProtocolType != "" {
		pt = &r.ProtocolType
	}
	if r.Protocol != "" {
		pn = &r.Protocol
	}
	resp := cs.g.ClassicSync(now, r.MemberID, r.InstanceID, r.Generation, pt, pn)
	res := SyncResult{ErrorCode: resp.ErrorCode, ProtocolType: resp.ProtocolType, Protocol: resp.Protocol, Assignment: resp.Assignment}
	cs.afterWrite(func(err error) {
		if err != nil && res.ErrorCode == 0 {
			res = SyncResult{ErrorCode: writeErrCode(err)}
		}
		r.Reply(res)
	})
}

// upgradeMembers is what the online upgrade takes of a classic group:
// its generation, chosen protocol and members with their assignments; ok
// is false unless the group uses the consumer protocol type (Kafka's
// usesConsumerGroupProtocol).
func (g *Group) upgradeMembers() (generation int32, protocol string, members []consumergroup.UpgradeMember, ok bool) {
	if g.state == Dead || g.protoType != ConsumerProtocolType {
		return 0, "", nil, false
	}
	for _, id := range g.order {
		m := g.members[id]
		protos := make([]consumergroup.ClassicProtocol, len(m.protocols))
		for i, p := range m.protocols {
			protos[i] = consumergroup.ClassicProtocol{Name: p.Name, Metadata: p.Metadata}
		}
		members = append(members, consumergroup.UpgradeMember{
			ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionTimeout: m.session, RebalanceTimeout: m.rebalance, Protocols: protos, Assignment: m.assignment,
		})
	}
	return g.generation, g.protocol, members, true
}

// tryUpgrade is the online upgrade (Kafka's validateOnlineUpgrade and
// convertToConsumerGroup): a classic group with members, on a
// consumer-protocol member's heartbeat, becomes a consumer group whose
// members carry over at the generation with their assignments; the
// heartbeat then runs on it. handled is false when the upgrade is not
// allowed (the policy, another protocol type, the group's size, a
// subscription that does not decode): the caller answers
// GROUP_ID_NOT_FOUND. A heartbeat that fails leaves the group classic.
// On success the classic members' waiting JoinGroup and SyncGroup get
// REBALANCE_IN_PROGRESS, so they rejoin the consumer group.
func (c *Coordinator) tryUpgrade(g *Group, q queued, now time.Time, img *metadata.Image, index uint64, id string) (cs *consumerState, handled bool) {
	if !c.cfg.Consumer.upgrade() {
		return nil, false
	}
	gen, proto, members, ok := g.upgradeMembers()
	cfg := c.consumerConfig(img, id)
	if !ok || (cfg.MaxSize > 0 && len(members) > cfg.MaxSize) {
		return nil, false
	}
	cg, err := consumergroup.FromClassic(id, cfg, gen, proto, members, imageMetadata{img: img, index: index}, now)
	if err != nil {
		c.log.Info().Err(err).Str("group", id).Msg("the classic group cannot be upgraded to a consumer group")
		return nil, false
	}
	cs = &consumerState{g: cg, index: index}
	q.consumer(cs, now, img, 0, "")
	if cg.AllClassic() {
		// The heartbeat failed its checks: the group stays classic, and
		// the heartbeat gets its error.
		for _, r := range cs.replies {
			r(nil)
		}
		return nil, true
	}
	c.log.Info().Str("group", id).Int32("generation", gen).Int("classic_members", len(members)).Msg("classic group upgraded to a consumer group")
	g.Unload(kerr.RebalanceInProgress.Code)
	return cs, true
}

// maybeDowngrade is the online downgrade (Kafka's
// validateOnlineDowngradeWithFencedMember and convertToClassicGroup):
// once only classic members are left in a consumer group, and the policy
// and group.max.size allow it, the group's state is written without
// members and removed, and a classic group takes the members in
// PreparingRebalance, so they rejoin it and its leader assigns. cs's
// replies are answered once that is written. It returns the classic
// group (and a nil cs), or cs unchanged when the group stays a consumer
// group; both nil when the write failed (the group reloads from the
// image).
func (c *Coordinator) maybeDowngrade(cs *consumerState, id string, img *metadata.Image) (*consumerState, *Group) {
	if cs == nil || !cs.g.AllClassic() || !c.cfg.Consumer.downgrade() {
		return cs, nil
	}
	members := cs.g.DowngradeMembers()
	if c.cfg.Group.MaxSize > 0 && len(members) > c.cfg.Group.MaxSize {
		return cs, nil
	}
	epoch := cs.g.Epoch()
	p, _ := Place(img, id)
	empty := recordOf(id, p.Slot, p.LeaderEpoch, consumergroup.State{Epoch: epoch + 1, AssignmentEpoch: epoch + 1})
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.PersistTimeout)
	_, err := c.consumerWriter().WriteConsumerGroup(ctx, empty)
	cancel()
	if err == nil {
		err = c.removeConsumer(id)
	}
	// The round's answers go once the group is classic in the image (or
	// the conversion failed), as Kafka writes the conversion with them.
	replies := cs.replies
	cs.replies = nil
	for _, r := range replies {
		r(err)
	}
	if err != nil {
		// The members stay in the image's consumer group: reload it.
		c.log.Warn().Err(controllerErr(err)).Str("group", id).Msg("downgrading a consumer group to a classic group failed; the group is reloaded from the image")
		return nil, nil
	}
	c.log.Info().Str("group", id).Int32("epoch", epoch).Int("classic_members", len(members)).Msg("consumer group downgraded to a classic group")
	// The classic generation is the target's epoch, the one the
	// reconciled members are at (the leave that left only classic members
	// bumped the group epoch past it; in Kafka the conversion takes that
	// bump's place), so their heartbeats get REBALANCE_IN_PROGRESS.
	return nil, fromConsumer(id, c.cfg.Group, cs.g.AssignmentEpoch(), members, c.now())
}

// fromConsumer is Kafka's ClassicGroup.fromConsumerGroup followed by its
// prepareRebalance: the members with their protocols, sessions and
// assignments, at generation, rebalancing, so each is told
// REBALANCE_IN_PROGRESS on its next heartbeat and rejoins.
func fromConsumer(id string, cfg Config, generation int32, members []consumergroup.UpgradeMember, now time.Time) *Group {
	g := New(id, cfg, nil)
	g.generation, g.protoType, g.state = generation, ConsumerProtocolType, Stable
	for _, um := range members {
		m := &member{id: um.ID, instanceID: um.InstanceID, clientID: um.ClientID, clientHost: um.ClientHost,
			session: um.SessionTimeout, rebalance: um.RebalanceTimeout, assignment: um.Assignment}
		for _, p := range um.Protocols {
			m.protocols = append(m.protocols, Protocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
		}
		if m.rebalance <= 0 {
			m.rebalance = m.session
		}
		m.deadline = now.Add(m.session)
		g.members[m.id] = m
		g.order = append(g.order, m.id)
		if m.instanceID != "" {
			g.static[m.instanceID] = m.id
		}
	}
	if len(g.order) > 0 {
		g.leader = g.order[0]
	}
	g.protocol = g.selectProtocol()
	g.prepareRebalance(now)
	return g
}
