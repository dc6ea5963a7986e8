package broker

// DeleteRecords (key 21): v0-v2, as Kafka 4.
//
// Behaviour (Kafka's ReplicaManager.deleteRecords): per partition this
// broker leads, move the log start offset (the low watermark) up to Offset;
// -1 means the high watermark; an offset past the HW is OFFSET_OUT_OF_RANGE;
// an offset below the current log start changes nothing and answers the
// current one. Segments wholly below the new start are deleted.
//
// Difference from Kafka, on purpose for now: Kafka answers once every
// follower's log start offset has reached the new low watermark (a delayed
// operation bounded by TimeoutMillis). We answer as soon as the leader has
// moved it; followers follow from the leader's log start offset in their
// next fetch answer, so the low watermark a consumer of the leader sees is
// already the new one. Errors: NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE.
//
// Version notes: v2: flexible.

import (
	"context"

	"github.com/raftka/raftka/broker/replica"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           21,
		advertisedMin: 0, min: 0, max: 2,
		handle: handleDeleteRecords,
	})
}

func handleDeleteRecords(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	srv := rc.conn.srv
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			err := srv.onPartition(ctx, rc, t.Topic, p.Partition, func(part *replica.Partition) error {
				low, err := part.DeleteRecords(p.Offset)
				if err == nil {
					rp.LowWatermark = low
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
