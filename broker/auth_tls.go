package broker

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/raftka/raftka/broker/config"
	"github.com/rs/zerolog"
	"software.sslmate.com/src/go-pkcs12"
)

// TLS for SSL and SASL_SSL listeners, from Kafka's ssl.* keys: keystores
// and truststores as PEM (files, or inline certificate chain and key) or
// PKCS12 (decoded by go-pkcs12; JKS is refused by the config package).

// ServerTLSConfig builds the server side of a TLS listener. Its files are
// read when the listener is bound, and again when they change
// (auth_reload.go); log hears of reloads.
func ServerTLSConfig(s *config.ListenerSecurity, log zerolog.Logger) (*tls.Config, error) {
	r, tc, err := newTLSReloader(tlsFiles(s), func() (*tls.Config, error) { return serverTLSConfig(s) },
		log.With().Str("listener", s.Listener).Logger())
	if err != nil || r == nil {
		return tc, err
	}
	return r.serverConfig(), nil
}

func serverTLSConfig(s *config.ListenerSecurity) (*tls.Config, error) {
	cert, err := loadKeystore(s)
	if err != nil {
		return nil, fmt.Errorf("listener %s keystore: %w", s.Listener, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}}
	if s.TruststoreLocation != "" || s.TruststoreCertificates != "" {
		pool, err := loadTruststore(s)
		if err != nil {
			return nil, fmt.Errorf("listener %s truststore: %w", s.Listener, err)
		}
		tc.ClientCAs = pool
	}
	switch s.ClientAuth {
	case "required":
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	case "requested":
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		tc.ClientAuth = tls.NoClientCert
	}
	if tc.MinVersion, tc.MaxVersion, err = tlsVersions(s.EnabledProtocols); err != nil {
		return nil, fmt.Errorf("listener %s: %w", s.Listener, err)
	}
	if tc.CipherSuites, err = cipherSuites(s.CipherSuites, tc.MaxVersion); err != nil {
		return nil, fmt.Errorf("listener %s: %w", s.Listener, err)
	}
	return tc, nil
}

var tlsVersionByName = map[string]uint16{
	"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11, "TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13,
}

// tlsVersions turns ssl.enabled.protocols into Go's range. Go enables a
// contiguous range only, so a list with a hole is refused rather than
// silently widened.
func tlsVersions(names []string) (lo, hi uint16, err error) {
	if len(names) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	var vs []uint16
	for _, n := range names {
		v, ok := tlsVersionByName[n]
		if !ok {
			return 0, 0, fmt.Errorf("ssl.enabled.protocols: unknown protocol %q", n)
		}
		vs = append(vs, v)
	}
	slices.Sort(vs)
	vs = slices.Compact(vs)
	for i := 1; i < len(vs); i++ {
		if vs[i] != vs[i-1]+1 {
			return 0, 0, fmt.Errorf("ssl.enabled.protocols %s: Go enables a contiguous range of versions only", strings.Join(names, ","))
		}
	}
	return vs[0], vs[len(vs)-1], nil
}

// cipherSuites maps ssl.cipher.suites (IANA names, which JSSE uses too) to
// Go's ids. TLS 1.3 suites are not configurable in Go: naming them is
// accepted (they are on), but a list of TLS 1.3 suites alone while TLS 1.2
// is enabled would leave 1.2 with none, so it is refused.
func cipherSuites(names []string, maxVersion uint16) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	byName := map[string]*tls.CipherSuite{}
	for _, cs := range tls.CipherSuites() {
		byName[cs.Name] = cs
	}
	insecure := map[string]bool{}
	for _, cs := range tls.InsecureCipherSuites() {
		insecure[cs.Name] = true
	}
	var ids []uint16
	tls13Only := true
	for _, n := range names {
		cs, ok := byName[n]
		switch {
		case insecure[n]:
			return nil, fmt.Errorf("ssl.cipher.suites: %s is insecure and not served", n)
		case !ok:
			return nil, fmt.Errorf("ssl.cipher.suites: unknown cipher suite %q", n)
		}
		if slices.Contains(cs.SupportedVersions, tls.VersionTLS13) && len(cs.SupportedVersions) == 1 {
			continue
		}
		tls13Only = false
		ids = append(ids, cs.ID)
	}
	if tls13Only && maxVersion >= tls.VersionTLS13 {
		return nil, nil
	}
	if len(ids) == 0 {
		return nil, errors.New("ssl.cipher.suites names no suite for the enabled TLS versions below 1.3")
	}
	return ids, nil
}

