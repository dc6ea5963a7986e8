package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Moving a log to another log dir of the same broker (AlterReplicaLogDirs,
// Kafka's "-future" logs). MoveLog copies the log, while it keeps taking
// appends, into <dest>/<topic>-<partition>.<id>-future with the follower's
// append (offsets, epochs and producer state as they are), until the copy
// is close behind; then it seals the current log (appends answer ErrClosed,
// which clients retry), copies the rest, closes the future log (fsynced,
// producer snapshot written) and swaps: the current dir is renamed to a
// "-delete" dir, the future dir to the log's name in dest, and the log is
// opened there. A crash before the first rename leaves the current log and
// a future dir that the next start deletes; a crash between the renames
// leaves only the complete future dir, which the next start promotes
// (finishFutureLogs). A truncation or reset of the current log during the
// copy (a follower's) restarts it.

// FutureSuffix ends the name of a log dir's future (being moved in) logs.
const FutureSuffix = "-future"

// moveBatchBytes is how much one copy step reads.
const moveBatchBytes = 1 << 20

// moveCloseEnough is how far behind the copy may be when the current log
// is sealed for the last step: what is left is copied while appends wait.
const moveCloseEnough = 4 << 20

// MoveState is a move in progress, for DescribeLogDirs' future replicas.
type MoveState struct {
	TopicPartition
	Dest string
	// LogEndOffset and Size are the future log's so far.
	LogEndOffset int64
	Size         int64
}

// MoveOptions are the caller's part in a move.
type MoveOptions struct {
	// Hold, when set, is called before the current log is sealed and its
	// result after the swap (or the abort): the replica layer stops its
	// role changes (which write leader epochs) meanwhile. It gives up
	// (ok false) once cancel is closed, so a Delete waiting for the move
	// while the caller's lock is held does not deadlock.
	Hold func(cancel <-chan struct{}) (release func(), ok bool)
	// Stop, when closed, abandons the move before its seal (the caller
	// is shutting down).
	Stop <-chan struct{}
	// Swap is told the new log, before the old one's files are released;
	// the caller moves its references to it. Required.
	Swap func(*Log)
}

type moveState struct {
	dest     string
	future   *Log // guarded by Manager.mu
	cancel   chan struct{}
	stop     sync.Once
	finished chan struct{}
}

func (mv *moveState) abandon() { mv.stop.Do(func() { close(mv.cancel) }) }

// waitMoveLocked abandons tp's move in flight, if any, and waits for it
// to end (a move past its seal finishes instead). mu is held.
func (m *Manager) waitMoveLocked(tp TopicPartition) {
	for {
		mv, ok := m.moves[tp]
		if !ok {
			return
		}
		mv.abandon()
		m.mu.Unlock()
		<-mv.finished
		m.mu.Lock()
	}
}

// PreferDir makes dest the dir of tp's log if it is created later
// (AlterReplicaLogDirs for a replica not here yet, as Kafka's
// maybeUpdatePreferredLogDir); an unknown dir is ignored.
func (m *Manager) PreferDir(tp TopicPartition, dest string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if slices.Contains(m.opts.Dirs, dest) {
		m.preferred[tp] = dest
	}
}

// Moves returns the moves in progress.
func (m *Manager) Moves() []MoveState {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MoveState, 0, len(m.moves))
	for tp, mv := range m.moves {
		s := MoveState{TopicPartition: tp, Dest: mv.dest}
		if mv.future != nil {
			s.LogEndOffset, s.Size = mv.future.LogEndOffset(), mv.future.Size()
		}
		out = append(out, s)
	}
	return out
}

// DirOf returns the log dir holding the partition's log.
func (m *Manager) DirOf(tp TopicPartition) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.dirOf[tp]
	return d, ok
}

// MoveTarget checks a move of tp to dest and reports whether there is
// anything to do: dest must be one of the log dirs and online; the log
// must be here. A log already in dest, or already moving there, needs
// nothing. A move to another dir cancels one in flight.
func (m *Manager) MoveTarget(tp TopicPartition, dest string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.opts.Dirs, dest) {
		return false, fmt.Errorf("%w: %s", ErrLogDirNotFound, dest)
	}
	if err := m.offline[dest]; err != nil {
		return false, fmt.Errorf("%w: %s is offline", ErrLogDirFailed, dest)
	}
	if d, ok := m.offlineParts[tp]; ok {
		return false, fmt.Errorf("%w: %s is in %s", ErrLogDirFailed, tp, d)
	}
	cur, ok := m.dirOf[tp]
	if !ok {
		return false, fmt.Errorf("%w: %s", ErrNoLog, tp)
	}
	if mv, ok := m.moves[tp]; ok {
		return mv.dest != dest, nil // MoveLog abandons the one in flight
	}
	return cur != dest, nil
}

