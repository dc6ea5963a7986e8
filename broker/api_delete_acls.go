package broker

// DeleteAcls (key 31) v1-v3, as Kafka 4.1 serves them (v0 went in Kafka
// 4.0, KIP-896). Forwarded to the active controller (raftfsm's
// controller_acls.go: a filter with an UNKNOWN field is INVALID_REQUEST,
// each filter lists and removes the bindings it matches, MATCH as Kafka's
// ResourcePatternFilter), answered once this broker's image has the
// change. ALTER on the CLUSTER is needed (CLUSTER_AUTHORIZATION_FAILED on
// every result); no authorizer is SECURITY_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           31,
		advertisedMin: 1, min: 1, max: 3,
		concurrent: false,
		handle:     handleDeleteAcls,
	})
}

func handleDeleteAcls(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteACLsRequest)
	srv := rc.conn.srv
	failAll := func(code int16, msg *string) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
		for range req.Filters {
			r := kmsg.NewDeleteACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, msg
			resp.Results = append(resp.Results, r)
		}
		return resp
	}
	return forwardACLChange(ctx, rc, len(req.Filters), failAll, func(ctx context.Context) (kmsg.Response, error) {
		cresp, err := srv.deps.ACLs.DeleteACLs(ctx, req)
		if err == nil {
			clearTags(&cresp.UnknownTags)
		}
		return cresp, err
	})
}
