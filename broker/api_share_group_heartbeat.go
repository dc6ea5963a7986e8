package broker

// ShareGroupHeartbeat (key 76): v1, as Kafka 4.2 (v0 was the early-access
// version, never served by a 4.2 broker).
//
// Behaviour: a share group member joins (epoch 0), heartbeats and leaves
// (epoch -1); the coordinator answers its member epoch and, on a join or
// when its partitions changed, its assignment from the `simple` assignor
// (broker/group/sharegroup says what each error means). Authorization as
// KafkaApis: READ on the group (GROUP_AUTHORIZATION_FAILED), then DESCRIBE
// on every subscribed topic the request names (TOPIC_AUTHORIZATION_FAILED).
// Share groups share the group coordinator slots with classic groups, so
// FindCoordinator (key type GROUP) finds a share group's coordinator.
//
// Version notes: v1 flexible, client-generated member ids (KIP-1082).

import (
	"context"

	"github.com/raftka/raftka/broker/group/sharegroup"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupCoordinator is what the share group APIs need;
// *sharegroup.Coordinator satisfies it.
type ShareGroupCoordinator interface {
	Heartbeat(ctx context.Context, groupID string, r sharegroup.HeartbeatRequest) sharegroup.HeartbeatResult
	Describe(ctx context.Context, groupID string) (sharegroup.Snapshot, error)
	List(ctx context.Context) []sharegroup.Listing
	IsShareGroup(groupID string) bool
	Delete(ctx context.Context, groupID string) error
}

var _ ShareGroupCoordinator = (*sharegroup.Coordinator)(nil)

func init() {
	register(apiEntry{key: 76, advertisedMin: 1, min: 1, max: 1, handle: handleShareGroupHeartbeat})
}

func shareGroupsOf(rc *request) ShareGroupCoordinator { return rc.conn.srv.deps.ShareGroups }

// shareGroupsDisabled is UNSUPPORTED_VERSION while share.version is not
// finalized at 1 or more: Kafka's KafkaApis answers every share group API
// so (before authorizing) while share groups are not enabled. The APIs
// stay advertised, as Kafka's ApiVersions lists them.
func shareGroupsDisabled(rc *request) *kerr.Error {
	if l, _ := rc.conn.srv.image().Feature(metadata.ShareVersionFeature); l >= 1 {
		return nil
	}
	return kerr.UnsupportedVersion
}

func handleShareGroupHeartbeat(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	sg := shareGroupsOf(rc)
	if e := shareGroupsDisabled(rc); e != nil {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	switch {
	case !rc.authorize(opRead, resGroup, req.GroupID):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	case sg == nil:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	for _, t := range req.SubscribedTopicNames {
		if !rc.authorize(opDescribe, resTopic, t) {
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			return resp, nil
		}
	}
	sharegroup.FillResponse(resp, sg.Heartbeat(ctx, req.GroupID, sharegroup.FromRequest(req, rc.clientID, clientHost(rc))))
	return resp, nil
}