// MoveLog moves tp's log to dest (see above); it returns once the log is
// in dest or the move failed (the current log is then untouched and still
// serving). Call MoveTarget first.
func (m *Manager) MoveLog(tp TopicPartition, dest string, o MoveOptions) error {
	m.mu.Lock()
	m.waitMoveLocked(tp)
	cur, ok := m.logs[tp]
	src := m.dirOf[tp]
	if !ok || m.closed {
		m.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNoLog, tp)
	}
	if src == dest {
		m.mu.Unlock()
		return nil
	}
	mv := &moveState{dest: dest, cancel: make(chan struct{}), finished: make(chan struct{})}
	m.moves[tp] = mv
	// The cleaner keeps off the log while it moves.
	for m.cleaning[cur] {
		m.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		m.mu.Lock()
	}
	m.cleaning[cur] = true
	fl, hook := m.flushers[dest], m.dirHook(dest)
	m.mu.Unlock()
	done := func() {
		m.mu.Lock()
		if m.moves[tp] == mv {
			delete(m.moves, tp)
		}
		delete(m.cleaning, cur)
		m.mu.Unlock()
		close(mv.finished)
	}
	defer done()

	var idb [8]byte
	_, _ = rand.Read(idb[:])
	futureDir := filepath.Join(dest, tp.String()+"."+hex.EncodeToString(idb[:])+FutureSuffix)
	lo := func() LogOptions {
		return LogOptions{Now: m.opts.Now, ProducerIDExpirationMs: m.opts.ProducerIDExpiration.Milliseconds(), FollowerDropBehind: m.opts.FollowerDropBehind,
			OnFlush: m.opts.OnFlush, activity: &m.appends, flusher: fl, SyncData: m.opts.SyncData, onIOError: hook}
	}
	var future *Log
	abort := func(err error) error {
		if future != nil {
			future.Close()
		}
		_ = os.RemoveAll(futureDir)
		return err
	}
	for attempt := 0; ; attempt++ {
		if attempt > 20 {
			return abort(fmt.Errorf("%w: %s kept being truncated during its move", ErrInvalidConfig, tp))
		}
		if future != nil {
			future.Close()
			_ = os.RemoveAll(futureDir)
		}
		var err error
		if future, _, err = OpenLog(futureDir, cur.Config(), lo()); err != nil {
			return abort(err)
		}
		m.mu.Lock()
		mv.future = future
		m.mu.Unlock()
		gen := cur.truncations.Load()
		ok, err := copyTail(cur, future, gen, mv.cancel, o.Stop, false)
		if err != nil {
			return abort(err)
		}
		if !ok {
			continue
		}
		release := func() {}
		if o.Hold != nil {
			var held bool
			if release, held = o.Hold(mv.cancel); !held {
				return abort(fmt.Errorf("%w: move cancelled", ErrClosed))
			}
		}
		cur.mu.Lock()
		sealedAlready := cur.closed
		cur.closed = true // sealed: appends answer ErrClosed until the swap
		cur.mu.Unlock()
		unseal := func() {
			if !sealedAlready {
				cur.mu.Lock()
				cur.closed = false
				cur.mu.Unlock()
			}
			release()
		}
		if sealedAlready {
			release()
			return abort(fmt.Errorf("%w: %s", ErrClosed, tp))
		}
		ok, err = copyTail(cur, future, gen, mv.cancel, nil, true)
		if err != nil || !ok {
			unseal()
			if err != nil {
				return abort(err)
			}
			continue
		}
		if err := finishCopy(cur, future); err != nil {
			unseal()
			return abort(err)
		}
		hw, start, leo := cur.HighWatermark(), cur.LogStartOffset(), future.LogEndOffset()
		if err := future.Close(); err != nil {
			unseal()
			return abort(err)
		}
		future = nil
		m.mu.Lock()
		still := m.logs[tp] == cur && m.offline[src] == nil && m.offline[dest] == nil
		srcFailed := m.offline[src] != nil
		m.mu.Unlock()
		if !still {
			// A dir failed meanwhile (failDir took the log, and found it
			// sealed, so its files are closed here) or the log was
			// replaced: nothing to swap.
			if srcFailed {
				release()
				cur.releaseFiles()
			} else {
				unseal()
			}
			return abort(fmt.Errorf("%w: %s changed during its move", ErrLogDirFailed, tp))
		}
		gone := filepath.Join(src, tp.String()+"."+hex.EncodeToString(idb[:])+"-delete")
		final := filepath.Join(dest, tp.String())
		if err := os.Rename(cur.Dir(), gone); err != nil {
			unseal()
			return abort(err)
		}
		if err := os.Rename(futureDir, final); err != nil {
			// Put the current log back; the future dir is discarded.
			err = errors.Join(err, os.Rename(gone, cur.Dir()))
			unseal()
			return abort(err)
		}
		err = errors.Join(fsyncDir(src), fsyncDir(dest))
		nl, _, openErr := OpenLog(final, cur.Config(), func() LogOptions {
			o := lo()
			o.CleanShutdown, o.RecoveryPoint, o.HighWatermark, o.LogStartOffset = true, leo, hw, start
			return o
		}())
		if openErr != nil {
			// The data is safe in final; the next start opens it.
			release()
			return errors.Join(err, openErr)
		}
		nl.SetHighWatermark(hw)
		m.mu.Lock()
		m.logs[tp] = nl
		m.dirOf[tp] = dest
		m.mu.Unlock()
		o.Swap(nl)
		release()
		// Fetches in flight may still read the old files; they are
		// released a little later (the dir is already gone).
		_ = os.RemoveAll(gone)
		time.AfterFunc(30*time.Second, cur.releaseFiles)
		return errors.Join(err, m.Checkpoint())
	}
}

