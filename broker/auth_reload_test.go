package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/test/certs"
	"github.com/rs/zerolog"
)

// rotate writes data to path and moves its modification time forward, so
// the change is seen however coarse the file system's clock.
func rotate(t *testing.T, path string, data []byte, step int) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil { // as rotation tools do
		t.Fatal(err)
	}
	at := time.Now().Add(time.Duration(step) * time.Minute)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func twoSets(t *testing.T) (a, b *certs.Set) {
	t.Helper()
	var err error
	if a, err = certs.New("client-a"); err != nil {
		t.Fatal(err)
	}
	if b, err = certs.New("client-b"); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func bothCAs(a, b *certs.Set) *x509.CertPool {
	p := a.Pool()
	p.AddCert(b.CA.Cert)
	return p
}

// A server certificate rotated on disk: the next handshake presents the
// new one, without a restart; a file that does not load keeps the last
// good certificate.
func TestServerCertificateReload(t *testing.T) {
	defer reloadCheckInterval.Store(reloadCheckInterval.Swap(0))
	a, b := twoSets(t)
	dir := t.TempDir()
	ks := filepath.Join(dir, "server.pem")
	rotate(t, ks, append(append([]byte{}, a.Server.KeyPEM...), a.Server.CertPEM...), 0)
	tc, err := ServerTLSConfig(&config.ListenerSecurity{Listener: "SSL", Protocol: "SSL", KeystoreLocation: ks, KeystoreType: "PEM", ClientAuth: "none"}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", tc)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()
	presented := func() *x509.Certificate {
		t.Helper()
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: bothCAs(a, b)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0]
	}
	if !presented().Equal(a.Server.Cert) {
		t.Fatal("the first certificate is not served")
	}
	rotate(t, ks, append(append([]byte{}, b.Server.KeyPEM...), b.Server.CertPEM...), 1)
	if !presented().Equal(b.Server.Cert) {
		t.Fatal("the rotated certificate is not served")
	}
	rotate(t, ks, []byte("-----BEGIN half written"), 2)
	if !presented().Equal(b.Server.Cert) {
		t.Fatal("a broken keystore replaced the last good certificate")
	}
	rotate(t, ks, append(append([]byte{}, a.Server.KeyPEM...), a.Server.CertPEM...), 3)
	if !presented().Equal(a.Server.Cert) {
		t.Fatal("the certificate after a broken one is not served")
	}
}

// The broker's outgoing side: a rotated client certificate (the keystore)
// and truststore are used by the next dial.
func TestDialerCertificateReload(t *testing.T) {
	defer reloadCheckInterval.Store(reloadCheckInterval.Swap(0))
	a, b := twoSets(t)
	dir := t.TempDir()
	ks, ts := filepath.Join(dir, "ks.pem"), filepath.Join(dir, "ca.pem")
	rotate(t, ks, append(append([]byte{}, a.Server.KeyPEM...), a.Server.CertPEM...), 0)
	rotate(t, ts, a.CA.CertPEM, 0)
	// The peer trusts both CAs for client certificates and serves a
	// certificate of the CA the dialer must trust.
	serve := func(set *certs.Set) (addr string, got chan *x509.Certificate, stop func()) {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{set.Server.TLS()},
			ClientCAs: bothCAs(a, b), ClientAuth: tls.RequireAndVerifyClientCert})
		if err != nil {
			t.Fatal(err)
		}
		got = make(chan *x509.Certificate, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			if err := c.(*tls.Conn).Handshake(); err == nil {
				got <- c.(*tls.Conn).ConnectionState().PeerCertificates[0]
			}
		}()
		return ln.Addr().String(), got, func() { ln.Close() }
	}
	sec := &config.ListenerSecurity{Listener: "SSL", Protocol: "SSL", KeystoreLocation: ks, KeystoreType: "PEM",
		TruststoreLocation: ts, TruststoreType: "PEM", EndpointIdentification: "https"}
	dial, err := listenerDialer(sec, "", "inter-broker", 5*time.Second, zerolog.Nop(), false)
	if err != nil {
		t.Fatal(err)
	}
	check := func(peer, client *certs.Set, wantOK bool) {
		t.Helper()
		addr, got, stop := serve(peer)
		defer stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := dial(ctx, addr)
		if !wantOK {
			if err == nil {
				c.Close()
				t.Fatal("dialed a peer whose CA is no longer trusted")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if cert := <-got; !cert.Equal(client.Server.Cert) {
			t.Fatalf("client certificate %v, want the one on disk", cert.Subject)
		}
	}
	check(a, a, true)
	check(b, a, false) // b's CA not trusted yet
	rotate(t, ks, append(append([]byte{}, b.Server.KeyPEM...), b.Server.CertPEM...), 1)
	rotate(t, ts, b.CA.CertPEM, 1)
	check(b, b, true)
	check(a, b, false)
}
