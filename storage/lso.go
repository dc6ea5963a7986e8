package storage

import (
	"fmt"
	"math"
	"slices"
)

// Transactions in a partition log (KIP-98): a transactional producer's
// batches are open until its coordinator has the partition leader append a
// COMMIT or ABORT marker (AppendMarker; followers copy it byte for byte).
// The log keeps, under Log.mu:
//
//   - each producer's open transaction (its first offset), in the producer
//     table and its snapshots;
//   - the transactions that ended but whose marker the high watermark has
//     not yet passed (unreplicated): until it does, a new leader without
//     the marker would see the transaction open again, so the transaction
//     still holds the last stable offset back (as Kafka's
//     ProducerStateManager does);
//   - the aborted-transaction index of each segment (txn_index.go): one
//     entry per ABORT marker that ended an open transaction, written as the
//     marker is appended (leader, follower or replay).
//
// firstUnstable (published atomically) is the first offset of the oldest
// open or unreplicated transaction; the last stable offset is
// min(firstUnstable, HW), never below the log start offset. A
// read_committed consumer reads up to it (ReadCommitted) and drops the
// records of the aborted transactions the index lists.

// CompletedTxn is a transaction a marker ended in this partition: its
// producer, first offset, and the marker's offset.
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	Aborted     bool
}

// noUnstable is firstUnstable when no transaction holds the LSO back.
const noUnstable = math.MaxInt64

// LastStableOffset is the offset below which every transactional record
// is decided (committed or aborted) and replicated: min(first offset of
// the oldest open or unreplicated transaction, HW), at least the log start
// offset. Without transactions it is the high watermark.
func (l *Log) LastStableOffset() int64 {
	// HW first: a reader that sees a HW past a transaction's first batch
	// then sees that batch's firstUnstable (stored before the HW moved).
	hw := l.hw.Load()
	return max(min(hw, l.firstUnstable.Load()), l.logStart.Load())
}

// applyBatchLocked records a batch written to segment s in the .txnindex,
// the producer table and the transaction state. A control batch must be
// whole; any other may be its header alone. An error (writing the
// .txnindex entry) comes before any state changed. Called with mu held.
func (l *Log) applyBatchLocked(b Batch, s *segment) error {
	if a, ok := l.abortEntryLocked(b); ok {
		if err := s.txnIdx.append(a); err != nil {
			return err
		}
	}
	ended, ok := l.producers.apply(b)
	if !b.Control() {
		if b.Transactional() && l.firstUnstable.Load() == noUnstable {
			if e := l.producers[b.ProducerID()]; e != nil && e.txnFirstOffset == b.BaseOffset() {
				l.firstUnstable.Store(b.BaseOffset())
			}
		}
		return nil
	}
	if !ok {
		return nil
	}
	if ended.LastOffset >= l.hw.Load() {
		l.unreplicated = append(l.unreplicated, ended)
	}
	l.refreshFirstUnstableLocked()
	return nil
}

// abortEntryLocked is the .txnindex entry of b if it is an ABORT marker
// that ends an open transaction, computed from the producer table before
// b is applied: the entry's last stable offset is the first offset of the
// oldest transaction of another producer still open, else the marker's
// offset + 1.
func (l *Log) abortEntryLocked(b Batch) (AbortedTxn, bool) {
	if !b.Control() {
		return AbortedTxn{}, false
	}
	m, ok, _ := b.TxnMarker()
	e := l.producers[m.ProducerID]
	if !ok || m.Type != ControlAbort || e == nil || e.txnFirstOffset < 0 {
		return AbortedTxn{}, false
	}
	lso := b.LastOffset() + 1
	for id, o := range l.producers {
		if id != m.ProducerID && o.txnFirstOffset >= 0 {
			lso = min(lso, o.txnFirstOffset)
		}
	}
	return AbortedTxn{ProducerID: m.ProducerID, FirstOffset: e.txnFirstOffset, LastOffset: b.LastOffset(), LastStableOffset: lso}, true
}

// firstOpen is the first offset of the oldest open transaction.
func (ps producerStates) firstOpen() (int64, bool) {
	first := int64(noUnstable)
	for _, e := range ps {
		if e.txnFirstOffset >= 0 {
			first = min(first, e.txnFirstOffset)
		}
	}
	return first, first != noUnstable
}

// refreshFirstUnstableLocked drops the ended transactions whose markers
// the HW has passed and recomputes firstUnstable. Called with mu held.
func (l *Log) refreshFirstUnstableLocked() {
	hw := l.hw.Load()
	l.unreplicated = slices.DeleteFunc(l.unreplicated, func(c CompletedTxn) bool { return c.LastOffset < hw })
	first, _ := l.producers.firstOpen()
	for _, c := range l.unreplicated {
		first = min(first, c.FirstOffset)
	}
	l.firstUnstable.Store(first)
}

// onHWLocked is called after the HW moved (mu held): ended transactions
// may now be replicated. unreplicated is in marker order, so only its
// first entry need be looked at on this path, which every follower fetch
// takes.
func (l *Log) onHWLocked() {
	if len(l.unreplicated) > 0 && l.unreplicated[0].LastOffset < l.hw.Load() {
		l.refreshFirstUnstableLocked()
	}
}

// resetTxnsLocked forgets every transaction (the producer table is
// cleared by the caller).
func (l *Log) resetTxnsLocked() {
	l.unreplicated = nil
	l.firstUnstable.Store(noUnstable)
}

// truncateTxnIndexesLocked removes the index entries of markers at or
// after offset, which a replay from offset writes again.
func (l *Log) truncateTxnIndexesLocked(offset int64) error {
	l.segMu.Lock()
	defer l.segMu.Unlock()
	for i := l.segmentFor(offset); i < len(l.segments); i++ {
		if err := l.segments[i].txnIdx.truncateFrom(offset); err != nil {
			return err
		}
	}
	return nil
}

