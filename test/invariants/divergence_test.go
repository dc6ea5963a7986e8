package invariants

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
)

// batch builds a batch of n records at base in leader epoch epoch, whose
// values start with tag.
func batch(base int64, n int, epoch int32, tag string) storage.Batch {
	var recs []recordbatch.Record
	for i := range n {
		recs = append(recs, recordbatch.Record{Value: fmt.Appendf(nil, "%s-%d", tag, i)})
	}
	b := storage.Batch(recordbatch.Build(1_700_000_000_000, recs...))
	b.SetBaseOffset(base)
	b.SetPartitionLeaderEpoch(epoch)
	return b
}

// writeLog writes a partition directory under logDir with one segment per
// element of segments.
func writeLog(t *testing.T, logDir string, segments ...[]storage.Batch) {
	t.Helper()
	dir := filepath.Join(logDir, "t-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, seg := range segments {
		var data []byte
		for _, b := range seg {
			data = append(data, b...)
		}
		name := fmt.Sprintf("%020d.log", seg[0].BaseOffset())
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readLog(t *testing.T, logDir string) PartitionLog {
	t.Helper()
	l, err := ReadPartitionLog(logDir, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestReadPartitionLogAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	b0, b1, b2 := batch(0, 3, 0, "a"), batch(3, 2, 0, "b"), batch(5, 1, 1, "c")
	// The second segment's name sorts before the first's as a string
	// would not: offsets are compared as numbers.
	writeLog(t, dir, []storage.Batch{b0, b1}, []storage.Batch{b2})
	if err := os.WriteFile(filepath.Join(dir, "t-0", "00000000000000000000.index"), make([]byte, 80), 0o644); err != nil {
		t.Fatal(err)
	}
	l := readLog(t, dir)
	if len(l.Batches) != 3 || l.Batches[2].BaseOffset() != 5 || l.End() != 6 {
		t.Fatalf("read %d batches ending at %d, want 3 ending at 6", len(l.Batches), l.End())
	}
	if (PartitionLog{}).End() != -1 {
		t.Error("an empty log should end at -1")
	}
}

func TestReadPartitionLogRejectsDamage(t *testing.T) {
	good := batch(0, 2, 0, "a")
	corrupt := batch(0, 2, 0, "a")
	corrupt[len(corrupt)-1] ^= 0xff
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"torn header", good[:8], "header needs 12"},
		{"torn body", good[:len(good)-3], "left"},
		{"bad crc", corrupt, "CRC"},
		{"bad length", append(append([]byte{}, good[:8]...), 0, 0, 0, 1), "position 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "t-0"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "t-0", "00000000000000000000.log"), c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadPartitionLog(dir, "t", 0)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
	if _, err := ReadPartitionLog(t.TempDir(), "t", 0); err == nil {
		t.Error("a missing partition directory should be an error")
	}
}

func TestCompareReplicas(t *testing.T) {
	a := batch(0, 3, 0, "a")
	b := batch(3, 2, 0, "b")
	c := batch(5, 2, 1, "c")
	cOtherEpoch := batch(5, 2, 2, "c")
	cOtherBytes := batch(5, 2, 1, "x")
	cLonger := batch(5, 3, 1, "c")
	log := func(bs ...storage.Batch) PartitionLog { return PartitionLog{Batches: bs} }
	cases := []struct {
		name string
		logs map[int32]PartitionLog
		hw   int64
		want []string // substrings, one per divergence
	}{
		{name: "one replica", logs: map[int32]PartitionLog{1: log(a)}, hw: 3},
		{name: "identical", logs: map[int32]PartitionLog{1: log(a, b, c), 2: log(a, b, c), 3: log(a, b, c)}, hw: 7},
		{name: "differences above the hw do not count", logs: map[int32]PartitionLog{1: log(a, b, c), 2: log(a, b, cOtherBytes), 3: log(a, b)}, hw: 5},
		{name: "a batch straddling the hw counts", logs: map[int32]PartitionLog{1: log(a, b, c), 2: log(a, b, cOtherBytes)}, hw: 6, want: []string{"node 2 vs node 1"}},
		{name: "other epoch", logs: map[int32]PartitionLog{1: log(a, b, c), 2: log(a, b, cOtherEpoch)}, hw: 7, want: []string{"offset 5: node 2 vs node 1: leader epoch 2 vs 1"}},
		{name: "other bytes", logs: map[int32]PartitionLog{1: log(a, b, c), 2: log(a, b, c), 3: log(a, b, cOtherBytes)}, hw: 7, want: []string{"node 3 vs node 1: "}},
		{name: "other length", logs: map[int32]PartitionLog{1: log(a, b, c), 2: log(a, b, cLonger)}, hw: 7, want: []string{"batch ends at 7 vs 6"}},
		{name: "missing on the follower", logs: map[int32]PartitionLog{1: log(a, b, c), 2: log(a, c)}, hw: 7, want: []string{"offset 3: node 2 vs node 1: batch 3..4 missing"}},
		{name: "short follower", logs: map[int32]PartitionLog{1: log(a, b, c), 2: log(a)}, hw: 7, want: []string{"batch 3..4 missing", "batch 5..6 missing"}},
		{name: "extra on the follower", logs: map[int32]PartitionLog{1: log(a, c), 2: log(a, b, c)}, hw: 7, want: []string{"extra batch 3..4"}},
		{name: "reference short", logs: map[int32]PartitionLog{1: log(a), 2: log(a, b)}, hw: 5, want: []string{"extra batch 3..4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CompareReplicas(tc.logs, tc.hw)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %d divergences %v", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].String(), w) {
					t.Errorf("divergence %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

// Replicas that rolled segments at different offsets still compare equal:
// the comparison is by batch, not by file.
func TestCompareReplicasFromDisk(t *testing.T) {
	a, b, c := batch(0, 3, 0, "a"), batch(3, 2, 0, "b"), batch(5, 2, 1, "c")
	d1, d2 := t.TempDir(), t.TempDir()
	writeLog(t, d1, []storage.Batch{a, b, c})
	writeLog(t, d2, []storage.Batch{a}, []storage.Batch{b, c})
	if div := CompareReplicas(map[int32]PartitionLog{1: readLog(t, d1), 2: readLog(t, d2)}, 7); len(div) != 0 {
		t.Fatalf("divergences %v", div)
	}
}

func TestHighWatermarks(t *testing.T) {
	dir := t.TempDir()
	hw, err := HighWatermarks(dir)
	if err != nil || len(hw) != 0 {
		t.Fatalf("no checkpoint: %v, %v; want empty", hw, err)
	}
	want := map[storage.TopicPartition]int64{{Topic: "t", Partition: 0}: 42, {Topic: "u", Partition: 3}: 7}
	if err := storage.WriteOffsetCheckpoint(filepath.Join(dir, storage.ReplicationCheckpointFile), want); err != nil {
		t.Fatal(err)
	}
	hw, err = HighWatermarks(dir)
	if err != nil || len(hw) != 2 || hw[storage.TopicPartition{Topic: "t", Partition: 0}] != 42 {
		t.Fatalf("HighWatermarks = %v, %v; want %v", hw, err, want)
	}
	if err := os.WriteFile(filepath.Join(dir, storage.ReplicationCheckpointFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := HighWatermarks(dir); err == nil {
		t.Error("a garbage checkpoint should be an error")
	}
}

func TestDescribeAt(t *testing.T) {
	a, b := batch(0, 3, 0, "a"), batch(3, 2, 4, "b")
	l := PartitionLog{Batches: []storage.Batch{a, b}}
	got := DescribeAt(l, 1, 4, 5, -1)
	want := []string{"offset 1: batch 0..2 leader epoch 0", "offset 4: batch 3..4 leader epoch 4", "offset 5: no batch", "offset -1: no batch"}
	if len(got) != len(want) {
		t.Fatalf("DescribeAt = %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d = %q, want it to start %q", i, got[i], want[i])
		}
	}
}
