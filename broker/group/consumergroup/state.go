package consumergroup

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/raftka/raftka/broker/group/assignor"
)

// State is what of a group must survive a coordinator failover, as
// Kafka's consumer group records keep it: the group epoch, each member's
// subscription and current assignment, the target assignment and its
// epoch, the subscribed topics' metadata and the regexes' resolutions. Timers are not in it: a
// coordinator that loads a group starts every member's session afresh.
type State struct {
	Epoch           int32
	AssignmentEpoch int32
	Members         []Member // sorted by id
	Target          map[string]assignor.Assignment
	Topics          map[string]TopicState
	// Regexes are the members' regexes as last resolved; nil when none.
	Regexes map[string]RegexResolution
}

// TopicState is one subscribed topic as the group last saw it.
type TopicState struct {
	ID         assignor.TopicID
	Partitions int32
}

// Export copies the group's durable state.
func (g *Group) Export() State {
	s := State{Epoch: g.epoch, AssignmentEpoch: g.assignmentEpoch, Target: map[string]assignor.Assignment{}, Topics: map[string]TopicState{}}
	for _, id := range g.MemberIDs() {
		m := g.members[id].clone()
		m.sessionDeadline, m.rebalanceDeadline, m.rebalanceEpoch, m.regex = time.Time{}, time.Time{}, 0, nil
		m.joinDeadline, m.syncDeadline = time.Time{}, time.Time{}
		m.describable, m.authKnown, m.regexTopics = nil, false, nil
		s.Members = append(s.Members, *m)
	}
	for id, a := range g.target {
		s.Target[id] = cloneAssignment(a)
	}
	for n, t := range g.metadata {
		s.Topics[n] = TopicState{ID: t.id, Partitions: t.partitions}
	}
	for re, r := range g.resolutions {
		if s.Regexes == nil {
			s.Regexes = make(map[string]RegexResolution, len(g.resolutions))
		}
		r.Topics = slices.Clone(r.Topics)
		s.Regexes[re] = r
	}
	return s
}

// Restore rebuilds a group from its state at now, as a coordinator taking
// the group over: every member's session starts now, and a member that
// was revoking gets a full rebalance timeout from now.
func Restore(id string, cfg Config, s State, now time.Time) (*Group, error) {
	g := New(id, cfg)
	g.epoch, g.assignmentEpoch = s.Epoch, s.AssignmentEpoch
	for _, m := range s.Members {
		m := m.clone()
		if _, dup := g.members[m.ID]; dup {
			return nil, fmt.Errorf("member %s appears twice", m.ID)
		}
		if m.SubscribedTopicRegex != "" {
			re, err := compileRegex(m.SubscribedTopicRegex)
			if err != nil {
				return nil, fmt.Errorf("member %s: regex %q: %w", m.ID, m.SubscribedTopicRegex, err)
			}
			m.regex = re
		}
		for _, a := range []assignor.Assignment{m.Assigned, m.PendingRevocation} {
			for t, ps := range a {
				for _, p := range ps {
					if holder, held := g.owners[tp{t, p}]; held {
						return nil, fmt.Errorf("partition %x-%d held by %s and %s", t[:], p, holder, m.ID)
					}
					g.owners[tp{t, p}] = m.ID
				}
			}
		}
		m.sessionDeadline = now.Add(g.sessionTimeout(m))
		if m.State == UnrevokedPartitions {
			m.rebalanceDeadline, m.rebalanceEpoch = now.Add(m.RebalanceTimeout), m.Epoch
		}
		g.members[m.ID] = m
		if m.InstanceID != "" {
			g.static[m.InstanceID] = m.ID
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.Target)) {
		g.target[id] = cloneAssignment(s.Target[id])
	}
	metadata := map[string]topicMeta{}
	for n, t := range s.Topics {
		metadata[n] = topicMeta{id: t.ID, partitions: t.Partitions}
	}
	var members []*Member
	for _, id := range g.MemberIDs() {
		members = append(members, g.members[id])
	}
	g.setMetadata(metadata, members)
	for re, r := range s.Regexes {
		r.Topics = slices.Clone(r.Topics)
		slices.Sort(r.Topics)
		g.resolutions[re] = r
	}
	return g, nil
}
