package broker

// CreateAcls (key 30) v1-v3, as Kafka 4.1 serves them (v0 went in Kafka
// 4.0, KIP-896). Forwarded to the active controller (raftfsm's
// controller_acls.go decides with AclControlManager's rules: INVALID_REQUEST
// per creation that does not validate, existing bindings succeed without
// a record), answered once this broker's image has the change. ALTER on
// the CLUSTER is needed (CLUSTER_AUTHORIZATION_FAILED on every result); no
// authorizer is SECURITY_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACLAdmin forwards CreateAcls and DeleteAcls to the active controller.
// *raftfsm.ControllerClient satisfies it.
type ACLAdmin interface {
	CreateACLs(ctx context.Context, req *kmsg.CreateACLsRequest) (*kmsg.CreateACLsResponse, error)
	DeleteACLs(ctx context.Context, req *kmsg.DeleteACLsRequest) (*kmsg.DeleteACLsResponse, error)
}

func init() {
	register(apiEntry{
		key:           30,
		advertisedMin: 1, min: 1, max: 3,
		concurrent: false, // a request right after must be authorized by the new ACL
		handle:     handleCreateAcls,
	})
}

func handleCreateAcls(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateACLsRequest)
	srv := rc.conn.srv
	failAll := func(code int16, msg *string) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
		for range req.Creations {
			r := kmsg.NewCreateACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, msg
			resp.Results = append(resp.Results, r)
		}
		return resp
	}
	return forwardACLChange(ctx, rc, len(req.Creations), failAll, func(ctx context.Context) (kmsg.Response, error) {
		cresp, err := srv.deps.ACLs.CreateACLs(ctx, req)
		if err == nil {
			clearTags(&cresp.UnknownTags)
		}
		return cresp, err
	})
}

// forwardACLChange is CreateAcls' and DeleteAcls' shared path: both need an
// authorizer and ALTER on the cluster (SECURITY_DISABLED and
// CLUSTER_AUTHORIZATION_FAILED for every entry otherwise, as KafkaApis),
// and go to the controller; n entries of nothing is answered empty.
func forwardACLChange(ctx context.Context, rc *request, n int, failAll func(int16, *string) kmsg.Response, forward func(context.Context) (kmsg.Response, error)) (kmsg.Response, error) {
	srv := rc.conn.srv
	switch {
	case srv.authorizer == nil:
		return failAll(kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured.")), nil
	case !rc.authorizeCluster(opAlter):
		return failAll(kerr.ClusterAuthorizationFailed.Code, nil), nil
	case srv.deps.ACLs == nil:
		return failAll(adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker")), nil
	case n == 0:
		return failAll(0, nil), nil
	}
	cctx, cancel := forwardContext(ctx, 0)
	defer cancel()
	resp, err := forward(cctx)
	if err != nil {
		return failAll(forwardFailure(err)), nil
	}
	return resp, nil
}
