package config

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Security settings of a listener: Kafka's ssl.* and sasl.* broker keys,
// each given bare (every listener) or as listener.name.<name>.<key> (that
// listener only, winning over the bare key, key by key, as Kafka resolves
// them). The values stay text here: the package reads no file but the
// properties file, so keystores and truststores are loaded by the broker
// when it binds the listener.

// ListenerSecurity is what one listener needs beyond its address.
type ListenerSecurity struct {
	Listener string // upper-case listener name
	Protocol string // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL

	// TLS (SSL and SASL_SSL listeners).
	KeystoreType             string // PEM or PKCS12; empty: decided by the file's content
	KeystoreLocation         string
	KeystorePassword         string
	KeyPassword              string
	KeystoreCertificateChain string // inline PEM (ssl.keystore.type=PEM)
	KeystoreKey              string // inline PEM (ssl.keystore.type=PEM)
	TruststoreType           string
	TruststoreLocation       string
	TruststorePassword       string
	TruststoreCertificates   string // inline PEM
	ClientAuth               string // none, requested or required
	// EndpointIdentification is ssl.endpoint.identification.algorithm:
	// "https" checks that a broker's certificate names the host dialled
	// (outgoing connections); empty turns the check off.
	EndpointIdentification string
	EnabledProtocols       []string
	CipherSuites           []string
	// PrincipalRules is ssl.principal.mapping.rules, parsed.
	PrincipalRules []PrincipalRule

	// SASL (SASL_PLAINTEXT and SASL_SSL listeners).
	EnabledMechanisms []string // upper-case
	// JAAS is listener.name.<l>.<mechanism>.sasl.jaas.config by
	// upper-case mechanism.
	JAAS map[string]string
}

// TLS reports whether the listener speaks TLS.
func (s *ListenerSecurity) TLS() bool { return s.Protocol == "SSL" || s.Protocol == "SASL_SSL" }

// SASL reports whether the listener authenticates with SASL.
func (s *ListenerSecurity) SASL() bool {
	return s.Protocol == "SASL_PLAINTEXT" || s.Protocol == "SASL_SSL"
}

// secKey is one security key raftka applies.
type secKey struct {
	doc      string
	list     bool
	password bool // never echoed in errors or Settings
	def      string
	validate func(v string, list []string) error
	store    func(s *ListenerSecurity, v string, list []string)
}

// SupportedSASLMechanisms are the mechanisms the broker can serve.
var SupportedSASLMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}

// tlsProtocols are the ssl.enabled.protocols names Go's crypto/tls serves.
var tlsProtocols = []string{"TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"}

