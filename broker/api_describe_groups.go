package broker

// DescribeGroups (key 15): v0-v6, as Kafka 4.2.
//
// Behaviour: a group loaded on this coordinator shows its live state and
// members (protocol, member metadata and assignments only when Stable, as
// Kafka); a group known only from the image (committed offsets or a
// recorded generation, e.g. after the coordinator moved) is Empty with its
// protocol type. A group nobody knows is Dead with no error below v6 and
// GROUP_ID_NOT_FOUND from v6 (KIP-1043). So is a consumer-protocol group,
// classic members (the upgrade path) or not, as Kafka 4.1's
// GroupMetadataManager.describeGroups: its text then says the group is
// not a classic group. Admin clients (Java's DescribeConsumerGroupsHandler,
// librdkafka, kadm) describe such a group with ConsumerGroupDescribe first,
// which shows classic members with MemberType 0.
//
// Version notes: v1 throttle; v3 authorized operations (all of READ,
// DESCRIBE, DELETE when asked: no authorizer); v4 member instance ids; v5
// flexible; v6 error message and GROUP_ID_NOT_FOUND.

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 15, advertisedMin: 0, min: 0, max: 6, concurrent: true, handle: handleDescribeGroups})
}

func handleDescribeGroups(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.Groups = make([]kmsg.DescribeGroupsResponseGroup, len(req.Groups))
	var wg sync.WaitGroup
	for i, id := range req.Groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp.Groups[i] = describeGroup(ctx, rc, req, id)
		}()
	}
	wg.Wait()
	return resp, nil
}

func describeGroup(ctx context.Context, rc *request, req *kmsg.DescribeGroupsRequest, id string) kmsg.DescribeGroupsResponseGroup {
	g := kmsg.NewDescribeGroupsResponseGroup()
	g.Group = id
	g.AuthorizedOperations = authorizedOpsUnset
	if req.Version >= 3 && req.IncludeAuthorizedOperations {
		g.AuthorizedOperations = rc.authorizedOps(resGroup, id)
	}
	groups := groupsOf(rc)
	switch {
	case !rc.authorize(opDescribe, resGroup, id):
		g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		g.AuthorizedOperations = authorizedOpsUnset
		return g
	case groups == nil:
		g.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return g
	case id == "":
		g.ErrorCode = kerr.InvalidGroupID.Code
		return g
	}
	d, err := groups.Describe(ctx, id)
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		g.State = "Dead"
		if req.Version >= 6 {
			g.ErrorCode = kerr.GroupIDNotFound.Code
			// Kafka's texts: GroupMetadataManager.group's and
			// classicGroup's GroupIdNotFoundException.
			msg := "Group " + id + " not found."
			if d.NotClassic {
				msg = "Group " + id + " is not a classic group."
			}
			g.ErrorMessage = kmsg.StringPtr(msg)
		}
		return g
	case err != nil:
		g.ErrorCode = errorCode(err)
		return g
	}
	g.State, g.ProtocolType, g.Protocol = d.State.String(), d.ProtocolType, d.Protocol
	for _, m := range d.Members {
		rm := kmsg.NewDescribeGroupsResponseGroupMember()
		rm.MemberID, rm.ClientID, rm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
		if m.InstanceID != "" {
			rm.InstanceID = kmsg.StringPtr(m.InstanceID)
		}
		rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
		if rm.ProtocolMetadata == nil {
			rm.ProtocolMetadata = []byte{}
		}
		if rm.MemberAssignment == nil {
			rm.MemberAssignment = []byte{}
		}
		g.Members = append(g.Members, rm)
	}
	return g
}
