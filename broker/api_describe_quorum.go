package broker

// DescribeQuorum (key 55): v0-v2, as Kafka 4.2, forwarded to the active
// controller, which reads the Raft quorum (raftfsm's QuorumStatus).
//
// Behaviour (Kafka's KafkaRaftClient.handleDescribeQuorumRequest, reached
// through a broker as kafka-metadata-quorum.sh --bootstrap-server does):
//   - The request must name exactly topic __cluster_metadata, partition 0,
//     the metadata log; anything else answers every partition it names
//     with UNKNOWN_TOPIC_OR_PARTITION and no top-level error, as Kafka's
//     Raft client does (KafkaRaftClient.handleDescribeQuorumRequest,
//     DescribeQuorumRequest.getPartitionLevelErrorResponse); Kafka's broker
//     forwards the request unchecked.
//   - The answer is for that partition: LeaderID is the Raft leader,
//     LeaderEpoch the Raft term, HighWatermark the Raft commit index;
//     CurrentVoters are the Raft voters and Observers the non-voters
//     (broker-only nodes), each with Raft's own replication state as the
//     leader sees it in the current term: LogEndOffset is the member's last
//     Raft log index, LastFetchTimestamp its last AppendEntries answer,
//     LastCaughtUpTimestamp the last time its log reached the leader's (by
//     Kafka's rule); -1 when unknown. The leader reports its own last index
//     and now. hashicorp/raft does not export its per-follower match index,
//     so raftfsm reads these off the AppendEntries answers (heartbeats
//     included, every HeartbeatTimeout/10), not the pipelined ones: a
//     follower's log end may be up to one heartbeat interval old.
//   - A controller that cannot be reached answers the request's error
//     code (REQUEST_TIMED_OUT for a deadline, NOT_CONTROLLER without one).
//
// Version notes:
//   - v1: LastFetchTimestamp and LastCaughtUpTimestamp.
//   - v2: ErrorMessage, ReplicaDirectoryID (a voter's KIP-858 directory
//     id as the metadata image records it; zero for observers and for the
//     voters of a static quorum), and Nodes with each voter's controller
//     listener.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           55,
		advertisedMin: 0, min: 0, max: 2,
		concurrent: true, // a read
		handle:     handleDescribeQuorum,
	})
}

func handleDescribeQuorum(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	srv := rc.conn.srv
	if !rc.authorizeCluster(opDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}

	if len(req.Topics) != 1 || req.Topics[0].Topic != metadataTopic ||
		len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		for _, rt := range req.Topics {
			t := kmsg.NewDescribeQuorumResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewDescribeQuorumResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, kerr.UnknownTopicOrPartition.Code
				p.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicOrPartition.Description)
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}
	if srv.deps.Admin == nil {
		resp.ErrorCode = adminUnreachable.Code
		resp.ErrorMessage = kmsg.StringPtr("no controller reachable from this broker")
		return resp, nil
	}
	cctx, cancel := forwardContext(ctx, 0)
	defer cancel()
	cresp, err := srv.deps.Admin.DescribeQuorum(cctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = forwardFailure(err)
		return resp, nil
	}
	clearTags(&cresp.UnknownTags)
	return cresp, nil
}
