package storage

import "time"

// CleanerSettings are the cleaner options Kafka updates on a running
// broker (LogCleaner.ReconfigurableConfigs that raftka's cleaner has);
// zero values mean the defaults, as in CleanerOptions.
type CleanerSettings struct {
	Threads             int           // log.cleaner.threads
	DedupeBufferSize    int64         // log.cleaner.dedupe.buffer.size
	IOMaxBytesPerSecond float64       // log.cleaner.io.max.bytes.per.second
	Backoff             time.Duration // log.cleaner.backoff.ms
}

// SetCleaner applies new cleaner settings to the running Manager, as
// Kafka's LogCleaner.reconfigure does: the cleaner threads stop (a clean in
// progress gives up, keeping nothing of it, and is picked again later) and
// start again with the new settings, so a thread count, key-map budget,
// I/O rate or backoff takes effect at once. With the cleaner disabled
// (log.cleaner.enable=false) the settings are only stored. Invalid
// settings are ErrInvalidConfig and change nothing; a closed Manager is
// ErrClosed.
func (m *Manager) SetCleaner(s CleanerSettings) error {
	m.cleanerMu.Lock()
	defer m.cleanerMu.Unlock()
	next := m.opts.Cleaner
	next.Threads, next.DedupeBufferSize = s.Threads, s.DedupeBufferSize
	next.IOMaxBytesPerSecond, next.Backoff = s.IOMaxBytesPerSecond, s.Backoff
	if err := next.validate(); err != nil {
		return err
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return ErrClosed
	}
	m.stopCleaners()
	m.cleanStop = nil // closed; startCleaners makes a new one if it starts threads
	m.opts.Cleaner = next
	m.startCleaners()
	return nil
}

// CleanerSettings returns the settings the cleaner runs with.
func (m *Manager) CleanerSettings() CleanerSettings {
	m.cleanerMu.Lock()
	defer m.cleanerMu.Unlock()
	c := m.opts.Cleaner
	return CleanerSettings{Threads: c.Threads, DedupeBufferSize: c.DedupeBufferSize, IOMaxBytesPerSecond: c.IOMaxBytesPerSecond, Backoff: c.Backoff}
}
