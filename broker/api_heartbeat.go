package broker

// Heartbeat (key 12): v0-v4, as Kafka 4.2.
//
// Behaviour: keeps a member's session alive. REBALANCE_IN_PROGRESS tells a
// member of the current generation to rejoin; ILLEGAL_GENERATION and
// UNKNOWN_MEMBER_ID tell it it is out; FENCED_INSTANCE_ID that another
// process took its group.instance.id.
//
// Version notes: v3 InstanceID; v4 flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 12, advertisedMin: 0, min: 0, max: 4, handle: handleHeartbeat})
}

func handleHeartbeat(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	groups := groupsOf(rc)
	switch {
	case !rc.authorize(opRead, resGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	case groups == nil:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
	default:
		resp.ErrorCode = errorCode(groups.Heartbeat(ctx, req.Group, req.MemberID, derefOr(req.InstanceID, ""), req.Generation))
	}
	return resp, nil
}
