package config

import (
	"strings"
	"testing"
)

// Kafka's documented examples (SslPrincipalMapperTest and the security
// docs).
func TestPrincipalRules(t *testing.T) {
	const dn = "CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"
	for _, c := range []struct {
		rules, dn, want string
		ok              bool
	}{
		{"DEFAULT", dn, dn, true},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=serviceuser,OU=ServiceUsers,O=Unknown", "serviceuser", true},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", dn, dn, true},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, DEFAULT", dn, "adminuser@admin", true},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U", dn, "ADMINUSER@ADMIN", true},
		{`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L`, dn, "adminuser", true},
		{`RULE:^CN=([^,]*).*$/users\/$1/`, dn, "users/adminUser", true},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", dn, "", false},
		{"RULE:^CN=(.*?)$/$1x/", "CN=a", "ax", true},
	} {
		rules, err := ParsePrincipalRules(c.rules)
		if err != nil {
			t.Errorf("%s: %v", c.rules, err)
			continue
		}
		got, ok := MapPrincipal(rules, c.dn)
		if ok != c.ok || got != c.want {
			t.Errorf("%s on %s: %q %v, want %q %v", c.rules, c.dn, got, ok, c.want, c.ok)
		}
	}
	for _, bad := range []struct{ rules, err string }{
		{"", "no rule"},
		{"RULE:abc", "want RULE:pattern/replacement"},
		{"RULE:abc/def", "want RULE:pattern/replacement"},
		{"RULE:(/x/", "rule pattern"},
		{"DEFAULT DEFAULT", "separated by commas"},
		{"WHATEVER", "rules are DEFAULT or RULE"},
	} {
		if _, err := ParsePrincipalRules(bad.rules); err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("%q: err %v, want %q", bad.rules, err, bad.err)
		}
	}
	// Through the config, per listener.
	cfg, _ := mustParse(t, secured, "listener.name.ssl.ssl.principal.mapping.rules=RULE:^CN=([^,]*).*$/$1/L")
	if name, ok := MapPrincipal(cfg.Security["SSL"].PrincipalRules, "CN=Bob,O=x"); !ok || name != "bob" {
		t.Errorf("SSL listener rule: %q %v", name, ok)
	}
	if name, _ := MapPrincipal(cfg.Security["SASL_SSL"].PrincipalRules, "CN=Bob,O=x"); name != "CN=Bob,O=x" {
		t.Errorf("other listener: %q", name)
	}
	if _, _, err := Parse([]byte(secured), []string{"ssl.principal.mapping.rules=RULE:(/x/"}); err == nil {
		t.Error("a bad rule was accepted")
	}
}

func FuzzParsePrincipalRules(f *testing.F) {
	for _, s := range []string{"DEFAULT", "RULE:^CN=(.*?),OU=(.*?)$/$1@$2/L,DEFAULT", `RULE:a\/b/c\\d/U`, "RULE:(", ",,"} {
		f.Add(s, "CN=a,OU=b")
	}
	f.Fuzz(func(t *testing.T, rules, dn string) {
		rs, err := ParsePrincipalRules(rules)
		if err != nil {
			return
		}
		if len(rs) == 0 {
			t.Fatal("parsed to no rules without an error")
		}
		MapPrincipal(rs, dn)
	})
}
