package broker

// LeaveGroup (key 13): v0-v5, as Kafka 4.2.
//
// Behaviour: removes members at once (no wait for their sessions to
// expire) and rebalances the rest.
//
// Version notes: v0-v2 one MemberID, answered in the top-level error;
// v3+ a batch of members (static members may leave by group.instance.id
// alone), answered per member, the top-level error only for the group
// (NOT_COORDINATOR and the like); v4 flexible; v5 Reason (ignored).

import (
	"context"

	"github.com/raftka/raftka/broker/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 13, advertisedMin: 0, min: 0, max: 5, handle: handleLeaveGroup})
}

func handleLeaveGroup(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	var members []group.LeaveMember
	if req.Version < 3 {
		members = []group.LeaveMember{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			members = append(members, group.LeaveMember{MemberID: m.MemberID, InstanceID: derefOr(m.InstanceID, "")})
		}
	}
	groups := groupsOf(rc)
	switch {
	case !rc.authorize(opRead, resGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	case groups == nil:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	errs, err := groups.Leave(ctx, req.Group, members)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	if req.Version < 3 {
		resp.ErrorCode = errorCode(errs[0])
		return resp, nil
	}
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, errorCode(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
