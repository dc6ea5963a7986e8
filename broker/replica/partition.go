package replica

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Role is what this broker is for a partition.
type Role int8

const (
	// RoleNone: the partition is not (or no longer) served here, or it has
	// no leader.
	RoleNone Role = iota
	RoleLeader
	RoleFollower
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	default:
		return "none"
	}
}

// Isolation levels of Fetch and ListOffsets.
const (
	ReadUncommitted int8 = 0
	ReadCommitted   int8 = 1
)

// ListOffsets special timestamps (Kafka's ListOffsetsRequest constants).
const (
	LatestTimestamp        int64 = -1
	EarliestTimestamp      int64 = -2
	MaxTimestamp           int64 = -3
	EarliestLocalTimestamp int64 = -4
	LatestTieredTimestamp  int64 = -5
)

// errStale marks a follower operation whose leader epoch is no longer the
// partition's: the fetcher drops the response.
var errStale = errors.New("replica: stale follower state")

// partitionHost is all a Partition needs from the Manager hosting it: the
// clock, ISR eligibility as the current image says, sequence numbers for
// ISR changes, and the way to the controller for one. The Manager is the
// only implementation; the Partition holds no *Manager.
type partitionHost interface {
	now() time.Time
	nextSeq() uint64
	// eligible reports whether a broker may join an ISR (KIP-841).
	eligible(broker int32) bool
	// alive reports whether a broker is registered and not fenced (the
	// replicas whose log start offsets the low watermark counts).
	alive(broker int32) bool
	// sendAlterPartition sends ch to the controller without blocking and
	// hands the answer to alterAnswered.
	sendAlterPartition(p *Partition, leaderEpoch int32, ch *isrChange)
}

// Partition is one partition hosted by this broker: its log and its
// replication state. The Manager creates it; handlers get it from
// Manager.Partition and call the leader API from any goroutine.
type Partition struct {
	host         partitionHost
	self         int32         // this broker's id
	lagTimeMax   time.Duration // replica.lag.time.max.ms
	alterBackoff time.Duration // before retrying a refused ISR change
	logger       zerolog.Logger

	topic   string
	index   int32
	topicID [16]byte
	logp    atomic.Pointer[storage.Log]

	roleMu         sync.RWMutex
	role           Role
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	replicas       []int32
	isr            []int32
	minISR         int
	// hwMinISR (guarded by mu, unlike minISR) is min.insync.replicas when
	// TopicConfig.ELR holds, else 0: the ISR size the HW waits for.
	hwMinISR int

	mu   sync.Mutex
	core *leaderCore // non-nil exactly while leader

	hwWatch   watchers // HW moves and role changes: delayed produce
	dataWatch watchers // appends, HW moves, role changes: delayed fetch
	lowWatch  watchers // log start moves, replica and role changes: delayed DeleteRecords
}

// PartitionState is a snapshot of a partition's replication state.
type PartitionState struct {
	Role           Role
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32 // as committed in the image
	// PendingISR is the ISR of an AlterPartition in flight, nil if none.
	PendingISR     []int32
	HighWatermark  int64
	LogStartOffset int64
	LogEndOffset   int64
}

// Topic is the partition's topic name.
func (p *Partition) Topic() string { return p.topic }

// Index is the partition number.
func (p *Partition) Index() int32 { return p.index }

// TopicID is the topic's id.
func (p *Partition) TopicID() [16]byte { return p.topicID }

// Log is the partition's log, for reads that need no replication decision
// (DescribeLogDirs sizes, for example). Writes go through the Partition.
func (p *Partition) Log() *storage.Log { return p.logp.Load() }

// lg is the partition's log now; a move to another log dir (MoveLogDir)
// replaces it.
func (p *Partition) lg() *storage.Log { return p.logp.Load() }

