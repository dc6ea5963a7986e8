package metadata

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func acl(rt ACLResourceType, name string, pt ACLPatternType, principal, host string, op ACLOperation, perm ACLPermission) ACLBinding {
	return ACLBinding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func imageWithACLs(t interface{ Fatalf(string, ...any) }, bs ...ACLBinding) *Image {
	recs := make([]Record, len(bs))
	for i, b := range bs {
		recs[i] = &AccessControlEntry{ID: [16]byte{byte(i + 1), byte((i + 1) >> 8), 0xac}, ACLBinding: b}
	}
	img, d := NewImage().Apply(recs)
	if len(d.Skipped) != 0 {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	return img
}

const (
	alice = "User:alice"
	bob   = "User:bob"
	host1 = "127.0.0.1"
	host2 = "127.0.0.2"
)

func TestAuthorize(t *testing.T) {
	topic, group, cluster := ACLResourceTopic, ACLResourceGroup, ACLResourceCluster
	lit, pre := ACLPatternLiteral, ACLPatternPrefixed
	allow, deny := ACLPermissionAllow, ACLPermissionDeny
	type req struct {
		principal, host string
		op              ACLOperation
		rt              ACLResourceType
		name            string
	}
	cases := []struct {
		name  string
		auth  Authorizer
		acls  []ACLBinding
		req   req
		allow bool
	}{
		{"no ACLs, default deny", Authorizer{}, nil, req{alice, host1, ACLOpRead, topic, "t"}, false},
		{"no ACLs, allow.everyone", Authorizer{AllowEveryoneIfNoACL: true}, nil, req{alice, host1, ACLOpRead, topic, "t"}, true},
		{"super user without ACLs", Authorizer{SuperUsers: map[string]bool{alice: true}}, nil, req{alice, host1, ACLOpAlter, cluster, ClusterResourceName}, true},
		{"super user beats DENY", Authorizer{SuperUsers: map[string]bool{alice: true}},
			[]ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpAll, deny)}, req{alice, host1, ACLOpRead, topic, "t"}, true},
		{"literal allow", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpRead, allow)}, req{alice, host1, ACLOpRead, topic, "t"}, true},
		{"literal allow other op", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpRead, allow)}, req{alice, host1, ACLOpWrite, topic, "t"}, false},
		{"literal allow other topic", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpRead, allow)}, req{alice, host1, ACLOpRead, topic, "t2"}, false},
		{"literal is not a prefix", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpRead, allow)}, req{alice, host1, ACLOpRead, topic, "tt"}, false},
		{"other type", Authorizer{}, []ACLBinding{acl(group, "t", lit, alice, "*", ACLOpRead, allow)}, req{alice, host1, ACLOpRead, topic, "t"}, false},
		{"other type falls to allow.everyone", Authorizer{AllowEveryoneIfNoACL: true}, []ACLBinding{acl(group, "t", lit, alice, "*", ACLOpRead, deny)}, req{alice, host1, ACLOpRead, topic, "t"}, true},
		{"other principal: ACLs exist, so no", Authorizer{AllowEveryoneIfNoACL: true}, []ACLBinding{acl(topic, "t", lit, bob, "*", ACLOpRead, allow)}, req{alice, host1, ACLOpRead, topic, "t"}, false},
		{"wildcard principal", Authorizer{}, []ACLBinding{acl(topic, "t", lit, ACLWildcardPrincipal, "*", ACLOpRead, allow)}, req{alice, host1, ACLOpRead, topic, "t"}, true},
		{"wildcard resource", Authorizer{}, []ACLBinding{acl(topic, "*", lit, alice, "*", ACLOpRead, allow)}, req{alice, host1, ACLOpRead, topic, "anything"}, true},
		{"wildcard resource deny beats literal allow", Authorizer{}, []ACLBinding{
			acl(topic, "t", lit, alice, "*", ACLOpRead, allow), acl(topic, "*", lit, alice, "*", ACLOpRead, deny)}, req{alice, host1, ACLOpRead, topic, "t"}, false},
		{"prefixed allow", Authorizer{}, []ACLBinding{acl(topic, "orders-", pre, alice, "*", ACLOpWrite, allow)}, req{alice, host1, ACLOpWrite, topic, "orders-eu"}, true},
		{"prefixed equal name", Authorizer{}, []ACLBinding{acl(topic, "orders-", pre, alice, "*", ACLOpWrite, allow)}, req{alice, host1, ACLOpWrite, topic, "orders-"}, true},
		{"prefixed not a prefix", Authorizer{}, []ACLBinding{acl(topic, "orders-", pre, alice, "*", ACLOpWrite, allow)}, req{alice, host1, ACLOpWrite, topic, "orders"}, false},
		{"prefixed star is no wildcard", Authorizer{}, []ACLBinding{acl(topic, "*", pre, alice, "*", ACLOpWrite, allow)}, req{alice, host1, ACLOpWrite, topic, "orders"}, false},
		{"prefixed deny beats literal allow", Authorizer{}, []ACLBinding{
			acl(topic, "orders-eu", lit, alice, "*", ACLOpWrite, allow), acl(topic, "orders", pre, alice, "*", ACLOpWrite, deny)}, req{alice, host1, ACLOpWrite, topic, "orders-eu"}, false},
		{"deny beats allow", Authorizer{}, []ACLBinding{
			acl(topic, "t", lit, alice, "*", ACLOpRead, allow), acl(topic, "t", lit, alice, "*", ACLOpRead, deny)}, req{alice, host1, ACLOpRead, topic, "t"}, false},
		{"deny for wildcard principal beats allow", Authorizer{}, []ACLBinding{
			acl(topic, "t", lit, alice, "*", ACLOpRead, allow), acl(topic, "t", lit, ACLWildcardPrincipal, "*", ACLOpRead, deny)}, req{alice, host1, ACLOpRead, topic, "t"}, false},
		{"deny ALL", Authorizer{}, []ACLBinding{
			acl(topic, "t", lit, alice, "*", ACLOpRead, allow), acl(topic, "t", lit, alice, "*", ACLOpAll, deny)}, req{alice, host1, ACLOpRead, topic, "t"}, false},
		{"deny other op does not deny", Authorizer{}, []ACLBinding{
			acl(topic, "t", lit, alice, "*", ACLOpRead, allow), acl(topic, "t", lit, alice, "*", ACLOpWrite, deny)}, req{alice, host1, ACLOpRead, topic, "t"}, true},
		{"deny other host does not deny", Authorizer{}, []ACLBinding{
			acl(topic, "t", lit, alice, "*", ACLOpRead, allow), acl(topic, "t", lit, alice, host2, ACLOpRead, deny)}, req{alice, host1, ACLOpRead, topic, "t"}, true},
		{"deny this host", Authorizer{}, []ACLBinding{
			acl(topic, "t", lit, alice, "*", ACLOpRead, allow), acl(topic, "t", lit, alice, host1, ACLOpRead, deny)}, req{alice, host1, ACLOpRead, topic, "t"}, false},
		{"host allow", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, host1, ACLOpRead, allow)}, req{alice, host1, ACLOpRead, topic, "t"}, true},
		{"host allow other host", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, host1, ACLOpRead, allow)}, req{alice, host2, ACLOpRead, topic, "t"}, false},
		{"ALL allows any op", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpAll, allow)}, req{alice, host1, ACLOpDelete, topic, "t"}, true},
		{"READ implies DESCRIBE", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpRead, allow)}, req{alice, host1, ACLOpDescribe, topic, "t"}, true},
		{"WRITE implies DESCRIBE", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpWrite, allow)}, req{alice, host1, ACLOpDescribe, topic, "t"}, true},
		{"DELETE implies DESCRIBE", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpDelete, allow)}, req{alice, host1, ACLOpDescribe, topic, "t"}, true},
		{"ALTER implies DESCRIBE", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpAlter, allow)}, req{alice, host1, ACLOpDescribe, topic, "t"}, true},
		{"CREATE does not imply DESCRIBE", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpCreate, allow)}, req{alice, host1, ACLOpDescribe, topic, "t"}, false},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpAlterConfigs, allow)}, req{alice, host1, ACLOpDescribeConfigs, topic, "t"}, true},
		{"ALTER_CONFIGS does not imply DESCRIBE", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpAlterConfigs, allow)}, req{alice, host1, ACLOpDescribe, topic, "t"}, false},
		{"DESCRIBE implies nothing else", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpDescribe, allow)}, req{alice, host1, ACLOpRead, topic, "t"}, false},
		{"DENY READ does not deny DESCRIBE", Authorizer{}, []ACLBinding{
			acl(topic, "t", lit, alice, "*", ACLOpWrite, allow), acl(topic, "t", lit, alice, "*", ACLOpRead, deny)}, req{alice, host1, ACLOpDescribe, topic, "t"}, true},
		{"DENY DESCRIBE denies READ's implied DESCRIBE", Authorizer{}, []ACLBinding{
			acl(topic, "t", lit, alice, "*", ACLOpRead, allow), acl(topic, "t", lit, alice, "*", ACLOpDescribe, deny)}, req{alice, host1, ACLOpDescribe, topic, "t"}, false},
		{"cluster action", Authorizer{}, []ACLBinding{acl(cluster, ClusterResourceName, lit, "User:broker", "*", ACLOpClusterAction, allow)}, req{"User:broker", host1, ACLOpClusterAction, cluster, ClusterResourceName}, true},
		{"cluster action for someone else", Authorizer{}, []ACLBinding{acl(cluster, ClusterResourceName, lit, "User:broker", "*", ACLOpClusterAction, allow)}, req{alice, host1, ACLOpClusterAction, cluster, ClusterResourceName}, false},
		{"transactional id", Authorizer{}, []ACLBinding{acl(ACLResourceTransactionalID, "tx-", pre, alice, "*", ACLOpWrite, allow)}, req{alice, host1, ACLOpWrite, ACLResourceTransactionalID, "tx-1"}, true},
		{"delegation token", Authorizer{}, []ACLBinding{acl(ACLResourceDelegationToken, "tok", lit, alice, "*", ACLOpDescribe, allow)}, req{alice, host1, ACLOpDescribe, ACLResourceDelegationToken, "tok"}, true},
		{"user", Authorizer{}, []ACLBinding{acl(ACLResourceUser, "bob", lit, alice, "*", ACLOpCreateTokens, allow)}, req{alice, host1, ACLOpCreateTokens, ACLResourceUser, "bob"}, true},
		{"anonymous", Authorizer{}, []ACLBinding{acl(topic, "t", lit, ACLWildcardPrincipal, "*", ACLOpRead, allow)}, req{"User:ANONYMOUS", host1, ACLOpRead, topic, "t"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img := imageWithACLs(t, c.acls...)
			r := c.req
			if got := c.auth.Authorize(img, r.principal, r.host, r.op, r.rt, r.name); got != c.allow {
				t.Fatalf("Authorize = %v, want %v", got, c.allow)
			}
			if got := referenceAuthorize(c.auth, c.acls, r.principal, r.host, r.op, r.rt, r.name); got != c.allow {
				t.Fatalf("the reference decides %v, the table %v", got, c.allow)
			}
		})
	}
}

