package share

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors the machine returns; they are Kafka's, so handlers put their codes
// on the wire as they are.
var (
	// ErrInvalidRecordState: an acknowledgement names an offset that is not
	// acquired by this member (never acquired, acquired by another, already
	// acknowledged, or its lock expired).
	ErrInvalidRecordState = kerr.InvalidRecordState
	// ErrInvalidRequest: the acknowledgement batches are malformed (a range
	// backwards or overlapping the previous one, a types array of the wrong
	// length, an unknown type).
	ErrInvalidRequest = kerr.InvalidRequest
)

// entry is one in-flight offset.
type entry struct {
	state  State
	count  int16     // deliveries so far
	member string    // holder while Acquired
	expiry time.Time // lock deadline while Acquired
}

// Partition is one share-partition: the delivery state of one group's
// records of one partition, from the start offset (SPSO) to the end of the
// in-flight window. Offsets below the start offset are finished; offsets at
// or after the window's end have never been fetched.
type Partition struct {
	cfg        Config
	start      int64   // SPSO
	window     []entry // window[i] is offset start+i
	stateEpoch int32
	version    uint64 // bumped on every change of Durable()
}

// New is a share-partition that has no stored state, starting at start
// (what share.auto.offset.reset resolved to).
func New(cfg Config, start int64) *Partition {
	return &Partition{cfg: cfg, start: start}
}

// Restore rebuilds a share-partition from its durable state, as a new
// leader does. Acquired records were persisted as Available with their
// delivery count, so they are delivered again, counted; those whose count
// reached the delivery limit are archived.
func Restore(cfg Config, d Durable) *Partition {
	p := &Partition{cfg: cfg, start: d.StartOffset, stateEpoch: d.StateEpoch}
	for _, r := range d.Ranges {
		if r.Last < p.start || r.First > r.Last {
			continue
		}
		first := max(r.First, p.start)
		p.grow(r.Last + 1)
		st := r.State
		if st == Acquired {
			st = Available
		}
		// The failover ended the deliveries in flight, as a lock expiry
		// would: one at the limit is archived, not delivered again.
		if st == Available && r.DeliveryCount >= cfg.DeliveryLimit {
			st = Archived
		}
		for o := first; o <= r.Last; o++ {
			p.window[o-p.start] = entry{state: st, count: r.DeliveryCount}
		}
	}
	p.advance()
	return p
}

// SetConfig changes the configuration (a dynamic or per-group change). A
// lowered delivery limit takes effect when a delivery ends, as KIP-1240
// says: a record already acquired gets its final attempt.
func (p *Partition) SetConfig(cfg Config) { p.cfg = cfg }

// StartOffset is the SPSO.
func (p *Partition) StartOffset() int64 { return p.start }

// EndOffset is the SPEO: the last offset of the in-flight window, or
// StartOffset-1 when nothing is in flight.
func (p *Partition) EndOffset() int64 { return p.end() - 1 }

func (p *Partition) end() int64 { return p.start + int64(len(p.window)) }

// StateEpoch is the epoch of the durable state this machine continues.
func (p *Partition) StateEpoch() int32 { return p.stateEpoch }

// Version changes whenever Durable() would; the state writer persists when
// it differs from the version it last wrote.
func (p *Partition) Version() uint64 { return p.version }

// InFlight is the number of offsets in the window.
func (p *Partition) InFlight() int { return len(p.window) }

// Record reports one offset's state, delivery count and holder. Offsets
// below the start offset are finished (Archived or Acknowledged: which is
// not kept); offsets past the window are Available, never delivered.
func (p *Partition) Record(offset int64) (State, int16, string) {
	switch {
	case offset < p.start:
		return Archived, 0, ""
	case offset >= p.end():
		return Available, 0, ""
	}
	e := p.window[offset-p.start]
	return e.state, e.count, e.member
}

// NextFetchOffset is where the leader should read the log from: the first
// available offset in the window, or the window's end.
func (p *Partition) NextFetchOffset() int64 {
	for i, e := range p.window {
		if e.state == Available {
			return p.start + int64(i)
		}
	}
	return p.end()
}

// CanAcquire says whether an Acquire could hand out anything without new
// log data being beyond reach: some offset in the window is available or
// the window has room.
func (p *Partition) CanAcquire() bool {
	return p.NextFetchOffset() < p.end() || len(p.window) < p.cfg.MaxRecordLocks
}