// State returns a snapshot of the partition's state.
func (p *Partition) State() PartitionState {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	s := PartitionState{
		Role: p.role, Leader: p.leader, LeaderEpoch: p.leaderEpoch, PartitionEpoch: p.partitionEpoch,
		Replicas: slices.Clone(p.replicas), ISR: slices.Clone(p.isr),
		HighWatermark: p.lg().HighWatermark(), LogStartOffset: p.lg().LogStartOffset(), LogEndOffset: p.lg().LogEndOffset(),
	}
	p.mu.Lock()
	if p.core != nil && p.core.pending != nil {
		s.PendingISR = slices.Clone(p.core.pending.newISR)
	}
	p.mu.Unlock()
	return s
}

func (p *Partition) String() string { return fmt.Sprintf("%s-%d", p.topic, p.index) }

// checkLeaderLocked checks a request's current leader epoch (-1: not given)
// and that this broker leads. Called with roleMu held.
func (p *Partition) checkLeaderLocked(current int32) error {
	if current >= 0 && p.role != RoleNone {
		if current < p.leaderEpoch {
			return fmt.Errorf("%w: %s request epoch %d, current %d", kerr.FencedLeaderEpoch, p, current, p.leaderEpoch)
		}
		if current > p.leaderEpoch {
			return fmt.Errorf("%w: %s request epoch %d, current %d", kerr.UnknownLeaderEpoch, p, current, p.leaderEpoch)
		}
	}
	if p.role != RoleLeader {
		return fmt.Errorf("%w: %s is led by %d", kerr.NotLeaderForPartition, p, p.leader)
	}
	return nil
}

// Leader returns the leader id and epoch this broker knows.
func (p *Partition) Leader() (id, epoch int32) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	return p.leader, p.leaderEpoch
}

// AppendAsLeader appends one producer batch (validated and stamped with
// offsets and the leader epoch by storage). requiredAcks is the request's
// acks: with -1 the ISR must hold at least min.insync.replicas members or
// nothing is appended (NOT_ENOUGH_REPLICAS), and the returned Ack completes
// once the high watermark passes the batch (see WaitAcks). With 0 or 1 the
// Ack is nil. The batch slice is modified in place.
func (p *Partition) AppendAsLeader(batch []byte, requiredAcks int16) (storage.AppendResult, *Ack, error) {
	return p.appendLeader(requiredAcks, func(epoch int32) (storage.AppendResult, error) {
		return p.lg().Append(batch, storage.AppendOptions{LeaderEpoch: epoch})
	})
}

// AppendAsLeaderGuarded is AppendAsLeader for a transactional batch whose
// transaction was verified with the coordinator: guard is what
// storage.Log.TxnGuard answered before the verification, and a marker for
// the producer appended since refuses the batch
// (storage.ErrTxnVerificationLost).
func (p *Partition) AppendAsLeaderGuarded(batch []byte, requiredAcks int16, guard uint64) (storage.AppendResult, *Ack, error) {
	return p.appendLeader(requiredAcks, func(epoch int32) (storage.AppendResult, error) {
		return p.lg().Append(batch, storage.AppendOptions{LeaderEpoch: epoch, TxnGuard: guard, Guarded: true})
	})
}

// AppendMarker appends a transaction marker as the leader: what a
// WriteTxnMarkers request asks of each partition (Kafka sends it with
// acks=-1, and so should the caller; requiredAcks works as in
// AppendAsLeader). Storage refuses a stale producer epoch
// (INVALID_PRODUCER_EPOCH) or coordinator epoch
// (TRANSACTION_COORDINATOR_FENCED) and writes nothing then; see
// storage.Log.AppendMarker.
func (p *Partition) AppendMarker(m storage.TxnMarker, requiredAcks int16) (storage.AppendResult, *Ack, error) {
	return p.appendLeader(requiredAcks, func(epoch int32) (storage.AppendResult, error) {
		return p.lg().AppendMarker(m, storage.AppendOptions{LeaderEpoch: epoch})
	})
}

