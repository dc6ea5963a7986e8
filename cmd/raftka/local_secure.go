package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// `raftka local --secure`: the same cluster, secured as a production Kafka
// cluster is, so a user can try the secured setup in one command. The
// client listener is SASL_SSL with SCRAM-SHA-512 and SCRAM-SHA-256;
// brokers fetch from each other over it as admin; ACLs are on
// (StandardAuthorizer, admin the only super user, nothing else allowed
// without an ACL). The TLS material is a test CA made on the first start
// and kept in <dir>/tls (valid for a year; delete the directory to make a
// new one), and admin's password is made once and kept in
// <dir>/admin.password. The controller listener stays PLAINTEXT on
// loopback.

// secureLocal is what --secure adds to a local plan.
type secureLocal struct {
	caPEM, keystorePEM string // files
	password           string // admin's
	clientProps        string // a --command-config file for admin
}

// prepareSecureLocal makes (or finds) the CA, the brokers' keystore and
// admin's password under dir.
func prepareSecureLocal(dir string, hosts []string) (*secureLocal, error) {
	tlsDir := filepath.Join(dir, "tls")
	sl := &secureLocal{
		caPEM:       filepath.Join(tlsDir, "ca.pem"),
		keystorePEM: filepath.Join(tlsDir, "broker-keystore.pem"),
		clientProps: filepath.Join(dir, "admin-client.properties"),
	}
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		return nil, err
	}
	_, errCA := os.Stat(sl.caPEM)
	_, errKS := os.Stat(sl.keystorePEM)
	if errors.Is(errCA, os.ErrNotExist) || errors.Is(errKS, os.ErrNotExist) {
		ca, ks, err := makeLocalCA(hosts)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(sl.caPEM, ca, 0o644); err != nil {
			return nil, err
		}
		// Readable by others: a container's user reads it through a bind
		// mount (deploy/docker-compose.secure.yml). It is test material.
		if err := os.WriteFile(sl.keystorePEM, ks, 0o644); err != nil {
			return nil, err
		}
	}
	pwPath := filepath.Join(dir, "admin.password")
	if b, err := os.ReadFile(pwPath); err == nil && strings.TrimSpace(string(b)) != "" {
		sl.password = strings.TrimSpace(string(b))
	} else {
		var r [12]byte
		if _, err := rand.Read(r[:]); err != nil {
			return nil, err
		}
		sl.password = hex.EncodeToString(r[:])
		if err := os.WriteFile(pwPath, []byte(sl.password+"\n"), 0o600); err != nil {
			return nil, err
		}
	}
	props := "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n" +
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="` + sl.password + `";` + "\n" +
		"ssl.truststore.type=PEM\nssl.truststore.location=" + sl.caPEM + "\n"
	if err := os.WriteFile(sl.clientProps, []byte(props), 0o600); err != nil {
		return nil, err
	}
	return sl, nil
}

// properties are the secured node's keys, appended after the plain ones
// (a later key wins).
func (sl *secureLocal) properties(p localPlan, id int) string {
	port := p.clientBase + id - 1
	var b strings.Builder
	fmt.Fprintf(&b, "# --secure: SASL_SSL with SCRAM, ACLs on\n")
	fmt.Fprintf(&b, "listeners=SASL_SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d\n", port, p.ctrlBase+id-1)
	fmt.Fprintf(&b, "advertised.listeners=SASL_SSL://localhost:%d\n", port)
	// The controller listener too: with an authorizer on, Raft and the
	// broker RPCs need a principal with CLUSTER_ACTION, which a plaintext
	// listener's User:ANONYMOUS is not.
	fmt.Fprintf(&b, "listener.security.protocol.map=CONTROLLER:SASL_SSL,SASL_SSL:SASL_SSL\n")
	fmt.Fprintf(&b, "inter.broker.listener.name=SASL_SSL\n")
	fmt.Fprintf(&b, "ssl.keystore.type=PEM\nssl.keystore.location=%s\n", filepath.ToSlash(sl.keystorePEM))
	fmt.Fprintf(&b, "ssl.truststore.type=PEM\nssl.truststore.location=%s\n", filepath.ToSlash(sl.caPEM))
	fmt.Fprintf(&b, "sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256\n")
	fmt.Fprintf(&b, "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512\n")
	fmt.Fprintf(&b, "sasl.mechanism.controller.protocol=SCRAM-SHA-512\n")
	for _, l := range []string{"sasl_ssl", "controller"} {
		fmt.Fprintf(&b, "listener.name.%s.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"%s\";\n", l, sl.password)
	}
	fmt.Fprintf(&b, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n")
	fmt.Fprintf(&b, "super.users=User:admin\n")
	fmt.Fprintf(&b, "allow.everyone.if.no.acl.found=false\n")
	return b.String()
}

// formatArgs are storage format's arguments for the first user.
func (sl *secureLocal) formatArgs() []string {
	return []string{
		"--add-scram", "SCRAM-SHA-512=[name=admin,password=" + sl.password + "]",
		"--add-scram", "SCRAM-SHA-256=[name=admin,password=" + sl.password + "]",
	}
}

// howTo is what the supervisor prints once the nodes are started.
func (sl *secureLocal) howTo(p localPlan) string {
	bs := localBootstrap(p)
	return fmt.Sprintf(`secured cluster (SASL_SSL, SCRAM, ACLs on); admin is the super user (password in %s).
  kcat:   kcat -b %s -X security.protocol=SASL_SSL -X ssl.ca.location=%s -X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=admin -X sasl.password=%s -L
  raftka: raftka topics list --bootstrap-server %s --command-config %s
  users:  raftka users scram set --bootstrap-server %s --command-config %s --user alice --add-config 'SCRAM-SHA-512=[password=alice-secret]'`,
		filepath.Join(p.dir, "admin.password"), bs, sl.caPEM, sl.password, bs, sl.clientProps, bs, sl.clientProps)
}

// makeLocalCA makes a CA and a broker certificate for hosts (names and IP
// addresses) signed by it, valid for a year: the CA as PEM, and the
// broker's key and chain as one PEM keystore.
func makeLocalCA(hosts []string) (caPEM, keystorePEM []byte, err error) {
	var dns []string
	var ips []net.IP
	for _, h := range hosts {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	if len(dns)+len(ips) == 0 {
		return nil, nil, errors.New("--tls-hosts names no host")
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial := func() *big.Int {
		n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
		return n
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "raftka local test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: dns, IPAddresses: ips,
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature,
		// Brokers present it to each other too.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	keystorePEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	keystorePEM = append(keystorePEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	keystorePEM = append(keystorePEM, caPEM...)
	return caPEM, keystorePEM, nil
}
