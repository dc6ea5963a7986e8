package broker

import (
	"slices"
	"strings"

	"github.com/raftka/raftka/broker/config"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeConfigs of the per-listener TLS and SASL keys (broker/config's
// security.go): the broker-wide (not listener-prefixed) value, from the
// file or the default, read-only (the keys cannot change at run time; the
// files they name are reloaded when they change, auth_reload.go),
// passwords and inline keys sensitive.

// securityKeyNames is the set of security keys raftka applies, which the
// table of unapplied Kafka keys leaves out.
func securityKeyNames() map[string]bool {
	m := map[string]bool{}
	for _, d := range config.SecurityKeyDefs() {
		m[d.Name] = true
	}
	return m
}

// securityConfigEntries are the security keys' DescribeConfigs entries.
func (s *Server) securityConfigEntries() []configEntry {
	var out []configEntry
	for _, d := range config.SecurityKeyDefs() {
		e := configEntry{name: d.Name, source: kmsg.ConfigSourceDefaultConfig, readOnly: true, sensitive: d.Password,
			typ: kmsg.ConfigTypeString, doc: d.Doc}
		if k, ok := kafkaBrokerKeyType(d.Name); ok {
			e.typ = k
		}
		var syn []configSynonym
		if s.config != nil {
			if v, given := s.config.SecuritySetting(d.Name); given {
				syn = append(syn, configSynonym{name: d.Name, value: kmsg.StringPtr(v), source: kmsg.ConfigSourceStaticBrokerConfig})
			}
		}
		def := configSynonym{name: d.Name, source: kmsg.ConfigSourceDefaultConfig}
		if d.Default != "" {
			def.value = kmsg.StringPtr(d.Default)
		}
		syn = append(syn, def)
		if len(syn) > 0 {
			e.value, e.source = syn[0].value, syn[0].source
		}
		if e.sensitive {
			e.value = nil
			for i := range syn {
				syn[i].value = nil
			}
		}
		e.synonyms = syn
		out = append(out, e)
	}
	return out
}

// withSecurityEntries adds the security keys to a broker's sorted entries.
func (s *Server) withSecurityEntries(entries []configEntry) []configEntry {
	entries = append(entries, s.securityConfigEntries()...)
	slices.SortFunc(entries, func(a, b configEntry) int { return strings.Compare(a.name, b.name) })
	return entries
}

func kafkaBrokerKeyType(name string) (kmsg.ConfigType, bool) {
	for _, k := range kafkaBrokerKeys {
		if k.name == name {
			return k.typ, true
		}
	}
	return 0, false
}
