package broker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SASL/OAUTHBEARER (RFC 7628, KIP-255) with unsecured JWS tokens, as
// Kafka's default server callback handler
// (OAuthBearerUnsecuredValidatorCallbackHandler) validates them: for
// development and tests, since an unsecured token is signed by nobody.
//
// The client's initial response is the GS2 header ("n,," or "n,a=authzid,"),
// then \x01-separated key=value pairs: auth=Bearer <token> and any SASL
// extensions (KIP-342), then \x01\x01. The token is three base64url parts,
// header.claims. (an empty signature); the header's alg must be "none". The
// claims are checked as Kafka checks them:
//
//   - the principal claim (unsecuredValidatorPrincipalClaimName, default
//     sub) is a non-blank string: the principal's name;
//   - exp is required, a number of seconds (fractions allowed); the token
//     is refused when now - skew is on or after it;
//   - iat is optional; when present it must not be after now + skew and
//     must be before exp;
//   - unsecuredValidatorRequiredScope, a space-separated list, must all be
//     in the scope claim (unsecuredValidatorScopeClaimName, default scope),
//     a string (one scope) or a list of strings;
//   - unsecuredValidatorAllowableClockSkewMs, default 0, is the skew.
//
// The options are those of the listener's
// listener.name.<l>.oauthbearer.sasl.jaas.config (OAuthBearerLoginModule);
// without one, the defaults. Every extension is accepted, as the unsecured
// handler does (raftka has no principal builder that reads them; they are
// logged). A token that fails validation is answered, as RFC 7628 says, by
// a JSON error status as the server's challenge ({"status":"invalid_token"}
// or "insufficient_scope" with the scope wanted); the client acknowledges
// with a single \x01 and the authentication then fails
// SASL_AUTHENTICATION_FAILED with that status as the message. The token's
// exp bounds the session (KIP-368): the connection must re-authenticate by
// then, whether or not connections.max.reauth.ms is set.

// oauthValidator holds a listener's unsecured validator options.
type oauthValidator struct {
	principalClaim string
	scopeClaim     string
	requiredScope  []string
	skew           time.Duration
	now            func() time.Time
}

// newOAuthValidator reads the unsecuredValidator* options of a JAAS
// config; an empty config gives Kafka's defaults.
func newOAuthValidator(jaas string) (*oauthValidator, error) {
	v := &oauthValidator{principalClaim: "sub", scopeClaim: "scope", now: time.Now}
	if strings.TrimSpace(jaas) == "" {
		return v, nil
	}
	e, err := parseJAAS(jaas)
	if err != nil {
		return nil, err
	}
	if s := strings.TrimSpace(e.Options["unsecuredValidatorPrincipalClaimName"]); s != "" {
		v.principalClaim = s
	}
	if s := strings.TrimSpace(e.Options["unsecuredValidatorScopeClaimName"]); s != "" {
		v.scopeClaim = s
	}
	v.requiredScope = strings.Fields(e.Options["unsecuredValidatorRequiredScope"])
	if s := strings.TrimSpace(e.Options["unsecuredValidatorAllowableClockSkewMs"]); s != "" {
		ms, err := strconv.ParseInt(s, 10, 32)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("unsecuredValidatorAllowableClockSkewMs=%q: want a non-negative number of milliseconds", s)
		}
		v.skew = time.Duration(ms) * time.Millisecond
	}
	return v, nil
}

// oauthToken is a validated token.
type oauthToken struct {
	principal string
	expiry    time.Time
}

// oauthInvalid is a token that failed validation: status and scope go
// to the client, reason to the broker's log.
type oauthInvalid struct {
	status, scope string
	reason        string
}

func (e *oauthInvalid) Error() string { return e.reason }

