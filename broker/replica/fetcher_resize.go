package replica

import "fmt"

// SetNumFetchers changes num.replica.fetchers on a running Manager, as
// Kafka's ReplicaFetcherManager.resizeThreadPool does for a dynamic broker
// config: every followed partition moves to the fetcher its hash picks
// among n (AbstractFetcherManager.getFetcherId), fetchers left without
// partitions stop, new ones start. A moved partition starts on its new
// fetcher as after a leader change, with an OffsetForLeaderEpoch round at
// its epoch (which truncates nothing that matches the leader), then
// fetches from its log end. n below 1 is an error and changes nothing.
func (m *Manager) SetNumFetchers(n int) error {
	if n < 1 {
		return fmt.Errorf("replica: num.replica.fetchers=%d, want at least 1", n)
	}
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	if m.closed || n == m.cfg.NumFetchers {
		return nil
	}
	type followed struct {
		p      *Partition
		epoch  int32
		source int32
		from   *fetcher
	}
	var all []followed
	for k, f := range m.fetchers {
		f.mu.Lock()
		for p, st := range f.parts {
			all = append(all, followed{p: p, epoch: st.epoch, source: k.source, from: f})
		}
		f.mu.Unlock()
	}
	m.cfg.NumFetchers = n
	for _, fp := range all {
		k := fetcherKey{source: fp.source, id: fetcherID(fp.p.Topic(), fp.p.Index(), n)}
		if m.fetchers[k] == fp.from {
			continue
		}
		fp.from.remove(fp.p)
		m.fetcherAdd(fp.source, fp.p, fp.epoch)
	}
	for k, f := range m.fetchers {
		if f.empty() {
			f.cancel()
			delete(m.fetchers, k)
			continue
		}
		f.interruptForAdded()
	}
	return nil
}

// NumFetchers returns num.replica.fetchers as the Manager applies it.
func (m *Manager) NumFetchers() int {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	return m.cfg.NumFetchers
}
