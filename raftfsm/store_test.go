package raftfsm

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// syncedFreelistOptions are the options raft.db was opened with before
// raftStoreOptions: bolt's freelist written at every commit.
func syncedFreelistOptions(path string) raftboltdb.Options {
	return raftboltdb.Options{Path: path, BoltOptions: &bbolt.Options{Timeout: time.Second}}
}

func appendLogs(t testing.TB, st *raftboltdb.BoltStore, from, to uint64, data []byte) {
	t.Helper()
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 3, Type: raft.LogCommand, Data: data})
		if len(logs) == 100 || i == to {
			if err := st.StoreLogs(logs); err != nil {
				t.Fatalf("store logs up to %d: %v", i, err)
			}
			logs = logs[:0]
		}
	}
}

func checkLogs(t *testing.T, st *raftboltdb.BoltStore, first, last uint64, data []byte) {
	t.Helper()
	if f, err := st.FirstIndex(); err != nil || f != first {
		t.Fatalf("first index %d (%v), want %d", f, err, first)
	}
	if l, err := st.LastIndex(); err != nil || l != last {
		t.Fatalf("last index %d (%v), want %d", l, err, last)
	}
	for i := first; i <= last; i++ {
		var got raft.Log
		if err := st.GetLog(i, &got); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if got.Index != i || got.Term != 3 || string(got.Data) != string(data) {
			t.Fatalf("entry %d read back as index %d term %d, %d bytes", i, got.Index, got.Term, len(got.Data))
		}
	}
}

// TestRaftStoreOpensBothWays: a raft.db written by a node of an earlier
// release (the freelist synced) opens under raftStoreOptions with its
// entries, term and vote, takes more, and then still opens the old way
// (a node rolled back), with everything in it. Trimmed entries stay
// trimmed, and the scan that replaces the written freelist finds their
// pages free.
func TestRaftStoreOpensBothWays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	data := []byte("a metadata record batch")

	old, err := raftboltdb.New(syncedFreelistOptions(path))
	if err != nil {
		t.Fatal(err)
	}
	appendLogs(t, old, 1, 3000, data)
	if err := old.DeleteRange(1, 2000); err != nil {
		t.Fatal(err)
	}
	if err := old.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	if err := old.Set([]byte("LastVoteCand"), []byte("node-2")); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	cur, err := raftboltdb.New(raftStoreOptions(path))
	if err != nil {
		t.Fatalf("open an earlier release's raft.db: %v", err)
	}
	checkLogs(t, cur, 2001, 3000, data)
	if term, err := cur.GetUint64([]byte("CurrentTerm")); err != nil || term != 3 {
		t.Fatalf("current term %d (%v), want 3", term, err)
	}
	if free := cur.Stats().FreePageN; free == 0 {
		t.Fatal("no free pages after trimming 2,000 entries: the trimmed pages were not found")
	}
	appendLogs(t, cur, 3001, 6000, data)
	if err := cur.DeleteRange(2001, 4000); err != nil {
		t.Fatal(err)
	}
	if err := cur.Close(); err != nil {
		t.Fatal(err)
	}

	again, err := raftboltdb.New(raftStoreOptions(path))
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	checkLogs(t, again, 4001, 6000, data)
	appendLogs(t, again, 6001, 6500, data)
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}

	back, err := raftboltdb.New(syncedFreelistOptions(path))
	if err != nil {
		t.Fatalf("open the way an earlier release does: %v", err)
	}
	defer back.Close()
	checkLogs(t, back, 4001, 6500, data)
	if v, err := back.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-2" {
		t.Fatalf("vote %q (%v), want node-2", v, err)
	}
	appendLogs(t, back, 6501, 6600, data)
	checkLogs(t, back, 4001, 6600, data)
}

// BenchmarkRaftStoreAppend is one Raft entry's bolt commit (what the
// leader and each follower pay, in turn, before an entry counts) on a
// file whose first 30,000 of 40,000 entries a snapshot has trimmed, as
// raftStoreOptions opens it and as it was opened before.
func BenchmarkRaftStoreAppend(b *testing.B) {
	for _, c := range []struct {
		name string
		opts func(string) raftboltdb.Options
	}{
		{"freelist-synced", syncedFreelistOptions},
		{"raftStoreOptions", raftStoreOptions},
	} {
		b.Run(c.name, func(b *testing.B) {
			st, err := raftboltdb.New(c.opts(filepath.Join(b.TempDir(), "raft.db")))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			data := make([]byte, 300)
			appendLogs(b, st, 1, 40000, data)
			if err := st.DeleteRange(1, 30000); err != nil {
				b.Fatal(err)
			}
			next := uint64(40001)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := st.StoreLogs([]*raft.Log{{Index: next, Term: 3, Type: raft.LogCommand, Data: data}}); err != nil {
					b.Fatal(fmt.Errorf("append %d: %w", next, err))
				}
				next++
			}
		})
	}
}
