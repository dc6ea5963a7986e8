package broker

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// unsecuredJWS builds header.claims. from raw JSON texts.
func unsecuredJWS(header, claims string) string {
	e := base64.RawURLEncoding.EncodeToString
	return e([]byte(header)) + "." + e([]byte(claims)) + "."
}

func TestOAuthValidator(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	none := `{"alg":"none"}`
	cases := []struct {
		name    string
		jaas    string
		token   string
		wantSub string
		wantExp time.Time
		status  string // "" means valid
		reason  string
	}{
		{name: "valid", token: unsecuredJWS(none, `{"sub":"alice","exp":1700000060,"iat":1699999990}`), wantSub: "alice", wantExp: time.Unix(1_700_000_060, 0)},
		{name: "fractional exp", token: unsecuredJWS(none, `{"sub":"alice","exp":1700000060.5}`), wantSub: "alice", wantExp: time.UnixMilli(1_700_000_060_500)},
		{name: "padded parts", token: strings.Replace(unsecuredJWS(none, `{"sub":"al","exp":1700000060}`), ".", "==.", 1), wantSub: "al", wantExp: time.Unix(1_700_000_060, 0)},
		{name: "expired", token: unsecuredJWS(none, `{"sub":"alice","exp":1699999999}`), status: "invalid_token", reason: "on or after the Expiration Time"},
		{name: "expires now", token: unsecuredJWS(none, `{"sub":"alice","exp":1700000000}`), status: "invalid_token", reason: "on or after the Expiration Time"},
		{name: "expired within skew", jaas: `unsecuredValidatorAllowableClockSkewMs="5000"`, token: unsecuredJWS(none, `{"sub":"alice","exp":1699999998}`), wantSub: "alice", wantExp: time.Unix(1_699_999_998, 0)},
		{name: "no exp", token: unsecuredJWS(none, `{"sub":"alice"}`), status: "invalid_token", reason: "No expiration time"},
		{name: "exp a string", token: unsecuredJWS(none, `{"sub":"alice","exp":"soon"}`), status: "invalid_token", reason: "'exp' claim was not of type Number"},
		{name: "issued in the future", token: unsecuredJWS(none, `{"sub":"alice","exp":1700000100,"iat":1700000050}`), status: "invalid_token", reason: "Issued At"},
		{name: "iat after exp", jaas: `unsecuredValidatorAllowableClockSkewMs="100000"`, token: unsecuredJWS(none, `{"sub":"alice","exp":1700000010,"iat":1700000020}`), status: "invalid_token", reason: "was not after the Issued At"},
		{name: "no sub", token: unsecuredJWS(none, `{"exp":1700000060}`), status: "invalid_token", reason: "Required claim missing: sub"},
		{name: "blank sub", token: unsecuredJWS(none, `{"sub":"  ","exp":1700000060}`), status: "invalid_token", reason: "No principal name"},
		{name: "numeric sub", token: unsecuredJWS(none, `{"sub":7,"exp":1700000060}`), status: "invalid_token", reason: "incorrect type: Number"},
		{name: "other principal claim", jaas: `unsecuredValidatorPrincipalClaimName="client_id"`, token: unsecuredJWS(none, `{"sub":"x","client_id":"svc","exp":1700000060}`), wantSub: "svc", wantExp: time.Unix(1_700_000_060, 0)},
		{name: "alg HS256", token: unsecuredJWS(`{"alg":"HS256"}`, `{"sub":"alice","exp":1700000060}`), status: "invalid_token", reason: "'none' for an algorithm"},
		{name: "no alg", token: unsecuredJWS(`{}`, `{"sub":"alice","exp":1700000060}`), status: "invalid_token", reason: "'none' for an algorithm"},
		{name: "signed", token: unsecuredJWS(none, `{"sub":"alice","exp":1700000060}`) + "c2ln", status: "invalid_token", reason: "must not contain a digital signature"},
		{name: "two parts", token: "eyJhbGciOiJub25lIn0.e30", status: "invalid_token", reason: "3 dot-separated"},
		{name: "double dot", token: "a..b", status: "invalid_token", reason: "contains '..'"},
		{name: "not base64", token: "!!!.e30.", status: "invalid_token", reason: "malformed Base64"},
		{name: "not JSON", token: base64.RawURLEncoding.EncodeToString([]byte("nope")) + ".e30.", status: "invalid_token", reason: "malformed JSON"},
		{name: "scope list has all", jaas: `unsecuredValidatorRequiredScope="read write"`, token: unsecuredJWS(none, `{"sub":"a","exp":1700000060,"scope":["write","read","x"]}`), wantSub: "a", wantExp: time.Unix(1_700_000_060, 0)},
		{name: "scope string is one scope", jaas: `unsecuredValidatorRequiredScope="read write"`, token: unsecuredJWS(none, `{"sub":"a","exp":1700000060,"scope":"read write"}`), status: "insufficient_scope", reason: "missing a required scope"},
		{name: "scope missing one", jaas: `unsecuredValidatorRequiredScope="read write"`, token: unsecuredJWS(none, `{"sub":"a","exp":1700000060,"scope":["read"]}`), status: "insufficient_scope", reason: "missing a required scope (write)"},
		{name: "other scope claim", jaas: `unsecuredValidatorScopeClaimName="scp" unsecuredValidatorRequiredScope="kafka"`, token: unsecuredJWS(none, `{"sub":"a","exp":1700000060,"scp":"kafka"}`), wantSub: "a", wantExp: time.Unix(1_700_000_060, 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jaas := ""
			if c.jaas != "" {
				jaas = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required " + c.jaas + ";"
			}
			v, err := newOAuthValidator(jaas)
			if err != nil {
				t.Fatal(err)
			}
			v.now = func() time.Time { return now }
			tok, bad := v.validate(c.token)
			if c.status == "" {
				if bad != nil {
					t.Fatalf("refused: %v", bad)
				}
				if tok.principal != c.wantSub || !tok.expiry.Equal(c.wantExp) {
					t.Fatalf("got %q expiring %v, want %q at %v", tok.principal, tok.expiry, c.wantSub, c.wantExp)
				}
				return
			}
			if bad == nil {
				t.Fatalf("accepted as %q", tok.principal)
			}
			if bad.status != c.status || !strings.Contains(bad.reason, c.reason) {
				t.Fatalf("refused %s %q, want %s containing %q", bad.status, bad.reason, c.status, c.reason)
			}
		})
	}
}