var securityKeys = map[string]secKey{
	"ssl.keystore.type": {doc: "PEM or PKCS12 (JKS is refused: convert it); unset, the keystore file's content decides.", validate: oneOfCI("PEM", "PKCS12", "JKS"),
		store: func(s *ListenerSecurity, v string, _ []string) { s.KeystoreType = strings.ToUpper(v) }},
	"ssl.keystore.location": {doc: "The keystore file: PEM (key and certificate chain) or PKCS12.", store: func(s *ListenerSecurity, v string, _ []string) { s.KeystoreLocation = v }},
	"ssl.keystore.password": {doc: "The PKCS12 keystore's password.", password: true, store: func(s *ListenerSecurity, v string, _ []string) { s.KeystorePassword = v }},
	"ssl.key.password":      {doc: "The password of the key itself: accepted when it is the PKCS12 keystore's password; encrypted PEM keys and PKCS12 keys under another password are refused.", password: true, store: func(s *ListenerSecurity, v string, _ []string) { s.KeyPassword = v }},
	"ssl.keystore.certificate.chain": {doc: "The certificate chain inline, as PEM (ssl.keystore.type=PEM).", password: true,
		store: func(s *ListenerSecurity, v string, _ []string) { s.KeystoreCertificateChain = v }},
	"ssl.keystore.key": {doc: "The private key inline, as unencrypted PEM (ssl.keystore.type=PEM).", password: true, store: func(s *ListenerSecurity, v string, _ []string) { s.KeystoreKey = v }},
	"ssl.truststore.type": {doc: "PEM or PKCS12; unset, the file's content decides.", validate: oneOfCI("PEM", "PKCS12", "JKS"),
		store: func(s *ListenerSecurity, v string, _ []string) { s.TruststoreType = strings.ToUpper(v) }},
	"ssl.truststore.location": {doc: "The CAs that verify client certificates (and other brokers' certificates on the inter-broker listener).", store: func(s *ListenerSecurity, v string, _ []string) { s.TruststoreLocation = v }},
	"ssl.truststore.password": {doc: "The PKCS12 truststore's password.", password: true, store: func(s *ListenerSecurity, v string, _ []string) { s.TruststorePassword = v }},
	"ssl.truststore.certificates": {doc: "The trusted CAs inline, as PEM.", password: true,
		store: func(s *ListenerSecurity, v string, _ []string) { s.TruststoreCertificates = v }},
	"ssl.client.auth": {doc: "none, requested (a client certificate is verified if sent) or required (mTLS).", def: "none", validate: oneOfCI("none", "requested", "required"),
		store: func(s *ListenerSecurity, v string, _ []string) { s.ClientAuth = strings.ToLower(v) }},
	"ssl.endpoint.identification.algorithm": {doc: "https checks that another broker's certificate names the host dialled (inter-broker connections); empty checks the chain only.", def: "https", validate: oneOfCI("https", ""),
		store: func(s *ListenerSecurity, v string, _ []string) { s.EndpointIdentification = strings.ToLower(v) }},
	"ssl.principal.mapping.rules": {doc: "How a client certificate's subject DN becomes the principal: DEFAULT (the DN) or RULE:pattern/replacement/[LU], tried in order.", def: "DEFAULT",
		validate: func(v string, _ []string) error { _, err := ParsePrincipalRules(v); return err },
		store:    func(s *ListenerSecurity, v string, _ []string) { s.PrincipalRules, _ = ParsePrincipalRules(v) }},
	"ssl.enabled.protocols": {doc: "The TLS versions served: a contiguous range of TLSv1, TLSv1.1, TLSv1.2, TLSv1.3.", list: true, def: "TLSv1.2,TLSv1.3",
		validate: func(_ string, l []string) error {
			if len(l) == 0 {
				return errors.New("must name at least one protocol")
			}
			for _, p := range l {
				if !slices.Contains(tlsProtocols, p) {
					return fmt.Errorf("unknown protocol %q: want some of %s", p, strings.Join(tlsProtocols, ", "))
				}
			}
			return nil
		},
		store: func(s *ListenerSecurity, _ string, l []string) { s.EnabledProtocols = l }},
	// Names are checked against Go's suites by the broker, which knows them.
	"ssl.cipher.suites": {doc: "IANA names of the TLS 1.2 (and older) suites served; TLS 1.3 suites are always on in Go.", list: true, store: func(s *ListenerSecurity, _ string, l []string) { s.CipherSuites = l }},
	"sasl.enabled.mechanisms": {doc: "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and/or OAUTHBEARER (unsecured JWS validation; Kafka's default GSSAPI is not served).", list: true, def: "GSSAPI",
		store: func(s *ListenerSecurity, _ string, l []string) {
			s.EnabledMechanisms = nil
			for _, m := range l {
				s.EnabledMechanisms = append(s.EnabledMechanisms, strings.ToUpper(m))
			}
		}},
}

// SecurityKeyDef describes one TLS or SASL key applied per listener: given
// bare it applies to every listener, as listener.name.<l>.<key> to one.
type SecurityKeyDef struct {
	Name, Default, Doc string
	Password           bool
}

