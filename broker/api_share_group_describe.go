package broker

// ShareGroupDescribe (key 77): v1, as Kafka 4.2.
//
// Behaviour: each group id is answered on its own: DESCRIBE on the group
// (GROUP_AUTHORIZATION_FAILED), NOT_COORDINATOR when another broker
// coordinates it, GROUP_ID_NOT_FOUND when it is not a share group here.
// As KafkaApis, a group that mentions a topic (a subscription or an
// assignment) the principal may not DESCRIBE is answered
// TOPIC_AUTHORIZATION_FAILED without its members. The KIP-430 set is
// filled when asked for.
//
// Version notes: v1 flexible.

import (
	"context"
	"errors"

	"github.com/raftka/raftka/broker/group/sharegroup"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 77, advertisedMin: 1, min: 1, max: 1, handle: handleShareGroupDescribe})
}

func handleShareGroupDescribe(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	sg := shareGroupsOf(rc)
	img, _ := rc.conn.srv.deps.Metadata.Current()
	disabled := shareGroupsDisabled(rc)
	for _, id := range req.GroupIDs {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = id
		g.AuthorizedOperations = authorizedOpsUnset
		if disabled != nil {
			g.ErrorCode = disabled.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if !rc.authorize(opDescribe, resGroup, id) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if sg == nil {
			g.ErrorCode = kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		snap, err := sg.Describe(ctx, id)
		if err != nil {
			var ke *kerr.Error
			if !errors.As(err, &ke) {
				ke = kerr.UnknownServerError
			}
			g.ErrorCode = ke.Code
			if errors.Is(err, kerr.GroupIDNotFound) {
				msg := "Group " + id + " not found."
				g.ErrorMessage = &msg
			}
			resp.Groups = append(resp.Groups, g)
			continue
		}
		described, topics := sharegroup.Described(snap, img)
		for _, t := range topics {
			if !rc.authorize(opDescribe, resTopic, t) {
				msg := "The group has described topic(s) that the client is not authorized to describe."
				described.ErrorCode, described.ErrorMessage, described.Members = kerr.TopicAuthorizationFailed.Code, &msg, []kmsg.ShareGroupDescribeResponseGroupMember{}
				break
			}
		}
		described.AuthorizedOperations = authorizedOpsUnset
		if req.IncludeAuthorizedOperations && described.ErrorCode == 0 {
			described.AuthorizedOperations = rc.authorizedOps(resGroup, id)
		}
		resp.Groups = append(resp.Groups, described)
	}
	return resp, nil
}
