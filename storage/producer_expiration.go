package storage

import (
	"fmt"
	"time"
)

// SetProducerIDExpiration changes producer.id.expiration.ms on a running
// Manager, as Kafka's DynamicProducerStateManagerConfig does: every open
// log and every log opened later expires idle producers by the new value
// from its next expiry pass. A value that is not positive is
// ErrInvalidConfig and changes nothing.
func (m *Manager) SetProducerIDExpiration(d time.Duration) error {
	ms := d.Milliseconds()
	if ms <= 0 {
		return fmt.Errorf("%w: producer.id.expiration.ms=%d", ErrInvalidConfig, ms)
	}
	m.mu.Lock()
	m.opts.ProducerIDExpiration = d
	logs := make([]*Log, 0, len(m.logs))
	for _, l := range m.logs {
		logs = append(logs, l)
	}
	m.mu.Unlock()
	for _, l := range logs {
		l.mu.Lock()
		l.producerTTLMs = ms
		l.mu.Unlock()
	}
	return nil
}

// ProducerIDExpiration returns producer.id.expiration.ms as the Manager
// applies it to logs it opens.
func (m *Manager) ProducerIDExpiration() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.opts.ProducerIDExpiration
}
