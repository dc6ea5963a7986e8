package broker

// The share-partition side of share groups (KIP-932) on a partition
// leader: one broker/share.Partition per (share group, partition) this
// node leads, loaded from the metadata image (record 50) when first used
// under a leader epoch, and written back through the controller by one
// coalescing writer (share_writer.go). Share sessions are in
// share_sessions.go; the handlers in api_share_fetch.go and
// api_share_acknowledge.go.
//
// Locks: shareManager.mu guards the map of share-partitions; each
// sharePart has its own mutex, held while its machine runs and while the
// log is read for it (a file read, no network). Neither is held while a
// write is waited for.

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/broker/share"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

// SharePartitionWriter commits share-partition states (record 50) and
// reports which were fenced (indexes into states). It returns once the
// committed entry is in this node's image. *raftfsm.ControllerClient
// satisfies it.
type SharePartitionWriter interface {
	WriteSharePartitions(ctx context.Context, states []*metadata.SharePartitionState) (fenced []int, err error)
}

// shareDefaults are the broker's share-partition settings
// (group.share.*), which per-group configs override.
type shareDefaults struct {
	lock, minLock, maxLock time.Duration
	deliveryLimit          int16
	maxRecordLocks         int
	maxSessions            int
}

type sharePart struct {
	mu          sync.Mutex
	key         metadata.SharePartitionKey
	topic       string
	leaderEpoch int32
	stateEpoch  int32 // of the state it was loaded from
	p           *share.Partition
	submitted   uint64 // p.Version() last handed to the writer
}

type shareManager struct {
	srv      *Server
	defaults shareDefaults
	now      func() time.Time
	writer   *shareWriter

	mu    sync.Mutex
	parts map[metadata.SharePartitionKey]*sharePart

	sessions *shareSessions
}

func newShareManager(srv *Server) *shareManager {
	d := shareDefaults{lock: 30 * time.Second, minLock: 15 * time.Second, maxLock: 60 * time.Second, deliveryLimit: 5, maxRecordLocks: 2000, maxSessions: 2000}
	if c := srv.config; c != nil {
		d = shareDefaults{
			lock: c.ShareRecordLockDuration, minLock: c.ShareMinRecordLockDuration, maxLock: c.ShareMaxRecordLockDuration,
			deliveryLimit: int16(c.ShareDeliveryCountLimit), maxRecordLocks: int(c.SharePartitionMaxRecordLocks), maxSessions: int(c.ShareMaxShareSessions),
		}
	}
	m := &shareManager{srv: srv, defaults: d, now: time.Now, parts: map[metadata.SharePartitionKey]*sharePart{}}
	m.sessions = newShareSessions(d.maxSessions)
	m.writer = newShareWriter(srv.ctx, srv.deps.ShareState, srv.log)
	m.writer.evict = func(k metadata.SharePartitionKey) {
		m.mu.Lock()
		delete(m.parts, k)
		m.mu.Unlock()
	}
	return m
}

// groupSettings is a group's effective share-partition config, its
// share.auto.offset.reset and whether it reads committed records only.
type groupSettings struct {
	cfg           share.Config
	reset         share.Reset
	readCommitted bool
}

func (m *shareManager) settings(img *metadata.Image, group string) groupSettings {
	d := m.defaults
	gs := groupSettings{cfg: share.Config{LockDuration: d.lock, DeliveryLimit: d.deliveryLimit, MaxRecordLocks: d.maxRecordLocks}}
	dyn := img.GroupConfigs(group)
	if v, ok := dyn["share.record.lock.duration.ms"]; ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			gs.cfg.LockDuration = min(max(time.Duration(ms)*time.Millisecond, d.minLock), d.maxLock)
		}
	}
	if v, ok := dyn["share.delivery.count.limit"]; ok {
		if n, err := strconv.ParseInt(v, 10, 16); err == nil && n > 0 {
			gs.cfg.DeliveryLimit = int16(n)
		}
	}
	if v, ok := dyn["share.auto.offset.reset"]; ok {
		if r, err := share.ParseReset(v); err == nil {
			gs.reset = r
		}
	}
	gs.readCommitted = dyn["share.isolation.level"] == "read_committed"
	return gs
}

// shareLog is what resolving share.auto.offset.reset reads of a partition.
type shareLog struct{ p *replica.Partition }

func (l shareLog) LogStartOffset() int64 { return l.p.Log().LogStartOffset() }
func (l shareLog) HighWatermark() int64  { return l.p.Log().HighWatermark() }
func (l shareLog) OffsetForTimestamp(ms int64) int64 {
	lo, err := l.p.ListOffsets(-1, ms, 0)
	if err != nil || lo.Offset < 0 {
		return l.p.Log().HighWatermark()
	}
	return lo.Offset
}

// errNotLeaderHere is a partition this node does not lead.
func errNotLeaderHere(p *replica.Partition) error {
	return fmt.Errorf("%w: %s is not led here", kerr.NotLeaderForPartition, p)
}

