package raftfsm

import (
	"context"
	"fmt"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share group state (records 55-59) travels as transaction state does: an
// Envelope whose RequestData is a metadata record batch, here holding the
// share-group records of one change of one group (broker/group/sharegroup
// writes only what changed, and only when something did). The controller
// checks that the batch applies to its image (the group exists for a
// member record, the id is not a classic group's) and records it whole.

func isShareGroupRecord(r metadata.Record) bool {
	switch r.(type) {
	case *metadata.ShareGroupEpoch, *metadata.ShareGroupMember, *metadata.ShareGroupRemoveMember,
		*metadata.ShareGroupTargetAssignment, *metadata.ShareGroupDelete:
		return true
	}
	return false
}

// decideEnvelope routes an Envelope by what it carries.
func decideEnvelope(req *kmsg.EnvelopeRequest) decideFunc {
	recs, err := metadata.DecodeRecords(req.RequestData)
	if err == nil && len(recs) > 0 && isShareGroupRecord(recs[0]) {
		return decideShareGroupWrite(req, recs)
	}
	if err == nil && len(recs) > 0 && recs[0].Type() == metadata.TypeSharePartitionState {
		return decideSharePartitionWrite(req, recs)
	}
	return decideTxnWrite(req)
}

func decideShareGroupWrite(req *kmsg.EnvelopeRequest, recs []metadata.Record) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.EnvelopeResponse)
		for _, r := range recs {
			if !isShareGroupRecord(r) {
				resp.ErrorCode = kerr.InvalidRequest.Code
				return decision{resp: resp}
			}
		}
		if _, d := img.Apply(recs); len(d.Skipped) > 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return decision{resp: resp}
		}
		return decision{recs: recs, resp: resp}
	}
}

// WriteShareGroup records one change of a share group (records 55-59) and
// returns the Raft index that committed it once this node's image has it:
// a coordinator reloads a group from its image after a deletion or a
// failed write, so it must read its own writes there. Membership changes
// are rare (joins, leaves, rebalances), so the wait is not on the
// heartbeat path.
func (c *ControllerClient) WriteShareGroup(ctx context.Context, recs []metadata.Record) (uint64, error) {
	for _, r := range recs {
		if !isShareGroupRecord(r) {
			return 0, fmt.Errorf("raftfsm: WriteShareGroup of a %T", r)
		}
	}
	data, err := metadata.EncodeRecords(recs)
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrEnvelopeRequest()
	req.RequestData = data
	resp, index, err := c.request(ctx, req, true)
	if err != nil {
		return 0, err
	}
	if code := resp.(*kmsg.EnvelopeResponse).ErrorCode; code != 0 {
		return index, fmt.Errorf("raftfsm: share group write: %w", kerr.ErrorForCode(code))
	}
	return index, nil
}