// jsonStatus is the RFC 7628 error the client is sent as the challenge.
func (e *oauthInvalid) jsonStatus() string {
	m := map[string]string{"status": e.status}
	if e.scope != "" {
		m["scope"] = e.scope
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func invalidToken(format string, args ...any) *oauthInvalid {
	return &oauthInvalid{status: "invalid_token", reason: fmt.Sprintf(format, args...)}
}

// jwsClaim is one claim value as Kafka's unsecured JWS sees it: a string,
// a number or a list of strings.
type jwsClaim struct {
	str    string
	num    float64
	list   []string
	isNum  bool
	isList bool
}

// decodeJWSPart decodes a base64url part (padded or not; the standard
// alphabet is accepted too) into its JSON object's claims.
func decodeJWSPart(part string) (map[string]jwsClaim, error) {
	raw := strings.TrimRight(part, "=")
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(raw); err != nil {
			return nil, errors.New("malformed Base64 URL encoded value")
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, errors.New("malformed JSON")
	}
	out := make(map[string]jwsClaim, len(obj))
	for k, v := range obj {
		out[k] = toClaim(v)
	}
	return out, nil
}

func toClaim(v any) jwsClaim {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return jwsClaim{str: x.String()}
		}
		return jwsClaim{num: f, isNum: true}
	case string:
		return jwsClaim{str: x}
	case []any:
		l := make([]string, 0, len(x))
		for _, e := range x {
			l = append(l, claimText(e))
		}
		return jwsClaim{list: l, isList: true}
	default:
		return jwsClaim{str: claimText(v)}
	}
}

// claimText is a JSON value as text, as Jackson's asText gives it.
func claimText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	default:
		return ""
	}
}

func claimType(c jwsClaim) string {
	switch {
	case c.isNum:
		return "Number"
	case c.isList:
		return "List"
	}
	return "String"
}

// maxOAuthToken bounds the token parsed (the frame is bounded already).
const maxOAuthToken = 64 << 10

