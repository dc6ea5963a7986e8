package broker

// ListGroups (key 16): v0-v5, as Kafka 4.2.
//
// Behaviour: the groups this broker coordinates (admin clients ask every
// broker and merge): those loaded with their live state, and those only the
// image knows (committed offsets or a recorded generation) as Empty, then
// the share groups (api_share_group_list.go) with type "share".
// Classic groups show their classic state; KIP-848 consumer groups
// protocol type "consumer", type "consumer" and their state (Empty,
// Assigning, Reconciling, Stable).
//
// Version notes: v1 throttle; v3 flexible; v4 GroupState and the states
// filter (case-insensitive, as Kafka); v5 GroupType ("classic" or
// "consumer") and the types filter (case-insensitive, KIP-1043).

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 16, advertisedMin: 0, min: 0, max: 5, concurrent: true, handle: handleListGroups})
}

func handleListGroups(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	groups := groupsOf(rc)
	if groups == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	list, err := groups.List(ctx)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	// A state or type Kafka does not have matches no group.
	states := make(map[string]bool)
	for _, s := range req.StatesFilter {
		states[strings.ToLower(s)] = true
	}
	types := make(map[string]bool)
	for _, t := range req.TypesFilter {
		types[strings.ToLower(t)] = true
	}
	resp.Groups = []kmsg.ListGroupsResponseGroup{}
	// DESCRIBE on the cluster lists every group; otherwise only the groups
	// the principal may DESCRIBE (KafkaApis).
	all := rc.authorizeCluster(opDescribe)
	for _, l := range list {
		typ, state := l.Type, l.StateName
		if typ == "" {
			typ, state = "classic", l.State.String()
		}
		if (len(states) > 0 && !states[strings.ToLower(state)]) || (len(types) > 0 && !types[typ]) {
			continue
		}
		if !all && !rc.authorize(opDescribe, resGroup, l.Group) {
			continue
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState, g.GroupType = l.Group, l.ProtocolType, state, typ
		resp.Groups = append(resp.Groups, g)
	}
	appendShareGroups(ctx, rc, req, resp, all)
	return resp, nil
}
