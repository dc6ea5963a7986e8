package metadata

import (
	"cmp"
	"fmt"
	"strings"
)

// ACL bindings as Kafka's KRaft keeps them (AccessControlEntryRecord,
// RemoveAccessControlEntryRecord): each binding has a UUID the controller
// assigns, a resource pattern and an entry. The numeric codes are Kafka's
// (ResourceType, PatternType, AclOperation, AclPermissionType), so the
// broker copies them to and from the wire unchanged.

// ACLResourceType is Kafka's ResourceType code.
type ACLResourceType int8

const (
	ACLResourceUnknown         ACLResourceType = 0
	ACLResourceAny             ACLResourceType = 1
	ACLResourceTopic           ACLResourceType = 2
	ACLResourceGroup           ACLResourceType = 3
	ACLResourceCluster         ACLResourceType = 4
	ACLResourceTransactionalID ACLResourceType = 5
	ACLResourceDelegationToken ACLResourceType = 6
	ACLResourceUser            ACLResourceType = 7
)

// ACLPatternType is Kafka's PatternType code.
type ACLPatternType int8

const (
	ACLPatternUnknown  ACLPatternType = 0
	ACLPatternAny      ACLPatternType = 1
	ACLPatternMatch    ACLPatternType = 2
	ACLPatternLiteral  ACLPatternType = 3
	ACLPatternPrefixed ACLPatternType = 4
)

// ACLOperation is Kafka's AclOperation code.
type ACLOperation int8

const (
	ACLOpUnknown         ACLOperation = 0
	ACLOpAny             ACLOperation = 1
	ACLOpAll             ACLOperation = 2
	ACLOpRead            ACLOperation = 3
	ACLOpWrite           ACLOperation = 4
	ACLOpCreate          ACLOperation = 5
	ACLOpDelete          ACLOperation = 6
	ACLOpAlter           ACLOperation = 7
	ACLOpDescribe        ACLOperation = 8
	ACLOpClusterAction   ACLOperation = 9
	ACLOpDescribeConfigs ACLOperation = 10
	ACLOpAlterConfigs    ACLOperation = 11
	ACLOpIdempotentWrite ACLOperation = 12
	ACLOpCreateTokens    ACLOperation = 13
	ACLOpDescribeTokens  ACLOperation = 14
	ACLOpTwoPhaseCommit  ACLOperation = 15
)

// ACLPermission is Kafka's AclPermissionType code.
type ACLPermission int8

const (
	ACLPermissionUnknown ACLPermission = 0
	ACLPermissionAny     ACLPermission = 1
	ACLPermissionDeny    ACLPermission = 2
	ACLPermissionAllow   ACLPermission = 3
)

// Kafka's wildcards: a LITERAL resource name "*" matches every resource of
// its type, principal "User:*" every principal, host "*" every host.
const (
	ACLWildcardResource  = "*"
	ACLWildcardPrincipal = "User:*"
	ACLWildcardHost      = "*"
	// ClusterResourceName is the one name of the CLUSTER resource.
	ClusterResourceName = "kafka-cluster"
)

var aclResourceNames = map[ACLResourceType]string{
	ACLResourceUnknown: "UNKNOWN", ACLResourceAny: "ANY", ACLResourceTopic: "TOPIC", ACLResourceGroup: "GROUP",
	ACLResourceCluster: "CLUSTER", ACLResourceTransactionalID: "TRANSACTIONAL_ID",
	ACLResourceDelegationToken: "DELEGATION_TOKEN", ACLResourceUser: "USER",
}

var aclPatternNames = map[ACLPatternType]string{
	ACLPatternUnknown: "UNKNOWN", ACLPatternAny: "ANY", ACLPatternMatch: "MATCH",
	ACLPatternLiteral: "LITERAL", ACLPatternPrefixed: "PREFIXED",
}

