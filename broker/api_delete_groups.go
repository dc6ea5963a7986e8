package broker

// DeleteGroups (key 42): v0-v2, as Kafka 4.2.
//
// Behaviour: a group with members is NON_EMPTY_GROUP; one nobody knows is
// GROUP_ID_NOT_FOUND; otherwise its committed offsets and recorded
// generation are removed through the controller (the groups of one request
// are deleted in parallel, so their commits share a Raft entry). A share
// group is deleted by the share group coordinator: NON_EMPTY_GROUP while it
// has members.
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
	// DELETE on each group (KafkaApis); only the authorized ones reach a
	// coordinator: the share groups theirs (api_share_group_list.go), the
	// others the classic one.
	denied := make(map[string]bool)
	var allowed []string
	for _, id := range req.Groups {
		if rc.authorize(opDelete, resGroup, id) {
			allowed = append(allowed, id)
		} else {
			denied[id] = true
		}
	}
	results, classic := deleteShareGroups(ctx, rc, allowed)
	if groups != nil && len(classic) > 0 {
		for i, err := range groups.Delete(ctx, classic) {
			results[classic[i]] = err
		}
	}
	for _, id := range req.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = id
		result, answered := results[id]
		switch {
		case denied[id]:
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case !answered && groups == nil:
			g.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case id == "":
			g.ErrorCode = kerr.InvalidGroupID.Code
		default:
			g.ErrorCode = errorCode(result)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
