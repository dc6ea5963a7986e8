package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// Log dir failure (Kafka's LogDirFailureChannel): an I/O error on a log's
// files (a write, fsync or read that the operating system refused: a full
// or read-only file system, a disk that answers EIO) takes the whole log
// dir holding it offline, as Kafka does, not the broker. The dir's logs are
// closed without another write, its partitions are remembered as offline
// (GetOrCreate refuses them rather than making an empty log elsewhere,
// which could lead with nothing), and ManagerOptions.OnDirFailure is told
// once, so the broker can stop serving them and tell the controller, which
// moves their leaderships to the other ISR members. The other dirs go on.
// A dir comes back only with a restart that finds it usable.

// isIOError reports whether err is the operating system refusing an
// operation on a file, as opposed to a rule of ours (a bad batch, an
// offset out of range) or a file closed under a reader by a deletion.
func isIOError(err error) bool {
	if err == nil || errors.Is(err, ErrClosed) || errors.Is(err, os.ErrClosed) || errors.Is(err, fs.ErrNotExist) {
		return false
	}
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &errno)
}

// ioFailure passes err through, except that an I/O error is reported to the
// log's dir-failure hook and returned wrapped in ErrLogDirFailed, so the
// request that met it answers KAFKA_STORAGE_ERROR.
func (l *Log) ioFailure(err error) error {
	if !isIOError(err) || errors.Is(err, ErrLogDirFailed) {
		return err
	}
	if l.onIOError != nil {
		l.onIOError(err)
	}
	return fmt.Errorf("%w: %s: %w", ErrLogDirFailed, filepath.Dir(l.dir), err)
}

// closeFailed closes a log whose dir failed: its files are closed without
// the flush, producer snapshot and index trims of Close, which would only
// meet the failing disk again (and could block on it).
func (l *Log) closeFailed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	l.flushMu.Lock()
	l.shut = true
	l.pending = nil
	l.segMu.Lock()
	for _, s := range l.segments {
		if s.f != nil {
			_ = s.f.Close()
		}
		// The offset and time indexes hold no descriptor between writes.
		if f := txnIndexFile(s.txnIdx); f != nil {
			_ = f.Close()
		}
	}
	l.segMu.Unlock()
	l.flushMu.Unlock()
}

// OfflineDir is a log dir taken offline and the error that did it.
type OfflineDir struct {
	Dir string
	Err error
}

// OfflineDirs returns the log dirs that are offline, in log.dirs order.
func (m *Manager) OfflineDirs() []OfflineDir {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []OfflineDir
	for _, d := range m.opts.Dirs {
		if err := m.offline[d]; err != nil {
			out = append(out, OfflineDir{Dir: d, Err: err})
		}
	}
	return out
}

// OfflinePartitions returns the partitions whose logs were in dirs that
// went offline while this Manager ran, with their dir.
func (m *Manager) OfflinePartitions() map[TopicPartition]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]string, len(m.offlineParts))
	for tp, d := range m.offlineParts {
		out[tp] = d
	}
	return out
}

// FailDir takes a log dir offline as an I/O error in it would; for a dir
// the caller found unusable by other means. An unknown or already offline
// dir is left alone.
func (m *Manager) FailDir(dir string, cause error) {
	if cause == nil {
		cause = errors.New("taken offline")
	}
	m.failDir(dir, cause)
}

// failDir takes dir offline: it must not run under any log's lock (the
// logs' hook starts it on a goroutine of its own).
func (m *Manager) failDir(dir string, cause error) {
	m.mu.Lock()
	if m.closed || m.offline[dir] != nil || !slices.Contains(m.opts.Dirs, dir) {
		m.mu.Unlock()
		return
	}
	m.offline[dir] = cause
	var logs []*Log
	var parts []TopicPartition
	for tp, d := range m.dirOf {
		if d != dir {
			continue
		}
		if l := m.logs[tp]; l != nil {
			logs = append(logs, l)
		}
		parts = append(parts, tp)
		delete(m.logs, tp)
		delete(m.dirOf, tp)
		m.offlineParts[tp] = dir
	}
	m.unflushed = slices.DeleteFunc(m.unflushed, func(l *Log) bool { return slices.Contains(logs, l) })
	m.mu.Unlock()
	for _, l := range logs {
		l.closeFailed()
	}
	slices.SortFunc(parts, func(a, b TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	if fn := m.opts.OnDirFailure; fn != nil {
		fn(dir, parts, cause)
	}
}

// dirHook is the onIOError of the logs in dir.
func (m *Manager) dirHook(dir string) func(error) {
	return func(err error) {
		// The log's own locks are held here; failDir closes the log.
		go m.failDir(dir, err)
	}
}

// probeDir checks that dir takes a write and an fsync, as a dir that
// cannot is offline from the start (Kafka checks its log dirs the same
// way when it starts).
func probeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_, err = f.Write([]byte("raftka"))
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close(), os.Remove(name))
	return err
}

func txnIndexFile(x *txnIndex) *os.File {
	if x == nil {
		return nil
	}
	return x.f
}
