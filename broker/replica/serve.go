package replica

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/kafkacode"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errCode is the shared mapping of error kinds to Kafka codes.
var errCode = kafkacode.Of

// ServeFetch answers a sessionless Fetch (any version kmsg knows) on this
// broker: a follower's (ReplicaID, or ReplicaState from v15, >= 0) or a
// consumer's. Topics are named up to v12 and by id from v13. Record bytes
// are copied into the response (ServeFetchRegions leaves them in the
// segment files instead). A request that asks for a fetch session
// (SessionEpoch 0) gets none (SessionID 0), which Kafka allows.
func (m *Manager) ServeFetch(ctx context.Context, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp, regions := m.ServeFetchRegions(ctx, req)
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			if r := regions[ti][pi]; r.Len > 0 {
				b, err := r.Bytes()
				if err != nil {
					// A truncation raced the read: answer nothing for it now.
					continue
				}
				resp.Topics[ti].Partitions[pi].RecordBatches = b
			}
		}
	}
	return resp
}

// ServeFetchRegions is ServeFetch without the copy: the records of
// partition j of topic i are regions[i][j] (empty when there are none;
// RecordBatches is left nil), so the caller can send them from the segment
// files with sendfile, as the root broker does for followers' fetches.
func (m *Manager) ServeFetchRegions(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, [][]storage.Region) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	replicaID := req.ReplicaID
	if req.Version >= 15 {
		replicaID = req.ReplicaState.ID
	}
	img := m.img.Load()
	type slot struct{ t, p int }
	var fr FetchRequest
	fr.ReplicaID, fr.MaxWait, fr.MinBytes, fr.MaxBytes, fr.Isolation = replicaID,
		time.Duration(req.MaxWaitMillis)*time.Millisecond, int(req.MinBytes), int(req.MaxBytes), req.IsolationLevel
	if req.Version < 3 {
		fr.MaxBytes = 0
	}
	var slots []slot
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name, known := t.Topic, true
		if req.Version >= 13 {
			ti, ok := img.TopicByID(t.TopicID)
			name, known = ti.Name, ok
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			if !known {
				rp.ErrorCode = kerr.UnknownTopicID.Code
			} else {
				slots = append(slots, slot{len(resp.Topics), len(rt.Partitions)})
				fr.Parts = append(fr.Parts, FetchPartition{
					Topic: name, Partition: p.Partition, Offset: p.FetchOffset, MaxBytes: int(p.PartitionMaxBytes),
					CurrentLeaderEpoch: p.CurrentLeaderEpoch, LastFetchedEpoch: p.LastFetchedEpoch,
					KnownHighWatermark: p.HighWatermark, LogStartOffset: p.LogStartOffset,
				})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version < 12 {
		for i := range fr.Parts {
			if req.Version < 9 {
				fr.Parts[i].CurrentLeaderEpoch = -1
			}
			if req.Version < 12 {
				fr.Parts[i].LastFetchedEpoch = -1
			}
			if req.Version < 5 {
				fr.Parts[i].LogStartOffset = -1
			}
		}
	}
	results := m.Fetch(ctx, fr)
	regions := make([][]storage.Region, len(resp.Topics))
	for i := range resp.Topics {
		regions[i] = make([]storage.Region, len(resp.Topics[i].Partitions))
	}
	for i, r := range results {
		rp := &resp.Topics[slots[i].t].Partitions[slots[i].p]
		rp.ErrorCode = errCode(r.Err)
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = r.HighWatermark, r.LastStableOffset, r.LogStartOffset
		if r.Diverging != nil {
			rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = r.Diverging.Epoch, r.Diverging.EndOffset
		}
		if r.Err == nil {
			regions[slots[i].t][slots[i].p] = r.Region
		}
	}
	return resp, regions
}

// ServeOffsetForLeaderEpoch answers OffsetForLeaderEpoch (any version) for
// the partitions this broker leads.
func (m *Manager) ServeOffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			current := p.CurrentLeaderEpoch
			if req.Version < 2 {
				current = -1
			}
			part, err := m.Partition(t.Topic, p.Partition)
			var eo EpochEndOffset
			if err == nil {
				eo, err = part.OffsetForLeaderEpoch(current, p.LeaderEpoch)
			}
			rp.ErrorCode = errCode(err)
			rp.LeaderEpoch, rp.EndOffset = storage.UndefinedEpoch, storage.UndefinedOffset
			if err == nil {
				rp.LeaderEpoch, rp.EndOffset = eo.Epoch, eo.EndOffset
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