// referenceAuthorize is StandardAuthorizer's rule written as directly as
// possible, over a plain list: the index-based Authorize must agree.
func referenceAuthorize(a Authorizer, acls []ACLBinding, principal, host string, op ACLOperation, rt ACLResourceType, name string) bool {
	if a.SuperUsers[principal] {
		return true
	}
	applies, allowed, denied := false, false, false
	for _, b := range acls {
		if b.ResourceType != rt {
			continue
		}
		var resourceMatch bool
		if b.PatternType == ACLPatternLiteral {
			resourceMatch = b.ResourceName == name || b.ResourceName == "*"
		} else {
			resourceMatch = strings.HasPrefix(name, b.ResourceName)
		}
		if !resourceMatch {
			continue
		}
		applies = true
		if b.Principal != principal && b.Principal != "User:*" || b.Host != "*" && b.Host != host {
			continue
		}
		opMatch := b.Operation == ACLOpAll || b.Operation == op
		if !opMatch && b.Permission == ACLPermissionAllow {
			switch op {
			case ACLOpDescribe:
				opMatch = b.Operation == ACLOpRead || b.Operation == ACLOpWrite || b.Operation == ACLOpDelete || b.Operation == ACLOpAlter
			case ACLOpDescribeConfigs:
				opMatch = b.Operation == ACLOpAlterConfigs
			}
		}
		if opMatch {
			denied = denied || b.Permission == ACLPermissionDeny
			allowed = allowed || b.Permission == ACLPermissionAllow
		}
	}
	switch {
	case denied:
		return false
	case allowed:
		return true
	case applies:
		return false
	}
	return a.AllowEveryoneIfNoACL
}

