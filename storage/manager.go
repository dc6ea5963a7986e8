package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ManagerOptions configure a Manager. Zero durations take Kafka's defaults.
type ManagerOptions struct {
	// Dirs are the log directories (log.dirs).
	Dirs []string
	// ConfigFor returns the config for a topic's logs found on disk at
	// open; DefaultConfig() if nil. GetOrCreate takes its own config.
	ConfigFor func(topic string) Config
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// Threads bounds how many logs open at once (num.recovery.threads.per.data.dir
	// times the number of dirs); max(8, 2*GOMAXPROCS) if zero, because
	// opening is mostly waiting on the disk (reads of cold segments), not
	// CPU, and a node may hold thousands of small logs.
	Threads int
	// FlushCheckInterval is how often flush.ms is checked
	// (log.flush.scheduler.interval.ms); 1s if zero.
	FlushCheckInterval time.Duration
	// RecoveryPointInterval (log.flush.offset.checkpoint.interval.ms,
	// 60s) and LogStartInterval (log.flush.start.offset.checkpoint.interval.ms,
	// 60s) and ReplicationInterval (replica.high.watermark.checkpoint.interval.ms,
	// 5s) are how often the per-dir checkpoints are written.
	RecoveryPointInterval time.Duration
	LogStartInterval      time.Duration
	ReplicationInterval   time.Duration
	// RetentionCheckInterval is log.retention.check.interval.ms (5 min).
	RetentionCheckInterval time.Duration
	// ProducerIDExpiration is producer.id.expiration.ms (1 day): how long
	// an idle idempotent producer's state is kept.
	// ProducerIDExpirationCheckInterval is
	// producer.id.expiration.check.interval.ms (10 min): how often Tick
	// looks for such producers.
	ProducerIDExpiration              time.Duration
	ProducerIDExpirationCheckInterval time.Duration
	// FollowerDropBehind is LogOptions.FollowerDropBehind for every log
	// (raftka.follower.drop.behind.bytes; 0: off).
	FollowerDropBehind int64
	// OnFlush is LogOptions.OnFlush for every log.
	OnFlush func(time.Duration)
	// SyncData is LogOptions.SyncData for every log.
	SyncData func(*os.File) error
	// OnFlushRound, when set, is told the size (logs fsynced) and
	// duration of each durable-mode group commit round of a log dir's
	// flusher. It runs on the flusher's goroutine and must be quick.
	OnFlushRound func(logs int, d time.Duration)
	// FailedAtStart are log dirs already found unusable (CheckDirsAt):
	// they start offline, unread.
	FailedAtStart map[string]error
	// OnDirFailure, when set, is told once of each log dir taken offline
	// (dir_failure.go): the dir, the partitions whose logs were in it
	// (closed by then) and the error. It runs on a goroutine of its own,
	// after the Manager has stopped handing out those logs. Dirs found
	// unusable by OpenManager are not reported: OfflineDirs lists them.
	OnDirFailure func(dir string, parts []TopicPartition, err error)
	// DisableScheduler turns off the background goroutine; callers then
	// call Tick themselves (tests).
	DisableScheduler bool
	// Cleaner configures the log cleaner (compaction); off unless
	// Cleaner.Enable.
	Cleaner CleanerOptions
}

