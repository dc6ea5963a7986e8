package share

import (
	"fmt"
	"time"
)

// State is a record's delivery state. The numbers are Kafka's
// (RecordState in SharePartition): Available, Acknowledged and Archived are
// the ones Kafka persists; Acquired is never persisted, it reads back as
// Available.
type State int8

const (
	Available    State = 0
	Acquired     State = 1
	Acknowledged State = 2
	Archived     State = 4
)

func (s State) String() string {
	switch s {
	case Available:
		return "Available"
	case Acquired:
		return "Acquired"
	case Acknowledged:
		return "Acknowledged"
	case Archived:
		return "Archived"
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// finished says the record will never be delivered again: the start offset
// may move past it.
func (s State) finished() bool { return s == Acknowledged || s == Archived }

// AckType is an acknowledgement as ShareFetch and ShareAcknowledge carry it
// (AcknowledgeTypes: 0 gap, 1 accept, 2 release, 3 reject; 4 renew from v2,
// KIP-1222).
type AckType int8

const (
	AckGap     AckType = 0
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4
)

func (t AckType) valid() bool { return t >= AckGap && t <= AckRenew }

// AcquireMode is ShareFetch v2's ShareAcquireMode (KIP-1206).
type AcquireMode int8

const (
	// BatchOptimized may exceed MaxRecords to end at a log batch boundary,
	// so the leader can send whole batches as the log holds them.
	BatchOptimized AcquireMode = 0
	// RecordLimit acquires at most MaxRecords records.
	RecordLimit AcquireMode = 1
)

// Config is what a share-partition reads of the group's configuration. The
// broker builds it from the effective values (broker keys, later per-group
// overrides) each time it may have changed.
type Config struct {
	// LockDuration is group.share.record.lock.duration.ms: how long an
	// acquired record stays with its member before it becomes available.
	LockDuration time.Duration
	// DeliveryLimit is group.share.delivery.count.limit: a record whose
	// delivery count reached it is archived instead of made available.
	DeliveryLimit int16
	// MaxRecordLocks is group.share.partition.max.record.locks: how far the
	// in-flight window (SPSO to SPEO) may reach.
	MaxRecordLocks int
}

// DefaultConfig holds Kafka 4.2's defaults.
func DefaultConfig() Config {
	return Config{LockDuration: 30 * time.Second, DeliveryLimit: 5, MaxRecordLocks: 2000}
}

// Batch is a log batch as the leader read it: its first and last offsets
// (a compacted batch may hold fewer records; the client acknowledges the
// missing offsets as gaps).
type Batch struct {
	First, Last int64
}

// AcquiredRange is a run of offsets given to one member with one delivery count,
// as ShareFetch's AcquiredRecords carries it.
type AcquiredRange struct {
	First, Last   int64
	DeliveryCount int16
}

// AckBatch is one AcknowledgementBatches entry: a range and either one type
// for the whole range or one per offset.
type AckBatch struct {
	First, Last int64
	Types       []AckType
}

// StateRange is a run of offsets with one persisted state and delivery
// count.
type StateRange struct {
	First, Last   int64
	State         State
	DeliveryCount int16
}

// Durable is what must survive a leader failover: the start offset, the
// state epoch (bumped when an admin rewrites the state, so a leader holding
// an older one reloads), and the offsets at or after StartOffset whose
// state is not "Available, never delivered", ascending and disjoint.
type Durable struct {
	StartOffset int64
	StateEpoch  int32
	Ranges      []StateRange
}