// SecurityKeyDefs returns the per-listener security keys, sorted by name.
func SecurityKeyDefs() []SecurityKeyDef {
	out := make([]SecurityKeyDef, 0, len(securityKeys))
	for name, k := range securityKeys {
		out = append(out, SecurityKeyDef{Name: name, Default: k.def, Doc: k.doc, Password: k.password})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SecuritySetting returns the bare value of a security key as the file (or
// an override) gave it, and whether it was given.
func (c *Config) SecuritySetting(name string) (string, bool) {
	v, ok := c.securityBare[name]
	return v, ok
}

// jaasKeySuffix ends a per-mechanism JAAS key:
// listener.name.<l>.<mechanism>.sasl.jaas.config.
const jaasKeySuffix = ".sasl.jaas.config"

// isSecurityKey reports whether build hands key to buildSecurity.
func isSecurityKey(key string) bool {
	if _, ok := securityKeys[key]; ok {
		return true
	}
	if rest, ok := strings.CutPrefix(key, "listener.name."); ok {
		_, sub, ok := strings.Cut(rest, ".")
		if !ok {
			return false
		}
		if _, ok := securityKeys[sub]; ok {
			return true
		}
		return strings.HasSuffix(sub, jaasKeySuffix)
	}
	return false
}

// buildSecurity resolves the security settings of every listener from the
// raw security keys (bare and listener-prefixed), checks them against each
// listener's protocol, and returns warnings for keys that reach no listener.
func buildSecurity(c *Config, raw map[string]string) ([]string, error) {
	var warnings []string
	var errs []error
	bare := map[string]string{}
	perListener := map[string]map[string]string{}
	jaas := map[string]map[string]string{}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys) // warnings in a stable order
	for _, k := range keys {
		v := raw[k]
		rest, prefixed := strings.CutPrefix(k, "listener.name.")
		if !prefixed {
			bare[k] = v
			continue
		}
		name, sub, _ := strings.Cut(rest, ".")
		name = strings.ToUpper(name)
		if !c.hasListener(name) {
			warnings = append(warnings, fmt.Sprintf("%s: no listener named %s; ignored", k, name))
			continue
		}
		if mech, ok := strings.CutSuffix(sub, jaasKeySuffix); ok {
			if jaas[name] == nil {
				jaas[name] = map[string]string{}
			}
			jaas[name][strings.ToUpper(mech)] = v
			continue
		}
		if perListener[name] == nil {
			perListener[name] = map[string]string{}
		}
		perListener[name][sub] = v
	}
	names := make([]string, 0, len(securityKeys))
	for k := range securityKeys {
		names = append(names, k)
	}
	sort.Strings(names)

	c.securityBare = bare
	c.Security = map[string]*ListenerSecurity{}
	for _, l := range c.Listeners {
		s := &ListenerSecurity{Listener: l.Name, Protocol: l.SecurityProtocol, JAAS: jaas[l.Name]}
		for _, k := range names {
			def := securityKeys[k]
			text, given := perListener[l.Name][k]
			shown := "listener.name." + strings.ToLower(l.Name) + "." + k
			if !given {
				text, given = bare[k]
				shown = k
			}
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
					if def.password {
						errs = append(errs, fmt.Errorf("%s: %v", shown, err))
					} else {
						errs = append(errs, fmt.Errorf("%s=%q: %v", shown, text, err))
					}
					continue
				}
			}
			def.store(s, text, list)
		}
		errs = append(errs, checkListenerSecurity(c, s)...)
		c.Security[l.Name] = s
	}
	return warnings, errors.Join(errs...)
}