func TestOAuthValidatorOptions(t *testing.T) {
	for _, bad := range []string{`unsecuredValidatorAllowableClockSkewMs="-1"`, `unsecuredValidatorAllowableClockSkewMs="soon"`} {
		if _, err := newOAuthValidator("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required " + bad + ";"); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestParseOAuthInitial(t *testing.T) {
	cases := []struct {
		name, msg string
		ok        bool
		authzid   string
		token     string
		ext       map[string]string
	}{
		{name: "plain", msg: "n,,\x01auth=Bearer abc.def.\x01\x01", ok: true, token: "abc.def."},
		{name: "lower-case scheme", msg: "n,,\x01auth=bearer abc\x01\x01", ok: true, token: "abc"},
		{name: "authzid", msg: "n,a=al=2Cice,\x01auth=Bearer t\x01\x01", ok: true, authzid: "al,ice", token: "t"},
		{name: "extensions", msg: "n,,\x01auth=Bearer t\x01traceId=abc 123\x01logicalCluster=lkc-1\x01\x01", ok: true, token: "t", ext: map[string]string{"traceId": "abc 123", "logicalCluster": "lkc-1"}},
		{name: "no auth", msg: "n,,\x01foo=bar\x01\x01"},
		{name: "other scheme", msg: "n,,\x01auth=Basic abc\x01\x01"},
		{name: "channel binding", msg: "p=tls-unique,,\x01auth=Bearer t\x01\x01"},
		{name: "no final separator", msg: "n,,\x01auth=Bearer t\x01"},
		{name: "bad extension key", msg: "n,,\x01auth=Bearer t\x01x1=v\x01\x01"},
		{name: "empty extension value", msg: "n,,\x01auth=Bearer t\x01x=\x01\x01"},
		{name: "bad token chars", msg: "n,,\x01auth=Bearer a/b\x01\x01"},
		{name: "bad authzid", msg: "n,a=x=y,\x01auth=Bearer t\x01\x01"},
		{name: "empty", msg: ""},
	}
	for _, c := range cases {
		in, err := parseOAuthInitial([]byte(c.msg))
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok=%v", c.name, err, c.ok)
			continue
		}
		if !c.ok {
			continue
		}
		if in.authzid != c.authzid || in.token != c.token || len(in.extensions) != len(c.ext) {
			t.Errorf("%s: got %+v", c.name, in)
		}
		for k, v := range c.ext {
			if in.extensions[k] != v {
				t.Errorf("%s: extension %s = %q, want %q", c.name, k, in.extensions[k], v)
			}
		}
	}
}

func oauthListener(jaas string) *config.ListenerSecurity {
	sec := saslListener("OAUTHBEARER", "PLAIN")
	if jaas != "" {
		sec.JAAS["OAUTHBEARER"] = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required " + jaas + ";"
	}
	return sec
}

// franz-go's OAUTHBEARER mechanism against the unsecured validator: good
// tokens (with extensions) log in, bad ones get RFC 7628's error status and
// then SASL_AUTHENTICATION_FAILED.
func TestOAuthBearerWithFranzGo(t *testing.T) {
	s, addr := startSecured(t, oauthListener(`unsecuredValidatorRequiredScope="kafka"`), Options{})
	exp := time.Now().Add(time.Hour).Unix()
	claims := func(extra string) string {
		return `{"sub":"alice","exp":` + secs(exp) + `,"scope":["kafka","other"]` + extra + `}`
	}
	good := unsecuredJWS(`{"alg":"none"}`, claims(""))
	if err := saslOver(addr, nil, oauth.Auth{Token: good, Extensions: map[string]string{"traceId": "t-1"}}.AsMechanism()); err != nil {
		t.Fatalf("good token: %v", err)
	}
	if err := saslOver(addr, nil, oauth.Auth{Token: good, Zid: "alice"}.AsMechanism()); err != nil {
		t.Fatalf("good token with its own authzid: %v", err)
	}
	bad := []struct {
		name, token, zid, want string
	}{
		{"expired", unsecuredJWS(`{"alg":"none"}`, `{"sub":"alice","exp":1000,"scope":"kafka"}`), "", `{"status":"invalid_token"}`},
		{"signed", good + "c2ln", "", `{"status":"invalid_token"}`},
		{"no scope", unsecuredJWS(`{"alg":"none"}`, `{"sub":"alice","exp":`+secs(exp)+`}`), "", `insufficient_scope`},
		{"other authzid", good, "bob", "different from the token's principal name"},
	}
	for _, c := range bad {
		err := saslOver(addr, nil, oauth.Auth{Token: c.token, Zid: c.zid}.AsMechanism())
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want SASL_AUTHENTICATION_FAILED with %q", c.name, err, c.want)
		}
	}
	waitFor(t, "failures counted", func() bool { return s.Counters().RejectedFor(ReasonAuthFailed) == uint64(len(bad)) })
}