// AppendMarker appends a transaction marker as the partition leader (the
// WriteTxnMarkers path; clients can never send a control batch, see
// Batch.Validate). The marker ends the producer's open transaction here,
// if it has one (a marker for a transaction that wrote nothing to this
// partition is written all the same, as in Kafka). Refused, with nothing
// written: a producer epoch older than the partition's
// (ErrInvalidProducerEpoch), a coordinator epoch older than the one of the
// producer's last marker (ErrTransactionCoordinatorFenced), a malformed
// marker (ErrInvalidRecord). The batch is stamped with the broker's time,
// and its offset and leader epoch as Append does.
func (l *Log) AppendMarker(m TxnMarker, opts AppendOptions) (AppendResult, error) {
	cfg := l.cfg.Load()
	res := AppendResult{LogAppendTime: NoTimestamp}
	switch {
	case m.ProducerID < 0 || m.ProducerEpoch < 0:
		return res, fmt.Errorf("%w: marker for producer %d epoch %d", ErrInvalidRecord, m.ProducerID, m.ProducerEpoch)
	case m.Type != ControlAbort && m.Type != ControlCommit:
		return res, fmt.Errorf("%w: marker type %v", ErrInvalidRecord, m.Type)
	case m.CoordinatorEpoch < 0:
		return res, fmt.Errorf("%w: marker with coordinator epoch %d", ErrInvalidRecord, m.CoordinatorEpoch)
	case opts.LeaderEpoch < 0:
		return res, fmt.Errorf("%w: leader epoch %d", ErrInvalidRecord, opts.LeaderEpoch)
	}
	now := l.now().UnixMilli()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return res, ErrClosed
	}
	if e := l.producers[m.ProducerID]; e != nil {
		if m.ProducerEpoch < e.epoch {
			l.mu.Unlock()
			return res, fmt.Errorf("%w: marker for producer %d epoch %d, the partition has epoch %d", ErrInvalidProducerEpoch, m.ProducerID, m.ProducerEpoch, e.epoch)
		}
		if m.CoordinatorEpoch < e.coordinatorEpoch {
			l.mu.Unlock()
			return res, fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, the partition has seen %d", ErrTransactionCoordinatorFenced, m.ProducerID, m.CoordinatorEpoch, e.coordinatorEpoch)
		}
	}
	b := BuildMarkerBatch(m, now)
	base := l.nextOffset
	b.SetBaseOffset(base)
	b.SetPartitionLeaderEpoch(opts.LeaderEpoch)
	if cfg.MessageTimestampType == LogAppendTime {
		b.SetLogAppendTime(now)
		res.LogAppendTime = now
	}
	err := l.appendLocked(b, BatchInfo{MaxTimestamp: now, MinTimestamp: now}, cfg)
	if err == nil {
		if l.txnMarkers == nil {
			l.txnMarkers = map[int64]uint64{}
		}
		l.txnMarkers[m.ProducerID]++
	}
	res.BaseOffset, res.LastOffset = base, base
	res.LogStartOffset = l.logStart.Load()
	res.RecordCount, res.Bytes = 1, int64(len(b))
	l.mu.Unlock()
	if err != nil {
		return res, err
	}
	return res, l.maybeFlush(cfg)
}

// CommittedRead is what a read_committed consumer's fetch gets from one
// partition.
type CommittedRead struct {
	// Region holds whole batches below LastStableOffset.
	Region           Region
	LastStableOffset int64
	// Aborted lists the aborted transactions that may have records in
	// Region (Fetch's AbortedTransactions): the consumer drops a
	// producer's records from FirstOffset up to its ABORT marker. Empty,
	// not nil, when there are none.
	Aborted []AbortedTxn
}

// ReadCommitted is Read for a read_committed consumer: batches up to the
// last stable offset, with the aborted transactions that overlap them. As
// in Kafka the list is bounded by the segment the region comes from (its
// end or the LSO, whichever is lower), so it may name transactions beyond
// the region, which consumers ignore.
func (l *Log) ReadCommitted(offset int64, maxBytes int) (CommittedRead, error) {
	res := CommittedRead{LastStableOffset: l.LastStableOffset(), Aborted: []AbortedTxn{}}
	var err error
	if res.Region, err = l.ReadUpTo(offset, maxBytes, res.LastStableOffset); err != nil || res.Region.Len == 0 {
		return res, err
	}
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	upTo := res.LastStableOffset
	for i := l.segmentFor(offset); i+1 < len(l.segments); i++ {
		if l.segments[i].f == res.Region.File {
			upTo = min(upTo, l.segments[i+1].baseOffset)
			break
		}
	}
	res.Aborted, err = l.abortedLocked(offset, upTo, res.Aborted)
	return res, err
}

// AbortedTransactions returns the aborted transactions that may have
// records in [from, upTo): those whose ABORT marker is at or after from
// and whose first offset is below upTo, oldest marker first. It reads the
// .txnindex files from the segment holding from on, stopping as soon as an
// entry shows every transaction begun below upTo has ended.
func (l *Log) AbortedTransactions(from, upTo int64) ([]AbortedTxn, error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.abortedLocked(from, upTo, nil)
}

func (l *Log) abortedLocked(from, upTo int64, out []AbortedTxn) ([]AbortedTxn, error) {
	if from >= upTo || len(l.segments) == 0 {
		return out, nil
	}
	for i := l.segmentFor(from); i < len(l.segments); i++ {
		var complete bool
		var err error
		if out, complete, err = l.segments[i].txnIdx.collect(from, upTo, out); err != nil || complete {
			return out, err
		}
	}
	return out, nil
}
