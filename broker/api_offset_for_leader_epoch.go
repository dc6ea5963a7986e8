package broker

// OffsetForLeaderEpoch (key 23): v2-v4, as Kafka 4 (librdkafka sends only
// v2; kgo uses v2+ for KIP-320 truncation detection).
//
// Behaviour (Kafka's ReplicaManager.lastOffsetForLeaderEpoch): for each
// partition this broker leads, the largest leader epoch at or below the one
// asked for and the offset where it ends (the log end offset for the current
// epoch), from the leader-epoch cache; an epoch the log knows nothing about
// answers epoch -1, offset -1. Consumers (ReplicaID -1) and followers
// (ReplicaID >= 0, v3+) get the same answer. Errors: NOT_LEADER_OR_FOLLOWER,
// FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH from CurrentLeaderEpoch,
// UNKNOWN_TOPIC_OR_PARTITION.
//
// Version notes: v2: CurrentLeaderEpoch. v3: ReplicaID. v4: flexible.

import (
	"context"

	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           23,
		advertisedMin: 2, min: 2, max: 4,
		concurrent: true, // reads only
		handle:     handleOffsetForLeaderEpoch,
	})
}

func handleOffsetForLeaderEpoch(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	srv := rc.conn.srv
	// CLUSTER_ACTION (brokers) or DESCRIBE on the topic (consumers since
	// KIP-320), as KafkaApis.
	clusterAction := rc.authorizeCluster(opClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		authorized := clusterAction || rc.authorize(opDescribe, resTopic, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LeaderEpoch, rp.EndOffset = storage.UndefinedEpoch, storage.UndefinedOffset
			if !authorized {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rc.fromReplica = req.ReplicaID >= 0
			err := srv.onPartition(ctx, rc, t.Topic, p.Partition, func(part *replica.Partition) error {
				eo, err := part.OffsetForLeaderEpoch(p.CurrentLeaderEpoch, p.LeaderEpoch)
				if err == nil {
					rp.LeaderEpoch, rp.EndOffset = eo.Epoch, eo.EndOffset
				}
				return err
			})
			rp.ErrorCode = errorCode(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
