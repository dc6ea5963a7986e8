package storage

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/magiconair/properties"
)

// MetaPropertiesFile is the name of the file `raftka storage format` writes
// into every log dir and the metadata dir.
const MetaPropertiesFile = "meta.properties"

var (
	// ErrNotFormatted: a directory has no meta.properties.
	ErrNotFormatted = errors.New("storage: directory is not formatted (run raftka storage format)")
	// ErrForeignDir: a directory belongs to another cluster or node.
	ErrForeignDir = errors.New("storage: directory belongs to another cluster or node")
	// ErrBadMetaProperties: meta.properties exists but is not valid.
	ErrBadMetaProperties = errors.New("storage: invalid meta.properties")
)

// MetaProperties is the content of meta.properties, in the format of Kafka's
// KRaft mode (version 1), so tools that read Kafka's file read ours:
//
//	#
//	# Written by raftka storage format. Do not edit.
//	cluster.id=<22-character base64url UUID>
//	directory.id=<22-character base64url UUID>
//	node.id=<int32>
//	version=1
//
// It is a Java properties file; Kafka itself writes the same keys in another
// order, with a date comment, and older Kafka versions omit directory.id.
type MetaProperties struct {
	ClusterID string
	NodeID    int32
	// DirectoryID identifies the directory itself (Kafka 3.7+); empty when a
	// file from an older Kafka lacks it.
	DirectoryID string
}

// Marshal renders the file.
func (m MetaProperties) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString("#\n# Written by raftka storage format. Do not edit.\n")
	fmt.Fprintf(&b, "cluster.id=%s\n", m.ClusterID)
	if m.DirectoryID != "" {
		fmt.Fprintf(&b, "directory.id=%s\n", m.DirectoryID)
	}
	fmt.Fprintf(&b, "node.id=%d\n", m.NodeID)
	b.WriteString("version=1\n")
	return b.Bytes()
}

// ParseMetaProperties parses the file's bytes and checks every field.
func ParseMetaProperties(data []byte) (MetaProperties, error) {
	bad := func(format string, args ...any) (MetaProperties, error) {
		return MetaProperties{}, fmt.Errorf("%w: %s", ErrBadMetaProperties, fmt.Sprintf(format, args...))
	}
	loader := properties.Loader{Encoding: properties.UTF8, DisableExpansion: true}
	p, err := loader.LoadBytes(data)
	if err != nil {
		return bad("%v", err)
	}
	get := func(k string) string { v, _ := p.Get(k); return v }
	switch v := get("version"); v {
	case "1":
	case "0":
		return bad("version=0 is a ZooKeeper-mode Kafka directory; raftka needs version=1 (run raftka storage format on an empty directory)")
	case "":
		return bad("version is missing")
	default:
		return bad("version=%q: raftka reads version 1 only", v)
	}
	var m MetaProperties
	m.ClusterID = get("cluster.id")
	if _, err := ParseUUID(m.ClusterID); err != nil {
		return bad("cluster.id=%q: %v", m.ClusterID, err)
	}
	id := get("node.id")
	n, err := strconv.ParseInt(id, 10, 32)
	if err != nil || n < 0 {
		return bad("node.id=%q: want a non-negative 32-bit number", id)
	}
	m.NodeID = int32(n)
	if dir, ok := p.Get("directory.id"); ok {
		if _, err := ParseUUID(dir); err != nil {
			return bad("directory.id=%q: %v", dir, err)
		}
		m.DirectoryID = dir
	}
	return m, nil
}