// raftka's own client login (inter-broker and --command-config) makes an
// unsecured token from unsecuredLoginStringClaim_sub and logs in with it.
func TestOAuthBearerClientLogin(t *testing.T) {
	_, addr := startSecured(t, oauthListener(`unsecuredValidatorRequiredScope="kafka"`), Options{})
	dial := func(jaas string) error {
		cs, _, err := config.ParseClientSecurity(map[string]string{
			"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
			"sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required " + jaas + ";",
		})
		if err != nil {
			return err
		}
		d, err := ClientDialer(cs, testDeadline)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
		defer cancel()
		c, err := d(ctx, addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
	if err := dial(`unsecuredLoginStringClaim_sub="svc" unsecuredLoginListClaim_scope=",kafka,x" unsecuredLoginExtension_traceId="abc"`); err != nil {
		t.Fatalf("login: %v", err)
	}
	if err := dial(`unsecuredLoginStringClaim_sub="svc"`); err == nil || !strings.Contains(err.Error(), "insufficient_scope") {
		t.Fatalf("login without the scope: %v", err)
	}
	if err := dial(`unsecuredLoginListClaim_scope=",kafka"`); err == nil || !strings.Contains(err.Error(), "unsecuredLoginStringClaim_sub is required") {
		t.Fatalf("login without a subject: %v", err)
	}
}

func secs(n int64) string { return strconv.FormatInt(n, 10) }