// NextDeadline is the earliest lock expiry, for the owner's timer; ok is
// false when nothing is acquired.
func (p *Partition) NextDeadline() (deadline time.Time, ok bool) {
	for _, e := range p.window {
		if e.state == Acquired && (!ok || e.expiry.Before(deadline)) {
			deadline, ok = e.expiry, true
		}
	}
	return deadline, ok
}

// grow extends the window to end (exclusive) with never-delivered entries.
func (p *Partition) grow(end int64) {
	for p.end() < end {
		p.window = append(p.window, entry{})
	}
}

// release ends a delivery that was not acknowledged: the record is
// available again, or archived once it was delivered DeliveryLimit times.
func (p *Partition) release(e *entry) {
	e.member, e.expiry = "", time.Time{}
	if e.count >= p.cfg.DeliveryLimit {
		e.state = Archived
	} else {
		e.state = Available
	}
}

// advance moves the start offset over finished records.
func (p *Partition) advance() {
	n := 0
	for n < len(p.window) && p.window[n].state.finished() {
		n++
	}
	if n == 0 {
		return
	}
	p.start += int64(n)
	p.window = append(p.window[:0:0], p.window[n:]...)
}

func (p *Partition) changed() { p.version++ }

// Expire returns to the pool every record whose lock has run out at now
// (archiving those at the delivery limit). It reports whether anything
// changed. Every other method expires first, so calling it is needed only
// to act on a deadline (to let a waiting fetch see the records).
func (p *Partition) Expire(now time.Time) bool {
	any := false
	for i := range p.window {
		e := &p.window[i]
		if e.state == Acquired && !now.Before(e.expiry) {
			p.release(e)
			any = true
		}
	}
	if any {
		p.advance()
		p.changed()
	}
	return any
}

// ReleaseMember returns every record a member holds, as when its share
// session closes or it leaves the group. The deliveries count.
func (p *Partition) ReleaseMember(now time.Time, member string) bool {
	p.Expire(now)
	any := false
	for i := range p.window {
		e := &p.window[i]
		if e.state == Acquired && e.member == member {
			p.release(e)
			any = true
		}
	}
	if any {
		p.advance()
		p.changed()
	}
	return any
}

// AcquireRequest is one fetch's worth of acquisition.
type AcquireRequest struct {
	Member string
	// MaxRecords bounds the records acquired (ShareFetch v1+ MaxRecords);
	// BatchOptimized may overshoot it to a batch boundary.
	MaxRecords int
	Mode       AcquireMode
	// Batches are the log batches read from NextFetchOffset, ascending,
	// all below the isolation bound (the high watermark, or the last
	// stable offset for read_committed). Offsets between them that no batch
	// covers (control batches, removed by compaction) are archived without
	// being delivered.
	Batches []Batch
}

// Acquire gives the member records of req.Batches that are available,
// under a lock until now+LockDuration, and returns them as runs of one
// delivery count. New offsets join the window only while it is shorter
// than MaxRecordLocks.
func (p *Partition) Acquire(now time.Time, req AcquireRequest) []AcquiredRange {
	p.Expire(now)
	budget := req.MaxRecords
	if budget <= 0 {
		return nil
	}
	expiry := now.Add(p.cfg.LockDuration)
	var out []AcquiredRange
	take := func(o int64) {
		e := &p.window[o-p.start]
		e.state, e.member, e.expiry = Acquired, req.Member, expiry
		if e.count < 1<<15-1 {
			e.count++
		}
		if n := len(out); n > 0 && out[n-1].Last == o-1 && out[n-1].DeliveryCount == e.count {
			out[n-1].Last = o
		} else {
			out = append(out, AcquiredRange{First: o, Last: o, DeliveryCount: e.count})
		}
		budget--
	}
	before, startBefore := len(p.window), p.start
	prevLast := int64(-1)
	for _, b := range req.Batches {
		if b.Last < b.First || b.First <= prevLast {
			break // not ascending: read nothing past the confusion
		}
		prevLast = b.Last
		if b.Last < p.start {
			continue
		}
		if budget <= 0 {
			break
		}
		first := max(b.First, p.start)
		// Offsets between the window's end and this batch are not in the
		// log: they are finished without a delivery.
		if first > p.end() && len(p.window) == 0 {
			p.start = first // nothing in flight to keep: skip the hole
		}
		if first > p.end() {
			if first-p.start > int64(p.cfg.MaxRecordLocks) {
				break
			}
			for p.end() < first {
				p.window = append(p.window, entry{state: Archived})
			}
		}
		wholeBatch := req.Mode == BatchOptimized && first >= p.end()
		for o := first; o <= b.Last; o++ {
			if o >= p.end() {
				if len(p.window) >= p.cfg.MaxRecordLocks && !(wholeBatch && o > first) {
					break
				}
				p.window = append(p.window, entry{})
			}
			if p.window[o-p.start].state != Available {
				continue
			}
			if budget <= 0 && !(wholeBatch && o > first) {
				break
			}
			take(o)
		}
	}
	if len(out) > 0 || len(p.window) != before || p.start != startBefore {
		p.advance()
		p.changed()
	}
	return out
}

