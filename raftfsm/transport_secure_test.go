package raftfsm

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/test/certs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// mTLS on the controller listener, as a stand-in for what cmd wires
// (broker.ControllerHandshake): the principal is the certificate's CN.
// The nodes present the server certificate (CN=localhost, the super user);
// a client presenting the CN=intruder certificate of the same CA is
// authenticated but not authorized.
func tlsSecurity(t *testing.T) (*certs.Set, Handshake, Dialer) {
	t.Helper()
	set, err := certs.New("intruder")
	if err != nil {
		t.Fatal(err)
	}
	srv := &tls.Config{Certificates: []tls.Certificate{set.Server.TLS()}, ClientCAs: set.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	hs := func(ctx context.Context, c net.Conn) (net.Conn, string, error) {
		tc := tls.Server(c, srv)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, "", err
		}
		return tc, "User:" + tc.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
	}
	cl := &tls.Config{Certificates: []tls.Certificate{set.Server.TLS()}, RootCAs: set.Pool()}
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		var d tls.Dialer
		d.Config = cl
		return d.DialContext(ctx, "tcp", addr)
	}
	return set, hs, dial
}

func TestControllerListenerTLSAndClusterAction(t *testing.T) {
	set, hs, dial := tlsSecurity(t)
	tc := startCluster(t, 3, func(c *Config) {
		c.Handshake, c.Dial = hs, dial
		c.Authorizer = &metadata.Authorizer{SuperUsers: map[string]bool{"User:localhost": true}}
	})
	// Raft elects and commits over TLS, and a broker (the super user)
	// registers through any node, forwarding included.
	leader := tc.leader(10 * time.Second)
	cl := NewControllerClient(ClientConfig{Voters: tc.voters, Dial: dial, Logger: testLogger()})
	defer cl.Close()
	ctx := ctxT(t, 10*time.Second)
	register := func(id int32) *kmsg.BrokerRegistrationRequest {
		reg := kmsg.NewPtrBrokerRegistrationRequest()
		reg.BrokerID, reg.ClusterID = id, testClusterID
		reg.IncarnationID = [16]byte{byte(id)}
		return reg
	}
	mustRegister := func(id int32) {
		t.Helper()
		resp, err := cl.RegisterBroker(ctx, register(id))
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("register broker %d as the super user: %v, error code %d", id, err, resp.ErrorCode)
		}
	}
	mustRegister(1)
	reg := register(7)

	// The intruder's certificate is trusted, its principal holds nothing.
	intruder := &tls.Config{Certificates: []tls.Certificate{set.Client.TLS()}, RootCAs: set.Pool()}
	addr := tc.voters[leader].Addr
	resp, err := rawRoundTrip(ctx, addr, intruder, reg)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.BrokerRegistrationResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("registration from User:intruder: error %d, want CLUSTER_AUTHORIZATION_FAILED", code)
	}
	ap := kmsg.NewPtrAlterPartitionRequest()
	ap.BrokerID, ap.BrokerEpoch = 1, 1
	resp, err = rawRoundTrip(ctx, addr, intruder, ap)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.AlterPartitionResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("AlterPartition from User:intruder: error %d, want CLUSTER_AUTHORIZATION_FAILED", code)
	}
	// A follower refuses it too rather than forwarding it.
	resp, err = rawRoundTrip(ctx, tc.voters[(leader+1)%3].Addr, intruder, reg)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.BrokerRegistrationResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("registration from User:intruder on a follower: error %d", code)
	}
	if img, _ := tc.nodes[leader].pub.Current(); func() bool { _, ok := img.Broker(7); return ok }() {
		t.Fatal("the refused registration is in the image")
	}

	// ApiVersions is answered to any principal, with what the listener
	// serves; a version newer than it serves gets UNSUPPORTED_VERSION in
	// a v0 answer, as from Kafka.
	for _, v := range []int16{0, 3, maxAPIVersionsVersion} {
		resp, err = rawRoundTripVersion(ctx, addr, intruder, kmsg.NewPtrApiVersionsRequest(), v, v)
		if err != nil {
			t.Fatalf("ApiVersions v%d: %v", v, err)
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		if av.ErrorCode != 0 || !slices.EqualFunc(av.ApiKeys, ControllerAPIVersions(), func(a, b kmsg.ApiVersionsResponseApiKey) bool {
			return a.ApiKey == b.ApiKey && a.MinVersion == b.MinVersion && a.MaxVersion == b.MaxVersion
		}) {
			t.Fatalf("ApiVersions v%d from User:intruder: error %d, keys %+v", v, av.ErrorCode, av.ApiKeys)
		}
	}
	resp, err = rawRoundTripVersion(ctx, addr, intruder, kmsg.NewPtrApiVersionsRequest(), maxAPIVersionsVersion+3, 0)
	if err != nil {
		t.Fatalf("ApiVersions v%d: %v", maxAPIVersionsVersion+3, err)
	}
	if av := resp.(*kmsg.ApiVersionsResponse); av.ErrorCode != kerr.UnsupportedVersion.Code || len(av.ApiKeys) != 1 || av.ApiKeys[0].ApiKey != 18 || av.ApiKeys[0].MaxVersion != maxAPIVersionsVersion {
		t.Fatalf("ApiVersions of a newer version: %+v", av)
	}

	// A Raft stream from the intruder is closed without a byte.
	c, err := tls.Dial("tcp", addr, intruder)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{RaftPreface, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 16)); !errors.Is(err, io.EOF) {
		t.Fatalf("raft stream of User:intruder: read %d bytes, err %v; want the stream closed", n, err)
	}

	// Plaintext to the TLS port: closed, and the node serves on.
	pc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, reg, 1)
	if _, err := pc.Write(frame); err != nil {
		t.Fatal(err)
	}
	_ = pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := bufio.NewReader(pc).ReadByte(); err == nil {
		// Go's TLS server may answer a non-TLS record with an alert
		// record; what matters is that no Kafka answer comes and the
		// connection ends.
		if _, err := io.ReadAll(pc); err != nil {
			t.Fatalf("plaintext connection to the TLS controller port not closed: %v", err)
		}
	}
	mustRegister(2)
}

// rawRoundTrip sends one controller request over a TLS connection of its
// own and reads the answer.
func rawRoundTrip(ctx context.Context, addr string, tc *tls.Config, req kmsg.Request) (kmsg.Response, error) {
	return rawRoundTripVersion(ctx, addr, tc, req, clientVersion(req), clientVersion(req))
}

// rawRoundTripVersion is rawRoundTrip sending version and reading the
// answer as respVersion.
func rawRoundTripVersion(ctx context.Context, addr string, tc *tls.Config, req kmsg.Request, version, respVersion int16) (kmsg.Response, error) {
	d := tls.Dialer{Config: tc}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	req.SetVersion(version)
	if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 3)); err != nil {
		return nil, err
	}
	frame, err := readFrame(bufio.NewReader(c))
	if err != nil {
		return nil, err
	}
	req.SetVersion(respVersion)
	return parseResponse(frame, 3, req)
}
