package broker

// DescribeAcls (key 29) v1-v3, as Kafka 4.1 serves them (v0 went in Kafka
// 4.0, KIP-896). The broker answers from its metadata image, as Kafka's
// brokers answer from their StandardAuthorizer's copy: DESCRIBE on the
// CLUSTER is needed (CLUSTER_AUTHORIZATION_FAILED), no authorizer is
// SECURITY_DISABLED, a filter with an UNKNOWN field INVALID_REQUEST. The
// bindings come back grouped by resource pattern.

import (
	"context"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           29,
		advertisedMin: 1, min: 1, max: 3,
		concurrent: true,
		handle:     handleDescribeAcls,
	})
}

func handleDescribeAcls(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	f := metadata.ACLFilter{
		ResourceType: metadata.ACLResourceType(req.ResourceType), ResourceName: req.ResourceName,
		PatternType: metadata.ACLPatternType(req.ResourcePatternType), Principal: req.Principal, Host: req.Host,
		Operation: metadata.ACLOperation(req.Operation), Permission: metadata.ACLPermission(req.PermissionType),
	}
	switch {
	case rc.conn.srv.authorizer == nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured.")
		return resp, nil
	case !rc.authorizeCluster(opDescribe):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	case f.Unknown():
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("The filter has an UNKNOWN element.")
		return resp, nil
	}
	resp.Resources = describeACLResources(rc.authImage().ACLs(f))
	return resp, nil
}

// describeACLResources groups sorted bindings by resource pattern.
func describeACLResources(acls []metadata.ACL) []kmsg.DescribeACLsResponseResource {
	var out []kmsg.DescribeACLsResponseResource
	for _, a := range acls {
		n := len(out)
		if n == 0 || out[n-1].ResourceType != kmsg.ACLResourceType(a.ResourceType) || out[n-1].ResourceName != a.ResourceName ||
			out[n-1].ResourcePatternType != kmsg.ACLResourcePatternType(a.PatternType) {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName = kmsg.ACLResourceType(a.ResourceType), a.ResourceName
			r.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
			out = append(out, r)
			n++
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = a.Principal, a.Host
		e.Operation, e.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		out[n-1].ACLs = append(out[n-1].ACLs, e)
	}
	return out
}
