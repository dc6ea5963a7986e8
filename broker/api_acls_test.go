package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func aclAdmin(t *testing.T, auth *metadata.Authorizer) (*kadm.Client, *kgo.Client, context.Context) {
	t.Helper()
	node := startTwin(t, imageOf(t, &metadata.ClusterID{ID: "c1"}), nil)
	_, addr := startServer(t, defaultAPIs, Options{Authorizer: auth, Deps: Deps{Metadata: node, ACLs: node.Client()}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(testDeadline))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*testDeadline)
	t.Cleanup(cancel)
	return kadm.NewClient(cl), cl, ctx
}

// CreateAcls, DescribeAcls (with a MATCH filter) and DeleteAcls through a
// broker and the controller twin, by a super user.
func TestACLAPIs(t *testing.T) {
	adm, _, ctx := aclAdmin(t, &metadata.Authorizer{SuperUsers: map[string]bool{"User:ANONYMOUS": true}})
	b := kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("orders-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite, kadm.OpRead)
	res, err := adm.CreateACLs(ctx, b)
	if err != nil || len(res) != 2 {
		t.Fatalf("create: %v %+v", err, res)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create: %v %s", r.Err, r.ErrMessage)
		}
	}
	deny := kadm.NewACLs().Deny("User:alice").DenyHosts("127.0.0.1").Topics("orders-eu").Operations(kadm.OpWrite)
	if res, err := adm.CreateACLs(ctx, deny); err != nil || res[0].Err != nil {
		t.Fatalf("create deny: %v %+v", err, res)
	}

	match := kadm.NewACLs().Topics("orders-eu").ResourcePatternType(kadm.ACLPatternMatch).
		Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts()
	desc, err := adm.DescribeACLs(ctx, match)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range desc {
		if d.Err != nil {
			t.Fatalf("describe: %v", d.Err)
		}
		n += len(d.Described)
	}
	if n != 3 {
		t.Fatalf("MATCH orders-eu described %d ACLs, want 3: %+v", n, desc)
	}

	del, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for _, d := range del {
		if d.Err != nil {
			t.Fatalf("delete: %v", d.Err)
		}
		n += len(d.Deleted)
	}
	if n != 3 {
		t.Fatalf("deleted %d, want 3", n)
	}
}

// Without an authorizer the ACL APIs are SECURITY_DISABLED; a principal
// without ALTER / DESCRIBE on the cluster gets CLUSTER_AUTHORIZATION_FAILED.
func TestACLAPIsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		auth *metadata.Authorizer
		want error
	}{
		{"no authorizer", nil, kerr.SecurityDisabled},
		{"not authorized", &metadata.Authorizer{}, kerr.ClusterAuthorizationFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			adm, cl, ctx := aclAdmin(t, c.auth)
			res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t").Operations(kadm.OpRead))
			if err != nil || len(res) != 1 || !errors.Is(res[0].Err, c.want) {
				t.Fatalf("create: %v %+v", err, res)
			}
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			dresp, err := req.RequestWith(ctx, cl)
			if err != nil || dresp.ErrorCode != c.want.(*kerr.Error).Code {
				t.Fatalf("describe: %v %+v", err, dresp)
			}
			dl := kmsg.NewPtrDeleteACLsRequest()
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			dl.Filters = append(dl.Filters, f)
			delResp, err := dl.RequestWith(ctx, cl)
			if err != nil || len(delResp.Results) != 1 || delResp.Results[0].ErrorCode != c.want.(*kerr.Error).Code {
				t.Fatalf("delete: %v %+v", err, delResp)
			}
		})
	}
}

// An UNKNOWN element in a describe filter is INVALID_REQUEST.
func TestDescribeAclsUnknownFilter(t *testing.T) {
	_, cl, ctx := aclAdmin(t, &metadata.Authorizer{SuperUsers: map[string]bool{"User:ANONYMOUS": true}})
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationUnknown, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("%v %+v", err, resp)
	}
}