// checkListenerSecurity checks what a listener's protocol needs.
func checkListenerSecurity(c *Config, s *ListenerSecurity) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("listener %s (%s): "+format, append([]any{s.Listener, s.Protocol}, args...)...))
	}
	if s.TLS() {
		if s.KeystoreType == "JKS" {
			fail("ssl.keystore.type=JKS is not supported; convert the keystore to PKCS12 (keytool -importkeystore -deststoretype PKCS12) or PEM")
		}
		if s.TruststoreType == "JKS" {
			fail("ssl.truststore.type=JKS is not supported; convert the truststore to PKCS12 or PEM")
		}
		inline := s.KeystoreCertificateChain != "" || s.KeystoreKey != ""
		switch {
		case inline && s.KeystoreLocation != "":
			fail("give ssl.keystore.location or ssl.keystore.certificate.chain/ssl.keystore.key, not both")
		case inline && (s.KeystoreCertificateChain == "" || s.KeystoreKey == ""):
			fail("ssl.keystore.certificate.chain and ssl.keystore.key go together")
		case inline && s.KeystoreType != "" && s.KeystoreType != "PEM":
			fail("inline ssl.keystore.certificate.chain/ssl.keystore.key need ssl.keystore.type=PEM")
		case !inline && s.KeystoreLocation == "":
			fail("a TLS listener needs a keystore: ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key")
		}
		if s.TruststoreCertificates != "" && s.TruststoreLocation != "" {
			fail("give ssl.truststore.location or ssl.truststore.certificates, not both")
		}
		if s.ClientAuth != "none" && s.TruststoreCertificates == "" && s.TruststoreLocation == "" {
			fail("ssl.client.auth=%s needs a truststore to verify client certificates", s.ClientAuth)
		}
	}
	if s.SASL() {
		if len(s.EnabledMechanisms) == 0 {
			fail("sasl.enabled.mechanisms is empty")
		}
		for _, m := range s.EnabledMechanisms {
			if !slices.Contains(SupportedSASLMechanisms, m) {
				fail("sasl.enabled.mechanisms: %s is not supported (raftka serves %s); set sasl.enabled.mechanisms, Kafka's default is GSSAPI",
					m, strings.Join(SupportedSASLMechanisms, ", "))
			}
		}
		if slices.Contains(s.EnabledMechanisms, "PLAIN") && s.JAAS["PLAIN"] == "" {
			fail("PLAIN needs its users in listener.name.%s.plain.sasl.jaas.config", strings.ToLower(s.Listener))
		}
		if s.Listener == c.InterBrokerListenerName && c.Roles.Broker {
			m := c.SASLMechanismInterBroker
			switch {
			case !slices.Contains(s.EnabledMechanisms, m):
				fail("sasl.mechanism.inter.broker.protocol=%s is not among this inter-broker listener's sasl.enabled.mechanisms (Kafka's default is GSSAPI)", m)
			case s.JAAS[m] == "" && m == "OAUTHBEARER":
				fail("brokers log in to each other with an unsecured token made from listener.name.%s.oauthbearer.sasl.jaas.config's unsecuredLoginStringClaim_sub; it is not set", strings.ToLower(s.Listener))
			case s.JAAS[m] == "":
				fail("brokers log in to each other with listener.name.%s.%s.sasl.jaas.config's username and password; it is not set", strings.ToLower(s.Listener), strings.ToLower(m))
			}
		}
		if l, ok := c.ControllerListener(); ok && l.Name == s.Listener {
			// Every node dials the controller listeners: voters for Raft,
			// brokers for their RPCs, and the Raft leader replicates to
			// broker-only nodes.
			m := c.SASLMechanismController
			switch {
			case !slices.Contains(s.EnabledMechanisms, m):
				fail("sasl.mechanism.controller.protocol=%s is not among this controller listener's sasl.enabled.mechanisms (Kafka's default is GSSAPI)", m)
			case s.JAAS[m] == "":
				fail("nodes log in to the controller listeners with listener.name.%s.%s.sasl.jaas.config's username and password; it is not set", strings.ToLower(s.Listener), strings.ToLower(m))
			}
		}
	}
	return errs
}

func oneOfCI(allowed ...string) func(string, []string) error {
	return func(v string, _ []string) error {
		for _, a := range allowed {
			if strings.EqualFold(a, v) {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}
