package broker

import (
	"errors"
	"fmt"
	"strings"
)

// Kafka's sasl.jaas.config value: one JAAS login module entry,
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required
//	    username="admin" password="admin-secret" user_alice="alice-secret";
//
// a class name, a control flag, name=value options and a semicolon; values
// quoted with " or ' (backslash escapes the next character) or bare;
// // and /* */ comments. It is parsed, never evaluated: raftka has no login
// modules, it reads the options (PLAIN's user_<name> entries).

// jaasEntry is one parsed login module entry.
type jaasEntry struct {
	Module  string
	Flag    string // required, requisite, sufficient or optional
	Options map[string]string
}

// maxJAASLen bounds what the parser reads (a config value, but fuzzed).
const maxJAASLen = 1 << 20

// parseJAAS parses a sasl.jaas.config value. Like Kafka, it wants exactly
// one login module.
func parseJAAS(s string) (jaasEntry, error) {
	if len(s) > maxJAASLen {
		return jaasEntry{}, fmt.Errorf("JAAS config of %d bytes is too long", len(s))
	}
	toks, err := jaasTokens(s)
	if err != nil {
		return jaasEntry{}, err
	}
	var entries []jaasEntry
	for i := 0; i < len(toks); {
		if toks[i].kind != tokWord {
			return jaasEntry{}, fmt.Errorf("JAAS config: expected a login module class name, found %q", toks[i].text)
		}
		e := jaasEntry{Module: toks[i].text, Options: map[string]string{}}
		i++
		if i >= len(toks) || toks[i].kind != tokWord {
			return jaasEntry{}, fmt.Errorf("JAAS config: login module %s has no control flag", e.Module)
		}
		switch f := strings.ToLower(toks[i].text); f {
		case "required", "requisite", "sufficient", "optional":
			e.Flag = f
		default:
			return jaasEntry{}, fmt.Errorf("JAAS config: invalid control flag %q (want required, requisite, sufficient or optional)", toks[i].text)
		}
		i++
		for {
			if i >= len(toks) {
				return jaasEntry{}, fmt.Errorf("JAAS config: login module %s does not end with ';'", e.Module)
			}
			if toks[i].kind == tokSemi {
				i++
				break
			}
			if toks[i].kind != tokWord {
				return jaasEntry{}, fmt.Errorf("JAAS config: expected an option name, found %q", toks[i].text)
			}
			name := toks[i].text
			if i+2 >= len(toks) || toks[i+1].kind != tokEquals || (toks[i+2].kind != tokWord && toks[i+2].kind != tokQuoted) {
				return jaasEntry{}, fmt.Errorf("JAAS config: option %s wants name=value", name)
			}
			e.Options[name] = toks[i+2].text
			i += 3
		}
		entries = append(entries, e)
	}
	switch len(entries) {
	case 0:
		return jaasEntry{}, errors.New("JAAS config has no login module")
	case 1:
		return entries[0], nil
	}
	return jaasEntry{}, fmt.Errorf("JAAS config has %d login modules; it must have exactly one", len(entries))
}

type jaasTokKind int

const (
	tokWord jaasTokKind = iota
	tokQuoted
	tokEquals
	tokSemi
)

type jaasTok struct {
	kind jaasTokKind
	text string
}

func jaasTokens(s string) ([]jaasTok, error) {
	var toks []jaasTok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(s[i:], "//"):
			end := strings.IndexAny(s[i:], "\n\r")
			if end < 0 {
				return toks, nil
			}
			i += end
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, errors.New("JAAS config: unterminated /* comment")
			}
			i += 2 + end + 2
		case c == '=':
			toks = append(toks, jaasTok{tokEquals, "="})
			i++
		case c == ';':
			toks = append(toks, jaasTok{tokSemi, ";"})
			i++
		case c == '"' || c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, errors.New("JAAS config: unterminated quoted value")
			}
			toks = append(toks, jaasTok{tokQuoted, b.String()})
			i = j + 1
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r\f=;\"'", rune(s[j])) && !strings.HasPrefix(s[j:], "//") && !strings.HasPrefix(s[j:], "/*") {
				j++
			}
			toks = append(toks, jaasTok{tokWord, s[i:j]})
			i = j
		}
	}
	return toks, nil
}

// plainLoginModule is Kafka's PLAIN login module; its user_<name> options
// are the broker's users.
const plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// plainUsers returns the users of a PLAIN JAAS config.
func plainUsers(jaas string) (map[string]string, error) {
	e, err := parseJAAS(jaas)
	if err != nil {
		return nil, err
	}
	if e.Module != plainLoginModule {
		return nil, fmt.Errorf("PLAIN JAAS config names login module %s, want %s", e.Module, plainLoginModule)
	}
	users := map[string]string{}
	for k, v := range e.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
			users[name] = v
		}
	}
	if len(users) == 0 {
		return nil, errors.New("PLAIN JAAS config has no user_<name>=\"<password>\" option: no client could log in")
	}
	return users, nil
}

// parsePlain splits a SASL PLAIN message (RFC 4616):
// [authzid] NUL authcid NUL passwd.
func parsePlain(msg []byte) (authzid, user, password string, err error) {
	parts := strings.Split(string(msg), "\x00")
	if len(parts) != 3 {
		return "", "", "", errors.New("invalid SASL/PLAIN message: expected 3 NUL-separated fields")
	}
	authzid, user, password = parts[0], parts[1], parts[2]
	switch {
	case user == "":
		return "", "", "", errors.New("authentication failed: username not specified")
	case password == "":
		return "", "", "", errors.New("authentication failed: password not specified")
	case authzid != "" && authzid != user:
		return "", "", "", errors.New("authentication failed: client requested an authorization id that is different from username")
	}
	return authzid, user, password, nil
}