// appendLeader runs one leader append (given the leader epoch) under the
// leader checks, then moves the HW and wakes waiters as AppendAsLeader
// describes.
func (p *Partition) appendLeader(requiredAcks int16, appendFn func(epoch int32) (storage.AppendResult, error)) (storage.AppendResult, *Ack, error) {
	p.roleMu.RLock()
	if err := p.checkLeaderLocked(-1); err != nil {
		p.roleMu.RUnlock()
		return storage.AppendResult{}, nil, err
	}
	if requiredAcks == -1 && len(p.isr) < p.minISR {
		n, want := len(p.isr), p.minISR
		p.roleMu.RUnlock()
		return storage.AppendResult{}, nil, fmt.Errorf("%w: %s has %d in-sync replicas, min.insync.replicas is %d", kerr.NotEnoughReplicas, p, n, want)
	}
	epoch := p.leaderEpoch
	res, err := appendFn(epoch)
	p.roleMu.RUnlock()
	if err != nil {
		if errors.Is(err, storage.ErrClosed) {
			err = fmt.Errorf("%w: %s was removed", kerr.NotLeaderForPartition, p)
		}
		return res, nil, err
	}
	// One wake per append: when the HW moves (always on a lone replica),
	// maybeAdvanceHW wakes the fetches; otherwise only followers can use
	// the new bytes, and they are woken here. Waking before the HW moved
	// would send consumers' fetches round for nothing.
	if !p.maybeAdvanceHW() {
		p.dataWatch.wakeAll()
	}
	if requiredAcks == -1 {
		return res, &Ack{p: p, epoch: epoch, required: res.LastOffset + 1}, nil
	}
	if requiredAcks == 1 && p.lg().DurableEnd() <= res.LastOffset {
		// Durable mode: acks=1 is answered once the leader's copy is
		// fsynced (the dir's next group commit).
		return res, &Ack{p: p, epoch: epoch, required: res.LastOffset + 1, local: true}, nil
	}
	return res, nil, nil
}

// durableMoved is the log's OnDurable hook: after a group commit the
// leader's durable end may let the HW move, and acks=1 produces waiting
// for the leader's fsync look again.
func (p *Partition) durableMoved() {
	if !p.maybeAdvanceHW() {
		p.hwWatch.wakeAll()
	}
}

// maybeAdvanceHW moves the leader's HW to the smallest LEO of the maximal
// ISR if that is higher (the HW never goes backwards), and wakes the
// purgatories when it moves. It reports whether it moved. The leader's own
// LEO counts as far as it is durable (storage.Log.DurableEnd: the log end,
// except in durable mode, where it is what the leader has fsynced), and
// so does each follower's: in durable mode a follower fsyncs before the
// fetch that reports its new offset (fetcher.awaitDurable).
func (p *Partition) maybeAdvanceHW() bool {
	p.mu.Lock()
	if p.core == nil {
		p.mu.Unlock()
		return false
	}
	moved := false
	if hw, ok := p.hwLocked(); ok && hw > p.lg().HighWatermark() {
		p.lg().SetHighWatermark(hw)
		moved = true
	}
	p.mu.Unlock()
	if moved {
		p.hwWatch.wakeAll()
		p.dataWatch.wakeAll()
	}
	return moved
}

// EpochEndOffset is a leader epoch and where it ends (OffsetForLeaderEpoch's
// answer, Fetch's DivergingEpoch).
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

// ReadRequest is one partition of a Fetch.
type ReadRequest struct {
	Offset   int64
	MaxBytes int
	// Isolation is ReadUncommitted or ReadCommitted: a read_committed
	// consumer reads up to the last stable offset (the HW without open
	// transactions) and gets the aborted transactions in what it reads.
	Isolation int8
	// ReplicaID is the fetching broker for a follower fetch, -1 for a
	// consumer. Followers read up to the LEO, consumers up to the HW.
	ReplicaID int32
	// CurrentLeaderEpoch is the fetcher's idea of the leader epoch (-1: not
	// checked): older is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH.
	CurrentLeaderEpoch int32
	// LastFetchedEpoch is the epoch of the fetcher's last batch (-1: not
	// checked). When that epoch ends on this leader before Offset, the
	// answer is DivergingEpoch instead of records (KIP-320).
	LastFetchedEpoch int32
	// LogStartOffset is a follower's own log start offset, as its fetch
	// reports it (-1: unknown); the leader's low watermark counts it.
	LogStartOffset int64
}

