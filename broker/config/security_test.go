package config

import (
	"slices"
	"strings"
	"testing"
)

// secured is a node with one listener of each protocol, configured with
// Kafka's keys: bare keys for every listener, listener.name.<l>. overrides
// for one.
const secured = base + `listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,SSL://127.0.0.1:9094,SASL_PLAINTEXT://127.0.0.1:9095,SASL_SSL://127.0.0.1:9096
ssl.keystore.location=broker.p12
ssl.keystore.type=PKCS12
ssl.keystore.password=ks-secret
ssl.truststore.location=ca.pem
ssl.truststore.type=PEM
ssl.client.auth=requested
listener.name.ssl.ssl.client.auth=required
listener.name.ssl.ssl.enabled.protocols=TLSv1.3
ssl.cipher.suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512
listener.name.sasl_ssl.sasl.enabled.mechanisms=scram-sha-256,SCRAM-SHA-512
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";
connection.failed.authentication.delay.ms=250
`

func TestListenerSecurity(t *testing.T) {
	cfg, warnings := mustParse(t, secured)
	if len(warnings) != 0 {
		t.Errorf("warnings %q", warnings)
	}
	if cfg.FailedAuthenticationDelay.Milliseconds() != 250 {
		t.Errorf("delay %v", cfg.FailedAuthenticationDelay)
	}
	for _, name := range []string{"PLAINTEXT", "CONTROLLER", "SSL", "SASL_PLAINTEXT", "SASL_SSL"} {
		if cfg.Security[name] == nil {
			t.Fatalf("no security entry for %s", name)
		}
	}
	ssl := cfg.Security["SSL"]
	if !ssl.TLS() || ssl.SASL() || ssl.ClientAuth != "required" || !slices.Equal(ssl.EnabledProtocols, []string{"TLSv1.3"}) {
		t.Errorf("SSL listener: %+v", ssl)
	}
	if ssl.KeystoreLocation != "broker.p12" || ssl.KeystoreType != "PKCS12" || ssl.KeystorePassword != "ks-secret" || ssl.TruststoreLocation != "ca.pem" {
		t.Errorf("SSL keystore: %+v", ssl)
	}
	sslSASL := cfg.Security["SASL_SSL"]
	if !sslSASL.TLS() || !sslSASL.SASL() || sslSASL.ClientAuth != "requested" ||
		!slices.Equal(sslSASL.EnabledProtocols, []string{"TLSv1.2", "TLSv1.3"}) ||
		!slices.Equal(sslSASL.EnabledMechanisms, []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}) ||
		!slices.Equal(sslSASL.CipherSuites, []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}) {
		t.Errorf("SASL_SSL listener: %+v", sslSASL)
	}
	sp := cfg.Security["SASL_PLAINTEXT"]
	if sp.TLS() || !sp.SASL() || !slices.Equal(sp.EnabledMechanisms, []string{"PLAIN", "SCRAM-SHA-512"}) || !strings.Contains(sp.JAAS["PLAIN"], `user_alice="a"`) {
		t.Errorf("SASL_PLAINTEXT listener: %+v", sp)
	}
	if ssl.EndpointIdentification != "https" {
		t.Errorf("endpoint identification %q, want Kafka's default https", ssl.EndpointIdentification)
	}
	if p := cfg.Security["PLAINTEXT"]; p.TLS() || p.SASL() {
		t.Errorf("PLAINTEXT listener: %+v", p)
	}
}

func TestListenerSecurityErrors(t *testing.T) {
	cases := []struct {
		name      string
		overrides []string
		want      string
	}{
		{"jks keystore", []string{"ssl.keystore.type=JKS"}, "JKS is not supported"},
		{"bad client auth", []string{"ssl.client.auth=always"}, `ssl.client.auth="always": must be one of none, requested, required`},
		{"bad protocol", []string{"listener.name.ssl.ssl.enabled.protocols=SSLv3"}, `listener.name.ssl.ssl.enabled.protocols="SSLv3": unknown protocol "SSLv3"`},
		{"no protocols", []string{"ssl.enabled.protocols= , "}, "must name at least one protocol"},
		{"keystore both ways", []string{"listener.name.ssl.ssl.keystore.certificate.chain=x", "listener.name.ssl.ssl.keystore.key=y"}, "not both"},
		{"inline half", []string{"ssl.keystore.location=", "ssl.keystore.key=y"}, "go together"},
		{"mTLS without truststore", []string{"ssl.truststore.location="}, "ssl.client.auth=required needs a truststore"},
		{"GSSAPI", []string{"sasl.enabled.mechanisms=GSSAPI"}, "GSSAPI is not supported"},
		{"OAUTHBEARER inter-broker without a login", []string{"listener.name.sasl_ssl.sasl.enabled.mechanisms=OAUTHBEARER", "inter.broker.listener.name=SASL_SSL", "sasl.mechanism.inter.broker.protocol=OAUTHBEARER"}, "unsecuredLoginStringClaim_sub; it is not set"},
		{"PLAIN without users", []string{"listener.name.sasl_plaintext.plain.sasl.jaas.config="}, "PLAIN needs its users in listener.name.sasl_plaintext.plain.sasl.jaas.config"},
		{"negative delay", []string{"connection.failed.authentication.delay.ms=-1"}, "must be at least 0"},
		{"bad endpoint identification", []string{"ssl.endpoint.identification.algorithm=dns"}, "must be one of https, "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Parse([]byte(secured), c.overrides)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
	// A password never appears in an error.
	_, _, err := Parse([]byte(secured), []string{"ssl.keystore.type=JKS", "ssl.keystore.password=hunter2"})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err %v", err)
	}
}

// Keys for a listener that does not exist are warned about, not applied.
func TestListenerSecurityUnknownListener(t *testing.T) {
	_, warnings := mustParse(t, base, "listener.name.external.ssl.keystore.location=x", "listener.name.external.plain.sasl.jaas.config=y")
	want := []string{
		"listener.name.external.plain.sasl.jaas.config: no listener named EXTERNAL; ignored",
		"listener.name.external.ssl.keystore.location: no listener named EXTERNAL; ignored",
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
}

// A SASL_SSL controller listener, as Kafka configures one: the mechanism
// nodes log in with and its JAAS credentials.
func TestControllerListenerSASLSSL(t *testing.T) {
	cfg, warnings := mustParse(t, base+`listener.security.protocol.map=CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT
ssl.keystore.location=broker.p12
ssl.truststore.location=ca.pem
listener.name.controller.sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.controller.protocol=scram-sha-512
listener.name.controller.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="pw";
`)
	if len(warnings) != 0 {
		t.Errorf("warnings %q", warnings)
	}
	if cfg.SASLMechanismController != "SCRAM-SHA-512" {
		t.Errorf("sasl.mechanism.controller.protocol %q", cfg.SASLMechanismController)
	}
	s := cfg.Security["CONTROLLER"]
	if !s.TLS() || !s.SASL() || s.JAAS["SCRAM-SHA-512"] == "" || s.TruststoreLocation != "ca.pem" {
		t.Errorf("controller listener security %+v", s)
	}
}
