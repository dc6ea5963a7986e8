package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ssl.principal.mapping.rules: how the subject DN of a client certificate
// becomes a principal name (Kafka's SslPrincipalMapper). A comma-separated
// list, tried in order, of
//
//	DEFAULT                       the DN itself
//	RULE:pattern/replacement/     the pattern must match the whole DN; the
//	RULE:pattern/replacement/L    replacement ($1, $2, ... are its groups)
//	RULE:pattern/replacement/U    is the name, lower- or upper-cased
//
// A '/' or '\' inside the pattern or the replacement is escaped with '\'.
// A DN no rule matches has no principal: the connection is refused.

// PrincipalRule is one parsed rule.
type PrincipalRule struct {
	Default     bool
	Pattern     *regexp.Regexp // anchored: the whole DN must match
	Replacement string         // Go syntax (${1})
	Case        byte           // 'L', 'U' or 0
}

// ParsePrincipalRules parses the value of ssl.principal.mapping.rules.
func ParsePrincipalRules(s string) ([]PrincipalRule, error) {
	var rules []PrincipalRule
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
			i++
		}
	}
	// part reads up to an unescaped '/', unescaping "\/" and "\\".
	part := func() (string, bool) {
		var b strings.Builder
		for i < len(s) {
			switch c := s[i]; {
			case c == '\\' && i+1 < len(s) && (s[i+1] == '/' || s[i+1] == '\\'):
				if s[i+1] == '\\' {
					b.WriteString(`\\`) // stays an escaped backslash in the regexp
				} else {
					b.WriteByte('/')
				}
				i += 2
			case c == '/':
				i++
				return b.String(), true
			default:
				b.WriteByte(c)
				i++
			}
		}
		return "", false
	}
	for {
		skip()
		if i >= len(s) {
			break
		}
		switch {
		case strings.HasPrefix(s[i:], "DEFAULT"):
			rules = append(rules, PrincipalRule{Default: true})
			i += len("DEFAULT")
		case strings.HasPrefix(s[i:], "RULE:"):
			i += len("RULE:")
			pat, ok := part()
			if !ok {
				return nil, fmt.Errorf("rule %q: want RULE:pattern/replacement/[LU]", s)
			}
			repl, ok := part()
			if !ok {
				return nil, fmt.Errorf("rule with pattern %q: want RULE:pattern/replacement/[LU]", pat)
			}
			re, err := regexp.Compile("^(?:" + pat + ")$")
			if err != nil {
				return nil, fmt.Errorf("rule pattern %q: %v", pat, err)
			}
			r := PrincipalRule{Pattern: re, Replacement: javaGroups.ReplaceAllString(repl, "$${$1}")}
			if i < len(s) && (s[i] == 'L' || s[i] == 'U') {
				r.Case = s[i]
				i++
			}
			rules = append(rules, r)
		default:
			return nil, fmt.Errorf("unexpected %q: rules are DEFAULT or RULE:pattern/replacement/[LU]", s[i:])
		}
		skip()
		if i < len(s) {
			if s[i] != ',' {
				return nil, fmt.Errorf("unexpected %q after a rule: rules are separated by commas", s[i:])
			}
			i++
		}
	}
	if len(rules) == 0 {
		return nil, errors.New("no rule")
	}
	return rules, nil
}

// javaGroups finds Java's $n group references, which Go would read as
// longer names ("$1abc").
var javaGroups = regexp.MustCompile(`\$(\d+)`)

// MapPrincipal applies the rules to a DN; ok is false when none matches.
func MapPrincipal(rules []PrincipalRule, dn string) (string, bool) {
	for _, r := range rules {
		if r.Default {
			return dn, true
		}
		if !r.Pattern.MatchString(dn) {
			continue
		}
		name := r.Pattern.ReplaceAllString(dn, r.Replacement)
		switch r.Case {
		case 'L':
			name = strings.ToLower(name)
		case 'U':
			name = strings.ToUpper(name)
		}
		return name, true
	}
	return "", false
}
