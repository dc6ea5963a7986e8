package raftfsm

import (
	"context"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReplicaStatus is one member of the Raft configuration as this node sees
// it. LastContact, LastCaughtUp and MetadataOffset come from Raft's own
// replication: the leader's AppendEntries answers in the current term
// (replication_view.go; hashicorp/raft does not export its per-follower
// match index, so the answers are read off the transport). They are known
// only on the leader; for the node itself they are its last log index and
// now, as Kafka reports the leader. Zero times and MetadataOffset -1 mean
// unknown.
type ReplicaStatus struct {
	ID   int32
	Addr string
	// LastContact is when the member last answered an AppendEntries
	// (Kafka's LastFetchTimestamp).
	LastContact time.Time
	// LastCaughtUp is the last time the member's log reached the leader's
	// last index (Kafka's LastCaughtUpTimestamp).
	LastCaughtUp time.Time
	// MetadataOffset is the member's last Raft log index at LastContact
	// (Kafka's LogEndOffset).
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
	leading := n.IsLeader()
	for _, s := range f.Configuration().Servers {
		id64, err := strconv.ParseInt(string(s.ID), 10, 32)
		if err != nil {
			continue
		}
		rs := ReplicaStatus{ID: int32(id64), Addr: string(s.Address), MetadataOffset: -1}
		if leading && n.obs != nil {
			if r, ok := n.obs.replication(rs.ID, st.Term); ok {
				rs.LastContact, rs.LastCaughtUp, rs.MetadataOffset = r.lastFetch, r.lastCaughtUp, r.logEnd
			}
		}
		if rs.ID == n.cfg.NodeID {
			now := time.Now()
			rs.LastContact, rs.LastCaughtUp, rs.MetadataOffset = now, now, int64(st.LastIndex)
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
	if len(req.Topics) != 1 || req.Topics[0].Topic != MetadataTopic || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		// Kafka knows only the metadata log's one partition and answers
		// anything else per partition.
		for _, rt := range req.Topics {
			t := kmsg.NewDescribeQuorumResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewDescribeQuorumResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, kerr.UnknownTopicOrPartition.Code
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
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
	img, _ := n.pub.Latest()
	conv := func(rs []ReplicaStatus) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		var out []kmsg.DescribeQuorumResponseTopicPartitionReplicaState
		for _, r := range rs {
			s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
			s.ReplicaID, s.LogEndOffset = r.ID, r.MetadataOffset
			if d, ok := img.VoterDirectory(r.ID); ok {
				// v2 (KIP-853): which incarnation of the node id.
				s.ReplicaDirectoryID = d
			}
			s.LastFetchTimestamp, s.LastCaughtUpTimestamp = millisOrUnknown(r.LastContact), millisOrUnknown(r.LastCaughtUp)
			out = append(out, s)
		}
		return out
	}
	p.CurrentVoters, p.Observers = conv(st.Voters), conv(st.NonVoters)
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	if resp.Version >= 2 {
		// As in Kafka, Nodes lists the voters' controller endpoints.
		for _, r := range st.Voters {
			nd := kmsg.NewDescribeQuorumResponseNode()
			nd.NodeID = r.ID
			host, port := splitHostPort(r.Addr)
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = n.cfg.ControllerListenerName, host, port
			nd.Listeners = append(nd.Listeners, l)
			resp.Nodes = append(resp.Nodes, nd)
		}
	}
	return resp
}

// millisOrUnknown is a DescribeQuorum timestamp: -1 when unknown.
func millisOrUnknown(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}