// part returns the share-partition of group on rp, loaded from img when
// it is new here, the leader epoch changed since it was loaded (a new
// leader continues from what its predecessors made durable, never from an
// older leadership of its own), or an admin rewrote it (a higher state
// epoch in the image).
func (m *shareManager) part(img *metadata.Image, group string, rp *replica.Partition, gs groupSettings) (*sharePart, error) {
	leader, epoch := rp.Leader()
	if leader != m.srv.nodeID {
		return nil, errNotLeaderHere(rp)
	}
	key := metadata.SharePartitionKey{Group: group, TopicID: rp.TopicID(), Partition: rp.Index()}
	m.mu.Lock()
	defer m.mu.Unlock()
	st, stored := img.SharePartition(key)
	if sp, ok := m.parts[key]; ok && sp.leaderEpoch == epoch && (!stored || st.StateEpoch <= sp.stateEpoch) {
		return sp, nil
	}
	sp := &sharePart{key: key, topic: rp.Topic(), leaderEpoch: epoch, stateEpoch: st.StateEpoch}
	if stored && st.StartOffset >= 0 {
		d := share.Durable{StartOffset: st.StartOffset, StateEpoch: st.StateEpoch}
		for _, r := range st.Ranges {
			d.Ranges = append(d.Ranges, share.StateRange{First: r.First, Last: r.Last, State: share.State(r.State), DeliveryCount: r.DeliveryCount})
		}
		if d.Check() != nil {
			return nil, fmt.Errorf("%w: share-partition state of %s on %s does not check", kerr.UnknownServerError, group, rp)
		}
		sp.p = share.Restore(gs.cfg, d)
		sp.p.MoveStart(rp.Log().LogStartOffset())
	} else {
		// (Under the stored state epoch: a deleted state, StartOffset -1,
		// is started again by share.auto.offset.reset.)
		sp.p = share.Restore(gs.cfg, share.Durable{StartOffset: gs.reset.StartOffset(shareLog{rp}, m.now()), StateEpoch: st.StateEpoch})
		// A new share-partition is durable at once, so every node agrees
		// on where the group started (a latest reset otherwise moves
		// with the log until the first write).
		sp.submitted = ^uint64(0)
	}
	m.parts[key] = sp
	return sp, nil
}

// durable is sp's state as record 50. Called with sp.mu held.
func (sp *sharePart) durable() *metadata.SharePartitionState {
	d := sp.p.Durable()
	rec := &metadata.SharePartitionState{Group: sp.key.Group, TopicID: sp.key.TopicID, Partition: sp.key.Partition,
		LeaderEpoch: sp.leaderEpoch, StateEpoch: d.StateEpoch, StartOffset: d.StartOffset}
	if len(d.Ranges) > 0 {
		rec.Ranges = make([]metadata.SharePartitionRange, len(d.Ranges))
		for i, r := range d.Ranges {
			rec.Ranges[i] = metadata.SharePartitionRange{First: r.First, Last: r.Last, State: int8(r.State), DeliveryCount: r.DeliveryCount}
		}
	}
	return rec
}

// submitLocked hands sp's state to the writer when it changed since the
// last hand-over; the channel (nil when nothing changed) reports the
// write. Called with sp.mu held, so states of one share-partition reach
// the writer in order.
func (m *shareManager) submitLocked(sp *sharePart) <-chan error {
	if sp.p.Version() == sp.submitted {
		return nil
	}
	sp.submitted = sp.p.Version()
	return m.writer.submit(sp.durable())
}

// ackResult is one partition's acknowledgement outcome.
type ackResult struct {
	err  error
	done <-chan error // the write that makes it durable; nil if none
}

// wait returns the acknowledgement's final error once its write is done.
func (a ackResult) wait(ctx context.Context) error {
	if a.err != nil || a.done == nil {
		return a.err
	}
	select {
	case err := <-a.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: the share-partition write did not finish: %v", kerr.RequestTimedOut, ctx.Err())
	}
}

