package raftfsm

import (
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateAcls and DeleteAcls, decided as Kafka's AclControlManager does:
// each creation is validated on its own (metadata.ValidateNewACL, answered
// INVALID_REQUEST), a binding that already exists, or that an earlier
// creation of the same request adds, succeeds without a record, and a new
// one gets a fresh id. Each delete filter must have no UNKNOWN field
// (INVALID_REQUEST) and removes every binding it matches; a binding two
// filters match is reported by both and removed once.

func aclBindingOfCreation(c kmsg.CreateACLsRequestCreation) metadata.ACLBinding {
	return metadata.ACLBinding{
		ResourceType: metadata.ACLResourceType(c.ResourceType), ResourceName: c.ResourceName,
		PatternType: metadata.ACLPatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
		Operation: metadata.ACLOperation(c.Operation), Permission: metadata.ACLPermission(c.PermissionType),
	}
}

func decideCreateAcls(req *kmsg.CreateACLsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
		var recs []metadata.Record
		added := map[metadata.ACLBinding]bool{}
		for _, cr := range req.Creations {
			r := kmsg.NewCreateACLsResponseResult()
			b := aclBindingOfCreation(cr)
			if err := metadata.ValidateNewACL(b); err != nil {
				r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, errMsg(err)
			} else if _, exists := img.FindACL(b); !exists && !added[b] {
				added[b] = true
				recs = append(recs, &metadata.AccessControlEntry{ID: newTopicID(), ACLBinding: b})
			}
			resp.Results = append(resp.Results, r)
		}
		return decision{recs: recs, resp: resp}
	}
}

// ACLFilterOfDelete reads a DeleteAcls filter.
func ACLFilterOfDelete(f kmsg.DeleteACLsRequestFilter) metadata.ACLFilter {
	return metadata.ACLFilter{
		ResourceType: metadata.ACLResourceType(f.ResourceType), ResourceName: f.ResourceName,
		PatternType: metadata.ACLPatternType(f.ResourcePatternType), Principal: f.Principal, Host: f.Host,
		Operation: metadata.ACLOperation(f.Operation), Permission: metadata.ACLPermission(f.PermissionType),
	}
}

func decideDeleteAcls(req *kmsg.DeleteACLsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
		var recs []metadata.Record
		removed := map[[16]byte]bool{}
		for _, kf := range req.Filters {
			r := kmsg.NewDeleteACLsResponseResult()
			f := ACLFilterOfDelete(kf)
			if f.Unknown() {
				r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("the filter has an UNKNOWN element")
				resp.Results = append(resp.Results, r)
				continue
			}
			for _, a := range img.ACLs(f) {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName = kmsg.ACLResourceType(a.ResourceType), a.ResourceName
				m.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
				m.Principal, m.Host = a.Principal, a.Host
				m.Operation, m.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
				r.MatchingACLs = append(r.MatchingACLs, m)
				if !removed[a.ID] {
					removed[a.ID] = true
					recs = append(recs, &metadata.RemoveAccessControlEntry{ID: a.ID})
				}
			}
			resp.Results = append(resp.Results, r)
		}
		return decision{recs: recs, resp: resp}
	}
}
