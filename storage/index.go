package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
)

// index is the machinery shared by the offset and time indexes: a file of
// fixed-size entries, sorted, sparse, written at the end only. The file is
// preallocated to its maximum size while its segment is active (so an
// unclean stop leaves zero-filled tails, which the sanity check rejects) and
// trimmed to its entries when the segment rolls or the log closes.
//
// Entries are also kept in memory, in file format, so lookups never touch
// the disk; an index of a 1 GiB segment at the default 4 KiB interval is
// about 2 MiB. The mutex guards buf and the file: the log's single writer
// appends, any goroutine may look up.
//
// No file descriptor is held between writes. The file is opened for each
// write-out, sync, trim or truncation and closed again, so a partition's
// active segment costs one descriptor (its .log) instead of three: with
// 10,000 partition replicas on a node, three per partition exceed common
// RLIMIT_NOFILE limits (20,000 here) and partitions stay offline with
// EMFILE. Those writes are rare (a sync per flush, a trim per roll), and
// an open is cheap next to the fsync or truncate it comes with.
type index struct {
	mu         sync.RWMutex
	path       string
	entrySize  int
	maxEntries int
	buf        []byte // entries, len = n*entrySize
	written    int    // bytes of buf already written to the file
	synced     bool   // no write since the last sync
}

// openIndex opens or creates the index file at path and loads its entries.
// A file whose size is not a whole number of entries is reported as corrupt
// (the caller rebuilds it). maxBytes bounds the entries the index may hold.
// With discard the file is emptied unread: its segment is about to be
// rescanned, and an active segment's index left by an unclean stop is
// preallocated to segment.index.bytes (10 MiB by default), which reading
// would cost for nothing, per index, per partition, at every restart.
func openIndex(path string, entrySize, maxBytes int, discard bool) (*index, error) {
	flags := os.O_RDWR | os.O_CREATE
	if discard {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx := &index{path: path, entrySize: entrySize, maxEntries: max(maxBytes/entrySize, 1)}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size%int64(entrySize) != 0 || size > int64(1<<31) {
		return idx, fmt.Errorf("%w: %s: size %d is not a whole number of %d-byte entries", ErrCorruptFile, path, size, entrySize)
	}
	idx.buf = make([]byte, size)
	if _, err := io.ReadFull(f, idx.buf); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if n := len(idx.buf) / entrySize; n > idx.maxEntries {
		idx.maxEntries = n
	}
	idx.written = len(idx.buf)
	idx.synced = true
	return idx, nil
}

func (x *index) entries() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.buf) / x.entrySize
}

func (x *index) full() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.buf)/x.entrySize >= x.maxEntries
}

// preallocate grows the file to its maximum size, as Kafka does for the
// active segment's indexes.
func (x *index) preallocate() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.withFile(func(f *os.File) error { return f.Truncate(int64(x.maxEntries * x.entrySize)) })
}

// withFile opens the index file, runs fn on it and closes it, reporting
// the first error (a failed close may hide a failed write-back). Called
// with mu held. The file exists from openIndex on; a missing one is an
// error rather than silently created at a path its segment no longer uses.
func (x *index) withFile(fn func(f *os.File) error) error {
	f, err := os.OpenFile(x.path, os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	return errors.Join(fn(f), f.Close())
}

// appendEntry adds one entry after the last; the caller checks order. The
// entry reaches the file at the next sync, trim or close: an index is a
// cache rebuilt after any unclean stop, so writing it per entry would only
// add a syscall to the append path.
func (x *index) appendEntry(e []byte) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.buf)/x.entrySize >= x.maxEntries {
		return fmt.Errorf("%s: index full", x.path)
	}
	x.buf = append(x.buf, e...)
	x.synced = false
	return nil
}

// writeOutLocked writes entries not yet in the file to f.
func (x *index) writeOutLocked(f *os.File) error {
	if x.written >= len(x.buf) {
		return nil
	}
	if _, err := f.WriteAt(x.buf[x.written:], int64(x.written)); err != nil {
		return err
	}
	x.written = len(x.buf)
	return nil
}

// truncateEntries keeps the first n entries, in memory and on disk (the
// file keeps its size while preallocated; the tail is zeroed so a crash
// cannot resurrect removed entries).
func (x *index) truncateEntries(n int) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if n*x.entrySize >= len(x.buf) {
		return nil
	}
	keep := int64(n * x.entrySize)
	err := x.withFile(func(f *os.File) error {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if err := f.Truncate(keep); err != nil {
			return err
		}
		if st.Size() > keep {
			return f.Truncate(st.Size())
		}
		return nil
	})
	if err != nil {
		return err
	}
	x.buf = x.buf[:keep]
	x.written = min(x.written, len(x.buf))
	x.synced = false
	return nil
}

// reset drops every entry and empties the file (the index is about to be
// rebuilt from its segment; whatever the file held is not trusted).
func (x *index) reset() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.buf = x.buf[:0]
	x.written = 0
	x.synced = false
	return x.withFile(func(f *os.File) error { return f.Truncate(0) })
}

// trim shrinks the file to exactly its entries.
func (x *index) trim() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	err := x.withFile(func(f *os.File) error {
		if err := x.writeOutLocked(f); err != nil {
			return err
		}
		return f.Truncate(int64(len(x.buf)))
	})
	if err != nil {
		return err
	}
	x.synced = false
	return nil
}

func (x *index) sync() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.synced {
		return nil
	}
	err := x.withFile(func(f *os.File) error {
		if err := x.writeOutLocked(f); err != nil {
			return err
		}
		return fsyncFile(f)
	})
	if err != nil {
		return err
	}
	x.synced = true
	return nil
}

// close writes out what is not in the file yet; there is no descriptor to
// release.
func (x *index) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.written >= len(x.buf) {
		return nil
	}
	return x.withFile(x.writeOutLocked)
}

func (x *index) rename(path string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := os.Rename(x.path, path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	x.path = path
	return nil
}

// search returns the number of entries for which less(entry) is true,
// assuming those form a prefix (binary search). Called with mu held.
func (x *index) search(less func(e []byte) bool) int {
	lo, hi := 0, len(x.buf)/x.entrySize
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if less(x.buf[mid*x.entrySize : (mid+1)*x.entrySize]) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}
