package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
)

// UndefinedEpoch and UndefinedOffset are what OffsetForLeaderEpoch answers
// for an epoch the log knows nothing about (Kafka's UNDEFINED_EPOCH and
// UNDEFINED_EPOCH_OFFSET).
const (
	UndefinedEpoch  int32 = -1
	UndefinedOffset int64 = -1
)

// EpochEntry is one leader epoch and the first offset written in it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// LeaderEpochCache maps leader epochs to their start offsets, kept in the
// partition's leader-epoch-checkpoint file:
//
//	0                  version
//	N                  number of entries
//	<epoch> <offset>   N lines, epochs and offsets strictly increasing
//
// Every change is written to the file atomically before the method returns.
// Safe for concurrent use; the log's writer mutates, any goroutine queries.
type LeaderEpochCache struct {
	mu      sync.RWMutex
	path    string
	entries []EpochEntry
}

// ParseLeaderEpochCheckpoint parses the file format above.
func ParseLeaderEpochCheckpoint(data []byte) ([]EpochEntry, error) {
	lines, err := parseCheckpoint(data, 2)
	if err != nil {
		return nil, err
	}
	out := make([]EpochEntry, 0, len(lines))
	for i, l := range lines {
		e, err := strconv.ParseInt(l[0], 10, 32)
		if err != nil || e < 0 {
			return nil, fmt.Errorf("entry %d: bad epoch %q", i+1, l[0])
		}
		o, err := strconv.ParseInt(l[1], 10, 64)
		if err != nil || o < 0 {
			return nil, fmt.Errorf("entry %d: bad start offset %q", i+1, l[1])
		}
		if n := len(out); n > 0 && (int32(e) <= out[n-1].Epoch || o < out[n-1].StartOffset) {
			return nil, fmt.Errorf("entry %d: epoch %d at %d does not follow epoch %d at %d", i+1, e, o, out[n-1].Epoch, out[n-1].StartOffset)
		}
		out = append(out, EpochEntry{int32(e), o})
	}
	return out, nil
}

// FormatLeaderEpochCheckpoint renders entries in the file format.
func FormatLeaderEpochCheckpoint(entries []EpochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

// OpenLeaderEpochCache loads path (missing means empty). A malformed file is
// an error naming it: the cache decides what followers truncate, so it is
// never guessed.
func OpenLeaderEpochCache(path string) (*LeaderEpochCache, error) {
	c := &LeaderEpochCache{path: path}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	c.entries, err = ParseLeaderEpochCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptFile, path, err)
	}
	return c, nil
}

func (c *LeaderEpochCache) flushLocked() error {
	return WriteFileAtomic(c.path, FormatLeaderEpochCheckpoint(c.entries))
}

// Entries returns a copy of the entries.
func (c *LeaderEpochCache) Entries() []EpochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]EpochEntry(nil), c.entries...)
}

// Latest returns the latest epoch entry; ok is false if there is none.
func (c *LeaderEpochCache) Latest() (EpochEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.entries) == 0 {
		return EpochEntry{UndefinedEpoch, UndefinedOffset}, false
	}
	return c.entries[len(c.entries)-1], true
}

// Assign records that epoch starts at startOffset. Re-assigning the latest
// epoch at the same or a later offset is a no-op; otherwise entries with an
// epoch >= epoch or a start offset >= startOffset are removed first, keeping
// both columns strictly increasing (as Kafka's LeaderEpochFileCache does).
func (c *LeaderEpochCache) Assign(epoch int32, startOffset int64) error {
	if epoch < 0 || startOffset < 0 {
		return fmt.Errorf("%w: leader epoch %d at offset %d", ErrInvalidRecord, epoch, startOffset)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.entries); n > 0 {
		l := c.entries[n-1]
		if l.Epoch == epoch && l.StartOffset <= startOffset {
			return nil
		}
	}
	keep := len(c.entries)
	for keep > 0 && (c.entries[keep-1].Epoch >= epoch || c.entries[keep-1].StartOffset >= startOffset) {
		keep--
	}
	c.entries = append(c.entries[:keep], EpochEntry{epoch, startOffset})
	return c.flushLocked()
}

// assignUnsyncedDir is Assign for an empty cache whose directory the
// caller fsyncs next (a log being created, NewLog).
func (c *LeaderEpochCache) assignUnsyncedDir(epoch int32, startOffset int64) error {
	if epoch < 0 || startOffset < 0 {
		return fmt.Errorf("%w: leader epoch %d at offset %d", ErrInvalidRecord, epoch, startOffset)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) > 0 {
		return fmt.Errorf("%w: leader epoch cache %s is not empty", ErrInvalidRecord, c.path)
	}
	c.entries = []EpochEntry{{epoch, startOffset}}
	return writeFileSynced(c.path, FormatLeaderEpochCheckpoint(c.entries))
}

// EndOffsetFor answers OffsetForLeaderEpoch for a requested epoch given the
// log end offset: the largest epoch <= requested and the start offset of the
// next higher epoch (the end of the requested one), or logEndOffset if the
// requested epoch is the latest. An epoch below the first known one answers
// (requested, first start offset), as Kafka does; an unknown epoch above the
// latest, or an empty cache, answers (UndefinedEpoch, UndefinedOffset).
func (c *LeaderEpochCache) EndOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.entries)
	if requested == UndefinedEpoch || n == 0 {
		return UndefinedEpoch, UndefinedOffset
	}
	if c.entries[n-1].Epoch == requested {
		return requested, logEndOffset
	}
	// First entry with epoch > requested.
	hi := 0
	for hi < n && c.entries[hi].Epoch <= requested {
		hi++
	}
	if hi == n {
		return UndefinedEpoch, UndefinedOffset
	}
	if hi == 0 {
		return requested, c.entries[0].StartOffset
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset
}

// TruncateFromEnd removes entries starting at or after endOffset (after the
// log is truncated to endOffset).
func (c *LeaderEpochCache) TruncateFromEnd(endOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := len(c.entries)
	for keep > 0 && c.entries[keep-1].StartOffset >= endOffset {
		keep--
	}
	if keep == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:keep]
	return c.flushLocked()
}

// TruncateFromStart drops entries wholly below startOffset (after the log
// start offset moves): the last epoch starting at or before startOffset
// stays, moved to start there.
func (c *LeaderEpochCache) TruncateFromStart(startOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	floor := -1
	for i, e := range c.entries {
		if e.StartOffset <= startOffset {
			floor = i
		}
	}
	if floor < 0 || (floor == 0 && c.entries[0].StartOffset == startOffset) {
		return nil
	}
	rest := append([]EpochEntry{{c.entries[floor].Epoch, startOffset}}, c.entries[floor+1:]...)
	c.entries = rest
	return c.flushLocked()
}

// Clear removes every entry (the log was reset to a new start).
func (c *LeaderEpochCache) Clear() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) == 0 {
		return nil
	}
	c.entries = nil
	return c.flushLocked()
}
