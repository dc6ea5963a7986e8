package replica

import "slices"

// PartitionHealth is one hosted partition as a metrics scrape sees it.
type PartitionHealth struct {
	Topic     string
	Partition int32
	// Leader: this broker leads the partition. The ISR counts below are
	// the committed ones from the image, the same on every replica; only
	// the leader's are reported (as Kafka's ReplicaManager does).
	Leader         bool
	Replicas, ISR  int
	MinISR         int
	LogSize        int64
	LogStartOffset int64
	LogEndOffset   int64
	// HighWatermark is the leader's HW, or a follower's copy of it (at
	// most one fetch behind): where consumer lag is measured from.
	HighWatermark int64
}

// UnderReplicated: the leader's ISR is smaller than the assignment.
func (h PartitionHealth) UnderReplicated() bool { return h.Leader && h.ISR < h.Replicas }

// UnderMinISR: the leader's ISR is below min.insync.replicas, so acks=all
// produces fail.
func (h PartitionHealth) UnderMinISR() bool { return h.Leader && h.ISR < h.MinISR }

// AtMinISR: the leader's ISR is exactly min.insync.replicas: one more
// failure and acks=all produces fail.
func (h PartitionHealth) AtMinISR() bool { return h.Leader && h.ISR == h.MinISR }

// Health is a point-in-time view of the partitions hosted here and the
// manager's ISR change counts, for a metrics scrape. It takes each
// partition's role lock briefly and nothing on the produce or fetch path
// pays for it.
type Health struct {
	Partitions []PartitionHealth // by topic, then partition
	// IsrShrinks and IsrExpands count ISR changes this broker proposed as
	// leader and the controller accepted.
	IsrShrinks, IsrExpands uint64
	// The delayed operations waiting in each purgatory, counted once per
	// partition they watch, as Kafka's DelayedOperationPurgatory
	// PurgatorySize counts its watch lists (a produce to three partitions
	// counts three). Fetch counts followers' and consumers' fetches.
	ProducePurgatory, FetchPurgatory, DeleteRecordsPurgatory int
}

// Health returns the current Health.
func (m *Manager) Health() Health {
	parts := m.partitions()
	h := Health{Partitions: make([]PartitionHealth, 0, len(parts)),
		IsrShrinks: m.isrShrinks.Load(), IsrExpands: m.isrExpands.Load()}
	for _, p := range parts {
		p.roleMu.RLock()
		ph := PartitionHealth{
			Topic: p.topic, Partition: p.index, Leader: p.role == RoleLeader,
			Replicas: len(p.replicas), ISR: len(p.isr), MinISR: p.minISR,
		}
		p.roleMu.RUnlock()
		ph.LogSize, ph.LogStartOffset, ph.LogEndOffset = p.lg().Size(), p.lg().LogStartOffset(), p.lg().LogEndOffset()
		ph.HighWatermark = p.lg().HighWatermark()
		h.ProducePurgatory += p.hwWatch.len()
		h.FetchPurgatory += p.dataWatch.len()
		h.DeleteRecordsPurgatory += p.lowWatch.len()
		h.Partitions = append(h.Partitions, ph)
	}
	slices.SortFunc(h.Partitions, func(a, b PartitionHealth) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return h
}
