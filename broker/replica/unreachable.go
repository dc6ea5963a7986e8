package replica

import "time"

// Lost sources. A fetcher whose connection to its source broker breaks the
// way a dead process's does (connectionLost) marks the source unreachable
// until a fetch from it succeeds again. The broker's Metadata handler reads
// it (UnreachableSince): a partition whose leader this broker has just seen
// vanish is likely about to get a new one from the controller, and a client
// told the old leader now would be sent to a dead broker and into its
// metadata backoff (franz-go's MetadataMinAge, 5 s), so the answer waits a
// moment for the controller's verdict instead.

// markLost records that a fetcher lost its connection to source (the first
// time since its last success counts) and tells cfg.SourceLost.
func (m *Manager) markLost(source int32) {
	m.lostMu.Lock()
	if _, ok := m.lost[source]; !ok {
		m.lost[source] = m.now()
		m.lostN.Add(1)
	}
	m.lostMu.Unlock()
	if m.cfg.SourceLost != nil {
		m.cfg.SourceLost(source)
	}
}

// markReached clears source's mark after a successful fetch from it.
func (m *Manager) markReached(source int32) {
	m.lostMu.Lock()
	if _, ok := m.lost[source]; ok {
		delete(m.lost, source)
		m.lostN.Add(-1)
	}
	m.lostMu.Unlock()
}

// UnreachableSince reports when this broker's fetching from broker id broke
// with a lost connection, if no fetch from it has succeeded since.
func (m *Manager) UnreachableSince(id int32) (time.Time, bool) {
	if m.lostN.Load() == 0 {
		return time.Time{}, false
	}
	m.lostMu.Lock()
	defer m.lostMu.Unlock()
	t, ok := m.lost[id]
	return t, ok
}

// AnyUnreachable reports whether some source is marked lost (one atomic
// load: the Metadata handler asks on every request).
func (m *Manager) AnyUnreachable() bool { return m.lostN.Load() > 0 }