// Manager owns every partition log in a set of log directories: it opens
// them in parallel at start, creates and deletes them, writes the per-dir
// checkpoint files, runs flush.ms, retention and checkpoints on a schedule,
// and writes the clean-shutdown marker on Close.
//
// All methods are safe for concurrent use. Logs returned stay owned by the
// Manager: callers must not Close them.
type Manager struct {
	opts ManagerOptions

	mu     sync.Mutex
	logs   map[TopicPartition]*Log
	dirOf  map[TopicPartition]string // log dir holding each partition
	closed bool
	// offline holds the log dirs taken offline with the error that did
	// it, offlineParts the partitions whose logs were in them
	// (dir_failure.go); guarded by mu.
	offline      map[string]error
	offlineParts map[TopicPartition]string
	// moves are the logs moving to another dir (move.go); guarded by mu.
	moves map[TopicPartition]*moveState
	// preferred holds the dirs AlterReplicaLogDirs named for logs not
	// created yet (PreferDir); guarded by mu.
	preferred map[TopicPartition]string
	// creating holds the partitions GetOrCreate is opening outside mu
	// (their files and fsyncs), each with its log dir and a channel
	// closed when done, so creations of different partitions overlap.
	creating map[TopicPartition]pendingLog
	// flushers are the log dirs' group commits for durable mode, one per
	// dir (doc.go, "Durable mode").
	flushers map[string]*flusher

	ckptMu sync.Mutex // serialises checkpoint file writes
	// dirSyncs shares one fsync of a log dir between the partitions
	// created or deleted under it at once, and deleteCkpt one rewrite of
	// the checkpoint files between concurrent deletions (group_sync.go).
	dirSyncs   dirSyncs
	deleteCkpt *groupSync

	// cleaning marks the logs a cleaner thread is working on; guarded by
	// mu. cleanStop and cleanWG stop the cleaner threads.
	cleaning  map[*Log]bool
	cleanStop chan struct{}
	cleanWG   sync.WaitGroup
	throttle  *Throttle
	// cleanerMu serialises starting and stopping the cleaner threads
	// (SetCleaner, Close), and guards opts.Cleaner while they are stopped.
	cleanerMu sync.Mutex
	// appends counts the appends to the node's logs; the cleaner's
	// throttle watches it to yield to the produce path.
	appends atomic.Int64

	lastExpiry time.Time // last producer-id expiry pass; guarded by mu
	// unflushed holds the logs opened after an unclean stop with data
	// above their recovery point, which the next Tick flushes (in the
	// background, so opening waits for no fsync); guarded by mu.
	unflushed []*Log

	stop chan struct{}
	done chan struct{}
}