var aclOperationNames = map[ACLOperation]string{
	ACLOpUnknown: "UNKNOWN", ACLOpAny: "ANY", ACLOpAll: "ALL", ACLOpRead: "READ", ACLOpWrite: "WRITE",
	ACLOpCreate: "CREATE", ACLOpDelete: "DELETE", ACLOpAlter: "ALTER", ACLOpDescribe: "DESCRIBE",
	ACLOpClusterAction: "CLUSTER_ACTION", ACLOpDescribeConfigs: "DESCRIBE_CONFIGS",
	ACLOpAlterConfigs: "ALTER_CONFIGS", ACLOpIdempotentWrite: "IDEMPOTENT_WRITE",
	ACLOpCreateTokens: "CREATE_TOKENS", ACLOpDescribeTokens: "DESCRIBE_TOKENS", ACLOpTwoPhaseCommit: "TWO_PHASE_COMMIT",
}

var aclPermissionNames = map[ACLPermission]string{
	ACLPermissionUnknown: "UNKNOWN", ACLPermissionAny: "ANY", ACLPermissionDeny: "DENY", ACLPermissionAllow: "ALLOW",
}

func enumString[T ~int8](names map[T]string, v T) string {
	if s, ok := names[v]; ok {
		return s
	}
	return fmt.Sprintf("UNKNOWN(%d)", int8(v))
}

func enumParse[T ~int8](names map[T]string, s string) (T, bool) {
	s = strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", "_"))
	for v, n := range names {
		if n == s && n != "UNKNOWN" {
			return v, true
		}
	}
	return 0, false
}

func (t ACLResourceType) String() string { return enumString(aclResourceNames, t) }
func (t ACLPatternType) String() string  { return enumString(aclPatternNames, t) }
func (o ACLOperation) String() string    { return enumString(aclOperationNames, o) }
func (p ACLPermission) String() string   { return enumString(aclPermissionNames, p) }

// ParseACLResourceType, ParseACLPatternType, ParseACLOperation and
// ParseACLPermission read Kafka's names (any case, '-' for '_').
func ParseACLResourceType(s string) (ACLResourceType, bool) { return enumParse(aclResourceNames, s) }
func ParseACLPatternType(s string) (ACLPatternType, bool)   { return enumParse(aclPatternNames, s) }
func ParseACLOperation(s string) (ACLOperation, bool)       { return enumParse(aclOperationNames, s) }
func ParseACLPermission(s string) (ACLPermission, bool)     { return enumParse(aclPermissionNames, s) }

// ACLBinding is one ACL: a resource pattern and an access control entry.
type ACLBinding struct {
	ResourceType ACLResourceType
	ResourceName string
	PatternType  ACLPatternType
	Principal    string
	Host         string
	Operation    ACLOperation
	Permission   ACLPermission
}

func (b ACLBinding) String() string {
	return fmt.Sprintf("(%v:%v:%s, %s from %s %v %v)", b.ResourceType, b.PatternType, b.ResourceName, b.Principal, b.Host, b.Permission, b.Operation)
}

func compareACLBindings(a, b ACLBinding) int {
	return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), strings.Compare(a.ResourceName, b.ResourceName),
		cmp.Compare(a.PatternType, b.PatternType), strings.Compare(a.Principal, b.Principal),
		strings.Compare(a.Host, b.Host), cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission))
}

// AccessControlEntry adds one ACL binding under its id (Kafka's
// AccessControlEntryRecord).
type AccessControlEntry struct {
	ID [16]byte
	ACLBinding
}

// RemoveAccessControlEntry removes the binding with the id (Kafka's
// RemoveAccessControlEntryRecord).
type RemoveAccessControlEntry struct {
	ID [16]byte
}

