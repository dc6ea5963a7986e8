package broker

// ListOffsets (key 2): v1-v10, as Kafka 4.1.
//
// Behaviour (Kafka's ReplicaManager.fetchOffset, leader side): per
// partition, timestamp -2 (earliest) is the log start offset, -1 (latest)
// the high watermark (under read_committed the last stable offset), -3
// (max timestamp, v7+) the record with the largest timestamp, -4 (earliest local, v8+) the log start offset (nothing
// is tiered), -5 (latest tiered, v9+) no offset, and a timestamp >= 0 the
// first record at or after it, found through the time index. Offsets at or
// past the HW (read_committed: the LSO) are never answered (-1 instead).
// The leader epoch of the batch holding the offset is answered from v4.
// Errors: NOT_LEADER_OR_FOLLOWER,
// FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (CurrentLeaderEpoch, v4+),
// UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION for a special timestamp
// the version does not know, INVALID_REQUEST for a partition listed twice.
//
// Version notes: v0 (MaxNumOffsets, OldStyleOffsets) is answered but not
// advertised (apiEntry.quietBelow): Kafka 4 removed it (KIP-896), yet
// Debian's Burrow 1.2.1 and old sarama send it blindly for end offsets. A v0
// answer is Kafka 3's for a consumer: latest is the high watermark, earliest
// the log start offset, a timestamp the first offset at or after it (v1's
// rule; Kafka 3 answered segment base offsets by file time), each as a
// one-element OldStyleOffsets, none when MaxNumOffsets is 0; a negative
// MaxNumOffsets is INVALID_REQUEST. v2: IsolationLevel. v4: CurrentLeaderEpoch, LeaderEpoch. v6:
// flexible. v10: TimeoutMillis (only for tiered storage; unused). v11
// (Kafka 4.2, KIP-1023 timestamp -6, earliest pending upload) is not served:
// raftka answers as Kafka 4.1, whose ListOffsetsRequest.json stops at v10.

import (
	"context"
	"fmt"

	"github.com/raftka/raftka/broker/replica"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           2,
		advertisedMin: 1, min: 1, max: 10,
		quietBelow: 1,    // v0 for Burrow and old sarama, see above
		concurrent: true, // reads only
		handle:     handleListOffsets,
	})
}

// minVersionForTimestamp is the first ListOffsets version that knows each
// special timestamp.
var minVersionForTimestamp = map[int64]int16{
	replica.MaxTimestamp:           7,
	replica.EarliestLocalTimestamp: 8,
	replica.LatestTieredTimestamp:  9,
}

func handleListOffsets(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	srv := rc.conn.srv
	isolation := replica.ReadUncommitted
	if req.Version >= 2 {
		isolation = req.IsolationLevel
	}
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		seen := map[int32]int{}
		for _, p := range t.Partitions {
			seen[p.Partition]++
		}
		mayDescribe := rc.authorize(opDescribe, resTopic, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			current := int32(-1)
			if req.Version >= 4 {
				current = p.CurrentLeaderEpoch
			}
			var err error
			if min, special := minVersionForTimestamp[p.Timestamp]; special && req.Version < min {
				err = fmt.Errorf("%w: timestamp %d needs ListOffsets v%d", kerr.UnsupportedVersion, p.Timestamp, min)
			}
			if req.Version == 0 && p.MaxNumOffsets < 0 {
				err = fmt.Errorf("%w: MaxNumOffsets %d", kerr.InvalidRequest, p.MaxNumOffsets)
			}
			if seen[p.Partition] > 1 {
				err = fmt.Errorf("%w: partition %d listed twice", kerr.InvalidRequest, p.Partition)
			}
			if !mayDescribe { // DESCRIBE on the topic (KafkaApis)
				err = kerr.TopicAuthorizationFailed
			}
			if err == nil {
				err = srv.onPartition(ctx, rc, t.Topic, p.Partition, func(part *replica.Partition) error {
					lo, err := part.ListOffsets(current, p.Timestamp, isolation)
					if err == nil {
						rp.Timestamp, rp.Offset, rp.LeaderEpoch = lo.Timestamp, lo.Offset, lo.LeaderEpoch
					}
					return err
				})
			}
			rp.ErrorCode = errorCode(err)
			if req.Version == 0 && err == nil && rp.Offset >= 0 && p.MaxNumOffsets > 0 {
				rp.OldStyleOffsets = []int64{rp.Offset}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
