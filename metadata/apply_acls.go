package metadata

import (
	"bytes"
	"cmp"
	"slices"
)

// aclApplier replays ACL bindings. ACLs change rarely, so the map is copied
// on the first change of a batch and the authorizer's index is rebuilt once
// at the end of a batch that changed anything.
type aclApplier struct {
	img     *Image
	owned   bool
	changed bool
}

func (a *aclApplier) own() {
	if !a.owned {
		m := make(map[[16]byte]ACLBinding, len(a.img.acls)+1)
		for k, v := range a.img.acls {
			m[k] = v
		}
		a.img.acls = m
		a.owned = true
	}
}

func (a *aclApplier) add(r *AccessControlEntry) error {
	if err := ValidateNewACL(r.ACLBinding); err != nil {
		return invalid("ACL %v: %v", r.ACLBinding, err)
	}
	if r.ID == ([16]byte{}) {
		return invalid("ACL %v without an id", r.ACLBinding)
	}
	if old, ok := a.img.acls[r.ID]; ok && old != r.ACLBinding {
		return invalid("ACL id %x already names %v", r.ID, old)
	}
	a.own()
	a.img.acls[r.ID] = r.ACLBinding
	a.changed = true
	return nil
}

func (a *aclApplier) remove(r *RemoveAccessControlEntry) error {
	if _, ok := a.img.acls[r.ID]; !ok {
		return invalid("no ACL with id %x", r.ID)
	}
	a.own()
	delete(a.img.acls, r.ID)
	if len(a.img.acls) == 0 {
		a.img.acls = nil
		a.owned = false
	}
	a.changed = true
	return nil
}

// seal rebuilds the authorizer's index of a changed ACL set.
func (a *aclApplier) seal() {
	if a.changed {
		a.img.aclIndex = buildACLIndex(a.img.acls)
	}
}

type aclResourceKey struct {
	typ  ACLResourceType
	name string
}

// aclIndex is the bindings by what the authorizer looks up: LITERAL ones
// by (type, name), the wildcard "*" among them, and PREFIXED ones by type.
type aclIndex struct {
	literal  map[aclResourceKey][]ACLBinding
	prefixed map[ACLResourceType][]ACLBinding
}

func buildACLIndex(acls map[[16]byte]ACLBinding) *aclIndex {
	if len(acls) == 0 {
		return nil
	}
	ix := &aclIndex{literal: map[aclResourceKey][]ACLBinding{}, prefixed: map[ACLResourceType][]ACLBinding{}}
	for _, b := range acls {
		if b.PatternType == ACLPatternPrefixed {
			ix.prefixed[b.ResourceType] = append(ix.prefixed[b.ResourceType], b)
		} else {
			k := aclResourceKey{b.ResourceType, b.ResourceName}
			ix.literal[k] = append(ix.literal[k], b)
		}
	}
	return ix
}

func sortACLs(acls []ACL) {
	slices.SortFunc(acls, func(a, b ACL) int {
		return cmp.Or(compareACLBindings(a.ACLBinding, b.ACLBinding), bytes.Compare(a.ID[:], b.ID[:]))
	})
}

// aclRecords is the image's ACLs as records (snapshots).
func (img *Image) aclRecords() []Record {
	acls := img.ACLs(ACLFilter{ResourceType: ACLResourceAny, PatternType: ACLPatternAny, Operation: ACLOpAny, Permission: ACLPermissionAny})
	recs := make([]Record, 0, len(acls))
	for _, a := range acls {
		recs = append(recs, &AccessControlEntry{ID: a.ID, ACLBinding: a.ACLBinding})
	}
	return recs
}