// OpenManager opens every partition directory under opts.Dirs, recovering
// as needed, and returns one report per log (for the caller to log).
func OpenManager(opts ManagerOptions) (*Manager, []*RecoveryReport, error) {
	if len(opts.Dirs) == 0 {
		return nil, nil, fmt.Errorf("%w: no log dirs", ErrInvalidConfig)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ConfigFor == nil {
		opts.ConfigFor = func(string) Config { return DefaultConfig() }
	}
	if opts.Threads <= 0 {
		opts.Threads = max(8, 2*runtime.GOMAXPROCS(0))
	}
	setDefault := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	setDefault(&opts.FlushCheckInterval, time.Second)
	setDefault(&opts.RecoveryPointInterval, time.Minute)
	setDefault(&opts.LogStartInterval, time.Minute)
	setDefault(&opts.ReplicationInterval, 5*time.Second)
	setDefault(&opts.RetentionCheckInterval, 5*time.Minute)
	setDefault(&opts.ProducerIDExpiration, DefaultProducerIDExpirationMs*time.Millisecond)
	setDefault(&opts.ProducerIDExpirationCheckInterval, 10*time.Minute)

	if err := opts.Cleaner.validate(); err != nil {
		return nil, nil, err
	}
	m := &Manager{opts: opts, logs: map[TopicPartition]*Log{}, dirOf: map[TopicPartition]string{}, creating: map[TopicPartition]pendingLog{}, lastExpiry: opts.Now(), cleaning: map[*Log]bool{},
		flushers: map[string]*flusher{}, offline: map[string]error{}, offlineParts: map[TopicPartition]string{}, moves: map[TopicPartition]*moveState{}, preferred: map[TopicPartition]string{}}
	m.deleteCkpt = newGroupSync(m.Checkpoint)
	type job struct {
		dir  string
		path string
		tp   TopicPartition
		lo   LogOptions
	}
	var jobs []job
	type futureLog struct {
		dir, name string
		tp        TopicPartition
	}
	var futures []futureLog
	scanDir := func(dir string) ([]job, error) {
		var jobs []job
		if err := probeDir(dir); err != nil {
			return jobs, err
		}
		marker := filepath.Join(dir, CleanShutdownFile)
		_, err := os.Stat(marker)
		clean := err == nil
		rps, err := ReadOffsetCheckpoint(filepath.Join(dir, RecoveryPointCheckpointFile))
		if err != nil {
			return jobs, err
		}
		starts, err := ReadOffsetCheckpoint(filepath.Join(dir, LogStartOffsetCheckpointFile))
		if err != nil {
			return jobs, err
		}
		hws, err := ReadOffsetCheckpoint(filepath.Join(dir, ReplicationCheckpointFile))
		if err != nil {
			return jobs, err
		}
		cleaned, err := ReadOffsetCheckpoint(filepath.Join(dir, CleanerCheckpointFile))
		if err != nil {
			return jobs, err
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return jobs, err
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			name := e.Name()
			if strings.HasSuffix(name, "-delete") {
				// A deletion that did not finish: finish it.
				if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
					return jobs, err
				}
				continue
			}
			if tp, ok := futureLogOf(name); ok {
				futures = append(futures, futureLog{dir, name, tp})
				continue
			}
			tp, ok := ParsePartitionDir(name)
			if !ok {
				continue // not ours (stray dirs, the raft dir)
			}
			if other, dup := m.dirOf[tp]; dup {
				return jobs, fmt.Errorf("%w: partition %s is in both %s and %s", ErrCorruptFile, tp, other, dir)
			}
			m.dirOf[tp] = dir
			jobs = append(jobs, job{dir: dir, path: filepath.Join(dir, name), tp: tp, lo: LogOptions{
				CleanShutdown:  clean,
				RecoveryPoint:  rps[tp],
				LogStartOffset: starts[tp],
				HighWatermark:  hws[tp],
				Now:            opts.Now,
				OnFlush:        opts.OnFlush,

				CleanerCheckpoint: cleaned[tp],

				ProducerIDExpirationMs: opts.ProducerIDExpiration.Milliseconds(),
				FollowerDropBehind:     opts.FollowerDropBehind,
				activity:               &m.appends,
				SyncData:               opts.SyncData,
				onIOError:              m.dirHook(dir),
			}})
		}
		return jobs, nil
	}
	for _, dir := range opts.Dirs {
		if err := opts.FailedAtStart[dir]; err != nil {
			m.offline[dir] = err
			continue
		}
		js, err := scanDir(dir)
		if err != nil {
			if !isIOError(err) {
				return nil, nil, err
			}
			// Kafka takes a log dir it cannot use at start offline and
			// starts on the others.
			m.offline[dir] = err
			for _, jb := range js {
				delete(m.dirOf, jb.tp)
			}
			continue
		}
		jobs = append(jobs, js...)
	}
	if len(m.offline) == len(opts.Dirs) {
		return nil, nil, fmt.Errorf("%w: every log dir is unusable: %w", ErrLogDirFailed, errors.Join(slices.Collect(maps.Values(m.offline))...))
	}
	// A move that stopped (move.go): a future log beside its current log
	// was not finished and goes; one whose current log is gone was
	// complete when the swap began and takes the log's place.
	for _, f := range futures {
		if m.offline[f.dir] != nil {
			continue
		}
		path := filepath.Join(f.dir, f.name)
		if _, dup := m.dirOf[f.tp]; dup || slices.ContainsFunc(futures, func(o futureLog) bool { return o.tp == f.tp && o.name != f.name }) {
			if err := os.RemoveAll(path); err != nil {
				return nil, nil, err
			}
			continue
		}
		final := filepath.Join(f.dir, f.tp.String())
		if err := os.Rename(path, final); err != nil {
			return nil, nil, err
		}
		if err := fsyncDir(f.dir); err != nil {
			return nil, nil, err
		}
		m.dirOf[f.tp] = f.dir
		jobs = append(jobs, job{dir: f.dir, path: final, tp: f.tp, lo: LogOptions{
			Now: opts.Now, OnFlush: opts.OnFlush, ProducerIDExpirationMs: opts.ProducerIDExpiration.Milliseconds(),
			FollowerDropBehind: opts.FollowerDropBehind, activity: &m.appends, SyncData: opts.SyncData, onIOError: m.dirHook(f.dir),
		}})
	}
	for _, dir := range opts.Dirs {
		if m.flushers[dir] == nil {
			m.flushers[dir] = newFlusher(opts.OnFlushRound)
		}
	}
	for i := range jobs {
		jobs[i].lo.flusher = m.flushers[jobs[i].dir]
	}
	reports := make([]*RecoveryReport, len(jobs))
	logs := make([]*Log, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, opts.Threads)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			logs[i], reports[i], errs[i] = OpenLog(j.path, opts.ConfigFor(j.tp.Topic), j.lo)
		}()
	}
	wg.Wait()
	// A log that meets an I/O error while it opens takes its dir offline
	// (the other logs of that dir are closed again); any other error, a
	// file we cannot make sense of, stops the start as before.
	for i, j := range jobs {
		if errs[i] != nil && isIOError(errs[i]) && m.offline[j.dir] == nil {
			m.offline[j.dir] = errs[i]
		}
	}
	for i, j := range jobs {
		if m.offline[j.dir] == nil {
			continue
		}
		if logs[i] != nil {
			logs[i].closeFailed()
			logs[i] = nil
		}
		errs[i] = nil
		delete(m.dirOf, j.tp)
		m.offlineParts[j.tp] = j.dir
	}
	if len(m.offline) == len(opts.Dirs) {
		m.closeFlushers()
		return nil, nil, fmt.Errorf("%w: every log dir is unusable: %w", ErrLogDirFailed, errors.Join(slices.Collect(maps.Values(m.offline))...))
	}
	if err := errors.Join(errs...); err != nil {
		for _, l := range logs {
			if l != nil {
				l.Close()
			}
		}
		m.closeFlushers()
		return nil, nil, err
	}
	for i, j := range jobs {
		if logs[i] == nil {
			continue // its dir is offline
		}
		m.logs[j.tp] = logs[i]
		if l := logs[i]; l.RecoveryPoint() < l.LogEndOffset() {
			m.unflushed = append(m.unflushed, l)
		}
	}
	// The marker goes once everything is open: a crash from here on must
	// look unclean at the next start.
	for _, dir := range opts.Dirs {
		if m.offline[dir] != nil {
			continue
		}
		if err := os.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			m.closeLogs()
			return nil, nil, err
		}
	}
	if err := m.Checkpoint(); err != nil {
		m.closeLogs()
		return nil, nil, err
	}
	if !opts.DisableScheduler {
		m.stop, m.done = make(chan struct{}), make(chan struct{})
		go m.schedule()
	}
	m.startCleaners()
	return m, reports, nil
}