func TestAuthorizePropertyMatchesReference(t *testing.T) {
	names := []string{"a", "ab", "abc", "b", "*"}
	principals := []string{alice, bob, ACLWildcardPrincipal}
	hosts := []string{host1, host2, "*"}
	ops := []ACLOperation{ACLOpAll, ACLOpRead, ACLOpWrite, ACLOpDelete, ACLOpAlter, ACLOpDescribe, ACLOpDescribeConfigs, ACLOpAlterConfigs, ACLOpCreate}
	types := []ACLResourceType{ACLResourceTopic, ACLResourceGroup}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 12).Draw(t, "n")
		var acls []ACLBinding
		seen := map[ACLBinding]bool{}
		for range n {
			b := ACLBinding{
				ResourceType: rapid.SampledFrom(types).Draw(t, "rt"),
				ResourceName: rapid.SampledFrom(names).Draw(t, "name"),
				PatternType:  rapid.SampledFrom([]ACLPatternType{ACLPatternLiteral, ACLPatternPrefixed}).Draw(t, "pt"),
				Principal:    rapid.SampledFrom(principals).Draw(t, "principal"),
				Host:         rapid.SampledFrom(hosts).Draw(t, "host"),
				Operation:    rapid.SampledFrom(ops).Draw(t, "op"),
				Permission:   rapid.SampledFrom([]ACLPermission{ACLPermissionAllow, ACLPermissionDeny}).Draw(t, "perm"),
			}
			if !seen[b] {
				seen[b] = true
				acls = append(acls, b)
			}
		}
		auth := Authorizer{AllowEveryoneIfNoACL: rapid.Bool().Draw(t, "everyone")}
		if rapid.Bool().Draw(t, "super") {
			auth.SuperUsers = map[string]bool{bob: true}
		}
		img := imageWithACLs(t, acls...)
		// The image's records rebuild the same decisions (snapshots).
		again, _ := NewImage().Apply(img.Records())
		for range 20 {
			p := rapid.SampledFrom([]string{alice, bob}).Draw(t, "reqPrincipal")
			h := rapid.SampledFrom([]string{host1, host2}).Draw(t, "reqHost")
			op := rapid.SampledFrom(ops[1:]).Draw(t, "reqOp")
			rt := rapid.SampledFrom(types).Draw(t, "reqType")
			name := rapid.SampledFrom([]string{"a", "ab", "abc", "abd", "b", "c"}).Draw(t, "reqName")
			want := referenceAuthorize(auth, acls, p, h, op, rt, name)
			if got := auth.Authorize(img, p, h, op, rt, name); got != want {
				t.Fatalf("Authorize(%s %s %v %v %s) = %v, reference %v; acls %v", p, h, op, rt, name, got, want, acls)
			}
			if got := auth.Authorize(again, p, h, op, rt, name); got != want {
				t.Fatalf("after snapshot: %v, want %v", got, want)
			}
		}
	})
}

