package sharegroup

import (
	"cmp"
	"slices"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FromRequest reads a ShareGroupHeartbeat.
func FromRequest(req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string) HeartbeatRequest {
	return HeartbeatRequest{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, RackID: req.RackID,
		Subscribed: req.SubscribedTopicNames, ClientID: clientID, ClientHost: clientHost}
}

func sortedTopics(a Assignment) []TopicID {
	ts := make([]TopicID, 0, len(a))
	for t, ps := range a {
		if len(ps) > 0 {
			ts = append(ts, t)
		}
	}
	slices.SortFunc(ts, func(x, y TopicID) int { return cmp.Compare(string(x[:]), string(y[:])) })
	return ts
}

// FillResponse writes a heartbeat's result into resp.
func FillResponse(resp *kmsg.ShareGroupHeartbeatResponse, r HeartbeatResult) {
	if r.Err != nil {
		resp.ErrorCode = r.Err.Code
		if r.ErrMessage != "" {
			msg := r.ErrMessage
			resp.ErrorMessage = &msg
		}
		return
	}
	id := r.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = r.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(r.HeartbeatInterval.Milliseconds())
	if r.SendAssignment {
		a := &kmsg.ShareGroupHeartbeatResponseAssignment{TopicPartitions: []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}}
		for _, t := range sortedTopics(r.Assignment) {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = t, slices.Clone(r.Assignment[t])
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = a
	}
}

// Described is a snapshot as ShareGroupDescribe's group entry, with topic
// names from img (a topic deleted since is left out), and the names of
// every topic it mentions (subscriptions and assignments), for the
// caller's DESCRIBE check.
func Described(s Snapshot, img *metadata.Image) (kmsg.ShareGroupDescribeResponseGroup, []string) {
	g := kmsg.NewShareGroupDescribeResponseGroup()
	g.GroupID, g.GroupState, g.GroupEpoch, g.AssignmentEpoch, g.Assignor = s.Group, s.State, s.Epoch, s.AssignmentEpoch, AssignorName
	g.Members = []kmsg.ShareGroupDescribeResponseGroupMember{}
	seen := map[string]bool{}
	var topics []string
	note := func(name string) {
		if !seen[name] {
			seen[name] = true
			topics = append(topics, name)
		}
	}
	for _, m := range s.Members {
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.ID, m.Epoch, m.ClientID, m.ClientHost
		if m.RackID != "" {
			rack := m.RackID
			dm.RackID = &rack
		}
		dm.SubscribedTopicNames = slices.Clone(m.SubscribedTopicNames)
		for _, name := range m.SubscribedTopicNames {
			note(name)
		}
		dm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
		for _, t := range sortedTopics(m.Assigned) {
			ti, ok := img.TopicByID(t)
			if !ok {
				continue
			}
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID, tp.Topic, tp.Partitions = t, ti.Name, slices.Clone(m.Assigned[t])
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
			note(ti.Name)
		}
		g.Members = append(g.Members, dm)
	}
	slices.Sort(topics)
	return g, topics
}