// validate checks an unsecured JWS compact serialization.
func (v *oauthValidator) validate(token string) (oauthToken, *oauthInvalid) {
	if len(token) > maxOAuthToken {
		return oauthToken{}, invalidToken("token of %d bytes", len(token))
	}
	if strings.Contains(token, "..") {
		return oauthToken{}, invalidToken("Malformed compact serialization contains '..'")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return oauthToken{}, invalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	header, err := decodeJWSPart(parts[0])
	if err != nil {
		return oauthToken{}, invalidToken("JWS header: %v", err)
	}
	claims, err := decodeJWSPart(parts[1])
	if err != nil {
		return oauthToken{}, invalidToken("JWS claims: %v", err)
	}
	if alg, ok := header["alg"]; !ok || alg.isNum || alg.isList || alg.str != "none" {
		return oauthToken{}, invalidToken("Unsecured JWS must have 'none' for an algorithm")
	}
	if parts[2] != "" {
		return oauthToken{}, invalidToken("Unsecured JWS must not contain a digital signature")
	}
	sub, ok := claims[v.principalClaim]
	switch {
	case !ok:
		return oauthToken{}, invalidToken("Required claim missing: %s", v.principalClaim)
	case sub.isNum || sub.isList:
		return oauthToken{}, invalidToken("The %s claim had the incorrect type: %s", v.principalClaim, claimType(sub))
	case strings.TrimSpace(sub.str) == "":
		return oauthToken{}, invalidToken("No principal name in JWT claim: %s", v.principalClaim)
	}
	exp, ok := claims["exp"]
	switch {
	case !ok:
		return oauthToken{}, invalidToken("No expiration time in JWT")
	case !exp.isNum:
		return oauthToken{}, invalidToken("The 'exp' claim was not of type Number: %s", claimType(exp))
	}
	nowMs := float64(v.now().UnixMilli())
	skewMs := float64(v.skew.Milliseconds())
	if iat, ok := claims["iat"]; ok {
		if !iat.isNum {
			return oauthToken{}, invalidToken("The 'iat' claim was not of type Number: %s", claimType(iat))
		}
		if 1000*iat.num > nowMs+skewMs {
			return oauthToken{}, invalidToken("The Issued At value (%f seconds) was after the indicated time (%.0f ms) plus allowable clock skew (%.0f ms)", iat.num, nowMs, skewMs)
		}
		if exp.num <= iat.num {
			return oauthToken{}, invalidToken("The Expiration Time time (%f seconds) was not after the Issued At time (%f seconds)", exp.num, iat.num)
		}
	}
	if nowMs-skewMs >= 1000*exp.num {
		return oauthToken{}, invalidToken("The indicated time (%.0f ms) minus allowable clock skew (%.0f ms) was on or after the Expiration Time value (%f seconds)", nowMs, skewMs, exp.num)
	}
	if len(v.requiredScope) > 0 {
		var have []string
		if sc, ok := claims[v.scopeClaim]; ok {
			switch {
			case sc.isList:
				for _, s := range sc.list {
					if s = strings.TrimSpace(s); s != "" {
						have = append(have, s)
					}
				}
			case !sc.isNum && strings.TrimSpace(sc.str) != "":
				have = []string{strings.TrimSpace(sc.str)}
			}
		}
		for _, want := range v.requiredScope {
			if !slices.Contains(have, want) {
				return oauthToken{}, &oauthInvalid{status: "insufficient_scope", scope: "[" + strings.Join(v.requiredScope, ", ") + "]",
					reason: fmt.Sprintf("The provided scope (%v) was missing a required scope (%s). All required scope elements: %v", have, want, v.requiredScope)}
			}
		}
	}
	expMs := math.Round(exp.num * 1000)
	if expMs > float64(math.MaxInt64/int64(time.Millisecond)) {
		expMs = float64(math.MaxInt64 / int64(time.Millisecond))
	}
	return oauthToken{principal: sub.str, expiry: time.UnixMilli(int64(expMs))}, nil
}

// oauthInitial is a parsed client initial response.
type oauthInitial struct {
	authzid    string
	token      string
	extensions map[string]string
}

// errBadOAuthFirst is Kafka's answer to an initial response that does not
// parse.
var errBadOAuthFirst = errors.New("invalid OAUTHBEARER client first message")

// parseOAuthInitial parses "n,[a=authzid],\x01key=value\x01...\x01\x01".
func parseOAuthInitial(msg []byte) (oauthInitial, error) {
	s := string(msg)
	rest, ok := strings.CutPrefix(s, "n,")
	if !ok {
		return oauthInitial{}, errBadOAuthFirst
	}
	gs2, kvs, ok := strings.Cut(rest, ",")
	if !ok {
		return oauthInitial{}, errBadOAuthFirst
	}
	var in oauthInitial
	if gs2 != "" {
		az, ok := strings.CutPrefix(gs2, "a=")
		if !ok || az == "" || !saslName(az) {
			return oauthInitial{}, errBadOAuthFirst
		}
		in.authzid = strings.NewReplacer("=2C", ",", "=3D", "=").Replace(az)
	}
	// \x01 (pairs, each ending \x01) \x01
	if !strings.HasPrefix(kvs, "\x01") || !strings.HasSuffix(kvs, "\x01\x01") || len(kvs) < 2 {
		return oauthInitial{}, errBadOAuthFirst
	}
	body := kvs[1 : len(kvs)-1] // the pairs, each ending \x01
	auth := ""
	sawAuth := false
	in.extensions = map[string]string{}
	for body != "" {
		pair, after, ok := strings.Cut(body, "\x01")
		if !ok {
			return oauthInitial{}, errBadOAuthFirst
		}
		body = after
		k, val, ok := strings.Cut(pair, "=")
		if !ok || !extensionKey(k) || !extensionValue(val) {
			return oauthInitial{}, errBadOAuthFirst
		}
		if k == "auth" {
			auth, sawAuth = val, true
			continue
		}
		in.extensions[k] = val
	}
	if !sawAuth {
		return oauthInitial{}, errors.New("invalid OAUTHBEARER client first message: 'auth' not specified")
	}
	scheme, tok, ok := strings.Cut(auth, " ")
	tok = strings.TrimLeft(tok, " ")
	if !ok || scheme == "" || tok == "" || !wordChars(scheme) || !tokenChars(tok) {
		return oauthInitial{}, errors.New("invalid OAUTHBEARER client first message: invalid 'auth' format")
	}
	if !strings.EqualFold(scheme, "bearer") {
		return oauthInitial{}, fmt.Errorf("invalid scheme in OAUTHBEARER client first message: %s", scheme)
	}
	in.token = tok
	return in, nil
}

// saslName is RFC 5802's saslname: 1-127 bytes but '=' and ',' unless
// escaped as =2C or =3D.
func saslName(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '=':
			if !strings.HasPrefix(s[i:], "=2C") && !strings.HasPrefix(s[i:], "=3D") {
				return false
			}
			i += 2
		case c == ',' || c == 0 || c > 0x7F:
			return false
		}
	}
	return true
}

func extensionKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func extensionValue(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(0x21 <= c && c <= 0x7E || c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			return false
		}
	}
	return true
}

func wordChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func tokenChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// oauthMech is the server side of one OAUTHBEARER exchange.
type oauthMech struct {
	v *oauthValidator

	// pending is the JSON status sent after a refused token; the client's
	// \x01 then ends the exchange with it.
	pending *oauthInvalid
	tok     oauthToken
	ext     map[string]string
}

func (o *oauthMech) user() string { return o.tok.principal }

