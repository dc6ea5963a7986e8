package broker

// SyncGroup (key 14): v0-v5, as Kafka 4.2.
//
// Behaviour: the leader's assignment is persisted (the generation is
// committed through the controller) before any member is answered; every
// member gets exactly the bytes the leader gave it, or empty bytes when the
// leader gave it nothing, never a truncated slice.
//
// Version notes: v3 static membership (InstanceID); v4 flexible; v5
// ProtocolType and Protocol, checked against the group's when sent and
// returned in the answer.

import (
	"context"

	"github.com/raftka/raftka/broker/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 14, advertisedMin: 0, min: 0, max: 5, handle: handleSyncGroup})
}

func handleSyncGroup(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	fill := func(res group.SyncResult) (kmsg.Response, error) {
		resp.ErrorCode = res.ErrorCode
		resp.MemberAssignment = res.Assignment
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
		if req.Version >= 5 && res.ErrorCode == 0 {
			resp.ProtocolType, resp.Protocol = kmsg.StringPtr(res.ProtocolType), kmsg.StringPtr(res.Protocol)
		}
		return resp, nil
	}
	groups := groupsOf(rc)
	switch {
	case !rc.authorize(opRead, resGroup, req.Group):
		return fill(group.SyncResult{ErrorCode: kerr.GroupAuthorizationFailed.Code})
	case groups == nil:
		return fill(group.SyncResult{ErrorCode: kerr.CoordinatorNotAvailable.Code})
	case req.Group == "":
		return fill(group.SyncResult{ErrorCode: kerr.InvalidGroupID.Code})
	}
	sr := group.SyncRequest{
		MemberID: req.MemberID, InstanceID: derefOr(req.InstanceID, ""), Generation: req.Generation,
		ProtocolType: derefOr(req.ProtocolType, ""), Protocol: derefOr(req.Protocol, ""),
	}
	if len(req.GroupAssignment) > 0 {
		sr.Assignments = make(map[string][]byte, len(req.GroupAssignment))
		for _, a := range req.GroupAssignment {
			sr.Assignments[a.MemberID] = a.MemberAssignment
		}
	}
	ch := groups.Sync(req.Group, sr)
	rc.release()
	select {
	case res := <-ch:
		return fill(res)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