// Get returns the log of a partition, if this manager has it.
func (m *Manager) Get(topic string, partition int32) (*Log, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.logs[TopicPartition{topic, partition}]
	return l, ok
}

// Logs returns every open log.
func (m *Manager) Logs() []*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Log, 0, len(m.logs))
	for _, l := range m.logs {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].tp, out[j].tp
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return out
}

type pendingLog struct {
	dir  string
	done chan struct{}
}

// GetOrCreate returns the partition's log, creating it with cfg in the log
// dir holding the fewest partitions if it does not exist. An existing log
// keeps its config (use Log.UpdateConfig). Creations of different
// partitions run in parallel (the files and their fsyncs are made outside
// the manager's lock); one of a partition already being created waits for
// it.
func (m *Manager) GetOrCreate(topic string, partition int32, cfg Config) (*Log, error) {
	return m.GetOrCreateWith(topic, partition, cfg, true, nil)
}

// GetOrCreateNew is GetOrCreate that, with isNew false (a partition this
// broker hosted before, as far as the caller knows), refuses to create a
// missing log while any log dir is offline: the log may be in that dir,
// and an empty one made elsewhere could be elected leader and lose what
// the replica held. Kafka's LogManager.getOrCreateLog has the same rule.
func (m *Manager) GetOrCreateNew(topic string, partition int32, cfg Config, isNew bool) (*Log, error) {
	return m.GetOrCreateWith(topic, partition, cfg, isNew, nil)
}

