package metadata

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"slices"
	"strings"
)

// ScramMechanism is Kafka's id of a SCRAM mechanism, as
// UserScramCredentialRecord and the SCRAM admin APIs carry it.
type ScramMechanism int8

const (
	ScramSHA256 ScramMechanism = 1
	ScramSHA512 ScramMechanism = 2
)

// Kafka's bounds on SCRAM iterations (ScramMechanism.minIterations and the
// controller's upper check).
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
)

// ScramMechanismByName maps Kafka's mechanism names.
func ScramMechanismByName(name string) (ScramMechanism, bool) {
	switch strings.ToUpper(name) {
	case "SCRAM-SHA-256":
		return ScramSHA256, true
	case "SCRAM-SHA-512":
		return ScramSHA512, true
	}
	return 0, false
}

func (m ScramMechanism) String() string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return fmt.Sprintf("SCRAM(%d)", int8(m))
}

// Hash is the mechanism's hash function, nil for an unknown mechanism.
func (m ScramMechanism) Hash() func() hash.Hash {
	switch m {
	case ScramSHA256:
		return sha256.New
	case ScramSHA512:
		return sha512.New
	}
	return nil
}

// UserScramCredential sets a user's credential for one mechanism (Kafka's
// UserScramCredentialRecord): what the server needs to verify a client
// proof and prove itself (RFC 5802), never the password.
type UserScramCredential struct {
	Name       string
	Mechanism  ScramMechanism
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// RemoveUserScramCredential deletes a user's credential for one mechanism
// (Kafka's RemoveUserScramCredentialRecord).
type RemoveUserScramCredential struct {
	Name      string
	Mechanism ScramMechanism
}

// ScramCredential is one stored credential.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

func (c ScramCredential) equal(o ScramCredential) bool {
	return c.Iterations == o.Iterations && bytes.Equal(c.Salt, o.Salt) && bytes.Equal(c.StoredKey, o.StoredKey) && bytes.Equal(c.ServerKey, o.ServerKey)
}

type scramKey struct {
	name string
	mech ScramMechanism
}

// ScramCredential returns a user's credential for a mechanism. The slices
// are shared with the image and must not be modified.
func (img *Image) ScramCredential(name string, m ScramMechanism) (ScramCredential, bool) {
	c, ok := img.scram[scramKey{name, m}]
	return c, ok
}

// ScramUser is one user's mechanisms and iterations, what
// DescribeUserScramCredentials shows.
type ScramUser struct {
	Name       string
	Mechanisms []ScramMechanism // ascending
	Iterations []int32          // per mechanism
}

// ScramUsers returns every user with a SCRAM credential, sorted by name.
func (img *Image) ScramUsers() []ScramUser {
	byName := map[string]*ScramUser{}
	for k := range img.scram {
		u := byName[k.name]
		if u == nil {
			u = &ScramUser{Name: k.name}
			byName[k.name] = u
		}
		u.Mechanisms = append(u.Mechanisms, k.mech)
	}
	out := make([]ScramUser, 0, len(byName))
	for _, u := range byName {
		slices.Sort(u.Mechanisms)
		for _, m := range u.Mechanisms {
			u.Iterations = append(u.Iterations, img.scram[scramKey{u.Name, m}].Iterations)
		}
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b ScramUser) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// NewScramCredential derives the stored and server keys from a salted
// password (RFC 5802: StoredKey = H(HMAC(SaltedPassword, "Client Key")),
// ServerKey = HMAC(SaltedPassword, "Server Key")), as Kafka's controller does
// with an AlterUserScramCredentials upsertion. It checks Kafka's rules:
// a name, a known mechanism, a salt and salted password, and iterations
// within [MinScramIterations, MaxScramIterations]. Errors wrap
// ErrUnacceptableCredential or ErrUnsupportedSaslMechanism.
func NewScramCredential(name string, m ScramMechanism, salt, saltedPassword []byte, iterations int32) (*UserScramCredential, error) {
	h := m.Hash()
	switch {
	case h == nil:
		return nil, fmt.Errorf("%w: unknown SCRAM mechanism %d", ErrUnsupportedSaslMechanism, m)
	case name == "":
		return nil, fmt.Errorf("%w: username must not be empty", ErrUnacceptableCredential)
	case iterations < MinScramIterations:
		return nil, fmt.Errorf("%w: too few iterations (%d, at least %d)", ErrUnacceptableCredential, iterations, MinScramIterations)
	case iterations > MaxScramIterations:
		return nil, fmt.Errorf("%w: too many iterations (%d, at most %d)", ErrUnacceptableCredential, iterations, MaxScramIterations)
	case len(salt) == 0:
		return nil, fmt.Errorf("%w: salt must not be empty", ErrUnacceptableCredential)
	case len(saltedPassword) == 0:
		return nil, fmt.Errorf("%w: salted password must not be empty", ErrUnacceptableCredential)
	}
	clientKey := hmacOf(h, saltedPassword, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return &UserScramCredential{
		Name: name, Mechanism: m, Salt: slices.Clone(salt), Iterations: iterations,
		StoredKey: stored.Sum(nil), ServerKey: hmacOf(h, saltedPassword, "Server Key"),
	}, nil
}

// SaltPassword is Hi(password, salt, iterations) of RFC 5802 (PBKDF2 with
// the mechanism's HMAC), what a client sends as the salted password.
func SaltPassword(m ScramMechanism, password string, salt []byte, iterations int32) ([]byte, error) {
	h := m.Hash()
	if h == nil {
		return nil, fmt.Errorf("%w: unknown SCRAM mechanism %d", ErrUnsupportedSaslMechanism, m)
	}
	if iterations < 1 {
		return nil, fmt.Errorf("%w: iterations must be positive", ErrUnacceptableCredential)
	}
	return pbkdf2.Key(h, password, salt, int(iterations), h().Size())
}

func hmacOf(h func() hash.Hash, key []byte, msg string) []byte {
	mac := hmac.New(h, key)
	mac.Write([]byte(msg))
	return mac.Sum(nil)
}

// scramApplier replays SCRAM credentials. Users are few and change rarely,
// so the map is copied on the first change of a batch.
type scramApplier struct {
	img     *Image
	owned   bool
	changed bool
}

func (a *scramApplier) own() {
	if !a.owned {
		m := make(map[scramKey]ScramCredential, len(a.img.scram)+1)
		for k, v := range a.img.scram {
			m[k] = v
		}
		a.img.scram = m
		a.owned = true
	}
}

func (a *scramApplier) upsert(r *UserScramCredential) error {
	h := r.Mechanism.Hash()
	switch {
	case h == nil:
		return invalid("SCRAM credential of unknown mechanism %d", r.Mechanism)
	case r.Name == "":
		return invalid("SCRAM credential without a user name")
	case r.Iterations < 1 || len(r.Salt) == 0:
		return invalid("SCRAM credential of %q without salt or iterations", r.Name)
	case len(r.StoredKey) != h().Size() || len(r.ServerKey) != h().Size():
		return invalid("SCRAM credential of %q: keys of %d and %d bytes, want %d", r.Name, len(r.StoredKey), len(r.ServerKey), h().Size())
	}
	a.own()
	a.img.scram[scramKey{r.Name, r.Mechanism}] = ScramCredential{
		Salt: slices.Clone(r.Salt), StoredKey: slices.Clone(r.StoredKey), ServerKey: slices.Clone(r.ServerKey), Iterations: r.Iterations,
	}
	a.changed = true
	return nil
}

func (a *scramApplier) remove(r *RemoveUserScramCredential) error {
	k := scramKey{r.Name, r.Mechanism}
	if _, ok := a.img.scram[k]; !ok {
		return fmt.Errorf("%w: no %v credential for user %q", ErrInvalidRecord, r.Mechanism, r.Name)
	}
	a.own()
	delete(a.img.scram, k)
	if len(a.img.scram) == 0 {
		a.img.scram = nil
		a.owned = false
	}
	a.changed = true
	return nil
}

// scramRecords is the image's credentials as records (snapshots).
func (img *Image) scramRecords() []Record {
	keys := make([]scramKey, 0, len(img.scram))
	for k := range img.scram {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b scramKey) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return int(a.mech) - int(b.mech)
	})
	recs := make([]Record, 0, len(keys))
	for _, k := range keys {
		c := img.scram[k]
		recs = append(recs, &UserScramCredential{Name: k.name, Mechanism: k.mech,
			Salt: slices.Clone(c.Salt), StoredKey: slices.Clone(c.StoredKey), ServerKey: slices.Clone(c.ServerKey), Iterations: c.Iterations})
	}
	return recs
}
