package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Checkpoint file names, as Kafka names them.
const (
	RecoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	ReplicationCheckpointFile    = "replication-offset-checkpoint"
	LogStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	LeaderEpochCheckpointFile    = "leader-epoch-checkpoint"
	CleanerCheckpointFile        = "cleaner-offset-checkpoint"
	PartitionMetadataFile        = "partition.metadata"
	CleanShutdownFile            = ".kafka_cleanshutdown"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// WriteFileAtomic replaces path with data so that after a crash the file
// holds either the old or the new content: write path.tmp, fsync it,
// rename over path, fsync the directory.
func WriteFileAtomic(path string, data []byte) error {
	if err := writeFileSynced(path, data); err != nil {
		return err
	}
	return fsyncDir(filepath.Dir(path))
}

// writeFileSynced is WriteFileAtomic without the directory fsync, for a
// caller that fsyncs the directory itself once for several files (a new
// log's, NewLog): until then a crash may leave the old file or none.
func writeFileSynced(path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := fsyncFile(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func fsyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return fsyncFile(d)
}

// checkpoint files share one text format (Kafka's CheckpointFile):
//
//	0                 version, always 0
//	N                 number of entries
//	<entry>           N lines, fields separated by a space
//
// parseCheckpoint returns the entry lines split into fields, checking the
// version, the count, and that every line has nfields fields.
func parseCheckpoint(data []byte, nfields int) ([][]string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	v, ok := next()
	if !ok {
		return nil, errors.New("empty file, expected a version line")
	}
	if strings.TrimSpace(v) != "0" {
		return nil, fmt.Errorf("line 1: unsupported version %q", v)
	}
	c, ok := next()
	if !ok {
		return nil, errors.New("missing the entry count line")
	}
	n, err := strconv.Atoi(strings.TrimSpace(c))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("line 2: bad entry count %q", c)
	}
	entries := make([][]string, 0, min(n, 1024))
	for {
		l, ok := next()
		if !ok {
			break
		}
		if strings.TrimSpace(l) == "" {
			return nil, fmt.Errorf("line %d: empty", line)
		}
		fields := strings.Fields(l)
		if len(fields) != nfields {
			return nil, fmt.Errorf("line %d: %d fields, want %d", line, len(fields), nfields)
		}
		if len(entries) == n {
			return nil, fmt.Errorf("line %d: more entries than the count %d", line, n)
		}
		entries = append(entries, fields)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(entries) != n {
		return nil, fmt.Errorf("%d entries, the count line says %d", len(entries), n)
	}
	return entries, nil
}

// ParseOffsetCheckpoint parses the per-log-dir checkpoint format
// ("topic partition offset" lines).
func ParseOffsetCheckpoint(data []byte) (map[TopicPartition]int64, error) {
	entries, err := parseCheckpoint(data, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(entries))
	for i, e := range entries {
		p, err := strconv.ParseInt(e[1], 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("entry %d: bad partition %q", i+1, e[1])
		}
		off, err := strconv.ParseInt(e[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("entry %d: bad offset %q", i+1, e[2])
		}
		out[TopicPartition{e[0], int32(p)}] = off
	}
	return out, nil
}

// FormatOffsetCheckpoint renders offsets, sorted for stable files.
func FormatOffsetCheckpoint(offsets map[TopicPartition]int64) []byte {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(tps))
	for _, tp := range tps {
		fmt.Fprintf(&b, "%s %d %d\n", tp.Topic, tp.Partition, offsets[tp])
	}
	return b.Bytes()
}

// ReadOffsetCheckpoint reads a per-log-dir checkpoint; a missing file is an
// empty map. A malformed file is an error naming it.
func ReadOffsetCheckpoint(path string) (map[TopicPartition]int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[TopicPartition]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := ParseOffsetCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptFile, path, err)
	}
	return m, nil
}

// WriteOffsetCheckpoint writes offsets to path atomically.
func WriteOffsetCheckpoint(path string, offsets map[TopicPartition]int64) error {
	return WriteFileAtomic(path, FormatOffsetCheckpoint(offsets))
}

// fsyncFile is the one place the package calls fsync. Tests that run
// thousands of open/close cycles replace it with a no-op (fsync does not
// change what a SIGKILLed process leaves behind, only what a power cut
// does); everything else uses the real call.
var fsyncFile = func(f *os.File) error { return f.Sync() }
