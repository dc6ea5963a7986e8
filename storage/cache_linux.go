package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropCache asks the kernel to start writing back the file's dirty pages in
// [off, off+n) and to drop the clean ones from the page cache
// (POSIX_FADV_DONTNEED). Pages still dirty or under writeback stay; the
// next call over the same range drops them. It is advice: an error changes
// nothing stored, so it is not reported.
func dropCache(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.Fadvise(int(fd), off, n, unix.FADV_DONTNEED)
	})
}