// ReadResult is the answer for one partition.
type ReadResult struct {
	// Region holds whole batches; empty when there is nothing to send.
	Region storage.Region
	// HighWatermark, LastStableOffset, LogStartOffset: -1 when unknown
	// (the partition is not led here).
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	// AbortedTransactions, for a read_committed consumer's read with
	// records, are the aborted transactions that may have records in
	// Region (Fetch's AbortedTransactions); nil otherwise.
	AbortedTransactions []storage.AbortedTxn
	// Diverging is set when the fetcher must truncate first; Region is then
	// empty.
	Diverging *EpochEndOffset
	Err       error
}

// Read serves one partition of a Fetch on the leader. A follower's read
// records its fetch offset as its LEO, which may advance the HW and may
// start an ISR expansion.
func (p *Partition) Read(r ReadRequest) ReadResult {
	res := ReadResult{HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if res.Err = p.checkLeaderLocked(r.CurrentLeaderEpoch); res.Err != nil {
		return res
	}
	follower := r.ReplicaID >= 0
	if follower && (r.ReplicaID == p.self || !slices.Contains(p.replicas, r.ReplicaID)) {
		res.Err = fmt.Errorf("%w: broker %d is not a follower of %s", kerr.NotLeaderForPartition, r.ReplicaID, p)
		return res
	}
	fill := func() {
		// LSO after HW: it is computed from a HW at least as new.
		res.HighWatermark = p.lg().HighWatermark()
		res.LastStableOffset, res.LogStartOffset = p.lg().LastStableOffset(), p.lg().LogStartOffset()
	}
	if r.LastFetchedEpoch >= 0 {
		e, end := p.lg().EndOffsetForEpoch(r.LastFetchedEpoch)
		if e < r.LastFetchedEpoch || end < r.Offset {
			res.Diverging = &EpochEndOffset{Epoch: e, EndOffset: end}
			fill()
			return res
		}
	}
	leo := p.lg().LogEndOffset()
	if r.Offset < p.lg().LogStartOffset() || r.Offset > leo {
		fill()
		res.Err = fmt.Errorf("%w: %s offset %d, log covers [%d, %d]", kerr.OffsetOutOfRange, p, r.Offset, p.lg().LogStartOffset(), leo)
		return res
	}
	var err error
	switch {
	case follower:
		res.Region, err = p.lg().Read(r.Offset, r.MaxBytes)
		p.followerFetched(r.ReplicaID, r.Offset, r.LogStartOffset, leo)
	case r.Isolation == ReadCommitted:
		var cr storage.CommittedRead
		cr, err = p.lg().ReadCommitted(r.Offset, r.MaxBytes)
		res.Region = cr.Region
		if cr.Region.Len > 0 {
			res.AbortedTransactions = cr.Aborted
		}
	default:
		res.Region, err = p.lg().ReadUpTo(r.Offset, r.MaxBytes, p.lg().HighWatermark())
	}
	if err != nil {
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			err = fmt.Errorf("%w: %w", kerr.OffsetOutOfRange, err)
		}
		res.Err = err
	}
	fill()
	return res
}

