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
	var errs []error
	if groups != nil {
		errs = groups.Delete(ctx, req.Groups)
	}
	for i, id := range req.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = id
		switch {
		case groups == nil:
			g.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case id == "":
			g.ErrorCode = kerr.InvalidGroupID.Code
		default:
			g.ErrorCode = errorCode(errs[i])
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
