package broker

import (
	"context"
	"crypto/hmac"
	"crypto/sha512"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin" password="admin-secret"
    user_admin="admin-secret" user_alice="alice-secret";`

// scramImage holds SCRAM credentials for alice (both mechanisms) and bob
// (SHA-512 only), made as the controller makes them.
func scramImage(t testing.TB) *metadata.Image {
	t.Helper()
	var recs []metadata.Record
	for _, c := range []struct {
		user, password string
		m              metadata.ScramMechanism
	}{{"alice", "alice-pw", metadata.ScramSHA256}, {"alice", "alice-pw", metadata.ScramSHA512}, {"bob", "bob-pw", metadata.ScramSHA512}} {
		salt := []byte("salt of " + c.user)
		salted, err := metadata.SaltPassword(c.m, c.password, salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := metadata.NewScramCredential(c.user, c.m, salt, salted, 4096)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	return imageOf(t, recs...)
}

func saslListener(mechs ...string) *config.ListenerSecurity {
	return &config.ListenerSecurity{Protocol: "SASL_PLAINTEXT", EnabledMechanisms: mechs, JAAS: map[string]string{"PLAIN": plainJAAS}}
}

// saslOver runs ApiVersions through kgo with a SASL mechanism.
func saslOver(addr string, tc *tls.Config, m sasl.Mechanism) error {
	return apiVersionsOver(addr, tc, kgo.SASL(m))
}

func TestSASLPlainAndScram(t *testing.T) {
	img := scramImage(t)
	s, addr := startSecured(t, saslListener("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), Options{Deps: Deps{Metadata: staticMetadata{img: img}}})
	ok := []struct {
		name string
		m    sasl.Mechanism
	}{
		{"PLAIN admin", plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()},
		{"PLAIN alice", plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()},
		{"SCRAM-SHA-256 alice", scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()},
		{"SCRAM-SHA-512 alice", scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism()},
		{"SCRAM-SHA-512 bob", scram.Auth{User: "bob", Pass: "bob-pw"}.AsSha512Mechanism()},
	}
	for _, c := range ok {
		if err := saslOver(addr, nil, c.m); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	bad := []struct {
		name string
		m    sasl.Mechanism
	}{
		{"PLAIN wrong password", plain.Auth{User: "alice", Pass: "nope"}.AsMechanism()},
		{"PLAIN unknown user", plain.Auth{User: "mallory", Pass: "alice-secret"}.AsMechanism()},
		{"PLAIN other authzid", plain.Auth{Zid: "admin", User: "alice", Pass: "alice-secret"}.AsMechanism()},
		{"SCRAM wrong password", scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism()},
		{"SCRAM unknown user", scram.Auth{User: "mallory", Pass: "x"}.AsSha512Mechanism()},
		{"SCRAM mechanism the user lacks", scram.Auth{User: "bob", Pass: "bob-pw"}.AsSha256Mechanism()},
	}
	for _, c := range bad {
		err := saslOver(addr, nil, c.m)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: err %v, want SASL_AUTHENTICATION_FAILED", c.name, err)
		}
	}
	waitFor(t, "failures counted", func() bool { return s.Counters().RejectedFor(ReasonAuthFailed) == uint64(len(bad)) })
}

// A mechanism the listener does not enable is refused with the list of
// those it does.
func TestSASLUnsupportedMechanism(t *testing.T) {
	_, addr := startSecured(t, saslListener("SCRAM-SHA-512"), Options{Deps: Deps{Metadata: staticMetadata{img: scramImage(t)}}})
	err := saslOver(addr, nil, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())
	if !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("err %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
	r := dialRaw(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	r.send(hs, 1)
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = 1
	r.readResponse(resp)
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 1 || resp.SupportedMechanisms[0] != "SCRAM-SHA-512" {
		t.Fatalf("handshake answered %+v", resp)
	}
	r.expectClosed()
}

// Kafka enforces the handshake: any other request first closes the
// connection, unanswered.
func TestSASLHandshakeRequiredFirst(t *testing.T) {
	s, addr := startSecured(t, saslListener("PLAIN"), Options{})
	r := dialRaw(t, addr)
	r.send(kmsg.NewPtrMetadataRequest(), 1)
	r.expectClosed()
	waitFor(t, "illegal_sasl_state counted", func() bool { return s.Counters().RejectedFor(ReasonSASLState) == 1 })

	// SaslAuthenticate before SaslHandshake is refused too.
	r = dialRaw(t, addr)
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 2, []byte("\x00admin\x00admin-secret")
	r.send(au, 1)
	r.expectClosed()

	// A plain kgo client (no SASL) gets nothing but ApiVersions answered.
	if err := apiVersionsOver(addr, nil); err != nil {
		t.Fatalf("ApiVersions before authentication: %v", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err == nil {
		t.Fatal("Metadata answered without authentication")
	}
}

// Handshake v0: the tokens come as bare size-prefixed frames (sarama's
// default, librdkafka against old brokers).
func TestSASLHandshakeV0RawTokens(t *testing.T) {
	_, addr := startSecured(t, saslListener("PLAIN"), Options{})
	r := dialRaw(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, "PLAIN"
	r.send(hs, 1)
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	r.readResponse(hresp)
	if hresp.ErrorCode != 0 {
		t.Fatalf("handshake error %d", hresp.ErrorCode)
	}
	tok := []byte("\x00alice\x00alice-secret")
	r.write(binary.BigEndian.AppendUint32(nil, uint32(len(tok))))
	r.write(tok)
	var sz [4]byte
	if _, err := io.ReadFull(r.c, sz[:]); err != nil || binary.BigEndian.Uint32(sz[:]) != 0 {
		t.Fatalf("PLAIN v0 answer: %v %x", err, sz)
	}
	// Authenticated: requests are served now.
	r.send(kmsg.NewPtrApiVersionsRequest(), 2)
	vresp := kmsg.NewPtrApiVersionsResponse()
	vresp.Version = 4
	if corr := r.readResponse(vresp); corr != 2 || vresp.ErrorCode != 0 {
		t.Fatalf("after v0 auth: corr %d err %d", corr, vresp.ErrorCode)
	}
	// A second handshake after authentication is ILLEGAL_SASL_STATE.
	hs.Version = 1
	r.send(hs, 3)
	hresp = kmsg.NewPtrSASLHandshakeResponse()
	hresp.Version = 1
	if r.readResponse(hresp); hresp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("second handshake: %d", hresp.ErrorCode)
	}

	// A wrong password with v0 is answered by closing.
	r = dialRaw(t, addr)
	hs.Version = 0
	r.send(hs, 1)
	r.readResponse(kmsg.NewPtrSASLHandshakeResponse())
	tok = []byte("\x00alice\x00wrong")
	r.write(binary.BigEndian.AppendUint32(nil, uint32(len(tok))))
	r.write(tok)
	r.expectClosed()
}

// A failed authentication is answered at once and the close follows after
// connection.failed.authentication.delay.ms.
func TestSASLFailedAuthenticationDelaysClose(t *testing.T) {
	cfg, _, err := config.Parse([]byte(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:9093
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
controller.listener.names=CONTROLLER
log.dirs=x
connection.failed.authentication.delay.ms=300
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startSecured(t, saslListener("PLAIN"), Options{Config: cfg})
	r := dialRaw(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	r.send(hs, 1)
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	hresp.Version = 1
	r.readResponse(hresp)
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 2, []byte("\x00alice\x00wrong")
	r.send(au, 2)
	aresp := kmsg.NewPtrSASLAuthenticateResponse()
	aresp.Version = 2
	r.readResponse(aresp)
	answered := time.Now()
	if aresp.ErrorCode != kerr.SaslAuthenticationFailed.Code || aresp.ErrorMessage == nil || strings.Contains(*aresp.ErrorMessage, "wrong") {
		t.Fatalf("answer %d %v", aresp.ErrorCode, aresp.ErrorMessage)
	}
	r.expectClosed()
	// The delay is a lower bound Kafka promises; checked as one.
	if held := time.Since(answered); held < 250*time.Millisecond {
		t.Fatalf("closed %v after the failure, want at least the 300ms delay", held)
	}
}

// SASL over TLS: the handshake runs inside the TLS session.
func TestSASLOverTLS(t *testing.T) {
	set := testCerts(t)
	sec := saslListener("SCRAM-SHA-256")
	sec.Protocol, sec.KeystoreLocation = "SASL_SSL", set.Files.ServerPEM
	_, addr := startSecured(t, sec, Options{Deps: Deps{Metadata: staticMetadata{img: scramImage(t)}}})
	tc := &tls.Config{RootCAs: set.Pool(), ServerName: "127.0.0.1"}
	if err := saslOver(addr, tc, scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()); err != nil {
		t.Fatal(err)
	}
	if err := saslOver(addr, tc, scram.Auth{User: "alice", Pass: "x"}.AsSha256Mechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password over TLS: %v", err)
	}
}

// On a listener without SASL both SASL APIs answer ILLEGAL_SASL_STATE.
func TestSASLAPIsOnPlaintextListener(t *testing.T) {
	_, addr := startServer(t, defaultAPIs, Options{})
	r := dialRaw(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	r.send(hs, 1)
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	hresp.Version = 1
	if r.readResponse(hresp); hresp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake: %d", hresp.ErrorCode)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 1
	r.send(au, 2)
	aresp := kmsg.NewPtrSASLAuthenticateResponse()
	aresp.Version = 1
	if r.readResponse(aresp); aresp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("authenticate: %d", aresp.ErrorCode)
	}
}

func TestNewSASLServerErrors(t *testing.T) {
	s := &Server{}
	for _, c := range []struct {
		sec  *config.ListenerSecurity
		want string
	}{
		{&config.ListenerSecurity{Listener: "L", EnabledMechanisms: []string{"PLAIN"}}, "JAAS config has no login module"},
		{&config.ListenerSecurity{Listener: "L", EnabledMechanisms: []string{"PLAIN"}, JAAS: map[string]string{"PLAIN": `x.Y required user_a="b";`}}, "names login module x.Y"},
		{&config.ListenerSecurity{Listener: "L", EnabledMechanisms: []string{"PLAIN"}, JAAS: map[string]string{"PLAIN": plainLoginModule + ` required username="a";`}}, "no user_<name>"},
		{&config.ListenerSecurity{Listener: "L", EnabledMechanisms: []string{"GSSAPI"}}, "GSSAPI is not supported"},
		{&config.ListenerSecurity{Listener: "L"}, "no SASL mechanism"},
	} {
		if _, err := s.newSASLServer(c.sec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.sec, err, c.want)
		}
	}
}

// librdkafka before 2.6.1 sends the client nonce twice in its final
// message; the proof over that message must still be checked in full.
func TestScramLibrdkafkaNonceQuirk(t *testing.T) {
	img := scramImage(t)
	lookup := func(u string, m metadata.ScramMechanism) (metadata.ScramCredential, bool) {
		return img.ScramCredential(u, m)
	}
	salted, _ := metadata.SaltPassword(metadata.ScramSHA512, "alice-pw", []byte("salt of alice"), 4096)
	final := func(first, serverFirst, nonce string, salted []byte) string {
		wop := "c=biws,r=" + nonce
		authMsg := strings.TrimPrefix(first, "n,,") + "," + serverFirst + "," + wop
		ck := hmac.New(sha512.New, salted)
		ck.Write([]byte("Client Key"))
		clientKey := ck.Sum(nil)
		sk := sha512.Sum512(clientKey)
		sig := hmac.New(sha512.New, sk[:])
		sig.Write([]byte(authMsg))
		proof := sig.Sum(nil)
		for i := range proof {
			proof[i] ^= clientKey[i]
		}
		return wop + ",p=" + base64.StdEncoding.EncodeToString(proof)
	}
	for _, c := range []struct {
		name   string
		nonce  func(cn, sn string) string
		salted []byte
		ok     bool
	}{
		{"RFC form", func(cn, sn string) string { return sn }, salted, true},
		{"librdkafka form", func(cn, sn string) string { return cn + sn }, salted, true},
		{"librdkafka form, wrong password", func(cn, sn string) string { return cn + sn }, make([]byte, 64), false},
		{"client nonce only", func(cn, sn string) string { return cn }, salted, false},
		{"other prefix", func(cn, sn string) string { return "x" + sn }, salted, false},
	} {
		m := newScramMech("SCRAM-SHA-512", metadata.ScramSHA512, lookup)
		first := "n,,n=alice,r=clientnonce"
		out, done, err := m.step([]byte(first))
		if err != nil || done {
			t.Fatalf("%s: first step %v %v", c.name, done, err)
		}
		sn, _ := scramAttr(string(out), 'r')
		_, done, err = m.step([]byte(final(first, string(out), c.nonce("clientnonce", sn), c.salted)))
		if done != c.ok || (err == nil) != c.ok {
			t.Errorf("%s: done %v err %v, want ok %v", c.name, done, err, c.ok)
		}
		if c.ok && m.user() != "alice" {
			t.Errorf("%s: user %q", c.name, m.user())
		}
	}
}

// A client that connects to a SASL listener and says nothing is closed
// after connections.max.idle.ms, as any idle connection.
func TestSASLIdleBeforeAuthentication(t *testing.T) {
	_, addr := startSecured(t, saslListener("PLAIN"), Options{ConnectionsMaxIdle: 100 * time.Millisecond})
	r := dialRaw(t, addr)
	r.expectClosed()
}

// Kafka's delegation-token extension is refused: raftka issues no tokens,
// and the name it carries is a token id, not a user.
func TestScramTokenAuthRefused(t *testing.T) {
	img := scramImage(t)
	m := newScramMech("SCRAM-SHA-256", metadata.ScramSHA256, func(u string, mm metadata.ScramMechanism) (metadata.ScramCredential, bool) {
		return img.ScramCredential(u, mm)
	})
	if _, done, err := m.step([]byte("n,,n=alice,r=abc,tokenauth=true")); done || err == nil {
		t.Fatalf("tokenauth accepted: %v %v", done, err)
	}
}