// loadKeystore returns the listener's certificate chain and key.
func loadKeystore(s *config.ListenerSecurity) (tls.Certificate, error) {
	// ssl.key.password: Go reads neither encrypted PEM keys nor PKCS12 key
	// entries under a password of their own, so a value that would need
	// either is refused rather than ignored.
	if s.KeyPassword != "" && (s.KeystoreCertificateChain != "" || s.KeyPassword != s.KeystorePassword) {
		return tls.Certificate{}, errors.New("ssl.key.password: a key under its own password (encrypted PEM, or a PKCS12 key entry with another password than the store's) is not supported; store the key unencrypted in PEM, or under the keystore's password in PKCS12")
	}
	if s.KeystoreCertificateChain != "" {
		return pemKeyPair([]byte(s.KeystoreCertificateChain), []byte(s.KeystoreKey))
	}
	data, err := os.ReadFile(s.KeystoreLocation)
	if err != nil {
		return tls.Certificate{}, err
	}
	if keystoreIsPEM(s.KeystoreType, data) {
		if s.KeyPassword != "" {
			return tls.Certificate{}, errors.New("ssl.key.password: encrypted PEM keys are not supported; store the key unencrypted")
		}
		// Kafka's PEM keystore file holds the key and the chain together.
		return pemKeyPair(data, data)
	}
	key, leaf, chain, err := pkcs12.DecodeChain(data, s.KeystorePassword)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: PKCS12: %w", s.KeystoreLocation, err)
	}
	cert := tls.Certificate{PrivateKey: key, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	if signer, ok := key.(crypto.Signer); !ok || !publicKeysEqual(signer.Public(), leaf.PublicKey) {
		return tls.Certificate{}, fmt.Errorf("%s: the private key does not match the certificate", s.KeystoreLocation)
	}
	return cert, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

// keystoreIsPEM decides the format: the type when given, else the content
// (a PEM file starts its blocks with "-----BEGIN").
func keystoreIsPEM(typ string, data []byte) bool {
	if typ != "" {
		return typ == "PEM"
	}
	return strings.Contains(string(data), "-----BEGIN")
}

// pemKeyPair parses a PEM chain and key. An encrypted key is refused with
// a clear error: Go's standard library does not decrypt PKCS#8.
func pemKeyPair(chain, key []byte) (tls.Certificate, error) {
	for rest := key; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "ENCRYPTED PRIVATE KEY" || b.Headers["Proc-Type"] != "" {
			return tls.Certificate{}, errors.New("encrypted PEM private keys are not supported; give the key unencrypted (file permissions protect it) or use a PKCS12 keystore")
		}
	}
	return tls.X509KeyPair(chain, key)
}

// loadTruststore returns the CAs that verify peer certificates.
func loadTruststore(s *config.ListenerSecurity) (*x509.CertPool, error) {
	data := []byte(s.TruststoreCertificates)
	if s.TruststoreLocation != "" {
		var err error
		if data, err = os.ReadFile(s.TruststoreLocation); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	if keystoreIsPEM(s.TruststoreType, data) {
		if !pool.AppendCertsFromPEM(data) {
			return nil, errors.New("no PEM certificate found")
		}
		return pool, nil
	}
	certs, err := pkcs12.DecodeTrustStore(data, s.TruststorePassword)
	if err != nil {
		return nil, fmt.Errorf("%s: PKCS12: %w", s.TruststoreLocation, err)
	}
	if len(certs) == 0 {
		return nil, errors.New("the PKCS12 truststore holds no certificate")
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}