func TestAuthorizeByResourceType(t *testing.T) {
	topic := ACLResourceTopic
	lit, pre := ACLPatternLiteral, ACLPatternPrefixed
	allow, deny := ACLPermissionAllow, ACLPermissionDeny
	cases := []struct {
		name  string
		auth  Authorizer
		acls  []ACLBinding
		allow bool
	}{
		{"nothing", Authorizer{}, nil, false},
		{"nothing, allow.everyone", Authorizer{AllowEveryoneIfNoACL: true}, nil, true},
		{"super user", Authorizer{SuperUsers: map[string]bool{alice: true}}, nil, true},
		{"one literal", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpWrite, allow)}, true},
		{"one prefixed", Authorizer{}, []ACLBinding{acl(topic, "t", pre, alice, "*", ACLOpWrite, allow)}, true},
		{"ALL", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpAll, allow)}, true},
		{"other op", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpRead, allow)}, false},
		{"other principal", Authorizer{}, []ACLBinding{acl(topic, "t", lit, bob, "*", ACLOpWrite, allow)}, false},
		{"other host", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, host2, ACLOpWrite, allow)}, false},
		{"literal denied", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpWrite, allow), acl(topic, "t", lit, alice, "*", ACLOpWrite, deny)}, false},
		{"literal denied by prefix", Authorizer{}, []ACLBinding{acl(topic, "tx", lit, alice, "*", ACLOpWrite, allow), acl(topic, "t", pre, alice, "*", ACLOpWrite, deny)}, false},
		{"prefix denied by shorter prefix", Authorizer{}, []ACLBinding{acl(topic, "tx", pre, alice, "*", ACLOpWrite, allow), acl(topic, "t", pre, alice, "*", ACLOpWrite, deny)}, false},
		{"prefix not denied by longer prefix", Authorizer{}, []ACLBinding{acl(topic, "t", pre, alice, "*", ACLOpWrite, allow), acl(topic, "tx", pre, alice, "*", ACLOpWrite, deny)}, true},
		{"wildcard deny", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpWrite, allow), acl(topic, "*", lit, alice, "*", ACLOpWrite, deny)}, false},
		{"one of two denied", Authorizer{}, []ACLBinding{acl(topic, "t", lit, alice, "*", ACLOpWrite, allow), acl(topic, "u", lit, alice, "*", ACLOpWrite, allow), acl(topic, "t", lit, alice, "*", ACLOpWrite, deny)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img := imageWithACLs(t, c.acls...)
			if got := c.auth.AuthorizeByResourceType(img, alice, host1, ACLOpWrite, topic); got != c.allow {
				t.Fatalf("got %v, want %v", got, c.allow)
			}
		})
	}
}