// followerFetched updates the leader core after a follower's fetch. Called
// with roleMu held shared, as leader.
func (p *Partition) followerFetched(id int32, offset, logStart, leaderLEO int64) {
	now := p.host.now()
	p.mu.Lock()
	if p.core == nil {
		p.mu.Unlock()
		return
	}
	ok, startMoved := p.core.followerFetch(id, offset, logStart, leaderLEO, now)
	if !ok {
		p.mu.Unlock()
		return
	}
	if startMoved {
		// The low watermark may have moved: delayed DeleteRecords look.
		defer p.lowWatch.wakeAll()
	}
	moved := false
	if hw, ok := p.hwLocked(); ok && hw > p.lg().HighWatermark() {
		p.lg().SetHighWatermark(hw)
		moved = true
	}
	var ch *isrChange
	if newISR := p.core.expandISR(id, p.lg().HighWatermark(), now, p.host.eligible(id)); newISR != nil {
		ch = p.core.begin(p.host.nextSeq(), newISR)
	}
	p.mu.Unlock()
	if moved {
		p.hwWatch.wakeAll()
		p.dataWatch.wakeAll()
	}
	if ch != nil {
		p.host.sendAlterPartition(p, p.leaderEpoch, ch)
	}
}

// maybeShrinkISR starts an ISR shrink when a member has not caught up
// within replica.lag.time.max.ms (the Manager's ISR expiry calls it).
func (p *Partition) maybeShrinkISR() {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if p.role != RoleLeader {
		return
	}
	now := p.host.now()
	p.mu.Lock()
	var ch *isrChange
	if newISR := p.core.shrinkISR(p.lg().LogEndOffset(), now, p.lagTimeMax); newISR != nil {
		ch = p.core.begin(p.host.nextSeq(), newISR)
		ch.shrink = true
	}
	p.mu.Unlock()
	if ch != nil {
		p.logger.Info().Stringer("partition", p).Ints32("isr", p.isr).Ints32("new_isr", ch.newISR).Msg("shrinking ISR")
		p.host.sendAlterPartition(p, p.leaderEpoch, ch)
	}
}

func (p *Partition) alterAnswered(seq uint64, code int16, partitionEpoch int32) {
	p.mu.Lock()
	if p.core != nil {
		p.core.answer(seq, code, partitionEpoch, p.host.now(), p.alterBackoff)
	}
	p.mu.Unlock()
	// A dropped expansion shrinks the maximal ISR, which may let the HW move.
	p.maybeAdvanceHW()
}

// OffsetForLeaderEpoch answers for one partition on the leader: the largest
// epoch at or below epoch and where it ends (the LEO for the current one).
func (p *Partition) OffsetForLeaderEpoch(currentLeaderEpoch, epoch int32) (EpochEndOffset, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if err := p.checkLeaderLocked(currentLeaderEpoch); err != nil {
		return EpochEndOffset{Epoch: storage.UndefinedEpoch, EndOffset: storage.UndefinedOffset}, err
	}
	e, end := p.lg().EndOffsetForEpoch(epoch)
	return EpochEndOffset{Epoch: e, EndOffset: end}, nil
}

// ListedOffset is ListOffsets' answer for one partition. Offset -1 means
// no record matches.
type ListedOffset struct {
	Timestamp   int64
	Offset      int64
	LeaderEpoch int32
}