// GetOrCreateWith is GetOrCreateNew writing nl (nil: nothing) into the log
// if it creates it, covered by the new directory's fsync (NewLog).
func (m *Manager) GetOrCreateWith(topic string, partition int32, cfg Config, isNew bool, nl *NewLog) (*Log, error) {
	if err := ValidateTopicName(topic); err != nil {
		return nil, err
	}
	if partition < 0 {
		return nil, fmt.Errorf("%w: partition %d", ErrInvalidConfig, partition)
	}
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		if l, ok := m.logs[tp]; ok {
			m.mu.Unlock()
			return l, nil
		}
		pl, ok := m.creating[tp]
		if !ok {
			break
		}
		m.mu.Unlock()
		<-pl.done
		m.mu.Lock()
	}
	if d, ok := m.offlineParts[tp]; ok {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %s was in %s", ErrLogDirFailed, tp, d)
	}
	if !isNew && len(m.offline) > 0 {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: cannot create the log of %s while log dirs %v are offline", ErrLogDirFailed, tp, slices.Collect(maps.Keys(m.offline)))
	}
	counts := map[string]int{}
	for _, d := range m.dirOf {
		counts[d]++
	}
	for _, pl := range m.creating {
		counts[pl.dir]++
	}
	dir := ""
	for _, d := range m.opts.Dirs {
		if m.offline[d] == nil && (dir == "" || counts[d] < counts[dir]) {
			dir = d
		}
	}
	if d, ok := m.preferred[tp]; ok && m.offline[d] == nil {
		dir = d
	}
	delete(m.preferred, tp)
	if dir == "" {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: every log dir is offline", ErrLogDirFailed)
	}
	pl := pendingLog{dir: dir, done: make(chan struct{})}
	m.creating[tp] = pl
	fl := m.flushers[dir]
	m.mu.Unlock()

	l, _, err := OpenLog(filepath.Join(dir, tp.String()), cfg, LogOptions{Now: m.opts.Now, ProducerIDExpirationMs: m.opts.ProducerIDExpiration.Milliseconds(), FollowerDropBehind: m.opts.FollowerDropBehind, OnFlush: m.opts.OnFlush, activity: &m.appends, flusher: fl, SyncData: m.opts.SyncData, onIOError: m.dirHook(dir), New: nl})
	if err == nil {
		if err = m.dirSyncs.sync(dir); err != nil {
			l.Close()
		}
	}
	if isIOError(err) {
		// The dir is failing: it goes offline once this creation is
		// out of the way (failDir takes mu).
		defer m.failDir(dir, err)
		err = fmt.Errorf("%w: creating %s in %s: %w", ErrLogDirFailed, tp, dir, err)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.creating, tp)
	close(pl.done)
	if err != nil {
		return nil, err
	}
	if m.closed {
		l.Close()
		return nil, ErrClosed
	}
	if m.offline[dir] != nil {
		// The dir failed while the log was being made.
		l.closeFailed()
		m.offlineParts[tp] = dir
		return nil, fmt.Errorf("%w: %s", ErrLogDirFailed, dir)
	}
	m.logs[tp] = l
	m.dirOf[tp] = dir
	return l, nil
}

// ValidateTopicName applies Kafka's topic name rules (1-249 of
// [a-zA-Z0-9._-], not "." or "..").
func ValidateTopicName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 249 {
		return fmt.Errorf("%w: topic name %q", ErrInvalidConfig, name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: topic name %q has character %q", ErrInvalidConfig, name, c)
		}
	}
	return nil
}

