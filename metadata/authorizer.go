package metadata

import "strings"

// Authorizer decides with Kafka's StandardAuthorizer semantics over an
// image's ACLs. It is a value of static settings; every decision is a pure
// function of it, the image and the request's principal, host, operation
// and resource.
//
// The rules (StandardAuthorizerData.authorize):
//   - a principal in SuperUsers may do everything;
//   - the bindings that apply to a resource are its LITERAL bindings, the
//     LITERAL "*" bindings of its type, and the PREFIXED bindings whose
//     name is a prefix of the resource name;
//   - of those, a binding matches when its principal is the request's or
//     User:*, its host the request's or *, and its operation the request's
//     or ALL; an ALLOW binding also matches DESCRIBE when it grants READ,
//     WRITE, DELETE or ALTER, and DESCRIBE_CONFIGS when it grants
//     ALTER_CONFIGS (a DENY binding implies nothing);
//   - a matching DENY wins; else a matching ALLOW allows; else, when any
//     binding applies to the resource (whoever it names), the answer is
//     no; when none applies, AllowEveryoneIfNoACL decides
//     (allow.everyone.if.no.acl.found, false by default).
type Authorizer struct {
	// SuperUsers is super.users: principals such as "User:admin".
	SuperUsers map[string]bool
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACL bool
}

// ParseSuperUsers reads super.users: principals separated by ';' (Kafka's
// format, since a principal may hold commas), blanks trimmed.
func ParseSuperUsers(s string) map[string]bool {
	m := map[string]bool{}
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			m[p] = true
		}
	}
	return m
}

// Authorize reports whether principal, connecting from host (an IP address
// as text), may perform op on the resource.
func (a Authorizer) Authorize(img *Image, principal, host string, op ACLOperation, rt ACLResourceType, name string) bool {
	if a.SuperUsers[principal] {
		return true
	}
	ix := img.aclIndex
	if ix == nil {
		return a.AllowEveryoneIfNoACL
	}
	applies, allowed := false, false
	check := func(bs []ACLBinding) bool { // true: a DENY matched
		for _, b := range bs {
			applies = true
			switch aclMatches(b, principal, host, op) {
			case ACLPermissionDeny:
				return true
			case ACLPermissionAllow:
				allowed = true
			}
		}
		return false
	}
	if check(ix.literal[aclResourceKey{rt, name}]) {
		return false
	}
	if name != ACLWildcardResource && check(ix.literal[aclResourceKey{rt, ACLWildcardResource}]) {
		return false
	}
	for _, b := range ix.prefixed[rt] {
		if strings.HasPrefix(name, b.ResourceName) && check([]ACLBinding{b}) {
			return false
		}
	}
	if allowed {
		return true
	}
	if applies {
		return false
	}
	return a.AllowEveryoneIfNoACL
}

// aclMatches is the binding's answer to the request, or
// ACLPermissionUnknown when the binding does not match it.
func aclMatches(b ACLBinding, principal, host string, op ACLOperation) ACLPermission {
	if b.Principal != principal && b.Principal != ACLWildcardPrincipal {
		return ACLPermissionUnknown
	}
	if b.Host != ACLWildcardHost && b.Host != host {
		return ACLPermissionUnknown
	}
	if b.Operation != ACLOpAll && b.Operation != op {
		if b.Permission != ACLPermissionAllow || !implies(b.Operation, op) {
			return ACLPermissionUnknown
		}
	}
	return b.Permission
}

// implies reports whether an ALLOW of granted also allows op.
func implies(granted, op ACLOperation) bool {
	switch op {
	case ACLOpDescribe:
		return granted == ACLOpRead || granted == ACLOpWrite || granted == ACLOpDelete || granted == ACLOpAlter
	case ACLOpDescribeConfigs:
		return granted == ACLOpAlterConfigs
	}
	return false
}

// AuthorizeByResourceType reports whether principal may perform op on at
// least one resource of the type, as Kafka's Authorizer.authorizeByResourceType
// (what InitProducerId asks for an idempotent producer: WRITE on any
// topic): a super user, or whatever Authorize allows on a name no binding
// names, or an ALLOW binding (exact operation or ALL, no implication) whose
// pattern no DENY covers: a LITERAL "*" DENY covers all, a LITERAL DENY its
// name, a PREFIXED DENY every name and prefix it is a prefix of.
func (a Authorizer) AuthorizeByResourceType(img *Image, principal, host string, op ACLOperation, rt ACLResourceType) bool {
	if a.Authorize(img, principal, host, op, rt, "hardcode") {
		return true
	}
	var allowLit, allowPre, denyLit, denyPre []string
	for _, b := range img.acls {
		if b.ResourceType != rt || (b.Host != host && b.Host != ACLWildcardHost) ||
			(b.Principal != principal && b.Principal != ACLWildcardPrincipal) ||
			(b.Operation != op && b.Operation != ACLOpAll) {
			continue
		}
		lit := b.PatternType == ACLPatternLiteral
		switch {
		case b.Permission == ACLPermissionDeny && lit:
			denyLit = append(denyLit, b.ResourceName)
		case b.Permission == ACLPermissionDeny:
			denyPre = append(denyPre, b.ResourceName)
		case lit:
			allowLit = append(allowLit, b.ResourceName)
		default:
			allowPre = append(allowPre, b.ResourceName)
		}
	}
	for _, d := range denyLit {
		if d == ACLWildcardResource {
			return false
		}
	}
	prefixDenied := func(name string) bool {
		for _, d := range denyPre {
			if strings.HasPrefix(name, d) {
				return true
			}
		}
		return false
	}
	for _, n := range allowLit {
		if n == ACLWildcardResource {
			return true
		}
		denied := prefixDenied(n)
		for _, d := range denyLit {
			denied = denied || d == n
		}
		if !denied {
			return true
		}
	}
	for _, n := range allowPre {
		if !prefixDenied(n) {
			return true
		}
	}
	return false
}

// ACLOperationsOf is the operations Kafka defines for a resource type
// (AclEntry.supportedOperations), what a KIP-430 authorized-operations set
// is made of.
func ACLOperationsOf(rt ACLResourceType) []ACLOperation {
	switch rt {
	case ACLResourceTopic:
		return []ACLOperation{ACLOpRead, ACLOpWrite, ACLOpCreate, ACLOpDescribe, ACLOpDelete, ACLOpAlter, ACLOpDescribeConfigs, ACLOpAlterConfigs}
	case ACLResourceGroup:
		return []ACLOperation{ACLOpRead, ACLOpDescribe, ACLOpDelete}
	case ACLResourceCluster:
		return []ACLOperation{ACLOpCreate, ACLOpClusterAction, ACLOpDescribeConfigs, ACLOpAlterConfigs, ACLOpIdempotentWrite, ACLOpAlter, ACLOpDescribe}
	case ACLResourceTransactionalID:
		return []ACLOperation{ACLOpDescribe, ACLOpWrite, ACLOpTwoPhaseCommit}
	case ACLResourceDelegationToken:
		return []ACLOperation{ACLOpDescribe}
	case ACLResourceUser:
		return []ACLOperation{ACLOpCreateTokens, ACLOpDescribeTokens}
	}
	return nil
}

// AuthorizedOperations is the KIP-430 set (bit 1<<op per allowed
// operation) of what principal may do on the resource.
func (a Authorizer) AuthorizedOperations(img *Image, principal, host string, rt ACLResourceType, name string) int32 {
	var set int32
	for _, op := range ACLOperationsOf(rt) {
		if a.Authorize(img, principal, host, op, rt, name) {
			set |= 1 << op
		}
	}
	return set
}