func TestAuthorizedOperations(t *testing.T) {
	img := imageWithACLs(t, acl(ACLResourceTopic, "t", ACLPatternLiteral, alice, "*", ACLOpRead, ACLPermissionAllow),
		acl(ACLResourceTopic, "t", ACLPatternLiteral, alice, "*", ACLOpAlterConfigs, ACLPermissionAllow))
	got := Authorizer{}.AuthorizedOperations(img, alice, host1, ACLResourceTopic, "t")
	want := int32(1<<ACLOpRead | 1<<ACLOpDescribe | 1<<ACLOpAlterConfigs | 1<<ACLOpDescribeConfigs)
	if got != want {
		t.Fatalf("ops %b, want %b", got, want)
	}
	if got := (Authorizer{AllowEveryoneIfNoACL: true}).AuthorizedOperations(NewImage(), alice, host1, ACLResourceGroup, "g"); got != 1<<ACLOpRead|1<<ACLOpDescribe|1<<ACLOpDelete {
		t.Fatalf("group ops %b", got)
	}
}

func TestParseSuperUsers(t *testing.T) {
	m := ParseSuperUsers(" User:admin ;User:CN=broker,O=x;; ")
	if len(m) != 2 || !m["User:admin"] || !m["User:CN=broker,O=x"] {
		t.Fatalf("%v", m)
	}
}

