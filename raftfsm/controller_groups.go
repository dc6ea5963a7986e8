package raftfsm

import (
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// decideCommitOffsets turns an OffsetCommit from a group coordinator into a
// CommitOffsets record. Concurrent commits queue on the controller loop and
// leave in one Raft entry (see controller.process), so N coordinators'
// commits cost one fsync, not N.
func decideCommitOffsets(req *kmsg.OffsetCommitRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		rec := &metadata.CommitOffsets{Group: req.Group}
		nowMs := now.UnixMilli()
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				if req.Group == "" {
					rp.ErrorCode = kerr.InvalidGroupID.Code
				} else {
					rec.Offsets = append(rec.Offsets, metadata.OffsetCommit{
						Topic: t.Topic, Partition: p.Partition, Offset: p.Offset,
						LeaderEpoch: p.LeaderEpoch, Metadata: deref(p.Metadata), CommitTimeMs: nowMs,
					})
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if len(rec.Offsets) == 0 {
			return decision{resp: resp}
		}
		return decision{recs: []metadata.Record{rec}, resp: resp}
	}
}
