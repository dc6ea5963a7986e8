package broker

// DeleteGroups (key 42): v0-v2, as Kafka 4.2.
//
// Behaviour: a group with members is NON_EMPTY_GROUP; one nobody knows is
// GROUP_ID_NOT_FOUND; otherwise its committed offsets and recorded
// generation are removed through the controller (the groups of one request
// are deleted in parallel, so their commits share a Raft entry).
//
// Version notes: v1 throttle; v2 flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 42, advertisedMin: 0, min: 0, max: 2, handle: handleDeleteGroups})
}

func handleDeleteGroups(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	groups := groupsOf(rc)
	// DELETE on each group (KafkaApis); only the authorized ones reach the
	// coordinator.
	var allowed []string
	at := make([]int, len(req.Groups))
	for i, id := range req.Groups {
		at[i] = -1
		if rc.authorize(opDelete, resGroup, id) {
			at[i] = len(allowed)
			allowed = append(allowed, id)
		}
	}
	var errs []error
	if groups != nil && len(allowed) > 0 {
		errs = groups.Delete(ctx, allowed)
	}
	for i, id := range req.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = id
		switch {
		case at[i] < 0:
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case groups == nil:
			g.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case id == "":
			g.ErrorCode = kerr.InvalidGroupID.Code
		default:
			g.ErrorCode = errorCode(errs[at[i]])
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
