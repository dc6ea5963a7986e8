package raftfsm

import (
	"context"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReplicaStatus is one member of the Raft configuration as this node sees
// it. LastContact and MetadataOffset come from the member's last broker
// heartbeat (hashicorp/raft does not expose its per-follower replication
// state); they are known only on the leader, and only for members that run
// a broker. Zero LastContact and MetadataOffset -1 mean unknown.
type ReplicaStatus struct {
	ID             int32
	Addr           string
	LastContact    time.Time
	MetadataOffset int64
}

// QuorumStatus is what DescribeQuorum and `raftka cluster status` show.
type QuorumStatus struct {
	NodeID       int32
	State        string // Leader, Follower, Candidate, Shutdown
	LeaderID     int32  // -1 when unknown
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	LastIndex    uint64
	// LastLeaderContact is when this node last heard from the leader (now on
	// the leader itself; zero if never).
	LastLeaderContact time.Time
	Voters            []ReplicaStatus
	NonVoters         []ReplicaStatus
}

// QuorumStatus reads this node's view of the Raft quorum.
func (n *Node) QuorumStatus(ctx context.Context) (QuorumStatus, error) {
	st := QuorumStatus{
		NodeID:       n.cfg.NodeID,
		State:        n.raft.State().String(),
		LeaderID:     n.LeaderID(),
		Term:         n.raft.CurrentTerm(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.raft.AppliedIndex(),
		LastIndex:    n.raft.LastIndex(),
	}
	if n.IsLeader() {
		st.LastLeaderContact = time.Now()
	} else {
		st.LastLeaderContact = n.raft.LastContact()
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return st, err
	}
	leases := map[int32]lease{}
	if c := n.activeController(); c != nil {
		res := c.submit(ctx, func(c *controller, _ *metadata.Image, _ time.Time) decision {
			for id, l := range c.leases {
				leases[id] = *l
			}
			return decision{}
		})
		if res.err != nil {
			leases = nil
		}
	}
	for _, s := range f.Configuration().Servers {
		id64, err := strconv.ParseInt(string(s.ID), 10, 32)
		if err != nil {
			continue
		}
		rs := ReplicaStatus{ID: int32(id64), Addr: string(s.Address), MetadataOffset: -1}
		if l, ok := leases[rs.ID]; ok && l.metadataOffset > 0 {
			rs.LastContact, rs.MetadataOffset = l.lastSeen, l.metadataOffset
		}
		if rs.ID == n.cfg.NodeID {
			rs.LastContact, rs.MetadataOffset = time.Now(), int64(st.AppliedIndex)
		}
		if s.Suffrage == raft.Voter {
			st.Voters = append(st.Voters, rs)
		} else {
			st.NonVoters = append(st.NonVoters, rs)
		}
	}
	return st, nil
}

// MetadataTopic is the name DescribeQuorum reports for the metadata log, as
// KRaft does.
const MetadataTopic = "__cluster_metadata"

func (n *Node) describeQuorum(ctx context.Context, req *kmsg.DescribeQuorumRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	st, err := n.QuorumStatus(ctx)
	if err != nil {
		return errorResponse(req, errCode(ErrNotController))
	}
	t := kmsg.NewDescribeQuorumResponseTopic()
	t.Topic = MetadataTopic
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID = st.LeaderID
	p.LeaderEpoch = int32(st.Term)
	p.HighWatermark = int64(st.CommitIndex)
	conv := func(rs []ReplicaStatus) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		var out []kmsg.DescribeQuorumResponseTopicPartitionReplicaState
		for _, r := range rs {
			s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
			s.ReplicaID, s.LogEndOffset = r.ID, r.MetadataOffset
			s.LastFetchTimestamp, s.LastCaughtUpTimestamp = -1, -1
			if !r.LastContact.IsZero() {
				s.LastFetchTimestamp = r.LastContact.UnixMilli()
				s.LastCaughtUpTimestamp = s.LastFetchTimestamp
			}
			out = append(out, s)
		}
		return out
	}
	p.CurrentVoters, p.Observers = conv(st.Voters), conv(st.NonVoters)
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	if resp.Version >= 2 {
		for _, r := range append(append([]ReplicaStatus(nil), st.Voters...), st.NonVoters...) {
			nd := kmsg.NewDescribeQuorumResponseNode()
			nd.NodeID = r.ID
			host, port := splitHostPort(r.Addr)
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = "CONTROLLER", host, port
			nd.Listeners = append(nd.Listeners, l)
			resp.Nodes = append(resp.Nodes, nd)
		}
	}
	return resp
}