// Delete closes the partition's log and removes its directory: it is first
// renamed "<topic>-<partition>.<id>-delete" (atomic, and finished at the
// next start if interrupted), then removed.
func (m *Manager) Delete(topic string, partition int32) error {
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	for {
		pl, ok := m.creating[tp]
		if !ok {
			break
		}
		m.mu.Unlock()
		<-pl.done // deletes what the creation in flight makes
		m.mu.Lock()
	}
	m.waitMoveLocked(tp)
	l, ok := m.logs[tp]
	dir := m.dirOf[tp]
	delete(m.logs, tp)
	delete(m.dirOf, tp)
	m.mu.Unlock()
	if !ok {
		return nil
	}
	closeErr := l.closeDiscard()
	var id [8]byte
	_, _ = rand.Read(id[:])
	gone := filepath.Join(dir, tp.String()+"."+hex.EncodeToString(id[:])+"-delete")
	if err := os.Rename(l.Dir(), gone); err != nil {
		return errors.Join(closeErr, err)
	}
	if err := m.dirSyncs.sync(dir); err != nil {
		return errors.Join(closeErr, err)
	}
	// The checkpoints must stop naming the partition (a restart would
	// otherwise find a recovery point for a log that is gone); deletions
	// running at once share one rewrite.
	return errors.Join(closeErr, os.RemoveAll(gone), m.deleteCkpt.do())
}

// Checkpoint writes the per-dir checkpoint files for every log dir.
func (m *Manager) Checkpoint() error {
	return errors.Join(m.checkpoint(RecoveryPointCheckpointFile), m.checkpoint(LogStartOffsetCheckpointFile), m.checkpoint(ReplicationCheckpointFile), m.checkpoint(CleanerCheckpointFile))
}

