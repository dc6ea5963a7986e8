package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/test/certs"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startSecured serves the default table on one loopback listener with the
// given security settings.
func startSecured(t testing.TB, sec *config.ListenerSecurity, opts Options) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sec.Listener = "CLIENT"
	opts.Listeners = []Listener{{Name: "CLIENT", Listener: ln, Security: sec}}
	opts.Logger = testLogger(t)
	s, err := newServer(opts, defaultAPIs)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return s, ln.Addr().String()
}

func testCerts(t testing.TB) *certs.Set {
	t.Helper()
	set, err := certs.New("client")
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return set
}

// apiVersionsOver asks for ApiVersions through a kgo client with the given
// TLS config (nil: plaintext).
func apiVersionsOver(addr string, tc *tls.Config, extra ...kgo.Opt) error {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		return errors.New("ApiVersions answered an error or no keys")
	}
	return nil
}

func TestTLSKeystoreForms(t *testing.T) {
	set := testCerts(t)
	f := set.Files
	cases := []struct {
		name string
		sec  config.ListenerSecurity
	}{
		{"PEM file", config.ListenerSecurity{KeystoreType: "PEM", KeystoreLocation: f.ServerPEM}},
		{"PEM file, type from content", config.ListenerSecurity{KeystoreLocation: f.ServerPEM}},
		{"inline PEM", config.ListenerSecurity{KeystoreType: "PEM", KeystoreCertificateChain: string(set.Server.CertPEM), KeystoreKey: string(set.Server.KeyPEM)}},
		{"PKCS12", config.ListenerSecurity{KeystoreType: "PKCS12", KeystoreLocation: f.ServerP12, KeystorePassword: certs.Password}},
		{"PKCS12, type from content", config.ListenerSecurity{KeystoreLocation: f.ServerP12, KeystorePassword: certs.Password}},
		{"PKCS12, key password the store's", config.ListenerSecurity{KeystoreLocation: f.ServerP12, KeystorePassword: certs.Password, KeyPassword: certs.Password}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.sec.Protocol = "SSL"
			_, addr := startSecured(t, &c.sec, Options{})
			if err := apiVersionsOver(addr, &tls.Config{RootCAs: set.Pool(), ServerName: "127.0.0.1"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTLSKeystoreErrors(t *testing.T) {
	set := testCerts(t)
	f := set.Files
	for _, c := range []struct {
		name string
		sec  config.ListenerSecurity
		want string
	}{
		{"missing file", config.ListenerSecurity{KeystoreLocation: f.ServerPEM + ".missing"}, "no such file"},
		{"wrong PKCS12 password", config.ListenerSecurity{KeystoreLocation: f.ServerP12, KeystorePassword: "nope"}, "PKCS12"},
		{"key of another certificate", config.ListenerSecurity{KeystoreType: "PEM", KeystoreCertificateChain: string(set.Server.CertPEM), KeystoreKey: string(set.Client.KeyPEM)}, "private key does not match"},
		{"encrypted key", config.ListenerSecurity{KeystoreType: "PEM", KeystoreCertificateChain: string(set.Server.CertPEM), KeystoreKey: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"}, "encrypted PEM private keys are not supported"},
		{"PEM key password", config.ListenerSecurity{KeystoreLocation: f.ServerPEM, KeyPassword: "x"}, "ssl.key.password"},
		{"PKCS12 key password of its own", config.ListenerSecurity{KeystoreLocation: f.ServerP12, KeystorePassword: certs.Password, KeyPassword: "other"}, "ssl.key.password"},
		{"bad truststore", config.ListenerSecurity{KeystoreLocation: f.ServerPEM, TruststoreCertificates: "not pem", TruststoreType: "PEM"}, "no PEM certificate"},
		{"protocol hole", config.ListenerSecurity{KeystoreLocation: f.ServerPEM, EnabledProtocols: []string{"TLSv1.1", "TLSv1.3"}}, "contiguous"},
		{"unknown suite", config.ListenerSecurity{KeystoreLocation: f.ServerPEM, CipherSuites: []string{"TLS_NOPE"}}, "unknown cipher suite"},
		{"insecure suite", config.ListenerSecurity{KeystoreLocation: f.ServerPEM, CipherSuites: []string{"TLS_RSA_WITH_RC4_128_SHA"}}, "insecure"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.sec.Protocol, c.sec.Listener = "SSL", "CLIENT"
			_, err := ServerTLSConfig(&c.sec, zerolog.Nop())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

func TestTLSVersionsAndSuites(t *testing.T) {
	lo, hi, err := tlsVersions([]string{"TLSv1.3", "TLSv1.2"})
	if err != nil || lo != tls.VersionTLS12 || hi != tls.VersionTLS13 {
		t.Errorf("1.2+1.3: %x %x %v", lo, hi, err)
	}
	lo, hi, err = tlsVersions([]string{"TLSv1.3"})
	if err != nil || lo != tls.VersionTLS13 || hi != tls.VersionTLS13 {
		t.Errorf("1.3: %x %x %v", lo, hi, err)
	}
	ids, err := cipherSuites([]string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"}, tls.VersionTLS13)
	if err != nil || len(ids) != 1 || ids[0] != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 {
		t.Errorf("suites %v %v", ids, err)
	}
	if ids, err := cipherSuites([]string{"TLS_AES_128_GCM_SHA256"}, tls.VersionTLS13); err != nil || ids != nil {
		t.Errorf("1.3 suites alone: %v %v", ids, err)
	}
	if _, err := cipherSuites([]string{"TLS_AES_128_GCM_SHA256"}, tls.VersionTLS12); err == nil {
		t.Error("1.3 suites alone with TLS 1.2 only: no error")
	}
}

// A cipher suite list restricts TLS 1.2: a client offering only another
// suite fails the handshake.
func TestTLSCipherSuitesApplied(t *testing.T) {
	set := testCerts(t)
	sec := &config.ListenerSecurity{Protocol: "SSL", KeystoreLocation: set.Files.ServerPEM,
		EnabledProtocols: []string{"TLSv1.2"}, CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}}
	s, addr := startSecured(t, sec, Options{})
	with := func(suite uint16) *tls.Config {
		return &tls.Config{RootCAs: set.Pool(), ServerName: "127.0.0.1", MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{suite}}
	}
	if err := apiVersionsOver(addr, with(tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)); err != nil {
		t.Fatalf("allowed suite: %v", err)
	}
	if err := apiVersionsOver(addr, with(tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305)); err == nil {
		t.Fatal("a suite outside ssl.cipher.suites was accepted")
	}
	waitFor(t, "tls_handshake counted", func() bool { return s.Counters().RejectedFor(ReasonTLSHandshake) >= 1 })
}

func TestTLSEnabledProtocols(t *testing.T) {
	set := testCerts(t)
	sec := &config.ListenerSecurity{Protocol: "SSL", KeystoreLocation: set.Files.ServerPEM, EnabledProtocols: []string{"TLSv1.3"}}
	_, addr := startSecured(t, sec, Options{})
	if err := apiVersionsOver(addr, &tls.Config{RootCAs: set.Pool(), ServerName: "127.0.0.1", MaxVersion: tls.VersionTLS12}); err == nil {
		t.Fatal("a TLS 1.2 client was served by a TLSv1.3-only listener")
	}
	if err := apiVersionsOver(addr, &tls.Config{RootCAs: set.Pool(), ServerName: "127.0.0.1"}); err != nil {
		t.Fatalf("TLS 1.3 client: %v", err)
	}
}

func TestTLSClientAuth(t *testing.T) {
	set := testCerts(t)
	untrusted, err := certs.Untrusted()
	if err != nil {
		t.Fatal(err)
	}
	client := set.Client.TLS()
	stranger := untrusted.TLS()
	for _, c := range []struct {
		mode       string
		cert       *tls.Certificate
		wantServed bool
	}{
		{"required", &client, true},
		{"required", nil, false},
		{"required", &stranger, false},
		{"requested", nil, true},
		{"requested", &client, true},
		{"requested", &stranger, false},
		{"none", nil, true},
	} {
		name := c.mode + "/"
		switch c.cert {
		case nil:
			name += "no certificate"
		case &client:
			name += "trusted certificate"
		default:
			name += "untrusted certificate"
		}
		t.Run(name, func(t *testing.T) {
			sec := &config.ListenerSecurity{Protocol: "SSL", KeystoreLocation: set.Files.ServerP12, KeystorePassword: certs.Password,
				TruststoreLocation: set.Files.TrustP12, TruststorePassword: certs.Password, ClientAuth: c.mode}
			s, addr := startSecured(t, sec, Options{})
			tc := &tls.Config{RootCAs: set.Pool(), ServerName: "127.0.0.1"}
			if c.cert != nil {
				// Sent whatever CAs the server names (a Go client would
				// otherwise send no certificate the server cannot verify).
				cert := c.cert
				tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
			}
			err := apiVersionsOver(addr, tc)
			if served := err == nil; served != c.wantServed {
				t.Fatalf("served %v (err %v), want %v", served, err, c.wantServed)
			}
			if !c.wantServed {
				waitFor(t, "tls_handshake counted", func() bool { return s.Counters().RejectedFor(ReasonTLSHandshake) >= 1 })
			}
		})
	}
}

// A client that does not trust the broker's certificate refuses it.
func TestTLSUntrustedServerCertificate(t *testing.T) {
	set := testCerts(t)
	other := testCerts(t)
	_, addr := startSecured(t, &config.ListenerSecurity{Protocol: "SSL", KeystoreLocation: set.Files.ServerPEM}, Options{})
	err := apiVersionsOver(addr, &tls.Config{RootCAs: other.Pool(), ServerName: "127.0.0.1"})
	var unknown x509UnknownAuthority
	if err == nil || !errors.As(err, &unknown) {
		t.Fatalf("err %v, want an unknown-authority error", err)
	}
}

// A plaintext Kafka client on a TLS port is closed, logged and counted as
// not_tls, and the listener goes on serving TLS clients.
func TestPlaintextClientOnTLSListener(t *testing.T) {
	set := testCerts(t)
	s, addr := startSecured(t, &config.ListenerSecurity{Protocol: "SSL", KeystoreLocation: set.Files.ServerPEM}, Options{})
	r := dialRaw(t, addr)
	r.send(kmsg.NewPtrApiVersionsRequest(), 1)
	r.expectClosed()
	waitFor(t, "not_tls counted", func() bool { return s.Counters().RejectedFor(ReasonNotTLS) == 1 })
	if n := s.Counters().RejectedFor(ReasonTLSHandshake); n != 0 {
		t.Errorf("tls_handshake %d, want 0: a plaintext client is not a handshake failure", n)
	}
	if err := apiVersionsOver(addr, &tls.Config{RootCAs: set.Pool(), ServerName: "127.0.0.1"}); err != nil {
		t.Fatalf("TLS client after the plaintext one: %v", err)
	}
}

type x509UnknownAuthority = x509.UnknownAuthorityError

// DescribeConfigs shows the broker-wide security keys as the file gave
// them, read-only, passwords hidden.
func TestDescribeSecurityConfigs(t *testing.T) {
	s := adminServer(t, configImage(t), nil, testConfig(t, "ssl.keystore.location=/etc/k.p12\nssl.keystore.password=secret\n"))
	resp := call[*kmsg.DescribeConfigsResponse](t, s, describeReq(4, true, false,
		resource(kmsg.ConfigResourceTypeBroker, "1", "ssl.keystore.location", "ssl.keystore.password", "ssl.client.auth")))
	got := configsByName(resp.Resources[0])
	if e := got["ssl.keystore.location"]; e.Value == nil || *e.Value != "/etc/k.p12" || e.Source != kmsg.ConfigSourceStaticBrokerConfig || !e.ReadOnly {
		t.Errorf("ssl.keystore.location: %+v", e)
	}
	if e := got["ssl.keystore.password"]; e.Value != nil || !e.IsSensitive || e.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("ssl.keystore.password: %+v", e)
	}
	if e := got["ssl.client.auth"]; e.Value == nil || *e.Value != "none" || e.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("ssl.client.auth: %+v", e)
	}
}

// An expired client certificate fails mTLS; a valid one makes the
// connection's principal its subject DN, as Kafka's default principal
// builder does.
func TestTLSClientCertificatePrincipalAndExpiry(t *testing.T) {
	set := testCerts(t)
	expired, err := set.ExpiredClient()
	if err != nil {
		t.Fatal(err)
	}
	sec := &config.ListenerSecurity{Protocol: "SSL", KeystoreLocation: set.Files.ServerPEM, TruststoreLocation: set.Files.CAPEM, ClientAuth: "required"}
	s, addr := startSecured(t, sec, Options{})
	exp := expired.TLS()
	tc := &tls.Config{RootCAs: set.Pool(), ServerName: "127.0.0.1", GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &exp, nil }}
	if err := apiVersionsOver(addr, tc); err == nil {
		t.Fatal("an expired client certificate was accepted")
	}
	waitFor(t, "tls_handshake counted", func() bool { return s.Counters().RejectedFor(ReasonTLSHandshake) >= 1 })

	for _, c := range []struct {
		rules string
		want  string // "" for a refused connection
	}{
		{"", "User:CN=client,O=raftka tests"}, // Kafka's DEFAULT
		{"RULE:^CN=([^,]*),O=.*$/$1/U", "User:CLIENT"},
		{"RULE:^CN=nobody.*$/x/", ""},
	} {
		var rules []config.PrincipalRule
		if c.rules != "" {
			if rules, err = config.ParsePrincipalRules(c.rules); err != nil {
				t.Fatal(err)
			}
		}
		got, served := principalOf(t, set, rules)
		if c.want == "" && served {
			t.Errorf("%s: served as %q, want refused", c.rules, got)
		}
		if c.want != "" && got != c.want {
			t.Errorf("%s: principal %q, want %q", c.rules, got, c.want)
		}
	}
}

// principalOf connects with the set's client certificate to an mTLS
// listener with the given mapping rules and returns the principal a
// handler sees, or served false when the connection was refused.
func principalOf(t *testing.T, set *certs.Set, rules []config.PrincipalRule) (string, bool) {
	t.Helper()
	sec := &config.ListenerSecurity{Listener: "CLIENT", Protocol: "SSL", KeystoreLocation: set.Files.ServerPEM, TruststoreLocation: set.Files.CAPEM, ClientAuth: "required", PrincipalRules: rules}
	principal := make(chan string, 1)
	tb := testTable(t, apiEntry{key: apiVersionsKey, min: 0, max: 4, handle: func(_ context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
		select {
		case principal <- rc.conn.principal:
		default:
		}
		return kreq.(*kmsg.ApiVersionsRequest).ResponseKind(), nil
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := newServer(Options{Logger: testLogger(t), Listeners: []Listener{{Name: "CLIENT", Listener: ln, Security: sec}}}, tb)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve() }()
	defer srv.Close()
	tc := &tls.Config{RootCAs: set.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{set.Client.TLS()}}
	conn, err := tls.Dial("tcp", ln.Addr().String(), tc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(testDeadline))
	if _, err := conn.Write(encodeRequest(kmsg.NewPtrApiVersionsRequest(), 1)); err != nil {
		return "", false
	}
	var sz [4]byte
	if _, err := io.ReadFull(conn, sz[:]); err != nil {
		return "", false // refused: closed without an answer
	}
	select {
	case p := <-principal:
		return p, true
	case <-time.After(testDeadline):
		t.Fatal("answered but the handler saw nothing")
		return "", false
	}
}
