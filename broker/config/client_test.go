package config

import (
	"strings"
	"testing"
)

func TestParseClientSecurity(t *testing.T) {
	cs, warnings, err := ParseClientSecurity(map[string]string{
		"security.protocol":       "sasl_ssl",
		"sasl.mechanism":          "scram-sha-512",
		"sasl.jaas.config":        `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`,
		"ssl.truststore.location": "ca.pem",
		"client.id":               "tool",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cs.Listener.Protocol != "SASL_SSL" || cs.Mechanism != "SCRAM-SHA-512" || cs.Listener.TruststoreLocation != "ca.pem" ||
		cs.Listener.EndpointIdentification != "https" || !strings.Contains(cs.Listener.JAAS["SCRAM-SHA-512"], `username="u"`) {
		t.Fatalf("%+v", cs)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "client.id") {
		t.Fatalf("warnings %v", warnings)
	}
	if cs, _, err := ParseClientSecurity(nil); err != nil || cs.Listener.Protocol != "PLAINTEXT" {
		t.Fatalf("empty: %+v %v", cs, err)
	}
	for _, bad := range []map[string]string{
		{"security.protocol": "TLS"},
		{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": "x"}, // GSSAPI by default
		{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"},
		{"security.protocol": "SSL", "ssl.enabled.protocols": "SSLv3"},
	} {
		if _, _, err := ParseClientSecurity(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
