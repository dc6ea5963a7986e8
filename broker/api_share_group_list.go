package broker

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// isShareGroup says whether groupID is a share group here: a group id is
// one kind, so the classic protocol's JoinGroup refuses it with
// INCONSISTENT_GROUP_PROTOCOL, as Kafka's classicGroupJoin does for a group
// of another type, and OffsetCommit, OffsetFetch and OffsetDelete with
// GROUP_ID_NOT_FOUND, as Kafka's ShareGroup.validateOffset* do.
func isShareGroup(rc *request, groupID string) bool {
	sg := shareGroupsOf(rc)
	return sg != nil && sg.IsShareGroup(groupID)
}

// appendShareGroups adds the share groups this broker coordinates to a
// ListGroups answer: protocol type and group type "share", state Empty or
// Stable, under the request's states and types filters (case-insensitive,
// as Kafka) and the same DESCRIBE rule as classic groups.
func appendShareGroups(ctx context.Context, rc *request, req *kmsg.ListGroupsRequest, resp *kmsg.ListGroupsResponse, all bool) {
	sg := shareGroupsOf(rc)
	if sg == nil {
		return
	}
	if len(req.TypesFilter) > 0 {
		wanted := false
		for _, t := range req.TypesFilter {
			wanted = wanted || strings.EqualFold(t, "share")
		}
		if !wanted {
			return
		}
	}
	for _, l := range sg.List(ctx) {
		if len(req.StatesFilter) > 0 {
			match := false
			for _, s := range req.StatesFilter {
				match = match || strings.EqualFold(s, l.State)
			}
			if !match {
				continue
			}
		}
		if !all && !rc.authorize(opDescribe, resGroup, l.Group) {
			continue
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState, g.GroupType = l.Group, "share", l.State, "share"
		resp.Groups = append(resp.Groups, g)
	}
}

// deleteShareGroups deletes the share groups among ids and returns their
// results (nil for a deleted group: present in the map) and the ids that
// are not share groups, for the classic coordinator.
func deleteShareGroups(ctx context.Context, rc *request, ids []string) (map[string]error, []string) {
	results := make(map[string]error, len(ids))
	sg := shareGroupsOf(rc)
	var rest []string
	for _, id := range ids {
		if id != "" && sg != nil && sg.IsShareGroup(id) {
			results[id] = sg.Delete(ctx, id)
			continue
		}
		rest = append(rest, id)
	}
	return results, rest
}
