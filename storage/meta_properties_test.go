package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMetaPropertiesRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b") // created by the write
	m := MetaProperties{ClusterID: RandomUUID().String(), NodeID: 3, DirectoryID: RandomUUID().String()}
	if err := WriteMetaProperties(dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMetaProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != m {
		t.Fatalf("read %+v, wrote %+v", got, m)
	}
	if _, err := os.Stat(filepath.Join(dir, MetaPropertiesFile+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file left behind: %v", err)
	}
	// Overwriting replaces the file whole.
	m.NodeID = 4
	if err := WriteMetaProperties(dir, m); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadMetaProperties(dir); got.NodeID != 4 {
		t.Errorf("after rewrite node %d", got.NodeID)
	}
}

// A file as Kafka 3.7+ writes it: date comment, another key order, escaped
// nothing, plus a key raftka does not know.
func TestParseKafkaWrittenFile(t *testing.T) {
	text := "#\n#Tue Mar 05 10:00:00 UTC 2024\nnode.id=1\ndirectory.id=G4NtKvIlQfSwS0hBQ06mZg\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\nextra.key=1\n"
	m, err := ParseMetaProperties([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := MetaProperties{ClusterID: "MkU3OEVBNTcwNTJENDM2Qk", NodeID: 1, DirectoryID: "G4NtKvIlQfSwS0hBQ06mZg"}
	if m != want {
		t.Fatalf("got %+v", m)
	}
	// Older Kafka: no directory.id.
	m, err = ParseMetaProperties([]byte("version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\nnode.id=2\n"))
	if err != nil || m.DirectoryID != "" || m.NodeID != 2 {
		t.Fatalf("%+v %v", m, err)
	}
}

func TestParseMetaPropertiesErrors(t *testing.T) {
	const cid = "MkU3OEVBNTcwNTJENDM2Qk"
	cases := []struct {
		text, want string
	}{
		{"", "version is missing"},
		{"version=0\nbroker.id=1\ncluster.id=" + cid, "ZooKeeper-mode"},
		{"version=2\ncluster.id=" + cid + "\nnode.id=1", `version="2"`},
		{"version=1\nnode.id=1", `cluster.id=""`},
		{"version=1\ncluster.id=short\nnode.id=1", "want 22 base64url characters"},
		{"version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Q+\nnode.id=1", "not an unpadded base64url UUID"},
		{"version=1\ncluster.id=" + cid, `node.id=""`},
		{"version=1\ncluster.id=" + cid + "\nnode.id=-1", `node.id="-1"`},
		{"version=1\ncluster.id=" + cid + "\nnode.id=99999999999", `node.id="99999999999"`},
		{"version=1\ncluster.id=" + cid + "\nnode.id=1\ndirectory.id=x", `directory.id="x"`},
		{"version=1\n\\u00", "invalid"},
	}
	for _, c := range cases {
		_, err := ParseMetaProperties([]byte(c.text))
		if err == nil || !errors.Is(err, ErrBadMetaProperties) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.text, err, c.want)
		}
	}
}

func TestReadUnformatted(t *testing.T) {
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "missing")} {
		_, err := ReadMetaProperties(dir)
		if !errors.Is(err, ErrNotFormatted) || !strings.Contains(err.Error(), "raftka storage format") {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

func TestCheckDirs(t *testing.T) {
	cluster, other := RandomUUID().String(), RandomUUID().String()
	format := func(cluster string, node int32) string {
		dir := t.TempDir()
		if err := WriteMetaProperties(dir, MetaProperties{ClusterID: cluster, NodeID: node, DirectoryID: RandomUUID().String()}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a, b := format(cluster, 1), format(cluster, 1)

	metas, err := CheckDirs([]string{a, b}, cluster, 1)
	if err != nil || len(metas) != 2 || metas[0].ClusterID != cluster || metas[0].DirectoryID == metas[1].DirectoryID {
		t.Fatalf("%+v %v", metas, err)
	}
	metas, err = CheckDirs([]string{a, b}, "", 1)
	if err != nil || metas[1].ClusterID != cluster {
		t.Fatalf("learning the cluster id: %+v %v", metas, err)
	}

	copied := t.TempDir()
	data, _ := os.ReadFile(filepath.Join(a, MetaPropertiesFile))
	if err := os.WriteFile(filepath.Join(copied, MetaPropertiesFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		dirs    []string
		cluster string
		node    int32
		is      error
		want    string
	}{
		{"unformatted", []string{a, t.TempDir()}, cluster, 1, ErrNotFormatted, "run raftka storage format"},
		{"other cluster", []string{a}, other, 1, ErrForeignDir, "formatted for cluster.id " + cluster},
		{"dirs disagree", []string{a, format(other, 1)}, "", 1, ErrForeignDir, "not " + cluster},
		{"other node", []string{a, format(cluster, 2)}, cluster, 1, ErrForeignDir, "node.id 2, not 1"},
		{"copied dir", []string{a, copied}, cluster, 1, nil, "same directory.id"},
		{"no dirs", nil, cluster, 1, nil, "no directories"},
	}
	for _, c := range cases {
		_, err := CheckDirs(c.dirs, c.cluster, c.node)
		if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %v %q", c.name, err, c.is, c.want)
		}
	}
}

func TestUUID(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		u := RandomUUID()
		s := u.String()
		if len(s) != 22 || s[0] == '-' || seen[s] {
			t.Fatalf("bad or repeated id %q", s)
		}
		seen[s] = true
		if u[6]>>4 != 4 || u[8]>>6 != 2 {
			t.Fatalf("%s: not a version-4 IETF UUID", s)
		}
		back, err := ParseUUID(s)
		if err != nil || back != u {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var zero UUID
	if !isReservedUUID(zero) || !isReservedUUID(UUID{15: 1}) || isReservedUUID(UUID{7: 1}) {
		t.Error("isReservedUUID")
	}
	if u, err := ParseUUID("MkU3OEVBNTcwNTJENDM2Qk"); err != nil || u.String() != "MkU3OEVBNTcwNTJENDM2Qg" {
		t.Errorf("Kafka's quickstart id: %v %v", u, err)
	}
	if zero.String() != "AAAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("zero %q", zero.String())
	}
	for _, bad := range []string{"", "AAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAA==", "AAAAAAAAAAAAAAAAAAAA/A", "AAAAAAAAAAAAAAAAAAAA.A"} {
		if _, err := ParseUUID(bad); err == nil {
			t.Errorf("ParseUUID(%q) accepted", bad)
		}
	}
}

// FuzzParseMetaProperties: any bytes give an error or a MetaProperties that
// round-trips through Marshal.
func FuzzParseMetaProperties(f *testing.F) {
	good := MetaProperties{ClusterID: "MkU3OEVBNTcwNTJENDM2Qk", NodeID: 1, DirectoryID: "G4NtKvIlQfSwS0hBQ06mZg"}.Marshal()
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add([]byte("version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\nnode.id=2147483647\n\\"))
	f.Add(append(good, 0xff, '\\', 'u'))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMetaProperties(data)
		if err != nil {
			return
		}
		again, err := ParseMetaProperties(m.Marshal())
		if err != nil || again != m {
			t.Fatalf("round trip: %+v -> %+v, %v", m, again, err)
		}
	})
}
