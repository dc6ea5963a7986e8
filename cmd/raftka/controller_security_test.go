package main

import (
	"strings"
	"testing"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
)

func TestAnonymousControllerWarning(t *testing.T) {
	const base = `process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:9093
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
controller.listener.names=CONTROLLER
log.dirs=x
`
	for _, tc := range []struct {
		name, extra string
		a           metadata.Authorizer
		warn        bool
	}{
		{"plaintext, brokers only super users", "", metadata.Authorizer{SuperUsers: map[string]bool{"User:admin": true}}, true},
		{"plaintext, anonymous super user", "", metadata.Authorizer{SuperUsers: map[string]bool{"User:ANONYMOUS": true}}, false},
		{"plaintext, allow everyone", "", metadata.Authorizer{AllowEveryoneIfNoACL: true}, false},
		{"TLS without client certificates", "listener.security.protocol.map=CONTROLLER:SSL,PLAINTEXT:PLAINTEXT\nssl.keystore.location=k.p12\n", metadata.Authorizer{}, true},
		{"mTLS", "listener.security.protocol.map=CONTROLLER:SSL,PLAINTEXT:PLAINTEXT\nssl.keystore.location=k.p12\nssl.truststore.location=ca.pem\nssl.client.auth=required\n", metadata.Authorizer{}, false},
		{"SASL", "listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT\nsasl.enabled.mechanisms=PLAIN\nsasl.mechanism.controller.protocol=PLAIN\n" +
			`listener.name.controller.plain.sasl.jaas.config=x required username="a" password="b" user_a="b";` + "\n", metadata.Authorizer{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := config.Parse([]byte(base+tc.extra), nil)
			if err != nil {
				t.Fatal(err)
			}
			w := anonymousControllerWarning(cfg, &tc.a)
			if (w != "") != tc.warn || tc.warn && !strings.Contains(w, "User:ANONYMOUS") {
				t.Fatalf("warning %q, want one: %v", w, tc.warn)
			}
		})
	}
}
