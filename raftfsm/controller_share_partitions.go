package raftfsm

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share-partition state (record 50) travels like share group state: an
// Envelope whose RequestData is a metadata record batch, here the
// coalesced states of the share-partitions one leader changed since its
// previous write. Each record is fenced on its own: one whose partition is
// gone, whose leader epoch is not the partition's current one (a deposed
// leader), or whose state epoch is older than the stored one (an admin
// rewrote the state, AlterShareGroupOffsets) is left out, and its index is in the answer's ResponseData (big
// endian int32s), so the leader fails only the acknowledgements it
// carried. The rest commit in one entry.

func decideSharePartitionWrite(req *kmsg.EnvelopeRequest, recs []metadata.Record) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.EnvelopeResponse)
		var keep []metadata.Record
		var fenced []byte
		for i, r := range recs {
			s, ok := r.(*metadata.SharePartitionState)
			if !ok {
				resp.ErrorCode = kerr.InvalidRequest.Code
				return decision{resp: resp}
			}
			p, ok := img.Partition(s.TopicID, s.Partition)
			prev, had := img.SharePartition(metadata.SharePartitionKey{Group: s.Group, TopicID: s.TopicID, Partition: s.Partition})
			if !ok || p.LeaderEpoch != s.LeaderEpoch || (had && prev.StateEpoch > s.StateEpoch) {
				fenced = binary.BigEndian.AppendUint32(fenced, uint32(i))
				continue
			}
			keep = append(keep, s)
		}
		if len(keep) > 0 {
			if _, d := img.Apply(keep); len(d.Skipped) > 0 {
				resp.ErrorCode = kerr.InvalidRequest.Code
				return decision{resp: resp}
			}
		}
		resp.ResponseData = fenced
		return decision{recs: keep, resp: resp}
	}
}

// WriteSharePartitions commits share-partition states (record 50) in one
// Raft entry and reports which of them were fenced (their indexes in
// states): a partition that is gone or whose leader epoch moved on. It
// does not wait for this node's image: the leader keeps the state in
// memory and reads the image only when it loads a share-partition, which
// it does after a leader change that comes later in the log.
func (c *ControllerClient) WriteSharePartitions(ctx context.Context, states []*metadata.SharePartitionState) (fenced []int, err error) {
	recs := make([]metadata.Record, len(states))
	for i, s := range states {
		recs[i] = s
	}
	data, err := metadata.EncodeRecords(recs)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrEnvelopeRequest()
	req.RequestData = data
	resp, _, err := c.request(ctx, req, false)
	if err != nil {
		return nil, err
	}
	er := resp.(*kmsg.EnvelopeResponse)
	if er.ErrorCode != 0 {
		return nil, fmt.Errorf("raftfsm: share-partition write: %w", kerr.ErrorForCode(er.ErrorCode))
	}
	for b := er.ResponseData; len(b) >= 4; b = b[4:] {
		fenced = append(fenced, int(binary.BigEndian.Uint32(b)))
	}
	return fenced, nil
}