// ListOffsets answers on the leader: EarliestTimestamp (and
// EarliestLocalTimestamp) is the log start offset, LatestTimestamp the HW
// (the last stable offset under ReadCommitted), MaxTimestamp the record
// with the largest timestamp, and a timestamp >= 0 the first record at or
// after it, answered with that record's own timestamp and its batch's
// leader epoch, as Kafka does (for a compressed batch, which storage does
// not decompress, see storage.Log.FindByTimestamp). Records at or past the
// HW (the LSO under ReadCommitted) are never answered, as in Kafka's
// lastFetchableOffset.
func (p *Partition) ListOffsets(currentLeaderEpoch int32, timestamp int64, isolation int8) (ListedOffset, error) {
	none := ListedOffset{Timestamp: storage.NoTimestamp, Offset: -1, LeaderEpoch: -1}
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if err := p.checkLeaderLocked(currentLeaderEpoch); err != nil {
		return none, err
	}
	hw := p.lg().HighWatermark()
	if isolation == ReadCommitted {
		hw = p.lg().LastStableOffset()
	}
	switch {
	case timestamp == LatestTimestamp:
		return ListedOffset{Timestamp: storage.NoTimestamp, Offset: hw, LeaderEpoch: p.leaderEpoch}, nil
	case timestamp == EarliestTimestamp || timestamp == EarliestLocalTimestamp:
		start := p.lg().LogStartOffset()
		return ListedOffset{Timestamp: storage.NoTimestamp, Offset: start, LeaderEpoch: p.epochAt(start)}, nil
	case timestamp == MaxTimestamp:
		ts, off, ok := p.lg().MaxTimestamp()
		if !ok || off >= hw {
			return none, nil
		}
		return ListedOffset{Timestamp: ts, Offset: off, LeaderEpoch: p.epochAt(off)}, nil
	case timestamp == LatestTieredTimestamp:
		// No tiered storage: nothing is tiered.
		return none, nil
	case timestamp >= 0:
		found, ok, err := p.lg().FindByTimestamp(timestamp)
		if err != nil {
			return none, err
		}
		if !ok || found.Offset >= hw {
			return none, nil
		}
		return ListedOffset{Timestamp: found.Timestamp, Offset: found.Offset, LeaderEpoch: found.LeaderEpoch}, nil
	default:
		return none, fmt.Errorf("%w: timestamp %d", kerr.InvalidRequest, timestamp)
	}
}

// epochAt is the leader epoch of the batch holding offset, from the epoch
// cache (-1 if unknown).
func (p *Partition) epochAt(offset int64) int32 {
	e := int32(-1)
	for _, ent := range p.lg().LeaderEpochs().Entries() {
		if ent.StartOffset > offset {
			break
		}
		e = ent.Epoch
	}
	return e
}

// DeleteRecords moves the log start offset to offset on the leader (-1
// means the HW); offsets past the HW are OFFSET_OUT_OF_RANGE, a log whose
// cleanup.policy does not include delete POLICY_VIOLATION. Followers
// move theirs when their fetch answers carry the leader's; the returned
// Deletion completes once every replica has (WaitDeletions), as Kafka's
// delayed DeleteRecords does.
func (p *Partition) DeleteRecords(offset int64) (*Deletion, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if err := p.checkLeaderLocked(-1); err != nil {
		return nil, err
	}
	if !p.lg().Config().CleanupPolicy.Deletes() {
		// As Kafka: a compact-only log keeps every key's last record.
		return nil, fmt.Errorf("%w: records of %s cannot be deleted under cleanup.policy=%v", kerr.PolicyViolation, p, p.lg().Config().CleanupPolicy)
	}
	hw := p.lg().HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return nil, fmt.Errorf("%w: %s delete before %d, high watermark %d", kerr.OffsetOutOfRange, p, offset, hw)
	}
	if _, err := p.lg().DeleteRecords(offset); err != nil {
		return nil, err
	}
	// Followers parked in a delayed fetch answer now with the new start;
	// their next fetches report it back (and wake the deletion).
	p.dataWatch.wakeAll()
	return &Deletion{p: p, Required: offset, LowWatermark: p.lowWatermarkLocked()}, nil
}

// LowWatermark is the leader's low watermark: the smallest log start
// offset over its replicas on live brokers (NOT_LEADER_OR_FOLLOWER on a
// follower).
func (p *Partition) LowWatermark() (int64, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if err := p.checkLeaderLocked(-1); err != nil {
		return -1, err
	}
	return p.lowWatermarkLocked(), nil
}

// lowWatermarkLocked is called with roleMu held, as leader.
func (p *Partition) lowWatermarkLocked() int64 {
	start := p.lg().LogStartOffset()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.core == nil {
		return start
	}
	return p.core.lowWatermark(start, p.host.alive)
}

