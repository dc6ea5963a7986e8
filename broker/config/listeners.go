package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Listener is one NAME://host:port entry of listeners or advertised.listeners.
type Listener struct {
	// Name is upper-cased, as Kafka normalises listener names.
	Name string
	// Host is empty for "every interface" in listeners; in advertised
	// listeners an empty host means the broker advertises its hostname.
	Host string
	Port int
	// SecurityProtocol comes from listener.security.protocol.map; raftka
	// accepts only PLAINTEXT.
	SecurityProtocol string
}

// Addr is host:port, suitable for net.Listen and net.Dial.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// String is the listener in its configuration form.
func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// Voter is one id@host:port entry of controller.quorum.voters.
type Voter struct {
	ID   int32
	Host string
	Port int
}

// Addr is the voter's controller listener address.
func (v Voter) Addr() string { return net.JoinHostPort(v.Host, strconv.Itoa(v.Port)) }

func (v Voter) String() string { return strconv.Itoa(int(v.ID)) + "@" + v.Addr() }

// parseListener parses NAME://host:port. The security protocol is filled in
// later from the protocol map.
func parseListener(s string) (Listener, error) {
	name, rest, ok := strings.Cut(s, "://")
	if !ok || name == "" {
		return Listener{}, fmt.Errorf("listener %q: want NAME://host:port", s)
	}
	for _, r := range name {
		if !(r == '_' || r == '-' || r == '.' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return Listener{}, fmt.Errorf("listener %q: name %q may hold letters, digits, '.', '_' and '-' only", s, name)
		}
	}
	hp, err := splitHostPort(rest)
	if err != nil {
		return Listener{}, fmt.Errorf("listener %q: %v", s, err)
	}
	return Listener{Name: strings.ToUpper(name), Host: hp.host, Port: hp.port}, nil
}

func parseListeners(key string, entries []string) ([]Listener, error) {
	out := make([]Listener, 0, len(entries))
	names := map[string]bool{}
	for _, e := range entries {
		l, err := parseListener(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if names[l.Name] {
			return nil, fmt.Errorf("%s: listener name %s is used twice", key, l.Name)
		}
		names[l.Name] = true
		out = append(out, l)
	}
	return out, nil
}

func parseVoter(s string) (Voter, error) {
	id, addr, ok := strings.Cut(s, "@")
	if !ok {
		return Voter{}, fmt.Errorf("voter %q: want id@host:port", s)
	}
	n, err := strconv.ParseInt(id, 10, 32)
	if err != nil || n < 0 {
		return Voter{}, fmt.Errorf("voter %q: id %q is not a non-negative 32-bit number", s, id)
	}
	hp, err := splitHostPort(addr)
	if err != nil {
		return Voter{}, fmt.Errorf("voter %q: %v", s, err)
	}
	if hp.host == "" || hp.port == 0 {
		return Voter{}, fmt.Errorf("voter %q: needs a host and a non-zero port", s)
	}
	return Voter{ID: int32(n), Host: hp.host, Port: hp.port}, nil
}

func parseVoters(entries []string) ([]Voter, error) {
	out := make([]Voter, 0, len(entries))
	ids := map[int32]bool{}
	for _, e := range entries {
		v, err := parseVoter(e)
		if err != nil {
			return nil, fmt.Errorf("controller.quorum.voters: %w", err)
		}
		if ids[v.ID] {
			return nil, fmt.Errorf("controller.quorum.voters: voter id %d is listed twice", v.ID)
		}
		ids[v.ID] = true
		out = append(out, v)
	}
	return out, nil
}

// parseProtocolMap parses NAME:PROTOCOL pairs; names are upper-cased like
// listener names.
func parseProtocolMap(entries []string) (map[string]string, error) {
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		name, proto, ok := strings.Cut(e, ":")
		name, proto = strings.TrimSpace(name), strings.TrimSpace(proto)
		if !ok || name == "" || proto == "" {
			return nil, fmt.Errorf("listener.security.protocol.map: entry %q: want NAME:PROTOCOL", e)
		}
		proto = strings.ToUpper(proto)
		switch proto {
		case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
		default:
			return nil, fmt.Errorf("listener.security.protocol.map: entry %q: unknown security protocol %q", e, proto)
		}
		name = strings.ToUpper(name)
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("listener.security.protocol.map: listener name %s is mapped twice", name)
		}
		m[name] = proto
	}
	return m, nil
}
