package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/test/certs"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// interBrokerConfig is a node whose inter-broker listener is the given
// secured one.
func interBrokerConfig(t *testing.T, extra ...string) *config.Config {
	t.Helper()
	text := `process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:9093
listeners=IB://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
listener.security.protocol.map=IB:SASL_SSL,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=IB
log.dirs=x
` + strings.Join(extra, "\n") + "\n"
	cfg, _, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A broker logs in to another broker's SASL_SSL listener with TLS (its
// keystore as client certificate, the listener requiring one) and each
// mechanism, then speaks the protocol on the connection.
func TestInterBrokerDialer(t *testing.T) {
	set := testCerts(t)
	f := set.Files
	img := scramImage(t)
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			sec := saslListener(mech)
			sec.Protocol, sec.KeystoreLocation, sec.TruststoreLocation, sec.ClientAuth = "SASL_SSL", f.ServerPEM, f.CAPEM, "required"
			_, addr := startSecured(t, sec, Options{Deps: Deps{Metadata: staticMetadata{img: img}}})
			user, pw := "alice", "alice-pw"
			if mech == "PLAIN" {
				pw = "alice-secret"
			}
			jaas := `listener.name.ib.` + strings.ToLower(mech) + `.sasl.jaas.config=x.Y required username="` + user + `" password="` + pw + `";`
			plainUsers := "listener.name.ib.plain.sasl.jaas.config=" + plainLoginModule + ` required user_x="y";`
			if mech == "PLAIN" {
				plainUsers = "" // the PLAIN JAAS holds this broker's own login
			}
			cfg := interBrokerConfig(t, "ssl.keystore.location="+f.ServerP12, "ssl.keystore.password="+certs.Password,
				"ssl.truststore.location="+f.CAPEM, "sasl.enabled.mechanisms="+mech, "sasl.mechanism.inter.broker.protocol="+mech, jaas,
				plainUsers)
			dial, err := InterBrokerDialer(cfg, 5*time.Second, zerolog.Nop())
			if err != nil || dial == nil {
				t.Fatalf("dialer: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
			defer cancel()
			conn, err := dial(ctx, addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			rt := &rawRoundTripper{c: conn, fmtr: kmsg.NewRequestFormatter(), corr: 100}
			resp := kmsg.NewPtrApiVersionsResponse()
			if err := rt.roundTrip(kmsg.NewPtrApiVersionsRequest(), resp); err != nil || resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
				t.Fatalf("ApiVersions after login: %v %+v", err, resp.ErrorCode)
			}

			// A wrong password is refused with the broker's error.
			bad := strings.Replace(jaas, `password="`+pw, `password="wrong`, 1)
			cfg = interBrokerConfig(t, "ssl.keystore.location="+f.ServerP12, "ssl.keystore.password="+certs.Password,
				"ssl.truststore.location="+f.CAPEM, "sasl.enabled.mechanisms="+mech, "sasl.mechanism.inter.broker.protocol="+mech, bad,
				plainUsers)
			dial, _ = InterBrokerDialer(cfg, 5*time.Second, zerolog.Nop())
			if _, err := dial(ctx, addr); err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
				t.Fatalf("wrong password: %v", err)
			}
		})
	}
}

// Without endpoint identification the chain is still verified.
func TestClientTLSWithoutHostnameCheck(t *testing.T) {
	set := testCerts(t)
	other := testCerts(t)
	_, addr := startSecured(t, &config.ListenerSecurity{Protocol: "SSL", KeystoreLocation: set.Files.ServerPEM}, Options{})
	for _, c := range []struct {
		ca   string
		ok   bool
		name string
	}{{set.Files.CAPEM, true, "trusted"}, {other.Files.CAPEM, false, "untrusted"}} {
		sec := &config.ListenerSecurity{Listener: "IB", Protocol: "SSL", KeystoreLocation: set.Files.ServerPEM, TruststoreLocation: c.ca}
		tc, err := clientTLSConfig(sec)
		if err != nil {
			t.Fatal(err)
		}
		tc.ServerName = "not-the-broker.example" // would fail a host name check
		err = apiVersionsOver(addr, tc)
		if (err == nil) != c.ok {
			t.Errorf("%s CA: err %v", c.name, err)
		}
	}
}