func TestValidateNewACL(t *testing.T) {
	ok := acl(ACLResourceTopic, "t", ACLPatternLiteral, alice, "*", ACLOpRead, ACLPermissionAllow)
	if err := ValidateNewACL(ok); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*ACLBinding){
		"any resource":     func(b *ACLBinding) { b.ResourceType = ACLResourceAny },
		"unknown resource": func(b *ACLBinding) { b.ResourceType = 99 },
		"match pattern":    func(b *ACLBinding) { b.PatternType = ACLPatternMatch },
		"any pattern":      func(b *ACLBinding) { b.PatternType = ACLPatternAny },
		"any op":           func(b *ACLBinding) { b.Operation = ACLOpAny },
		"unknown op":       func(b *ACLBinding) { b.Operation = ACLOpUnknown },
		"any permission":   func(b *ACLBinding) { b.Permission = ACLPermissionAny },
		"empty name":       func(b *ACLBinding) { b.ResourceName = "" },
		"no colon":         func(b *ACLBinding) { b.Principal = "alice" },
		"empty host":       func(b *ACLBinding) { b.Host = "" },
		"cluster name":     func(b *ACLBinding) { b.ResourceType = ACLResourceCluster },
	} {
		b := ok
		mut(&b)
		if err := ValidateNewACL(b); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestACLFilterMatches(t *testing.T) {
	s := func(v string) *string { return &v }
	b := acl(ACLResourceTopic, "orders-", ACLPatternPrefixed, alice, "*", ACLOpRead, ACLPermissionAllow)
	wild := acl(ACLResourceTopic, "*", ACLPatternLiteral, alice, "*", ACLOpRead, ACLPermissionAllow)
	lit := acl(ACLResourceTopic, "orders-eu", ACLPatternLiteral, alice, "*", ACLOpRead, ACLPermissionAllow)
	all := ACLFilter{ResourceType: ACLResourceAny, PatternType: ACLPatternAny, Operation: ACLOpAny, Permission: ACLPermissionAny}
	with := func(f func(*ACLFilter)) ACLFilter { x := all; f(&x); return x }
	cases := []struct {
		name string
		f    ACLFilter
		b    ACLBinding
		want bool
	}{
		{"all", all, b, true},
		{"type", with(func(f *ACLFilter) { f.ResourceType = ACLResourceGroup }), b, false},
		{"any pattern, exact name", with(func(f *ACLFilter) { f.ResourceName = s("orders-") }), b, true},
		{"any pattern, other name", with(func(f *ACLFilter) { f.ResourceName = s("orders-eu") }), b, false},
		{"literal pattern", with(func(f *ACLFilter) { f.PatternType = ACLPatternLiteral }), b, false},
		{"prefixed pattern", with(func(f *ACLFilter) { f.PatternType = ACLPatternPrefixed }), b, true},
		{"match prefix", with(func(f *ACLFilter) { f.PatternType = ACLPatternMatch; f.ResourceName = s("orders-eu") }), b, true},
		{"match wildcard", with(func(f *ACLFilter) { f.PatternType = ACLPatternMatch; f.ResourceName = s("orders-eu") }), wild, true},
		{"match literal", with(func(f *ACLFilter) { f.PatternType = ACLPatternMatch; f.ResourceName = s("orders-eu") }), lit, true},
		{"match other literal", with(func(f *ACLFilter) { f.PatternType = ACLPatternMatch; f.ResourceName = s("orders-us") }), lit, false},
		{"match not a prefix", with(func(f *ACLFilter) { f.PatternType = ACLPatternMatch; f.ResourceName = s("order") }), b, false},
		{"principal", with(func(f *ACLFilter) { f.Principal = s(bob) }), b, false},
		{"host", with(func(f *ACLFilter) { f.Host = s("*") }), b, true},
		{"op", with(func(f *ACLFilter) { f.Operation = ACLOpWrite }), b, false},
		{"permission", with(func(f *ACLFilter) { f.Permission = ACLPermissionDeny }), b, false},
	}
	for _, c := range cases {
		if got := c.f.Matches(c.b); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if !(ACLFilter{}).Unknown() || all.Unknown() {
		t.Error("Unknown")
	}
}

func TestApplyACLs(t *testing.T) {
	b := acl(ACLResourceTopic, "t", ACLPatternLiteral, alice, "*", ACLOpRead, ACLPermissionAllow)
	id := [16]byte{1}
	img, d := NewImage().Apply([]Record{&AccessControlEntry{ID: id, ACLBinding: b}})
	if !d.ACLsChanged || len(d.Skipped) != 0 || img.ACLCount() != 1 {
		t.Fatalf("delta %+v", d)
	}
	if got, ok := img.FindACL(b); !ok || got != id {
		t.Fatal("FindACL")
	}
	// Invalid bindings, a reused id, removing an unknown id: skipped.
	bad := b
	bad.Operation = ACLOpAny
	other := b
	other.ResourceName = "u"
	next, d := img.Apply([]Record{
		&AccessControlEntry{ID: [16]byte{2}, ACLBinding: bad},
		&AccessControlEntry{ID: id, ACLBinding: other},
		&AccessControlEntry{ACLBinding: other},
		&RemoveAccessControlEntry{ID: [16]byte{7}},
	})
	if len(d.Skipped) != 4 || d.ACLsChanged || !next.Equal(img) {
		t.Fatalf("skipped %d, changed %v", len(d.Skipped), d.ACLsChanged)
	}
	for _, s := range d.Skipped {
		if !errors.Is(s.Err, ErrInvalidRecord) {
			t.Errorf("skipped with %v", s.Err)
		}
	}
	gone, d := img.Apply([]Record{&RemoveAccessControlEntry{ID: id}})
	if !d.ACLsChanged || gone.ACLCount() != 0 || (Authorizer{}).Authorize(gone, alice, host1, ACLOpRead, ACLResourceTopic, "t") {
		t.Fatal("removal")
	}
	if !(Authorizer{}).Authorize(img, alice, host1, ACLOpRead, ACLResourceTopic, "t") {
		t.Fatal("the old image changed")
	}
	again, _ := NewImage().Apply(img.Records())
	if !again.Equal(img) {
		t.Fatal("snapshot round trip")
	}
}