// makeLeader makes this broker the leader at reg's epoch, or (same epoch)
// takes the image's new ISR and replicas. A new leader epoch is assigned in
// the epoch cache at the LEO: records from here on belong to it.
func (p *Partition) makeLeader(reg metadata.PartitionRegistration, tc TopicConfig) error {
	now := p.host.now()
	p.roleMu.Lock()
	p.minISR = tc.MinInsyncReplicas
	p.mu.Lock()
	p.hwMinISR = hwMinISR(tc)
	p.mu.Unlock()
	if p.role == RoleLeader && p.leaderEpoch == reg.LeaderEpoch {
		p.partitionEpoch, p.replicas, p.isr = reg.PartitionEpoch, slices.Clone(reg.Replicas), slices.Clone(reg.ISR)
		p.mu.Lock()
		p.core.applyImage(reg.Replicas, reg.ISR, reg.PartitionEpoch, now)
		p.mu.Unlock()
		p.roleMu.Unlock()
		// A shrink can let the HW move (and waiting produces finish or
		// fail with NOT_ENOUGH_REPLICAS_AFTER_APPEND); a replica gone
		// from the assignment no longer holds the low watermark back.
		p.maybeAdvanceHW()
		p.hwWatch.wakeAll()
		p.lowWatch.wakeAll()
		return nil
	}
	leo := p.lg().LogEndOffset()
	if latest, ok := p.lg().LeaderEpochs().Latest(); !ok || reg.LeaderEpoch >= latest.Epoch {
		if err := p.lg().LeaderEpochs().Assign(reg.LeaderEpoch, leo); err != nil {
			p.roleMu.Unlock()
			return err
		}
	}
	p.role, p.leader, p.leaderEpoch, p.partitionEpoch = RoleLeader, reg.Leader, reg.LeaderEpoch, reg.PartitionEpoch
	p.replicas, p.isr = slices.Clone(reg.Replicas), slices.Clone(reg.ISR)
	p.mu.Lock()
	p.core = newLeaderCore(p.self, reg.Replicas, reg.ISR, reg.PartitionEpoch, leo, now)
	p.mu.Unlock()
	p.roleMu.Unlock()
	p.wakeAll()
	p.maybeAdvanceHW()
	return nil
}

// makeFollower makes this broker a follower of reg.Leader (or of nobody,
// NoLeader). It reports whether the leader or epoch changed, in which case
// the caller moves the partition to the new leader's fetcher, truncating
// first.
func (p *Partition) makeFollower(reg metadata.PartitionRegistration, tc TopicConfig) bool {
	minISR := tc.MinInsyncReplicas
	p.roleMu.Lock()
	changed := p.role != RoleFollower || p.leader != reg.Leader || p.leaderEpoch != reg.LeaderEpoch
	p.role, p.leader, p.leaderEpoch, p.partitionEpoch = RoleFollower, reg.Leader, reg.LeaderEpoch, reg.PartitionEpoch
	p.replicas, p.isr, p.minISR = slices.Clone(reg.Replicas), slices.Clone(reg.ISR), minISR
	p.mu.Lock()
	p.hwMinISR = hwMinISR(tc)
	p.core = nil
	p.mu.Unlock()
	p.roleMu.Unlock()
	if changed {
		p.wakeAll()
	}
	return changed
}

// stop ends service: the partition is being removed.
func (p *Partition) stop() {
	p.roleMu.Lock()
	p.role, p.leader = RoleNone, metadata.NoLeader
	p.mu.Lock()
	p.core = nil
	p.mu.Unlock()
	p.roleMu.Unlock()
	p.wakeAll()
}

// applyConfig takes a new effective topic config: the log's settings and
// min.insync.replicas (the latter even if the log refuses the former).
func (p *Partition) applyConfig(tc TopicConfig) error {
	err := p.lg().UpdateConfig(tc.Log)
	p.setMinISR(tc)
	return err
}

func hwMinISR(tc TopicConfig) int {
	if tc.ELR {
		return tc.MinInsyncReplicas
	}
	return 0
}

func (p *Partition) setMinISR(tc TopicConfig) {
	p.roleMu.Lock()
	p.minISR = tc.MinInsyncReplicas
	p.mu.Lock()
	p.hwMinISR = hwMinISR(tc)
	p.mu.Unlock()
	p.roleMu.Unlock()
	// A lower min.insync.replicas (or ELR off) may let the HW move.
	p.maybeAdvanceHW()
	p.hwWatch.wakeAll()
}

