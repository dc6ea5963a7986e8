package main

import (
	"bytes"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
)

func TestParseAddScram(t *testing.T) {
	salt := base64.StdEncoding.EncodeToString([]byte("fixed salt"))
	salted, _ := metadata.SaltPassword(metadata.ScramSHA256, "pw", []byte("fixed salt"), 4096)
	for _, c := range []struct {
		in    string
		name  string
		mech  metadata.ScramMechanism
		iters int32
		err   string
	}{
		{in: "SCRAM-SHA-256=[name=admin,password=admin-secret]", name: "admin", mech: metadata.ScramSHA256, iters: 4096},
		{in: `scram-sha-512=[name=bob, password="with,comma]", iterations=8192]`, name: "bob", mech: metadata.ScramSHA512, iters: 8192},
		{in: "SCRAM-SHA-256=[name=carol,salt=\"" + salt + "\",saltedpassword=\"" + base64.StdEncoding.EncodeToString(salted) + "\"]", name: "carol", mech: metadata.ScramSHA256, iters: 4096},
		{in: "SCRAM-SHA-1=[name=a,password=b]", err: "unknown mechanism"},
		{in: "SCRAM-SHA-256=name=a,password=b", err: "in brackets"},
		{in: "SCRAM-SHA-256=[password=b]", err: "name is required"},
		{in: "SCRAM-SHA-256=[name=a]", err: "password is required"},
		{in: "SCRAM-SHA-256=[name=a,password=b,iterations=100]", err: "too few iterations"},
		{in: "SCRAM-SHA-256=[name=a,password=b,iterations=x]", err: "not a number"},
		{in: "SCRAM-SHA-256=[name=a,password=b,colour=red]", err: `unknown field "colour"`},
		{in: "SCRAM-SHA-256=[name=a,password=b,name=c]", err: "name given twice"},
		{in: `SCRAM-SHA-256=[name=a,password="b]`, err: "unterminated quote"},
		{in: "SCRAM-SHA-256=[name=a,saltedpassword=eA==]", err: "needs the salt"},
		{in: "SCRAM-SHA-256=[name=a,salt=!!,password=b]", err: "not base64"},
	} {
		rec, err := parseAddScram(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || rec.Name != c.name || rec.Mechanism != c.mech || rec.Iterations != c.iters {
			t.Errorf("%s: %+v %v", c.in, rec, err)
		}
	}
	// The password is not kept, and the keys are those of the password.
	rec, err := parseAddScram("SCRAM-SHA-256=[name=carol,salt=\"" + salt + "\",password=pw]")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := metadata.NewScramCredential("carol", metadata.ScramSHA256, []byte("fixed salt"), salted, 4096)
	if !bytes.Equal(rec.StoredKey, want.StoredKey) || !bytes.Equal(rec.ServerKey, want.ServerKey) {
		t.Fatal("keys differ from the salted password's")
	}
}

func TestStorageFormatAddScram(t *testing.T) {
	root := t.TempDir()
	cfg := writeNodeConfig(t, root, 1)
	id := storage.RandomUUID().String()
	out, err := runApp("storage", "format", "--config", cfg, "--cluster-id", id,
		"--add-scram", "SCRAM-SHA-256=[name=admin,password=admin-secret]", "--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret]")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	recs, err := readBootstrap(filepath.Join(root, "meta"))
	if err != nil || len(recs) != 2 {
		t.Fatalf("bootstrap records %v %v", recs, err)
	}
	img, d := metadata.NewImage().Apply(recs)
	if len(d.Skipped) != 0 || len(img.ScramUsers()) != 1 {
		t.Fatalf("bootstrap image: skipped %+v users %+v", d.Skipped, img.ScramUsers())
	}
	// Formatting again (--ignore-formatted) cannot add users to an
	// existing cluster.
	out, err = runApp("storage", "format", "--config", cfg, "--cluster-id", id, "--ignore-formatted", "--add-scram", "SCRAM-SHA-256=[name=x,password=y]")
	if err == nil || !strings.Contains(err.Error(), "already formatted") {
		t.Fatalf("re-format with --add-scram: %v\n%s", err, out)
	}
	// A bad value fails before anything is written.
	root2 := t.TempDir()
	cfg2 := writeNodeConfig(t, root2, 1)
	if _, err := runApp("storage", "format", "--config", cfg2, "--cluster-id", id, "--add-scram", "SCRAM-SHA-256=[name=a]"); err == nil {
		t.Fatal("bad --add-scram accepted")
	}
	if _, err := storage.ReadMetaProperties(filepath.Join(root2, "a")); err == nil {
		t.Fatal("a failed format wrote meta.properties")
	}
}