// ReadMetaProperties reads dir's meta.properties. A missing file or
// directory is ErrNotFormatted.
func ReadMetaProperties(dir string) (MetaProperties, error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return MetaProperties{}, fmt.Errorf("%s: %w", dir, ErrNotFormatted)
	}
	if err != nil {
		return MetaProperties{}, err
	}
	m, err := ParseMetaProperties(data)
	if err != nil {
		return MetaProperties{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// WriteMetaProperties creates dir if needed and writes meta.properties
// atomically: a temporary file, fsync, rename over the old name, fsync the
// directory, so a crash leaves the old file or the new one, never a torn one.
func WriteMetaProperties(dir string, m MetaProperties) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, MetaPropertiesFile), m.Marshal())
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// CheckDirs reads meta.properties in every dir and refuses to go on unless
// each one is formatted for this node of one cluster. clusterID may be empty:
// then the dirs must agree among themselves. The result is in dirs' order;
// its first entry's ClusterID is the cluster this node belongs to.
func CheckDirs(dirs []string, clusterID string, nodeID int32) ([]MetaProperties, error) {
	if len(dirs) == 0 {
		return nil, errors.New("storage: no directories to check")
	}
	out := make([]MetaProperties, 0, len(dirs))
	dirIDs := map[string]string{}
	for _, dir := range dirs {
		m, err := ReadMetaProperties(dir)
		if err != nil {
			return nil, err
		}
		if clusterID == "" {
			clusterID = m.ClusterID
		}
		if m.ClusterID != clusterID {
			return nil, fmt.Errorf("%s: %w: it is formatted for cluster.id %s, not %s", dir, ErrForeignDir, m.ClusterID, clusterID)
		}
		if m.NodeID != nodeID {
			return nil, fmt.Errorf("%s: %w: it is formatted for node.id %d, not %d", dir, ErrForeignDir, m.NodeID, nodeID)
		}
		if other, dup := dirIDs[m.DirectoryID]; dup && m.DirectoryID != "" {
			return nil, fmt.Errorf("%s and %s have the same directory.id %s: was one copied from the other?", other, dir, m.DirectoryID)
		}
		dirIDs[m.DirectoryID] = dir
		out = append(out, m)
	}
	return out, nil
}

// UUID is Kafka's 128-bit Uuid; its text form is unpadded base64url, 22
// characters.
type UUID [16]byte

// String renders the id as Kafka does: unpadded base64url, 22 characters.
func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// ParseUUID accepts 22 unpadded base64url characters. Like Kafka's
// Uuid.fromString it ignores the 4 unused trailing bits, so an id Kafka
// accepted (its quickstart's MkU3OEVBNTcwNTJENDM2Qk has them set) is
// accepted here; ids are stored and compared as the text the operator gave.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 22 {
		return u, fmt.Errorf("want 22 base64url characters, got %d", len(s))
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("not an unpadded base64url UUID")
	}
	copy(u[:], b)
	return u, nil
}

// RandomUUID makes a version-4 UUID as Kafka's Uuid.randomUuid does, and
// like it never returns the reserved ids (all-zero high half, the metadata
// topic's id among them) or one whose text starts with '-', which command
// lines would take for a flag.
func RandomUUID() UUID {
	for {
		var u UUID
		if _, err := rand.Read(u[:]); err != nil {
			panic("storage: crypto/rand failed: " + err.Error())
		}
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // IETF variant
		if isReservedUUID(u) {
			continue
		}
		if s := u.String(); s[0] == '-' {
			continue
		}
		return u
	}
}

// isReservedUUID: Kafka reserves ids whose high 64 bits are zero (zero is
// "unassigned", one the metadata topic, small values directory markers).
func isReservedUUID(u UUID) bool {
	for _, b := range u[:8] {
		if b != 0 {
			return false
		}
	}
	return true
}

// CheckDirsAt is CheckDirs for a broker's start, as Kafka's: a log dir
// other than metadataDir whose meta.properties cannot be read for an I/O
// error (not a missing or foreign one) is left out and returned in failed,
// to be taken offline (ManagerOptions.FailedAtStart); the metadata dir
// must be readable. metas[i] is dirs[i]'s, zero for a failed dir.
func CheckDirsAt(dirs []string, metadataDir string, nodeID int32) (metas []MetaProperties, failed map[string]error, err error) {
	var good []string
	for _, dir := range dirs {
		if _, err := ReadMetaProperties(dir); err != nil && dir != metadataDir && isIOError(err) {
			if failed == nil {
				failed = map[string]error{}
			}
			failed[dir] = err
			continue
		}
		good = append(good, dir)
	}
	if len(good) == 0 {
		return nil, nil, fmt.Errorf("%w: no log dir is readable", ErrLogDirFailed)
	}
	// The metadata dir first, so its cluster id is the one the others
	// must match.
	slices.SortStableFunc(good, func(a, b string) int {
		switch {
		case a == metadataDir && b != metadataDir:
			return -1
		case b == metadataDir && a != metadataDir:
			return 1
		}
		return 0
	})
	checked, err := CheckDirs(good, "", nodeID)
	if err != nil {
		return nil, nil, err
	}
	metas = make([]MetaProperties, len(dirs))
	for i, d := range good {
		metas[slices.Index(dirs, d)] = checked[i]
	}
	return metas, failed, nil
}
