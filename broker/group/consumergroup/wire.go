package consumergroup

import (
	"maps"
	"slices"

	"github.com/raftka/raftka/broker/group/assignor"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FromKmsg reads a ConsumerGroupHeartbeat request; the group id and
// version stay with the caller (clientID and clientHost come from the
// connection).
func FromKmsg(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string) HeartbeatRequest {
	r := HeartbeatRequest{
		Version:  req.Version,
		MemberID: req.MemberID, MemberEpoch: req.MemberEpoch,
		InstanceID: req.InstanceID, RackID: req.RackID,
		RebalanceTimeoutMs:   req.RebalanceTimeoutMillis,
		SubscribedTopicNames: req.SubscribedTopicNames,
		ServerAssignor:       req.ServerAssignor,
		ClientID:             clientID, ClientHost: clientHost,
	}
	if req.Version >= 1 {
		r.SubscribedTopicRegex = req.SubscribedTopicRegex
	}
	if req.Topics != nil {
		r.Owned = []TopicPartitions{}
		for _, t := range req.Topics {
			// A topic listed twice adds up, as Kafka reads every entry.
			r.Owned = append(r.Owned, TopicPartitions{TopicID: t.TopicID, Partitions: t.Partitions})
		}
	}
	return r
}

// Kmsg writes the answer at the request's version.
func (h HeartbeatResponse) Kmsg(version int16) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = version
	resp.ErrorCode, resp.MemberEpoch, resp.HeartbeatIntervalMillis = h.ErrorCode, h.MemberEpoch, h.HeartbeatIntervalMs
	if h.ErrorMessage != "" {
		resp.ErrorMessage = kmsg.StringPtr(h.ErrorMessage)
	}
	if h.MemberID != "" {
		resp.MemberID = kmsg.StringPtr(h.MemberID)
	}
	if h.HasAssignment {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for _, t := range sortedTopics(h.Assignment) {
			at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			at.TopicID, at.Partitions = t, slices.Clone(h.Assignment[t])
			a.Topics = append(a.Topics, at)
		}
		resp.Assignment = &a
	}
	return resp
}

func sortedTopics(a assignor.Assignment) []assignor.TopicID {
	return slices.SortedFunc(maps.Keys(a), func(x, y assignor.TopicID) int {
		for i := range x {
			if x[i] != y[i] {
				return int(x[i]) - int(y[i])
			}
		}
		return 0
	})
}

// PreferredAssignor is the assignor the group's next target would use:
// the one most members name, else the configured default.
func (g *Group) PreferredAssignor() string {
	var members []*Member
	for _, m := range g.members {
		members = append(members, m)
	}
	if a := g.preferred(members); a != nil {
		return a.Name()
	}
	return ""
}

// Describe answers ConsumerGroupDescribe for the group (Kafka's
// ConsumerGroup.asDescribedGroup); topicName names a topic id, and a
// partition of a topic it does not know is left out, as Kafka does.
func (g *Group) Describe(version int16, topicName func(assignor.TopicID) (string, bool)) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.NewConsumerGroupDescribeResponseGroup()
	d.Group, d.State, d.Epoch, d.AssignmentEpoch = g.id, g.State(), g.epoch, g.assignmentEpoch
	d.AssignorName = g.PreferredAssignor()
	assignment := func(a assignor.Assignment) kmsg.Assignment {
		out := kmsg.NewAssignment()
		out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
		for _, t := range sortedTopics(a) {
			name, ok := topicName(t)
			if !ok {
				continue
			}
			tp := kmsg.NewAssignmentTopicPartition()
			tp.TopicID, tp.Topic, tp.Partitions = t, name, slices.Clone(a[t])
			out.TopicPartitions = append(out.TopicPartitions, tp)
		}
		return out
	}
	for _, id := range g.MemberIDs() {
		m := g.members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.ID, m.Epoch, m.ClientID, m.ClientHost
		if m.InstanceID != "" {
			dm.InstanceID = kmsg.StringPtr(m.InstanceID)
		}
		if m.RackID != "" {
			dm.RackID = kmsg.StringPtr(m.RackID)
		}
		dm.SubscribedTopics = slices.Clone(m.SubscribedTopicNames)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		if m.SubscribedTopicRegex != "" {
			dm.SubscribedTopicRegex = kmsg.StringPtr(m.SubscribedTopicRegex)
		}
		dm.Assignment, dm.TargetAssignment = assignment(m.Assigned), assignment(g.target[m.ID])
		if version >= 1 {
			dm.MemberType = 1 // the consumer protocol
			if m.Classic != nil {
				dm.MemberType = 0 // a classic member (the upgrade path)
			}
		}
		d.Members = append(d.Members, dm)
	}
	if d.Members == nil {
		d.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
	}
	return d
}
