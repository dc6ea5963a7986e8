package broker

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Any bytes on a SASL listener (frames of the exchange, bare v0 tokens,
// garbage) end in an answered or closed connection, never a panic or a
// hang.
func FuzzSASLConnection(f *testing.F) {
	hs := func(v int16, mech string) []byte {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Version, r.Mechanism = v, mech
		return encodeRequest(r, 1)
	}
	au := func(v int16, tok string) []byte {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.Version, r.SASLAuthBytes = v, []byte(tok)
		return encodeRequest(r, 2)
	}
	raw := func(tok string) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...) }
	meta := encodeRequest(kmsg.NewPtrMetadataRequest(), 3)
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	f.Add(join(encodeRequest(kmsg.NewPtrApiVersionsRequest(), 0), hs(1, "PLAIN"), au(2, "\x00alice\x00alice-secret"), meta))
	f.Add(join(hs(1, "PLAIN"), au(0, "\x00alice\x00wrong")))
	f.Add(join(hs(0, "PLAIN"), raw("\x00alice\x00alice-secret"), meta))
	f.Add(join(hs(1, "SCRAM-SHA-256"), au(1, "n,,n=alice,r=abc"), au(1, "c=biws,r=abc,p=AAAA")))
	f.Add(join(hs(0, "SCRAM-SHA-512"), raw("n,,n=bob,r=x"), raw("garbage")))
	f.Add(join(hs(1, "GSSAPI")))
	tok := unsecuredJWS(`{"alg":"none"}`, `{"sub":"alice","exp":99999999999}`)
	f.Add(join(hs(1, "OAUTHBEARER"), au(2, "n,,\x01auth=Bearer "+tok+"\x01k=v\x01\x01"), meta, hs(1, "OAUTHBEARER"), au(2, "n,,\x01auth=Bearer "+tok+"\x01\x01"), meta))
	f.Add(join(hs(1, "OAUTHBEARER"), au(2, "n,,\x01auth=Bearer a.b.\x01\x01"), au(2, "\x01")))
	f.Add(join(hs(1, "PLAIN"), au(2, "\x00alice\x00alice-secret"), hs(1, "PLAIN"), au(2, "\x00admin\x00admin-secret")))
	f.Add(join(hs(1, "PLAIN"), au(2, "\x00alice\x00alice-secret"), hs(1, "SCRAM-SHA-256"), meta))
	f.Add(meta)
	f.Add([]byte{0, 0, 0, 2, 0, 17})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})

	opts := fuzzOptions(f)
	opts.Logger = zerolog.Nop()
	opts.Deps.Metadata = staticMetadata{img: scramImage(f)}
	srv, err := newServer(opts, defaultAPIs)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = srv.Close() })
	ss, err := srv.newSASLServer(saslListener("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"))
	if err != nil {
		f.Fatal(err)
	}
	ss.delay = 0
	ss.reauth = time.Hour // sessions with a lifetime, so re-authentication is taken
	auth := &listenerAuth{protocol: "SASL_PLAINTEXT", sasl: ss}

	f.Fuzz(func(t *testing.T, data []byte) {
		mc := &memConn{in: bytes.NewReader(data)}
		if !srv.track() {
			t.Skip("server closed")
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer srv.wg.Done()
			c := srv.newConn(mc, "FUZZ")
			c.auth = auth
			c.serve()
		}()
		select {
		case <-done:
		case <-time.After(testDeadline):
			t.Fatal("connection neither answered nor closed")
		}
	})
}

// The OAUTHBEARER initial response and token decoders take any bytes.
func FuzzOAuthBearerToken(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer " + unsecuredJWS(`{"alg":"none"}`, `{"sub":"a","exp":1e10,"iat":1,"scope":["x"]}`) + "\x01k=v\x01\x01"))
	f.Add([]byte("n,a=x,\x01auth=Bearer a.b.c\x01\x01"))
	f.Add([]byte("n,,\x01auth=Bearer ..\x01\x01"))
	f.Add([]byte("n,,\x01\x01"))
	v, err := newOAuthValidator(`org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="x";`)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		in, err := parseOAuthInitial(msg)
		if err != nil {
			return
		}
		if _, ok := in.extensions["auth"]; ok {
			t.Fatal("auth kept as an extension")
		}
		if tok, bad := v.validate(in.token); bad == nil && strings.TrimSpace(tok.principal) == "" {
			t.Fatal("a token without a principal validated")
		}
	})
}
