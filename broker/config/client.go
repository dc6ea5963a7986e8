package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ClientSecurity is a Kafka client's security settings, as Kafka's tools
// read them from --command-config: security.protocol, sasl.mechanism,
// sasl.jaas.config and the ssl.* keys the broker reads for a listener
// (truststore, keystore for mTLS, enabled protocols, endpoint
// identification).
type ClientSecurity struct {
	Listener  ListenerSecurity // Protocol and the ssl.* settings; JAAS by mechanism
	Mechanism string           // upper-case sasl.mechanism
}

// clientOnlyKeys are the client keys beside the listener ones.
var clientOnlyKeys = []string{"security.protocol", "sasl.mechanism", "sasl.jaas.config"}

// ParseClientSecurity reads client properties (a --command-config file,
// already split into keys and values). Keys it does not apply are returned
// as warnings, never silently dropped; bad values are errors.
func ParseClientSecurity(props map[string]string) (*ClientSecurity, []string, error) {
	var warnings []string
	for k := range props {
		if _, ok := securityKeys[k]; !ok && !slices.Contains(clientOnlyKeys, k) {
			warnings = append(warnings, fmt.Sprintf("%s: not a client key raftka applies; ignored", k))
		}
	}
	slices.Sort(warnings)
	cs := &ClientSecurity{}
	s := &cs.Listener
	s.Protocol = strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	if s.Protocol == "" {
		s.Protocol = "PLAINTEXT"
	}
	var errs []error
	switch s.Protocol {
	case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		errs = append(errs, fmt.Errorf("security.protocol=%q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", s.Protocol))
	}
	for k, def := range securityKeys {
		text, given := props[k]
		if !given {
			text = def.def
		}
		text = strings.TrimSpace(text)
		var list []string
		if def.list {
			for _, e := range strings.Split(text, ",") {
				if e = strings.TrimSpace(e); e != "" {
					list = append(list, e)
				}
			}
		}
		if def.validate != nil && (text != "" || def.list && given) {
			if err := def.validate(text, list); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", k, err))
				continue
			}
		}
		def.store(s, text, list)
	}
	if s.SASL() {
		cs.Mechanism = strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"]))
		if cs.Mechanism == "" {
			cs.Mechanism = "GSSAPI" // Kafka's default
		}
		if !slices.Contains(SupportedSASLMechanisms, cs.Mechanism) {
			errs = append(errs, fmt.Errorf("sasl.mechanism=%q: want one of %s", cs.Mechanism, strings.Join(SupportedSASLMechanisms, ", ")))
		}
		jaas, ok := props["sasl.jaas.config"]
		if !ok {
			errs = append(errs, errors.New("sasl.jaas.config: required with a SASL security.protocol"))
		}
		s.JAAS = map[string]string{cs.Mechanism: jaas}
	}
	return cs, warnings, errors.Join(errs...)
}