// Acknowledge applies one member's acknowledgements of this partition.
// They are all or nothing: a malformed batch is ErrInvalidRequest, and an
// offset that is not acquired by member (or whose lock expired by now) is
// ErrInvalidRecordState; either way nothing changes. Gap and reject
// archive, accept acknowledges, release makes available (or archives at the
// delivery limit), renew restarts the lock.
func (p *Partition) Acknowledge(now time.Time, member string, batches []AckBatch) error {
	p.Expire(now)
	prevLast := int64(-1 << 63)
	for _, b := range batches {
		if b.First > b.Last || b.First <= prevLast || b.First < 0 {
			return ErrInvalidRequest
		}
		prevLast = b.Last
		if n := len(b.Types); n != 1 && int64(n) != b.Last-b.First+1 {
			return ErrInvalidRequest
		}
		for _, t := range b.Types {
			if !t.valid() {
				return ErrInvalidRequest
			}
		}
	}
	for _, b := range batches {
		if b.First < p.start || b.Last >= p.end() {
			return ErrInvalidRecordState
		}
		for o := b.First; o <= b.Last; o++ {
			e := p.window[o-p.start]
			if e.state != Acquired || e.member != member {
				return ErrInvalidRecordState
			}
		}
	}
	if len(batches) == 0 {
		return nil
	}
	renew := now.Add(p.cfg.LockDuration)
	for _, b := range batches {
		for o := b.First; o <= b.Last; o++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[o-b.First]
			}
			e := &p.window[o-p.start]
			switch t {
			case AckAccept:
				e.state, e.member, e.expiry = Acknowledged, "", time.Time{}
			case AckGap, AckReject:
				e.state, e.member, e.expiry = Archived, "", time.Time{}
			case AckRelease:
				p.release(e)
			case AckRenew:
				e.expiry = renew
			}
		}
	}
	p.advance()
	p.changed()
	return nil
}

// MoveStart moves the start offset forward to offset, finishing every
// record below it: the log start offset passed them (retention,
// DeleteRecords), so they cannot be delivered. Moving backwards is ignored.
func (p *Partition) MoveStart(offset int64) bool {
	if offset <= p.start {
		return false
	}
	if offset >= p.end() {
		p.window = nil
	} else {
		p.window = append(p.window[:0:0], p.window[offset-p.start:]...)
	}
	p.start = offset
	p.advance()
	p.changed()
	return true
}

// Durable is the state to persist. Acquired records are written as
// Available with their count: a new leader delivers them again, counted.
// Runs of equal state and count are merged, and never-delivered available
// offsets are left out, so a window of 2,000 records usually takes a few
// ranges.
func (p *Partition) Durable() Durable {
	d := Durable{StartOffset: p.start, StateEpoch: p.stateEpoch}
	for i, e := range p.window {
		st := e.state
		if st == Acquired {
			st = Available
		}
		if st == Available && e.count == 0 {
			continue
		}
		o := p.start + int64(i)
		if n := len(d.Ranges); n > 0 && d.Ranges[n-1].Last == o-1 && d.Ranges[n-1].State == st && d.Ranges[n-1].DeliveryCount == e.count {
			d.Ranges[n-1].Last = o
			continue
		}
		d.Ranges = append(d.Ranges, StateRange{First: o, Last: o, State: st, DeliveryCount: e.count})
	}
	return d
}

// ErrBadDurable is returned by Check for a durable state that a leader
// must not load.
var ErrBadDurable = errors.New("share: durable state ranges not ascending and disjoint at or after the start offset, or a state unknown")

// Check validates a durable state read back (from a record).
func (d Durable) Check() error {
	prev := d.StartOffset - 1
	for _, r := range d.Ranges {
		if r.First <= prev || r.Last < r.First || r.DeliveryCount < 0 {
			return ErrBadDurable
		}
		switch r.State {
		case Available, Acknowledged, Archived:
		default:
			return ErrBadDurable
		}
		prev = r.Last
	}
	return nil
}
