package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/raftka/raftka/storage/recordbatch"
	"golang.org/x/sys/unix"
)

// residentPages counts the pages of f's [off, off+n) in the page cache.
func residentPages(t *testing.T, f *os.File, off, n int64) int {
	t.Helper()
	page := int64(os.Getpagesize())
	start := off / page * page
	m, err := unix.Mmap(int(f.Fd()), start, int(off+n-start), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+int(page)-1)/int(page))
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	resident := 0
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident
}

// requireDropsCleanPages skips where the kernel keeps clean pages after
// POSIX_FADV_DONTNEED (tmpfs, whose pages are the file itself).
func requireDropsCleanPages(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 1<<16)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	dropCache(f, 0, 1<<16)
	if n := residentPages(t, f, 0, 1<<16); n > 0 {
		t.Skipf("the file system under %s keeps clean pages after POSIX_FADV_DONTNEED (%d resident), so drop-behind cannot be observed", dir, n)
	}
}

// followerBatch is a batch of one record of size bytes at base, as a
// leader would send it.
func followerBatch(base int64, size int) []byte {
	return recordbatch.Batch{BaseOffset: base, PartitionLeaderEpoch: 1, BaseTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []recordbatch.Record{{Timestamp: 1, Value: bytes.Repeat([]byte{byte(base)}, size)}}}.Encode()
}

func TestFollowerDropBehind(t *testing.T) {
	const step = 256 << 10
	cfg := DefaultConfig()
	for _, tc := range []struct {
		name       string
		dropBehind int64
		leader     bool
		wantCached bool
	}{
		{"follower drops behind", step, false, false},
		{"leader keeps its pages", step, true, true},
		{"follower with drop-behind off", 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := partDir(t)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			requireDropsCleanPages(t, dir)
			l, _ := openTestLog(t, dir, cfg, LogOptions{FollowerDropBehind: tc.dropBehind})
			defer l.Close()
			var want [][]byte
			appendBytes := func(n int64) {
				for end := l.active().size.Load() + n; l.active().size.Load() < end; {
					b := followerBatch(l.LogEndOffset(), 16<<10)
					want = append(want, bytes.Clone(b))
					var err error
					if tc.leader {
						_, err = l.Append(b, AppendOptions{LeaderEpoch: 1})
					} else {
						_, err = l.AppendAsFollower(b)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			// One step written (its writeback started by the advice),
			// then made clean for certain, then another step: the advice
			// now drops the first one.
			appendBytes(step)
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			appendBytes(step)
			f := l.active().f
			cached := residentPages(t, f, 0, step)
			if pages := step / int64(os.Getpagesize()); tc.wantCached && cached < int(pages) {
				t.Fatalf("%d of the first step's %d pages cached, want all", cached, pages)
			} else if !tc.wantCached && cached > 0 {
				t.Fatalf("%d of the first step's %d pages still cached", cached, pages)
			}
			// Whatever is cached, every batch reads back as written.
			requireBatches(t, l, want)
		})
	}
}
