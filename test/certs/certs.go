package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// Password protects the PKCS12 stores Write makes.
const Password = "test-store-password"

// Pair is one certificate and its key.
type Pair struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte // the certificate, then its issuer unless self-signed
	KeyPEM  []byte // PKCS#8, unencrypted
}

// TLS is the pair as a tls.Certificate.
func (p Pair) TLS() tls.Certificate {
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		panic(err) // made by this package; cannot fail
	}
	return c
}

// Set is a CA with a server and a client certificate it signed.
type Set struct {
	CA     Pair
	Server Pair // for 127.0.0.1, ::1 and localhost; server and client use
	Client Pair // CN=client, for mTLS
	Files  Files
}

// Files are the set written by Write.
type Files struct {
	CAPEM             string // the CA certificate (a PEM truststore)
	ServerPEM         string // server key and chain in one file (a PEM keystore)
	ServerCertPEM     string // server chain alone
	ServerKeyPEM      string // server key alone
	ServerP12         string // PKCS12 keystore, Password
	TrustP12          string // PKCS12 truststore holding the CA, Password
	ClientCertPEM     string
	ClientKeyPEM      string
	ClientP12         string
	ClientCombinedPEM string
}

// New makes a fresh CA, server and client certificate valid from an hour
// ago for a day.
func New(clientCN string) (*Set, error) {
	ca, err := issue(nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "raftka test CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	})
	if err != nil {
		return nil, err
	}
	srv, err := issue(&ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		// A broker's keystore is also its client certificate towards
		// other brokers' mTLS listeners.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	cl, err := issue(&ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: clientCN, Organization: []string{"raftka tests"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	return &Set{CA: ca, Server: srv, Client: cl}, nil
}

// Untrusted makes a self-signed server certificate for the loopback
// addresses that no Set's CA vouches for.
func Untrusted() (Pair, error) {
	return issue(nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
}

// Pool is a cert pool holding the CA.
func (s *Set) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.CA.Cert)
	return p
}

// Write puts the set into dir in every form and fills s.Files.
func (s *Set) Write(dir string) error {
	f := &s.Files
	write := func(dst *string, name string, data []byte) error {
		*dst = filepath.Join(dir, name)
		return os.WriteFile(*dst, data, 0o600)
	}
	srvP12, err := pkcs12.Modern.Encode(s.Server.Key, s.Server.Cert, []*x509.Certificate{s.CA.Cert}, Password)
	if err != nil {
		return err
	}
	clP12, err := pkcs12.Modern.Encode(s.Client.Key, s.Client.Cert, []*x509.Certificate{s.CA.Cert}, Password)
	if err != nil {
		return err
	}
	trustP12, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{s.CA.Cert}, Password)
	if err != nil {
		return err
	}
	for _, w := range []struct {
		dst  *string
		name string
		data []byte
	}{
		{&f.CAPEM, "ca.pem", pemCert(s.CA.Cert)},
		{&f.ServerPEM, "server-keystore.pem", append(append([]byte{}, s.Server.KeyPEM...), s.Server.CertPEM...)},
		{&f.ServerCertPEM, "server.crt", s.Server.CertPEM},
		{&f.ServerKeyPEM, "server.key", s.Server.KeyPEM},
		{&f.ServerP12, "server.p12", srvP12},
		{&f.TrustP12, "truststore.p12", trustP12},
		{&f.ClientCertPEM, "client.crt", s.Client.CertPEM},
		{&f.ClientKeyPEM, "client.key", s.Client.KeyPEM},
		{&f.ClientP12, "client.p12", clP12},
		{&f.ClientCombinedPEM, "client-keystore.pem", append(append([]byte{}, s.Client.KeyPEM...), s.Client.CertPEM...)},
	} {
		if err := write(w.dst, w.name, w.data); err != nil {
			return err
		}
	}
	return nil
}

var serial atomic.Int64

func issue(parent *Pair, tmpl *x509.Certificate) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano() + serial.Add(1))
	if tmpl.NotAfter.IsZero() {
		tmpl.NotBefore = time.Now().Add(-time.Hour)
		tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	}
	signer, signerCert := key, tmpl
	if parent != nil {
		signer, signerCert = parent.Key, parent.Cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		return Pair{}, fmt.Errorf("certs: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Pair{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	p := Pair{Cert: cert, Key: key, CertPEM: pemCert(cert), KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}
	if parent != nil {
		p.CertPEM = append(p.CertPEM, pemCert(parent.Cert)...)
	}
	return p, nil
}

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// ExpiredClient is a client certificate the set's CA signed that expired
// an hour ago.
func (s *Set) ExpiredClient() (Pair, error) {
	return issue(&s.CA, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "expired"},
		NotBefore:   time.Now().Add(-48 * time.Hour),
		NotAfter:    time.Now().Add(-time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}
