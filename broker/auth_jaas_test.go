package broker

import (
	"maps"
	"strings"
	"testing"

	"github.com/raftka/raftka/metadata"
)

func TestParseJAAS(t *testing.T) {
	cases := []struct {
		in      string
		module  string
		flag    string
		options map[string]string
		err     string
	}{
		{in: plainJAAS, module: plainLoginModule, flag: "required",
			options: map[string]string{"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"}},
		{in: `a.B Optional k=v k2='single "q"' k3="esc \" \\ x";`, module: "a.B", flag: "optional",
			options: map[string]string{"k": "v", "k2": `single "q"`, "k3": `esc " \ x`}},
		{in: "// comment\n a.B /* inline */ sufficient\n  k=\"v;=\" ; // trailing", module: "a.B", flag: "sufficient", options: map[string]string{"k": "v;="}},
		{in: `a.B requisite;`, module: "a.B", flag: "requisite", options: map[string]string{}},
		{in: ``, err: "no login module"},
		{in: `a.B required k=v`, err: "does not end with ';'"},
		{in: `a.B always k=v;`, err: "invalid control flag"},
		{in: `a.B required k v;`, err: "wants name=value"},
		{in: `a.B required k=;`, err: "wants name=value"},
		{in: `a.B required k="open;`, err: "unterminated quoted value"},
		{in: `a.B required; c.D required;`, err: "exactly one"},
		{in: `a.B required /* never closed`, err: "unterminated /* comment"},
		{in: `= required;`, err: "expected a login module"},
	}
	for _, c := range cases {
		e, err := parseJAAS(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || e.Module != c.module || e.Flag != c.flag || !maps.Equal(e.Options, c.options) {
			t.Errorf("%q: %+v %v", c.in, e, err)
		}
	}
}

func TestParsePlain(t *testing.T) {
	for _, c := range []struct {
		in, user, pass, err string
	}{
		{in: "\x00alice\x00pw", user: "alice", pass: "pw"},
		{in: "alice\x00alice\x00pw", user: "alice", pass: "pw"},
		{in: "admin\x00alice\x00pw", err: "authorization id"},
		{in: "\x00\x00pw", err: "username not specified"},
		{in: "\x00alice\x00", err: "password not specified"},
		{in: "alice\x00pw", err: "3 NUL-separated"},
		{in: "\x00a\x00b\x00c", err: "3 NUL-separated"},
	} {
		_, u, p, err := parsePlain([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || u != c.user || p != c.pass {
			t.Errorf("%q: %q %q %v", c.in, u, p, err)
		}
	}
}

func FuzzParseJAAS(f *testing.F) {
	for _, s := range []string{plainJAAS, `a.B optional k='v' /* c */ k2="a\"b"; // x`, `a required;b required;`, `"`, `/*`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := parseJAAS(s)
		if err == nil && (e.Module == "" || e.Flag == "" || e.Options == nil) {
			t.Fatalf("accepted %q as %+v", s, e)
		}
		_, _ = plainUsers(s)
	})
}

func FuzzParsePlain(f *testing.F) {
	for _, s := range []string{"\x00alice\x00pw", "a\x00a\x00p", "", "\x00\x00", "x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		authz, user, pass, err := parsePlain(b)
		if err == nil && (user == "" || pass == "" || (authz != "" && authz != user) || strings.Contains(user, "\x00")) {
			t.Fatalf("accepted %q: %q %q %q", b, authz, user, pass)
		}
		m := &plainMech{users: map[string]string{"alice": "pw"}}
		if _, done, err := m.step(b); done != (err == nil) || done && (m.user() != "alice" || string(b[len(b)-2:]) != "pw") {
			t.Fatalf("step(%q): done %v err %v user %q", b, done, err, m.user())
		}
	})
}

// The SCRAM server conversation takes any client-first and client-final
// message without panicking, and never authenticates a client that does not
// know the password.
func FuzzScramServerMessages(f *testing.F) {
	f.Add("n,,n=alice,r=abcdef", "c=biws,r=abcdefXYZ,p=dGVzdA==")
	f.Add("n,a=alice,n=alice,r=x,tokenauth=true", "c=biws,r=x,p=")
	f.Add("p=tls-unique,,n=alice,r=x", "c=,r=,p=")
	f.Add("y,,n=al=2Cice,r=q", "")
	f.Add(",,,", ",,,")
	salt := []byte("salt")
	salted, _ := metadata.SaltPassword(metadata.ScramSHA256, "pw", salt, 4096)
	cred, _ := metadata.NewScramCredential("alice", metadata.ScramSHA256, salt, salted, 4096)
	lookup := func(u string, m metadata.ScramMechanism) (metadata.ScramCredential, bool) {
		if u != "alice" {
			return metadata.ScramCredential{}, false
		}
		return metadata.ScramCredential{Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: cred.Iterations}, true
	}
	f.Fuzz(func(t *testing.T, first, final string) {
		m := newScramMech("SCRAM-SHA-256", metadata.ScramSHA256, lookup)
		_, done, err := m.step([]byte(first))
		if err != nil {
			return
		}
		if done {
			t.Fatal("authenticated on the client-first message")
		}
		// The fuzzer cannot know the server nonce or the password, so no
		// final message may succeed.
		if _, done, err := m.step([]byte(final)); done || err == nil {
			t.Fatalf("client-final %q accepted", final)
		}
	})
}
