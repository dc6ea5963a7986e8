package broker

// DeleteRecords (key 21): v0-v2, as Kafka 4.
//
// Behaviour (Kafka's ReplicaManager.deleteRecords): per partition this
// broker leads, move the log start offset up to Offset; -1 means the high
// watermark; an offset past the HW is OFFSET_OUT_OF_RANGE; an offset below
// the current log start moves nothing. Segments wholly below the new start
// are deleted. Then, as Kafka's DelayedDeleteRecords, the answer waits
// (bounded by TimeoutMillis) until the low watermark, the smallest log
// start offset over the replicas on live brokers as the followers report
// it in their fetches, has reached the offset, and answers that low
// watermark. Followers move their own log start offset when a fetch answer
// carries the leader's. Errors: NOT_LEADER_OR_FOLLOWER (also when
// leadership moves while waiting), UNKNOWN_TOPIC_OR_PARTITION,
// OFFSET_OUT_OF_RANGE, POLICY_VIOLATION (cleanup.policy without delete, as
// Kafka), REQUEST_TIMED_OUT (the low watermark then is the one
// when the leader deleted).
//
// Version notes: v2: flexible.

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/replica"
	"github.com/twmb/franz-go/pkg/kerr"
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
	var dels []*replica.Deletion
	type slot struct{ t, p int }
	var slots []slot // where each deletion is answered
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		mayDelete := rc.authorize(opDelete, resTopic, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			if !mayDelete { // DELETE on the topic (KafkaApis)
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			var del *replica.Deletion
			err := srv.onPartition(ctx, rc, t.Topic, p.Partition, func(part *replica.Partition) error {
				var err error
				del, err = part.DeleteRecords(p.Offset)
				return err
			})
			rp.ErrorCode = errorCode(err)
			if err == nil {
				dels = append(dels, del)
				slots = append(slots, slot{len(resp.Topics), len(rt.Partitions)})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(dels) == 0 {
		return resp, nil
	}
	timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
	for i, err := range replica.WaitDeletions(ctx, timeout, dels) {
		rp := &resp.Topics[slots[i].t].Partitions[slots[i].p]
		rp.ErrorCode, rp.LowWatermark = errorCode(err), dels[i].LowWatermark
	}
	return resp, nil
}
