package metadata

import (
	"bytes"
	"errors"
	"testing"

	"github.com/xdg-go/scram"
)

// The keys NewScramCredential derives from a salted password are the ones
// an independent SCRAM implementation derives from the password.
func TestNewScramCredentialMatchesRFC5802(t *testing.T) {
	salt := []byte("some salt bytes")
	for _, c := range []struct {
		m   ScramMechanism
		gen scram.HashGeneratorFcn
	}{{ScramSHA256, scram.SHA256}, {ScramSHA512, scram.SHA512}} {
		salted, err := SaltPassword(c.m, "pencil", salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		cred, err := NewScramCredential("user", c.m, salt, salted, 4096)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := c.gen.NewClient("user", "pencil", "")
		if err != nil {
			t.Fatal(err)
		}
		want, err := cl.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(cred.StoredKey, want.StoredKey) || !bytes.Equal(cred.ServerKey, want.ServerKey) {
			t.Errorf("%v: keys differ from RFC 5802's", c.m)
		}
	}
}

func TestNewScramCredentialRules(t *testing.T) {
	for _, c := range []struct {
		name  string
		user  string
		m     ScramMechanism
		salt  []byte
		iters int32
		want  error
	}{
		{"empty user", "", ScramSHA256, []byte("s"), 4096, ErrUnacceptableCredential},
		{"unknown mechanism", "u", 3, []byte("s"), 4096, ErrUnsupportedSaslMechanism},
		{"too few iterations", "u", ScramSHA256, []byte("s"), 4095, ErrUnacceptableCredential},
		{"too many iterations", "u", ScramSHA512, []byte("s"), 16385, ErrUnacceptableCredential},
		{"no salt", "u", ScramSHA512, nil, 4096, ErrUnacceptableCredential},
	} {
		_, err := NewScramCredential(c.user, c.m, c.salt, []byte("salted"), c.iters)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
}

func TestApplyScramCredentials(t *testing.T) {
	salted, _ := SaltPassword(ScramSHA256, "pw", []byte("salt"), 4096)
	alice, err := NewScramCredential("alice", ScramSHA256, []byte("salt"), salted, 4096)
	if err != nil {
		t.Fatal(err)
	}
	salted512, _ := SaltPassword(ScramSHA512, "pw", []byte("salt"), 8192)
	alice512, _ := NewScramCredential("alice", ScramSHA512, []byte("salt"), salted512, 8192)
	bob, _ := NewScramCredential("bob", ScramSHA256, []byte("salt2"), salted, 4096)

	img, d := NewImage().Apply([]Record{alice, alice512, bob})
	if len(d.Skipped) != 0 || !d.ScramChanged {
		t.Fatalf("skipped %+v, changed %v", d.Skipped, d.ScramChanged)
	}
	got, ok := img.ScramCredential("alice", ScramSHA512)
	if !ok || got.Iterations != 8192 || !bytes.Equal(got.StoredKey, alice512.StoredKey) {
		t.Fatalf("alice/512: %+v %v", got, ok)
	}
	users := img.ScramUsers()
	if len(users) != 2 || users[0].Name != "alice" || len(users[0].Mechanisms) != 2 || users[0].Iterations[1] != 8192 || users[1].Name != "bob" {
		t.Fatalf("users %+v", users)
	}
	// Snapshots keep them.
	rebuilt, d := NewImage().Apply(img.Records())
	if len(d.Skipped) != 0 || !rebuilt.Equal(img) {
		t.Fatal("snapshot records do not rebuild the credentials")
	}
	// Removal; removing what is not there is skipped.
	next, d := img.Apply([]Record{&RemoveUserScramCredential{Name: "alice", Mechanism: ScramSHA256}, &RemoveUserScramCredential{Name: "carol", Mechanism: ScramSHA256}})
	if len(d.Skipped) != 1 || !errors.Is(d.Skipped[0].Err, ErrInvalidRecord) {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	if _, ok := next.ScramCredential("alice", ScramSHA256); ok {
		t.Fatal("alice/256 still there")
	}
	if _, ok := img.ScramCredential("alice", ScramSHA256); !ok {
		t.Fatal("Apply changed the old image")
	}
	// Malformed credentials are skipped.
	_, d = img.Apply([]Record{
		&UserScramCredential{Name: "x", Mechanism: ScramSHA256, Salt: []byte("s"), StoredKey: []byte("short"), ServerKey: []byte("short"), Iterations: 4096},
		&UserScramCredential{Name: "", Mechanism: ScramSHA256, Salt: []byte("s"), StoredKey: alice.StoredKey, ServerKey: alice.ServerKey, Iterations: 4096},
		&UserScramCredential{Name: "x", Mechanism: 9, Salt: []byte("s"), StoredKey: alice.StoredKey, ServerKey: alice.ServerKey, Iterations: 4096},
	})
	if len(d.Skipped) != 3 || d.ScramChanged {
		t.Fatalf("skipped %d, changed %v", len(d.Skipped), d.ScramChanged)
	}
}
