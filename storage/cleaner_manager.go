package storage

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// CleanerOptions are the broker's log.cleaner.* settings.
type CleanerOptions struct {
	Enable bool // log.cleaner.enable
	// Threads is log.cleaner.threads (1 if zero).
	Threads int
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size, shared by the
	// threads (128 MiB if zero).
	DedupeBufferSize int64
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second, for
	// all threads together (0 or +Inf: no limit).
	IOMaxBytesPerSecond float64
	// BusyIOBytesPerSecond (raftka.log.cleaner.busy.io.max.bytes.per.second,
	// no Kafka key) caps the cleaner's I/O, for all threads together,
	// while the node's logs take appends (leader, follower or marker):
	// the cleaner yields to the produce path, and runs at
	// IOMaxBytesPerSecond once no append has come for half a second. The
	// lower of the two applies. DefaultCleanerBusyIO if zero; +Inf: none,
	// Kafka's behaviour.
	BusyIOBytesPerSecond float64
	// Backoff is log.cleaner.backoff.ms: how long a thread sleeps when
	// no log is due (15s if zero).
	Backoff time.Duration
	// OnClean, if set, is told of every clean and error (the broker logs
	// them; storage does not log).
	OnClean func(tp TopicPartition, st CleanStats, err error)
	// sleep replaces time.Sleep in the throttle (tests).
	sleep func(time.Duration)
}

func (o *CleanerOptions) validate() error {
	if o.Threads == 0 {
		o.Threads = 1
	}
	if o.DedupeBufferSize == 0 {
		o.DedupeBufferSize = 128 << 20
	}
	if o.Backoff == 0 {
		o.Backoff = 15 * time.Second
	}
	if o.BusyIOBytesPerSecond == 0 {
		o.BusyIOBytesPerSecond = DefaultCleanerBusyIO
	}
	switch {
	case o.Threads < 0:
		return fmt.Errorf("%w: log.cleaner.threads=%d", ErrInvalidConfig, o.Threads)
	case o.DedupeBufferSize < 0:
		return fmt.Errorf("%w: log.cleaner.dedupe.buffer.size=%d", ErrInvalidConfig, o.DedupeBufferSize)
	case o.IOMaxBytesPerSecond < 0 || math.IsNaN(o.IOMaxBytesPerSecond):
		return fmt.Errorf("%w: log.cleaner.io.max.bytes.per.second=%g", ErrInvalidConfig, o.IOMaxBytesPerSecond)
	case o.BusyIOBytesPerSecond < 0 || math.IsNaN(o.BusyIOBytesPerSecond):
		return fmt.Errorf("%w: raftka.log.cleaner.busy.io.max.bytes.per.second=%g", ErrInvalidConfig, o.BusyIOBytesPerSecond)
	case o.Backoff < 0:
		return fmt.Errorf("%w: log.cleaner.backoff.ms=%d", ErrInvalidConfig, o.Backoff.Milliseconds())
	}
	return nil
}

// DefaultCleanerBusyIO is CleanerOptions.BusyIOBytesPerSecond's default,
// 80 MB/s: measured on a two-core machine, a node whose cleaner always has
// work then produces within 15% of its throughput with the cleaner off
// (median drop 9% over 12 interleaved runs on a loaded shared machine,
// against 37% with no limit), and a log taking 20 MB/s of keyed writes is
// still cleaned as fast as they come, as with no limit or 100 MB/s (at 40
// MB/s it falls behind). See BenchmarkManagerProduceWhileCleaning and
// BenchmarkCleanerKeepsUp.
const DefaultCleanerBusyIO = 80e6

// startCleaners starts log.cleaner.threads goroutines if the cleaner is
// enabled and the scheduler runs.
func (m *Manager) startCleaners() {
	c := m.opts.Cleaner
	m.throttle = newBusyThrottle(c.IOMaxBytesPerSecond, c.BusyIOBytesPerSecond, &m.appends, nil, c.sleep)
	if !c.Enable || m.opts.DisableScheduler {
		return
	}
	m.cleanStop = make(chan struct{})
	for range c.Threads {
		m.cleanWG.Add(1)
		go m.cleanerThread()
	}
}

func (m *Manager) stopCleaners() {
	if m.cleanStop != nil {
		close(m.cleanStop)
		m.cleanWG.Wait()
	}
}

// cleanerThread cleans the dirtiest log, again and again, and sleeps
// log.cleaner.backoff.ms when no log is due.
func (m *Manager) cleanerThread() {
	defer m.cleanWG.Done()
	// The key map is allocated at the first clean, not before: a node
	// without compacted topics never pays for it.
	var om *offsetMap
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-m.cleanStop:
			return
		case <-t.C:
		}
		_, did, err := m.cleanOnce(m.opts.Now(), &om)
		wait := m.opts.Cleaner.Backoff
		if did && err == nil {
			wait = 0 // another log may be due at once
		}
		t.Reset(wait)
	}
}

// CleanOnce cleans the dirtiest log that is due at now, if any (what a
// cleaner thread does each round; tests call it directly). did is false
// if no log was due.
func (m *Manager) CleanOnce(now time.Time) (tp TopicPartition, did bool, err error) {
	return m.cleanOnce(now, nil)
}

func (m *Manager) cleanOnce(now time.Time, om **offsetMap) (TopicPartition, bool, error) {
	l := m.pickDirtiest(now)
	if l == nil {
		return TopicPartition{}, false, nil
	}
	budget := m.opts.Cleaner.DedupeBufferSize / int64(max(m.opts.Cleaner.Threads, 1))
	opts := CleanOptions{DedupeBufferBytes: budget, Throttle: m.throttle, Abort: m.cleanStop,
		Checkpoint: func() error { return m.checkpoint(CleanerCheckpointFile) }}
	if om != nil {
		if *om == nil {
			*om = newOffsetMap(budget)
		}
		opts.offsetMap = *om
	}
	defer func() {
		m.mu.Lock()
		delete(m.cleaning, l)
		m.mu.Unlock()
	}()
	st, did, err := l.Clean(now, opts)
	if errors.Is(err, errCleanAborted) || errors.Is(err, ErrClosed) {
		err = nil
	}
	if cb := m.opts.Cleaner.OnClean; cb != nil && (did || err != nil) {
		cb(l.tp, st, err)
	}
	return l.tp, did, err
}

// pickDirtiest marks and returns the due log with the highest dirty
// ratio that no other thread is cleaning.
func (m *Manager) pickDirtiest(now time.Time) *Log {
	var logs []*Log
	var plans []cleanPlan
	for _, l := range m.Logs() {
		if !l.Config().CleanupPolicy.Compacts() {
			continue
		}
		m.mu.Lock()
		busy := m.cleaning[l]
		m.mu.Unlock()
		if busy {
			continue
		}
		p, err := l.cleanPlan(now)
		if err != nil {
			continue
		}
		logs, plans = append(logs, l), append(plans, p)
	}
	for {
		i := dirtiest(plans)
		if i < 0 {
			return nil
		}
		m.mu.Lock()
		if !m.cleaning[logs[i]] && !m.closed {
			m.cleaning[logs[i]] = true
			m.mu.Unlock()
			return logs[i]
		}
		m.mu.Unlock()
		plans[i].Eligible = false
	}
}