// copyTail appends to future what cur has past future's end. Without
// final it stops once future is within moveCloseEnough of cur's end;
// with it, it copies everything. It reports false when cur was truncated
// or reset since generation gen (the copy must start again).
func copyTail(cur, future *Log, gen int64, cancel, stop <-chan struct{}, final bool) (bool, error) {
	for {
		select {
		case <-cancel:
			return false, fmt.Errorf("%w: move cancelled", ErrClosed)
		case <-stop:
			return false, fmt.Errorf("%w: move stopped", ErrClosed)
		default:
		}
		if cur.truncations.Load() != gen {
			return false, nil
		}
		from, end := future.LogEndOffset(), cur.LogEndOffset()
		if start := cur.LogStartOffset(); from < start {
			// Retention or DeleteRecords moved the start past the copy.
			if err := future.ResetTo(start); err != nil {
				return false, err
			}
			continue
		}
		if from > end {
			return false, nil // cur was cut below what was copied
		}
		if from == end {
			return true, nil
		}
		r, err := cur.Read(from, moveBatchBytes)
		if err != nil {
			if errors.Is(err, ErrOffsetOutOfRange) {
				continue // the start moved meanwhile
			}
			return false, err
		}
		if r.Len == 0 {
			return true, nil
		}
		b, err := r.Bytes()
		if err != nil {
			return false, err
		}
		if _, err := future.AppendAsFollower(b); err != nil {
			return false, err
		}
		if !final && r.Len < moveBatchBytes/2 {
			// A short read means the copy reached the end of what was
			// there; the rest is what came meanwhile.
			if lagBytes(cur, future) < moveCloseEnough {
				return true, nil
			}
		}
	}
}

// lagBytes estimates the bytes future is behind cur.
func lagBytes(cur, future *Log) int64 {
	return max(cur.Size()-future.Size(), 0)
}

// finishCopy gives future what cur holds besides its batches: leader
// epochs that start with no record yet (a leader that appended nothing),
// and the log start offset. Called with cur sealed.
func finishCopy(cur, future *Log) error {
	have := map[int32]bool{}
	for _, e := range future.LeaderEpochs().Entries() {
		have[e.Epoch] = true
	}
	for _, e := range cur.LeaderEpochs().Entries() {
		if !have[e.Epoch] && e.StartOffset >= future.LogStartOffset() {
			if err := future.LeaderEpochs().Assign(e.Epoch, e.StartOffset); err != nil {
				return err
			}
		}
	}
	if start := cur.LogStartOffset(); start > future.LogStartOffset() {
		future.SetHighWatermark(cur.HighWatermark())
		if _, err := future.DeleteRecords(start); err != nil {
			return err
		}
	}
	return nil
}

// releaseFiles closes the files of a log that was moved away (its dir is
// gone): readers that held its segments are done by then.
func (l *Log) releaseFiles() {
	l.flushMu.Lock()
	l.shut = true
	l.segMu.Lock()
	for _, s := range l.segments {
		_ = s.close()
	}
	l.segMu.Unlock()
	l.flushMu.Unlock()
}

// futureLogOf parses "<topic>-<partition>.<id>-future".
func futureLogOf(name string) (TopicPartition, bool) {
	base, ok := strings.CutSuffix(name, FutureSuffix)
	if !ok {
		return TopicPartition{}, false
	}
	i := strings.LastIndexByte(base, '.')
	if i <= 0 {
		return TopicPartition{}, false
	}
	return ParsePartitionDir(base[:i])
}