// hwLocked is the HW the leader may move to (p.mu held): the maximal ISR's
// smallest log end, except that with ELR (KIP-966) it does not move while
// the committed ISR is below min.insync.replicas, so every replica that
// leaves a short ISR, and stays eligible, holds everything acknowledged.
func (p *Partition) hwLocked() (int64, bool) {
	if len(p.core.isr) < p.hwMinISR {
		return 0, false
	}
	return p.core.highWatermark(p.lg().DurableEnd()), true
}

func (p *Partition) wakeAll() {
	p.hwWatch.wakeAll()
	p.dataWatch.wakeAll()
	p.lowWatch.wakeAll()
}

// followerEpochLocked checks that this broker still follows at epoch.
func (p *Partition) followerEpochLocked(epoch int32) error {
	if p.role != RoleFollower || p.leaderEpoch != epoch {
		return errStale
	}
	return nil
}

// appendFromLeader appends the leader's batches unchanged and takes the
// leader's HW (bounded by the local LEO) and log start offset. A trailing
// partial batch (a leader may cut a response at its byte limit) is dropped.
func (p *Partition) appendFromLeader(epoch int32, records []byte, leaderHW, leaderStart int64) (storage.AppendResult, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	var res storage.AppendResult
	if err := p.followerEpochLocked(epoch); err != nil {
		return res, err
	}
	records = wholeBatches(records)
	if len(records) > 0 {
		var err error
		if res, err = p.lg().AppendAsFollower(records); err != nil {
			return res, err
		}
	}
	if leaderHW >= 0 {
		p.lg().SetHighWatermark(min(leaderHW, p.lg().LogEndOffset()))
	}
	if leaderStart > p.lg().LogStartOffset() {
		if target := min(leaderStart, p.lg().HighWatermark()); target > p.lg().LogStartOffset() {
			if _, err := p.lg().DeleteRecords(target); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// wholeBatches returns the prefix of records made of complete batches.
func wholeBatches(records []byte) []byte {
	pos := 0
	for pos+storage.BatchHeaderSize <= len(records) {
		n, err := storage.BatchSize(records[pos:])
		if err != nil || pos+n > len(records) {
			break
		}
		pos += n
	}
	return records[:pos]
}

// truncateAsFollower cuts the log at offset while following at epoch.
func (p *Partition) truncateAsFollower(epoch int32, offset int64) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if err := p.followerEpochLocked(epoch); err != nil {
		return err
	}
	return p.lg().Truncate(offset)
}

// resetAsFollower empties the log to restart at the leader's log start.
func (p *Partition) resetAsFollower(epoch int32, start int64) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if err := p.followerEpochLocked(epoch); err != nil {
		return err
	}
	return p.lg().ResetTo(start)
}

// Ack is an acks=all produce waiting for the HW to pass its batch, or in
// durable mode an acks=1 produce waiting for the leader's fsync of it
// (local).
type Ack struct {
	p        *Partition
	epoch    int32
	required int64 // the offset after the batch
	local    bool
}

// check reports whether the ack is decided, and how.
func (a *Ack) check() (bool, error) {
	p := a.p
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if p.role != RoleLeader || p.leaderEpoch != a.epoch {
		return true, fmt.Errorf("%w: %s lost leadership while waiting for replication", kerr.NotLeaderForPartition, p)
	}
	if a.local {
		// acks=1 asks only for the leader's copy: done once it is on disk.
		return p.lg().DurableEnd() >= a.required, nil
	}
	if p.lg().HighWatermark() >= a.required {
		if len(p.isr) < p.minISR {
			return true, fmt.Errorf("%w: %s has %d in-sync replicas, min.insync.replicas is %d", kerr.NotEnoughReplicasAfterAppend, p, len(p.isr), p.minISR)
		}
		return true, nil
	}
	return false, nil
}