func (o *oauthMech) step(token []byte) ([]byte, bool, error) {
	if o.pending != nil && len(token) == 1 && token[0] == 0x01 {
		p := o.pending
		return nil, false, &authError{public: errors.New(p.jsonStatus()), cause: p}
	}
	o.pending = nil
	in, err := parseOAuthInitial(token)
	if err != nil {
		return nil, false, &authError{public: errAuthFailed("OAUTHBEARER"), cause: err}
	}
	tok, bad := o.v.validate(in.token)
	if bad != nil {
		o.pending = bad
		return []byte(bad.jsonStatus()), false, nil
	}
	if in.authzid != "" && in.authzid != tok.principal {
		return nil, false, fmt.Errorf("authentication failed: client requested an authorization id (%s) that is different from the token's principal name (%s)", in.authzid, tok.principal)
	}
	o.tok, o.ext = tok, in.extensions
	return []byte{}, true, nil
}

// oauthLogin makes the unsecured token a client logs in with, as Kafka's
// OAuthBearerUnsecuredLoginCallbackHandler does from the login module's
// options: unsecuredLoginStringClaim_<name>, unsecuredLoginNumberClaim_<name>
// and unsecuredLoginListClaim_<name> (the value's first character is the
// list's separator), unsecuredLoginExtension_<name>,
// unsecuredLoginPrincipalClaimName (default sub) and
// unsecuredLoginLifetimeSeconds (default 3600). iat and exp are set from
// the clock.
type oauthLogin struct {
	claims     map[string]any
	principal  string
	lifetime   time.Duration
	extensions map[string]string
}

func newOAuthLogin(opts map[string]string) (*oauthLogin, error) {
	l := &oauthLogin{claims: map[string]any{}, lifetime: time.Hour, extensions: map[string]string{}}
	pc := "sub"
	if s := strings.TrimSpace(opts["unsecuredLoginPrincipalClaimName"]); s != "" {
		pc = s
	}
	for k, v := range opts {
		switch {
		case strings.HasPrefix(k, "unsecuredLoginStringClaim_"):
			l.claims[strings.TrimPrefix(k, "unsecuredLoginStringClaim_")] = v
		case strings.HasPrefix(k, "unsecuredLoginNumberClaim_"):
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("%s=%q: not a number", k, v)
			}
			l.claims[strings.TrimPrefix(k, "unsecuredLoginNumberClaim_")] = f
		case strings.HasPrefix(k, "unsecuredLoginListClaim_"):
			list := []string{}
			if v != "" {
				for _, e := range strings.Split(v[1:], v[:1]) {
					if e != "" {
						list = append(list, e)
					}
				}
			}
			l.claims[strings.TrimPrefix(k, "unsecuredLoginListClaim_")] = list
		case strings.HasPrefix(k, "unsecuredLoginExtension_"):
			name := strings.TrimPrefix(k, "unsecuredLoginExtension_")
			if name == "auth" || !extensionKey(name) || !extensionValue(v) {
				return nil, fmt.Errorf("%s: not a valid SASL extension", k)
			}
			l.extensions[name] = v
		}
	}
	for _, reserved := range []string{"iat", "exp"} {
		if _, ok := l.claims[reserved]; ok {
			return nil, fmt.Errorf("the %s claim is set from the clock and cannot be given", reserved)
		}
	}
	sub, ok := l.claims[pc].(string)
	if !ok || strings.TrimSpace(sub) == "" {
		return nil, fmt.Errorf("unsecuredLoginStringClaim_%s is required: the principal's name", pc)
	}
	l.principal = sub
	if s := strings.TrimSpace(opts["unsecuredLoginLifetimeSeconds"]); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("unsecuredLoginLifetimeSeconds=%q: want a positive number of seconds", s)
		}
		l.lifetime = time.Duration(n) * time.Second
	}
	return l, nil
}

// initial is the client initial response with a fresh token.
func (l *oauthLogin) initial(now time.Time) []byte {
	claims := make(map[string]any, len(l.claims)+2)
	for k, v := range l.claims {
		claims[k] = v
	}
	claims["iat"] = float64(now.UnixMilli()) / 1000
	claims["exp"] = float64(now.Add(l.lifetime).UnixMilli()) / 1000
	cb, _ := json.Marshal(claims)
	tok := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString(cb) + "."
	msg := "n,,\x01auth=Bearer " + tok + "\x01"
	keys := make([]string, 0, len(l.extensions))
	for k := range l.extensions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		msg += k + "=" + l.extensions[k] + "\x01"
	}
	return []byte(msg + "\x01")
}