func (m *Manager) checkpoint(file string) error {
	m.ckptMu.Lock()
	defer m.ckptMu.Unlock()
	m.mu.Lock()
	per := map[string]map[TopicPartition]int64{}
	for _, d := range m.opts.Dirs {
		if m.offline[d] == nil {
			per[d] = map[TopicPartition]int64{}
		}
	}
	for tp, l := range m.logs {
		var v int64
		switch file {
		case RecoveryPointCheckpointFile:
			v = l.RecoveryPoint()
		case LogStartOffsetCheckpointFile:
			v = l.LogStartOffset()
		case ReplicationCheckpointFile:
			v = l.HighWatermark()
		case CleanerCheckpointFile:
			// Only logs the cleaner (or a compacted leader's gaps)
			// touched, as Kafka lists only compacted logs.
			if v = l.FirstDirtyOffset(); v <= 0 {
				continue
			}
		}
		if p := per[m.dirOf[tp]]; p != nil {
			p[tp] = v
		}
	}
	m.mu.Unlock()
	var errs []error
	for d, offs := range per {
		if err := WriteOffsetCheckpoint(filepath.Join(d, file), offs); err != nil {
			if isIOError(err) {
				m.failDir(d, err)
				err = fmt.Errorf("%w: %s: %w", ErrLogDirFailed, d, err)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Tick runs one round of the scheduled work that is due at now: flush.ms
// flushes, the flush of rolled segments (Log.FlushRolled), retention and checkpoints as asked, and producer-id expiry when
// ProducerIDExpirationCheckInterval has passed since the last. The
// scheduler goroutine calls it; with DisableScheduler, tests call it. It
// returns the errors met (the caller logs them); one log's failure does
// not stop the others.
func (m *Manager) Tick(now time.Time, retention, recoveryPoints, logStarts, replication bool) error {
	var errs []error
	m.mu.Lock()
	expire := now.Sub(m.lastExpiry) >= m.opts.ProducerIDExpirationCheckInterval
	if expire {
		m.lastExpiry = now
	}
	unflushed := m.unflushed
	m.unflushed = nil
	m.mu.Unlock()
	if len(unflushed) > 0 {
		// What recovery validated becomes durable and the recovery points
		// move past it, so another unclean stop does not rescan it again.
		errs = append(errs, m.syncLogs(unflushed))
		recoveryPoints = true
	}
	for _, l := range m.Logs() {
		if expire {
			if _, err := l.ExpireProducers(now); err != nil && !errors.Is(err, ErrClosed) {
				errs = append(errs, fmt.Errorf("expire producers %s: %w", l.tp, err))
			}
		}
		if err := l.FlushIfDue(now); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, fmt.Errorf("flush %s: %w", l.tp, err))
		}
		if err := l.FlushRolled(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, fmt.Errorf("flush rolled segments %s: %w", l.tp, err))
		}
		if retention {
			if _, err := l.ApplyRetention(now); err != nil && !errors.Is(err, ErrClosed) {
				errs = append(errs, fmt.Errorf("retention %s: %w", l.tp, err))
			}
		}
	}
	if recoveryPoints {
		errs = append(errs, m.checkpoint(RecoveryPointCheckpointFile), m.checkpoint(CleanerCheckpointFile))
	}
	if logStarts {
		errs = append(errs, m.checkpoint(LogStartOffsetCheckpointFile))
	}
	if replication {
		errs = append(errs, m.checkpoint(ReplicationCheckpointFile))
	}
	return errors.Join(errs...)
}

// syncLogs fsyncs logs, opts.Threads at a time; closed logs are skipped.
func (m *Manager) syncLogs(logs []*Log) error {
	errs := make([]error, len(logs))
	sem := make(chan struct{}, m.opts.Threads)
	var wg sync.WaitGroup
	for i, l := range logs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := l.Sync(); err != nil && !errors.Is(err, ErrClosed) {
				errs[i] = fmt.Errorf("flush %s: %w", l.tp, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// schedule is the manager's one background goroutine.
func (m *Manager) schedule() {
	defer close(m.done)
	t := time.NewTicker(m.opts.FlushCheckInterval)
	defer t.Stop()
	start := m.opts.Now()
	last := [4]time.Time{start, start, start, start}
	due := func(i int, now time.Time, every time.Duration) bool {
		if now.Sub(last[i]) >= every {
			last[i] = now
			return true
		}
		return false
	}
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			now := m.opts.Now()
			// Errors are retried next tick; the broker watches log health
			// through the logs themselves.
			_ = m.Tick(now,
				due(0, now, m.opts.RetentionCheckInterval),
				due(1, now, m.opts.RecoveryPointInterval),
				due(2, now, m.opts.LogStartInterval),
				due(3, now, m.opts.ReplicationInterval))
		}
	}
}

// closeLogs closes every log, and then the flushers (whose last round
// finds the logs closed: Close fsynced them).
func (m *Manager) closeLogs() error {
	var errs []error
	for _, l := range m.logs {
		errs = append(errs, l.Close())
	}
	m.closeFlushers()
	return errors.Join(errs...)
}

func (m *Manager) closeFlushers() {
	for _, f := range m.flushers {
		f.close()
	}
}

// Close stops the scheduler, closes every log (flushing it), writes the
// checkpoints and then the clean-shutdown marker in each log dir.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	if m.stop != nil {
		close(m.stop)
		<-m.done
	}
	m.cleanerMu.Lock()
	m.stopCleaners()
	m.cleanerMu.Unlock()
	m.mu.Lock()
	err := m.closeLogs()
	m.mu.Unlock()
	if err == nil {
		err = m.Checkpoint()
	}
	if err != nil {
		// No marker: the next start recovers.
		return err
	}
	var errs []error
	for _, d := range m.opts.Dirs {
		if m.offline[d] == nil {
			errs = append(errs, WriteFileAtomic(filepath.Join(d, CleanShutdownFile), nil))
		}
	}
	return errors.Join(errs...)
}