// ValidateNewACL checks a binding to be created with Kafka's rules
// (AclControlManager.validateNewAcl and the CLUSTER name check of
// AclApis): a concrete resource type, pattern type, operation and
// permission, a resource name, a principal of the form Type:name, and
// "kafka-cluster" as the only CLUSTER name. Errors wrap ErrInvalidRequest.
func ValidateNewACL(b ACLBinding) error {
	switch {
	case b.ResourceType <= ACLResourceAny || b.ResourceType > ACLResourceUser:
		return fmt.Errorf("%w: invalid resourceType %v", ErrInvalidRequest, b.ResourceType)
	case b.PatternType != ACLPatternLiteral && b.PatternType != ACLPatternPrefixed:
		return fmt.Errorf("%w: invalid patternType %v", ErrInvalidRequest, b.PatternType)
	case b.Operation <= ACLOpAny || b.Operation > ACLOpTwoPhaseCommit:
		return fmt.Errorf("%w: invalid operation %v", ErrInvalidRequest, b.Operation)
	case b.Permission != ACLPermissionAllow && b.Permission != ACLPermissionDeny:
		return fmt.Errorf("%w: invalid permissionType %v", ErrInvalidRequest, b.Permission)
	case b.ResourceName == "":
		return fmt.Errorf("%w: resource name should not be empty", ErrInvalidRequest)
	case b.ResourceType == ACLResourceCluster && b.ResourceName != ClusterResourceName:
		return fmt.Errorf("%w: the only valid name for the CLUSTER resource is %s", ErrInvalidRequest, ClusterResourceName)
	case !strings.Contains(b.Principal, ":"):
		return fmt.Errorf("%w: could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", ErrInvalidRequest, b.Principal)
	case b.Host == "":
		return fmt.Errorf("%w: host should not be empty", ErrInvalidRequest)
	}
	return nil
}

// ACLFilter selects bindings, as Kafka's AclBindingFilter: ANY (or an
// empty string pointer, nil) matches every value of a field; pattern type
// MATCH matches the patterns that would apply to the named resource
// (the literal name, the LITERAL wildcard, and PREFIXED patterns that are
// prefixes of the name).
type ACLFilter struct {
	ResourceType ACLResourceType
	ResourceName *string
	PatternType  ACLPatternType
	Principal    *string
	Host         *string
	Operation    ACLOperation
	Permission   ACLPermission
}

// Unknown reports whether a field of the filter is UNKNOWN (Kafka answers
// such a filter INVALID_REQUEST).
func (f ACLFilter) Unknown() bool {
	return f.ResourceType == ACLResourceUnknown || f.PatternType == ACLPatternUnknown ||
		f.Operation == ACLOpUnknown || f.Permission == ACLPermissionUnknown ||
		f.ResourceType > ACLResourceUser || f.PatternType > ACLPatternPrefixed ||
		f.Operation > ACLOpTwoPhaseCommit || f.Permission > ACLPermissionAllow ||
		f.ResourceType < 0 || f.PatternType < 0 || f.Operation < 0 || f.Permission < 0
}

// Matches reports whether the filter selects the binding.
func (f ACLFilter) Matches(b ACLBinding) bool {
	if f.ResourceType != ACLResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != ACLPatternAny && f.PatternType != ACLPatternMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		if f.PatternType == ACLPatternMatch {
			switch b.PatternType {
			case ACLPatternLiteral:
				if name != b.ResourceName && b.ResourceName != ACLWildcardResource {
					return false
				}
			case ACLPatternPrefixed:
				if !strings.HasPrefix(name, b.ResourceName) {
					return false
				}
			default:
				return false
			}
		} else if name != b.ResourceName {
			return false
		}
	}
	return (f.Principal == nil || *f.Principal == b.Principal) &&
		(f.Host == nil || *f.Host == b.Host) &&
		(f.Operation == ACLOpAny || f.Operation == b.Operation) &&
		(f.Permission == ACLPermissionAny || f.Permission == b.Permission)
}

// ACL is one stored binding with its id.
type ACL struct {
	ID [16]byte
	ACLBinding
}

// ACLs returns every binding the filter selects, in a stable order
// (resource, then entry).
func (img *Image) ACLs(f ACLFilter) []ACL {
	var out []ACL
	for id, b := range img.acls {
		if f.Matches(b) {
			out = append(out, ACL{ID: id, ACLBinding: b})
		}
	}
	sortACLs(out)
	return out
}

// ACLCount is the number of bindings.
func (img *Image) ACLCount() int { return len(img.acls) }

// FindACL returns the id of a binding equal to b, if one exists.
func (img *Image) FindACL(b ACLBinding) ([16]byte, bool) {
	for id, x := range img.acls {
		if x == b {
			return id, true
		}
	}
	return [16]byte{}, false
}
