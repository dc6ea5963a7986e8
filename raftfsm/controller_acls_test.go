package raftfsm

import (
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func creation(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pt
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, perm
	return c
}

func applyDecision(t *testing.T, img *metadata.Image, d decision) *metadata.Image {
	t.Helper()
	next, delta := img.Apply(d.recs)
	if len(delta.Skipped) != 0 {
		t.Fatalf("skipped %+v", delta.Skipped)
	}
	return next
}

func TestDecideCreateAndDeleteAcls(t *testing.T) {
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = []kmsg.CreateACLsRequestCreation{
		creation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow),
		creation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow), // duplicate
		creation(kmsg.ACLResourceTypeTopic, "p-", kmsg.ACLResourcePatternTypePrefixed, "User:bob", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeDeny),
		creation(kmsg.ACLResourceTypeAny, "t", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow),
		creation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeMatch, "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow),
		creation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow),
		creation(kmsg.ACLResourceTypeCluster, "other", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationAlter, kmsg.ACLPermissionTypeAllow),
		creation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAllow),
	}
	d := decideCreateAcls(req)(nil, metadata.NewImage(), time.Now())
	want := []int16{0, 0, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	got := d.resp.(*kmsg.CreateACLsResponse).Results
	if len(got) != len(want) {
		t.Fatalf("%d results", len(got))
	}
	for i := range want {
		if got[i].ErrorCode != want[i] {
			t.Errorf("creation %d: code %d, want %d", i, got[i].ErrorCode, want[i])
		}
	}
	if len(d.recs) != 2 {
		t.Fatalf("%d records, want 2", len(d.recs))
	}
	img := applyDecision(t, metadata.NewImage(), d)
	// Again: both exist, nothing to write.
	if d := decideCreateAcls(req)(nil, img, time.Now()); len(d.recs) != 0 {
		t.Fatalf("re-creating wrote %d records", len(d.recs))
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	match := kmsg.NewDeleteACLsRequestFilter()
	match.ResourceType, match.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeMatch
	match.ResourceName = kmsg.StringPtr("p-1")
	match.Operation, match.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	all := kmsg.NewDeleteACLsRequestFilter()
	all.ResourceType, all.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	all.Operation, all.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	bad := all
	bad.Operation = kmsg.ACLOperationUnknown
	del.Filters = []kmsg.DeleteACLsRequestFilter{match, bad, all}
	d = decideDeleteAcls(del)(nil, img, time.Now())
	res := d.resp.(*kmsg.DeleteACLsResponse).Results
	if len(res) != 3 || len(res[0].MatchingACLs) != 1 || res[0].MatchingACLs[0].ResourceName != "p-" ||
		res[1].ErrorCode != kerr.InvalidRequest.Code || len(res[2].MatchingACLs) != 2 {
		t.Fatalf("results %+v", res)
	}
	if len(d.recs) != 2 {
		t.Fatalf("%d removals, want 2 (one per binding)", len(d.recs))
	}
	if next := applyDecision(t, img, d); next.ACLCount() != 0 {
		t.Fatalf("%d ACLs left", next.ACLCount())
	}
}

// Through the controller RPC, with read-your-writes.
func TestAclsThroughController(t *testing.T) {
	tc := startCluster(t, 1, nil)
	n := tc.nodes[tc.leader(10*time.Second)]
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = append(req.Creations, creation(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow))
	resp, err := n.Client().CreateACLs(ctxT(t, 10*time.Second), req)
	if err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	img, _ := n.Current()
	if img.ACLCount() != 1 {
		t.Fatal("the ACL is not in the image after the call returned")
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeGroup, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	dresp, err := n.Client().DeleteACLs(ctxT(t, 10*time.Second), del)
	if err != nil || len(dresp.Results) != 1 || len(dresp.Results[0].MatchingACLs) != 1 {
		t.Fatalf("delete: %v %+v", err, dresp)
	}
	if img, _ := n.Current(); img.ACLCount() != 0 {
		t.Fatal("the ACL is still in the image")
	}
}