// acknowledge applies one member's acknowledgements of one partition
// (all or nothing, INVALID_RECORD_STATE for records the member does not
// hold) and starts the write that makes them durable.
func (m *shareManager) acknowledge(img *metadata.Image, group, member string, rp *replica.Partition, batches []share.AckBatch) ackResult {
	gs := m.settings(img, group)
	sp, err := m.part(img, group, rp, gs)
	if err != nil {
		return ackResult{err: err}
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.p.SetConfig(gs.cfg)
	if err := sp.p.Acknowledge(m.now(), member, batches); err != nil {
		return ackResult{err: err}
	}
	return ackResult{done: m.submitLocked(sp)}
}

// release returns what member holds in rp's share-partition (its share
// session closed), if that share-partition is loaded here.
func (m *shareManager) release(group, member string, topicID [16]byte, partition int32) {
	m.mu.Lock()
	sp := m.parts[metadata.SharePartitionKey{Group: group, TopicID: topicID, Partition: partition}]
	m.mu.Unlock()
	if sp == nil {
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.p.ReleaseMember(m.now(), member) {
		m.submitLocked(sp)
	}
}

// acquired is one partition's share of a ShareFetch answer.
type acquired struct {
	records []byte
	ranges  []share.AcquiredRange
	n       int // records acquired
	// done reports the write that makes the acquisition durable (the
	// raised delivery counts): the answer waits for it, so a leader that
	// crashes after answering has them on disk and a record cannot be
	// delivered more than share.delivery.count.limit times.
	done <-chan error
}

// shareReadMax bounds one share-partition read (the first batch is whole
// even when larger).
const shareReadMax = 1 << 20

// acquire reads rp's log from the share-partition's next fetch offset and
// acquires up to maxRecords of what it read for member.
func (m *shareManager) acquire(img *metadata.Image, group, member string, rp *replica.Partition, maxRecords, maxBytes int, mode share.AcquireMode) (acquired, error) {
	gs := m.settings(img, group)
	sp, err := m.part(img, group, rp, gs)
	if err != nil {
		return acquired{}, err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.p.SetConfig(gs.cfg)
	now := m.now()
	if sp.p.Expire(now) {
		m.submitLocked(sp)
	}
	if ls := rp.Log().LogStartOffset(); ls > sp.p.StartOffset() {
		sp.p.MoveStart(ls)
	}
	if !sp.p.CanAcquire() {
		m.submitLocked(sp)
		return acquired{}, nil
	}
	iso := replica.ReadUncommitted
	if gs.readCommitted {
		iso = replica.ReadCommitted
	}
	// Read no more than the acquisition can use: at most maxRecords
	// records (MaxRecords is 500 by default) and at most the window, so a
	// fetch does not copy megabytes to hand out a few hundred records.
	res := rp.Read(replica.ReadRequest{Offset: sp.p.NextFetchOffset(), MaxBytes: min(maxBytes, shareReadMax), Isolation: iso, ReplicaID: -1, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1})
	if res.Err != nil {
		m.submitLocked(sp)
		return acquired{}, res.Err
	}
	if res.Region.Len == 0 {
		m.submitLocked(sp)
		return acquired{}, nil
	}
	buf, err := res.Region.Bytes()
	if err != nil {
		return acquired{}, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	spans := batchSpans(buf, res.AbortedTransactions)
	batches := make([]share.Batch, 0, len(spans))
	for _, s := range spans {
		if s.deliver {
			batches = append(batches, share.Batch{First: s.first, Last: s.last})
		}
	}
	ranges := sp.p.Acquire(now, share.AcquireRequest{Member: member, MaxRecords: maxRecords, Mode: mode, Batches: batches})
	done := m.submitLocked(sp)
	if len(ranges) == 0 {
		return acquired{}, nil
	}
	out := acquired{ranges: ranges, done: done}
	for _, r := range ranges {
		out.n += int(r.Last - r.First + 1)
	}
	// Send the log's batches from the one holding the first acquired
	// offset to the one holding the last; the client delivers only the
	// acquired offsets of them.
	first, last := ranges[0].First, ranges[len(ranges)-1].Last
	from, to := -1, 0
	for i, s := range spans {
		if from < 0 && s.last >= first {
			from = i
		}
		if s.first <= last {
			to = i
		}
	}
	if from >= 0 && to >= from {
		out.records = buf[spans[from].pos:spans[to].end]
	}
	return out, nil
}

// batchSpan is one log batch of a read: its offsets, its bytes in the
// read, and whether its records are delivered (a control batch or an
// aborted transaction's batch is not: its offsets are archived).
type batchSpan struct {
	first, last int64
	pos, end    int
	deliver     bool
}

// batchSpans parses the v2 batch headers of a read (whole batches). With
// aborted transactions (a read_committed read), a batch of an aborted
// producer from its transaction's first offset until that producer's
// abort marker is not delivered.
func batchSpans(buf []byte, aborted []storage.AbortedTxn) []batchSpan {
	var spans []batchSpan
	var open map[int64]bool // producers inside an aborted transaction
	next := 0
	for pos := 0; pos+61 <= len(buf); {
		length := int(int32(binary.BigEndian.Uint32(buf[pos+8:])))
		end := pos + 12 + length
		if length < 49 || end > len(buf) {
			break
		}
		base := int64(binary.BigEndian.Uint64(buf[pos:]))
		lastDelta := int64(int32(binary.BigEndian.Uint32(buf[pos+23:])))
		attrs := binary.BigEndian.Uint16(buf[pos+21:])
		pid := int64(binary.BigEndian.Uint64(buf[pos+43:]))
		for next < len(aborted) && aborted[next].FirstOffset <= base {
			if open == nil {
				open = map[int64]bool{}
			}
			open[aborted[next].ProducerID] = true
			next++
		}
		control := attrs&0x20 != 0
		s := batchSpan{first: base, last: base + lastDelta, pos: pos, end: end, deliver: !control}
		if open[pid] {
			s.deliver = false
			if control {
				delete(open, pid) // the abort marker ends it
			}
		}
		spans = append(spans, s)
		pos = end
	}
	return spans
}
