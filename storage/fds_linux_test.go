package storage

import (
	"os"
	"strconv"
	"testing"
)

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// A partition whose only segment is active holds one descriptor, its
// .log: the indexes open their files per write. With three per partition
// a node of 10,000 partition replicas ran out of descriptors at a 20,000
// RLIMIT_NOFILE and left partitions offline (EMFILE).
func TestActiveSegmentHoldsOneDescriptor(t *testing.T) {
	const n = 200
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{t.TempDir()}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	before := openFDs(t)
	for i := range n {
		l, err := m.GetOrCreate("t"+strconv.Itoa(i), 0, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if _, err := l.Append(batchOf(1_700_000_000_000+int64(j), "v", 2), AppendOptions{LeaderEpoch: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if got := openFDs(t) - before; got > n+n/10 {
		t.Fatalf("%d partitions hold %d descriptors; want about one each", n, got)
	}
}
