package txn

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/raftka/raftka/broker/coordslot"
	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetsTopic is the group coordinators' slots topic: AddOffsetsToTxn
// adds the group's slot of it to the transaction, and its markers are the
// Transaction record that completes the transaction (the offsets live in
// the image), so no WriteTxnMarkers goes to it.
const OffsetsTopic = "__consumer_offsets"

// MetadataSource is the node's latest applied metadata image.
type MetadataSource interface {
	Current() (*metadata.Image, uint64)
}

// Controller is what the coordinator needs of the active controller.
// *raftfsm.ControllerClient satisfies it; WriteTxn may also return before
// this node's MetadataSource has the change (raftfsm's WriteTxnNoWait):
// the coordinator reads its own writes from what it wrote until the image
// has them.
type Controller interface {
	// CreateTopics creates the slots topic on the first FindCoordinator.
	CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error)
	// WriteTxn records a *metadata.Transaction or *metadata.TxnOffsetCommit
	// (or several *metadata.Transaction of one id, in one Raft entry, each
	// checked against the state the one before it leaves) and returns the
	// Raft index that committed it; the rule metadata.CheckTxnTransition
	// refuses with Kafka's error.
	WriteTxn(ctx context.Context, recs ...metadata.Record) (uint64, error)
}

// MarkerWriter sends WriteTxnMarkers to a partition leader: over the
// inter-broker listener, or straight to the local replicas when leader is
// this broker.
type MarkerWriter interface {
	WriteMarkers(ctx context.Context, leader int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error)
}

// Config configures a Coordinator. Zero durations take Kafka's defaults.
type Config struct {
	NodeID int32
	// StateTopicPartitions, StateTopicReplicationFactor and
	// StateTopicMinISR are transaction.state.log.num.partitions,
	// .replication.factor and .min.isr, used when the slots topic is
	// created (as for groups, the replication factor is not lowered to fit
	// a small cluster).
	StateTopicPartitions        int32
	StateTopicReplicationFactor int16
	StateTopicMinISR            int16
	// OffsetsTopicPartitions is offsets.topic.num.partitions, for the slot
	// of a group before its topic exists.
	OffsetsTopicPartitions int32
	Limits                 Limits
	// AbortTimedOutInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s);
	// RemoveExpiredInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms (1 h).
	AbortTimedOutInterval time.Duration
	RemoveExpiredInterval time.Duration
	// ResumeInterval is how often the transactions of this broker's slots
	// left in PrepareCommit or PrepareAbort (by a coordinator that failed)
	// are looked for; 500 ms when zero.
	ResumeInterval time.Duration
	// WriteTimeout bounds one controller call (10 s when zero).
	WriteTimeout time.Duration
	// MarkerRetryBackoff is the wait between marker rounds that left
	// partitions unwritten (100 ms when zero).
	MarkerRetryBackoff time.Duration
	// CompleteGrace is how long the marker writer, its markers written,
	// waits for the producer's next transaction to start before it
	// records the Complete* state itself (5 ms when zero, none when
	// negative). The next transaction's first add records it in its own
	// Raft entry (see AddPartitions); without the wait, an add arriving a
	// moment after the markers found the Complete* write in flight and
	// made its own after it: two writes in turn on the producer's path.
	CompleteGrace time.Duration
	// ProducerIDs hands out a new producer id.
	ProducerIDs func(ctx context.Context) (int64, error)
	Now         func() time.Time
	Logger      zerolog.Logger
}

// Coordinator coordinates the transactional ids whose slots this broker
// leads. Its methods may be called from any goroutine (see doc.go).
type Coordinator struct {
	cfg     Config
	md      MetadataSource
	ctrl    Controller
	markers MarkerWriter
	log     zerolog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex // guards locks, completing, closed, adding to wg
	locks map[string]*idLock
	// completing holds, per id with a marker writer running, its
	// channels (see completion).
	completing map[string]*completion
	// markersWritten holds, per id, the Prepare* state whose markers are
	// all written, until its Complete* state is recorded: an add may then
	// record that state itself, with its own, in one Raft entry.
	markersWritten map[string]metadata.Transaction
	// written holds each id's last state written by this coordinator
	// with the Raft index that committed it, until the image has it (see
	// current).
	written map[string]writtenTxn
	// adding holds, per id, the AddPartitions calls waiting to be decided
	// together (see AddPartitions).
	adding map[string]*addQueue
	closed bool

	createMu sync.Mutex
}

type writtenTxn struct {
	txn   metadata.Transaction
	index uint64
}

type idLock struct {
	mu   sync.Mutex
	refs int
}

// NewCoordinator starts a coordinator; Close stops it.
func NewCoordinator(cfg Config, md MetadataSource, ctrl Controller, markers MarkerWriter) *Coordinator {
	if cfg.StateTopicPartitions <= 0 {
		cfg.StateTopicPartitions = 50
	}
	if cfg.StateTopicReplicationFactor <= 0 {
		cfg.StateTopicReplicationFactor = 3
	}
	if cfg.StateTopicMinISR <= 0 {
		cfg.StateTopicMinISR = 2
	}
	if cfg.OffsetsTopicPartitions <= 0 {
		cfg.OffsetsTopicPartitions = 50
	}
	if cfg.Limits.MaxTimeoutMs <= 0 {
		cfg.Limits.MaxTimeoutMs = 900000
	}
	if cfg.Limits.IDExpirationMs <= 0 {
		cfg.Limits.IDExpirationMs = 7 * 24 * 3600 * 1000
	}
	if cfg.AbortTimedOutInterval <= 0 {
		cfg.AbortTimedOutInterval = 10 * time.Second
	}
	if cfg.RemoveExpiredInterval <= 0 {
		cfg.RemoveExpiredInterval = time.Hour
	}
	if cfg.ResumeInterval <= 0 {
		cfg.ResumeInterval = 500 * time.Millisecond
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.MarkerRetryBackoff <= 0 {
		cfg.MarkerRetryBackoff = 100 * time.Millisecond
	}
	if cfg.CompleteGrace == 0 {
		cfg.CompleteGrace = 5 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Coordinator{cfg: cfg, md: md, ctrl: ctrl, markers: markers, log: cfg.Logger, ctx: ctx, cancel: cancel,
		locks: map[string]*idLock{}, completing: map[string]*completion{}, markersWritten: map[string]metadata.Transaction{}, written: map[string]writtenTxn{}, adding: map[string]*addQueue{}}
	c.wg.Add(1)
	go c.scan()
	return c
}

// Close stops the scanner and every marker writer and waits for them.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

func (c *Coordinator) now() int64 { return c.cfg.Now().UnixMilli() }

// lock serializes the operations of one transactional id: each reads the
// recorded state, decides, and records its step before the next starts.
func (c *Coordinator) lock(id string) func() {
	c.mu.Lock()
	l := c.locks[id]
	if l == nil {
		l = &idLock{}
		c.locks[id] = l
	}
	l.refs++
	c.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		c.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(c.locks, id)
		}
		c.mu.Unlock()
	}
}

func codeErr(code int16) error {
	if code == 0 {
		return nil
	}
	return kerr.ErrorForCode(code)
}

// controllerErr keeps a protocol error and turns any other failure of a
// controller call into COORDINATOR_NOT_AVAILABLE (Kafka's answer when its
// state log append fails), which clients retry.
func controllerErr(err error) error {
	var ke *kerr.Error
	if err == nil || errors.As(err, &ke) {
		return err
	}
	return fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, err)
}

// Ownership is nil when this broker coordinates id in img, else
// NOT_COORDINATOR.
func (c *Coordinator) Ownership(img *metadata.Image, id string) error {
	code, _ := ownership(img, c.cfg.NodeID, id)
	return codeErr(code)
}

// Locate returns the broker that coordinates id, creating the slots topic
// on first use as Kafka does.
func (c *Coordinator) Locate(ctx context.Context, id string) (int32, error) {
	return coordslot.Locate(ctx, c.md, StateTopic, id, c.createSlots)
}

func (c *Coordinator) createSlots(ctx context.Context) error {
	c.createMu.Lock()
	defer c.createMu.Unlock()
	if img, _ := c.md.Current(); img != nil {
		if _, ok := img.Topic(StateTopic); ok {
			return nil
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = StateTopic
	t.NumPartitions = c.cfg.StateTopicPartitions
	t.ReplicationFactor = c.cfg.StateTopicReplicationFactor
	// Kafka's configs for the topic; it holds no records here, but tools
	// that describe it see what they expect.
	for _, kv := range [][2]string{{"cleanup.policy", "compact"}, {"compression.type", "uncompressed"},
		{"min.insync.replicas", strconv.Itoa(int(c.cfg.StateTopicMinISR))}} {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = kv[0], kmsg.StringPtr(kv[1])
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = append(req.Topics, t)
	ctx, cancel := context.WithTimeout(ctx, c.cfg.WriteTimeout)
	defer cancel()
	resp, err := c.ctrl.CreateTopics(ctx, req)
	if err != nil {
		c.log.Info().Err(err).Msg("creating the transaction coordinator slots topic failed; FindCoordinator answers COORDINATOR_NOT_AVAILABLE")
		return kerr.CoordinatorNotAvailable
	}
	for _, rt := range resp.Topics {
		if rt.ErrorCode != 0 && rt.ErrorCode != kerr.TopicAlreadyExists.Code {
			c.log.Info().Int16("error", rt.ErrorCode).Int16("replication_factor", c.cfg.StateTopicReplicationFactor).
				Msg("the transaction coordinator slots topic cannot be created yet; FindCoordinator answers COORDINATOR_NOT_AVAILABLE")
			return kerr.CoordinatorNotAvailable
		}
	}
	return nil
}

// concurrentWait bounds how long an operation answered
// CONCURRENT_TRANSACTIONS waits for the id's marker writer before it is
// decided again.
const concurrentWait = 2 * time.Second

// step runs one operation on id under its lock: decide reads the recorded
// state (nil when none) and the coordinator epoch and returns the next
// state to record (nil: none) and the code to answer. A recorded Prepare*
// state starts its markers.
//
// An operation that meets the previous transaction still completing
// (CONCURRENT_TRANSACTIONS) waits for its marker writer, bounded by
// concurrentWait, and is decided again, a few times at most: the answer
// Kafka gives is retriable, and a client told to retry waits its backoff
// (tens of milliseconds) for what is usually a few milliseconds of
// markers, which made every transaction after the first pay it.
func (c *Coordinator) step(ctx context.Context, id string, decide func(cur *metadata.Transaction, coordEpoch int32) (*metadata.Transaction, int16)) error {
	return c.stepWrites(ctx, id, false, func(cur *metadata.Transaction, coordEpoch int32) ([]*metadata.Transaction, int16) {
		next, code := decide(cur, coordEpoch)
		if next == nil {
			return nil, code
		}
		return []*metadata.Transaction{next}, code
	})
}

// stepWrites is step for a decision that may record several states of
// the id in one Raft entry (the last is the id's new state). With
// afterMarkers, the first wait for the previous transaction ends as soon
// as its markers are written rather than when its Complete* state is
// recorded: the decision may record that state itself.
func (c *Coordinator) stepWrites(ctx context.Context, id string, afterMarkers bool, decide func(cur *metadata.Transaction, coordEpoch int32) ([]*metadata.Transaction, int16)) error {
	if id == "" {
		// Kafka's coordinator refuses an empty transactional id so.
		return kerr.InvalidRequest
	}
	for attempt := 0; ; attempt++ {
		err := c.stepOnce(ctx, id, decide)
		if !errors.Is(err, kerr.ConcurrentTransactions) || attempt == 3 {
			return err
		}
		c.mu.Lock()
		comp := c.completing[id]
		c.mu.Unlock()
		if comp == nil {
			return err
		}
		done := comp.done
		if afterMarkers && attempt == 0 {
			done = comp.markers
		}
		select {
		case <-done:
		case <-time.After(concurrentWait):
			return err
		case <-ctx.Done():
			return err
		}
	}
}

func (c *Coordinator) stepOnce(ctx context.Context, id string, decide func(cur *metadata.Transaction, coordEpoch int32) ([]*metadata.Transaction, int16)) error {
	unlock := c.lock(id)
	defer unlock()
	img, idx := c.md.Current()
	code, epoch := ownership(img, c.cfg.NodeID, id)
	if code != 0 {
		return codeErr(code)
	}
	cur := c.current(img, idx, id)
	states, code := decide(cur, epoch)
	if len(states) > 0 {
		next := states[len(states)-1]
		recs := make([]metadata.Record, len(states))
		for i, st := range states {
			recs[i] = st
		}
		wctx, cancel := context.WithTimeout(ctx, c.cfg.WriteTimeout)
		index, err := c.ctrl.WriteTxn(wctx, recs...)
		cancel()
		if err != nil {
			return controllerErr(err)
		}
		c.mu.Lock()
		c.written[id] = writtenTxn{txn: *next, index: index}
		c.mu.Unlock()
		if next.State == metadata.TxnPrepareCommit || next.State == metadata.TxnPrepareAbort {
			c.startCompleting(id)
		}
	}
	return codeErr(code)
}

// current is id's state: the image's, or the one this coordinator last
// wrote when the image has not applied it yet. The controller's commit is
// the truth (it checked the write against the leader's image); this
// node's image follows it a heartbeat later when the log is idle, and an
// operation deciding on the older state would be refused or, worse,
// repeat a step. Once the image has the index, the image wins (another
// coordinator may have written since).
func (c *Coordinator) current(img *metadata.Image, idx uint64, id string) *metadata.Transaction {
	c.mu.Lock()
	w, ok := c.written[id]
	if ok && w.index <= idx {
		delete(c.written, id)
		ok = false
	}
	c.mu.Unlock()
	if ok {
		if w.txn.State == metadata.TxnDead {
			return nil
		}
		t := w.txn
		return &t
	}
	if t, ok := img.Transaction(id); ok {
		return &t
	}
	return nil
}

// Transaction is id's state as this coordinator knows it (its own last
// write until the image has it): what DescribeTransactions shows.
func (c *Coordinator) Transaction(id string) (metadata.Transaction, bool) {
	img, idx := c.md.Current()
	if t := c.current(img, idx, id); t != nil {
		return *t, true
	}
	return metadata.Transaction{}, false
}

// InitProducerID answers InitProducerId for a transactional id.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, in InitInput) (int64, int16, error) {
	var res InitResult
	err := c.step(ctx, id, func(cur *metadata.Transaction, epoch int32) (*metadata.Transaction, int16) {
		res = Init(id, cur, in, c.cfg.Limits, c.now(), epoch, func() (int64, int16) {
			pid, err := c.cfg.ProducerIDs(ctx)
			if err != nil {
				c.log.Debug().Err(err).Msg("InitProducerId: no producer id yet")
				return -1, kerr.CoordinatorLoadInProgress.Code
			}
			return pid, 0
		})
		return res.Next, res.Code
	})
	if err != nil {
		return -1, -1, err
	}
	return res.ProducerID, res.ProducerEpoch, nil
}

// AddPartitions adds partitions to the producer's transaction
// (AddPartitionsToTxn, and the partition leaders' adds of transaction
// version 2).
//
// Adds to one id coalesce: every partition leader of a transaction adds
// its partitions at the start of it, at once, and each add is a Raft
// write made under the id's lock, so one after the other they cost a
// write each (six partitions on three leaders: 14 ms of a 21 ms produce
// in the txn1000 bench row). An add that finds another add of its id not
// yet decided joins it; the first one decides them all, in arrival
// order, against the state each leaves, and records the result with one
// write. Each caller is answered once that write is committed (a
// partition is in the durable transaction before any data of it is
// appended), with its own code.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []metadata.TopicPartition) error {
	if id == "" {
		return kerr.InvalidRequest
	}
	me := &pendingAdd{pid: pid, epoch: epoch, parts: parts, done: make(chan struct{})}
	c.mu.Lock()
	q := c.adding[id]
	first := q == nil
	if first {
		q = &addQueue{decided: make(chan struct{})}
		c.adding[id] = q
		if comp := c.completing[id]; comp != nil {
			select {
			case comp.added <- struct{}{}:
			default:
			}
		}
	}
	q.adds = append(q.adds, me)
	c.mu.Unlock()
	if !first {
		select {
		case <-me.done:
			return me.err
		case <-ctx.Done():
			// The first add may still record these partitions; a
			// partition in the transaction with no data is ended by
			// its marker like any other.
			return fmt.Errorf("%w: %w", kerr.RequestTimedOut, ctx.Err())
		}
	}
	err := c.stepWrites(ctx, id, true, func(cur *metadata.Transaction, ce int32) ([]*metadata.Transaction, int16) {
		// The id's lock is held: the adds that arrived while this one
		// waited for it (behind the id's previous write, or for its
		// previous transaction's markers) are decided with it. The queue
		// closes with the decision that ends the wait; later adds start
		// the next batch.
		c.mu.Lock()
		defer c.mu.Unlock()
		now := c.now()
		// The previous transaction's markers are all written but its
		// Complete* state is not recorded yet: record it here, before
		// this transaction's first state and in the same Raft entry,
		// rather than wait a Raft write for the marker writer to do so
		// (the marker writer then finds the state moved on). The
		// partitions of the new transaction are still recorded only
		// after every marker of the old one is written.
		var states []*metadata.Transaction
		base := cur
		if w, ok := c.markersWritten[id]; ok && cur != nil && sameTxn(&w, cur) {
			if done := Complete(cur, now, ce); done != nil {
				states, base = append(states, done), done
			}
		}
		next, code := addBatch(base, q.adds, now, ce)
		if code == kerr.ConcurrentTransactions.Code {
			return nil, code
		}
		delete(c.adding, id)
		if next != nil {
			states = append(states, next)
		}
		return states, code
	})
	c.mu.Lock()
	if c.adding[id] == q {
		delete(c.adding, id)
	}
	batch := q.adds
	c.mu.Unlock()
	close(q.decided)
	for _, a := range batch {
		switch {
		case err != nil && !errors.Is(err, kerr.ConcurrentTransactions):
			a.err = err // the write, or the ownership check, failed for all
		case !a.decided:
			a.err = err
		default:
			a.err = codeErr(a.code)
		}
		if a != me {
			close(a.done)
		}
	}
	return me.err
}

// pendingAdd is one AddPartitions call waiting in its id's addQueue.
type pendingAdd struct {
	pid   int64
	epoch int16
	parts []metadata.TopicPartition
	// decided and code are the batch's last decision of this add.
	decided bool
	code    int16
	err     error
	done    chan struct{}
}

// addQueue collects the adds of one id not yet decided; decided is
// closed once their decision is recorded (or failed).
type addQueue struct {
	adds    []*pendingAdd
	decided chan struct{}
}

// addBatch decides a batch of adds in order, each against the state the
// ones before it leave. It answers CONCURRENT_TRANSACTIONS for the batch
// (step then waits for the marker writer and decides it again) when any
// add meets the previous transaction still completing: its state is the
// same for all of them.
func addBatch(cur *metadata.Transaction, batch []*pendingAdd, now int64, coordEpoch int32) (*metadata.Transaction, int16) {
	state, changed := cur, false
	concurrent := false
	for _, a := range batch {
		next, code := AddPartitions(state, a.pid, a.epoch, a.parts, now, coordEpoch)
		a.code, a.decided = code, true
		if code == kerr.ConcurrentTransactions.Code {
			concurrent = true
		}
		if next != nil {
			state, changed = next, true
		}
	}
	if concurrent {
		for _, a := range batch {
			if a.code == 0 {
				a.code = kerr.ConcurrentTransactions.Code
			}
		}
		return nil, kerr.ConcurrentTransactions.Code
	}
	if !changed {
		return nil, 0
	}
	return state, 0
}

// GroupSlot is the __consumer_offsets partition of a group in img.
func (c *Coordinator) GroupSlot(img *metadata.Image, group string) metadata.TopicPartition {
	n := int(c.cfg.OffsetsTopicPartitions)
	if t, ok := img.Topic(OffsetsTopic); ok && len(t.Partitions) > 0 {
		n = len(t.Partitions)
	}
	return metadata.TopicPartition{Topic: OffsetsTopic, Partition: Slot(group, n)}
}

// AddOffsets adds a group's offsets to the transaction (AddOffsetsToTxn):
// its slot of __consumer_offsets joins the partitions.
func (c *Coordinator) AddOffsets(ctx context.Context, id string, pid int64, epoch int16, group string) error {
	img, _ := c.md.Current()
	return c.AddPartitions(ctx, id, pid, epoch, []metadata.TopicPartition{c.GroupSlot(img, group)})
}

// Verify answers whether each partition is in the producer's open
// transaction (AddPartitionsToTxn VerifyOnly, KIP-890).
func (c *Coordinator) Verify(ctx context.Context, id string, pid int64, epoch int16, parts []metadata.TopicPartition) ([]int16, error) {
	var codes []int16
	err := c.step(ctx, id, func(cur *metadata.Transaction, _ int32) (*metadata.Transaction, int16) {
		codes = Verify(cur, pid, epoch, parts)
		return nil, 0
	})
	return codes, err
}

// EndTxn commits or aborts the producer's transaction: answered once the
// Prepare* state is recorded; the markers follow.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) error {
	return c.step(ctx, id, func(cur *metadata.Transaction, ce int32) (*metadata.Transaction, int16) {
		return End(cur, pid, epoch, commit, c.now(), ce)
	})
}

// EndTxnV2 is EndTxn for a client of transaction version 2 (EndTxn v5+
// with transaction.version 2 finalized, see EndV2): it returns the
// producer id and epoch the client continues with.
func (c *Coordinator) EndTxnV2(ctx context.Context, id string, pid int64, epoch int16, commit bool) (int64, int16, error) {
	var res EndResult
	err := c.step(ctx, id, func(cur *metadata.Transaction, ce int32) (*metadata.Transaction, int16) {
		res = EndV2(cur, pid, epoch, commit, c.now(), ce, func() (int64, int16) {
			npid, err := c.cfg.ProducerIDs(ctx)
			if err != nil {
				return -1, kerr.CoordinatorLoadInProgress.Code
			}
			return npid, 0
		})
		return res.Next, res.Code
	})
	if err != nil {
		return -1, -1, err
	}
	return res.ProducerID, res.ProducerEpoch, nil
}

// CommitOffsets holds a group's offsets in the producer's open transaction
// (TxnOffsetCommit; the group checks are the caller's). They become the
// group's committed offsets when the transaction commits.
func (c *Coordinator) CommitOffsets(ctx context.Context, id string, pid int64, epoch int16, group string, offsets []metadata.OffsetCommit) error {
	if id == "" {
		return kerr.InvalidRequest
	}
	rec := &metadata.TxnOffsetCommit{TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch, Group: group, Offsets: offsets}
	wctx, cancel := context.WithTimeout(ctx, c.cfg.WriteTimeout)
	defer cancel()
	_, err := c.ctrl.WriteTxn(wctx, rec)
	return controllerErr(err)
}

// completion is a running marker writer: markers is closed when every
// marker of the transaction is written (or the writer ends), done when
// the writer ends.
type completion struct {
	// added is signalled when an add of the id starts a batch, for the
	// writer waiting CompleteGrace.
	added       chan struct{}
	markers     chan struct{}
	markersOnce sync.Once
	done        chan struct{}
	again       bool // guarded by Coordinator.mu: a Prepare* state was recorded while it ran
}

func (cp *completion) markersDone() { cp.markersOnce.Do(func() { close(cp.markers) }) }

// sameTxn reports whether a and b are the same transaction in the same
// state.
func sameTxn(a, b *metadata.Transaction) bool {
	return a.ProducerID == b.ProducerID && a.ProducerEpoch == b.ProducerEpoch && a.State == b.State
}

// startCompleting starts the marker writer of id unless one runs.
func (c *Coordinator) startCompleting(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if comp := c.completing[id]; comp != nil {
		// The running writer may be on its way out, having found the
		// state it was started for ended: it looks once more.
		comp.again = true
		return
	}
	comp := &completion{added: make(chan struct{}, 1), markers: make(chan struct{}), done: make(chan struct{})}
	c.completing[id] = comp
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			c.complete(id, comp)
			c.mu.Lock()
			if !comp.again || c.closed {
				break
			}
			comp.again = false
			c.mu.Unlock()
		}
		delete(c.completing, id)
		delete(c.markersWritten, id)
		c.mu.Unlock()
		comp.markersDone()
		close(comp.done)
	}()
}

// complete writes the markers of id's Prepare* state to every partition
// of the transaction, retrying until each is written, then records the
// Complete* state. It stops when this broker no longer coordinates id
// (the next coordinator finishes) or the state moved on.
func (c *Coordinator) complete(id string, comp *completion) {
	var done map[metadata.TopicPartition]bool
	var forState *metadata.Transaction
	graced := false
	for {
		if c.ctx.Err() != nil {
			return
		}
		img, idx := c.md.Current()
		code, epoch := ownership(img, c.cfg.NodeID, id)
		cur := c.current(img, idx, id)
		if code != 0 || cur == nil || (cur.State != metadata.TxnPrepareCommit && cur.State != metadata.TxnPrepareAbort) {
			return
		}
		t := *cur
		if forState == nil || forState.ProducerID != t.ProducerID || forState.ProducerEpoch != t.ProducerEpoch || forState.State != t.State {
			forState, done = &t, map[metadata.TopicPartition]bool{}
		}
		stop := c.markerRound(img, &t, max(epoch, t.CoordinatorEpoch), done)
		if stop {
			return
		}
		if len(done) == len(t.Partitions) {
			c.mu.Lock()
			c.markersWritten[id] = t
			q := c.adding[id]
			c.mu.Unlock()
			comp.markersDone()
			if q != nil {
				// The next transaction's adds are waiting for these
				// markers: they record the Complete* state with their
				// own in one write. Look again once they are decided
				// (nothing left to do unless their write failed).
				select {
				case <-q.decided:
				case <-time.After(concurrentWait):
				case <-c.ctx.Done():
					return
				}
				continue
			}
			if !graced && c.cfg.CompleteGrace > 0 {
				// Give the producer's next transaction a moment to
				// start: its add then records the Complete* state
				// with its own first state, one Raft write where
				// there would be two in turn.
				graced = true
				select {
				case <-comp.added:
					continue
				case <-time.After(c.cfg.CompleteGrace):
				case <-c.ctx.Done():
					return
				}
			}
			err := c.step(c.ctx, id, func(cur *metadata.Transaction, ce int32) (*metadata.Transaction, int16) {
				if cur == nil || cur.State != t.State || cur.ProducerID != t.ProducerID || cur.ProducerEpoch != t.ProducerEpoch {
					return nil, 0
				}
				return Complete(cur, c.now(), ce), 0
			})
			if err == nil {
				return
			}
			c.log.Debug().Err(err).Str("transactional_id", id).Msg("recording the completed transaction failed; retrying")
		}
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(c.cfg.MarkerRetryBackoff):
		}
	}
}

// markerRound sends one WriteTxnMarkers to each leader of the partitions
// not yet done and marks those written. stop is true when a leader says
// this coordinator is fenced.
func (c *Coordinator) markerRound(img *metadata.Image, t *metadata.Transaction, coordEpoch int32, done map[metadata.TopicPartition]bool) (stop bool) {
	byLeader := map[int32]map[string][]int32{}
	for _, tp := range t.Partitions {
		if done[tp] {
			continue
		}
		if tp.Topic == OffsetsTopic {
			// The Complete* record is this partition's marker.
			done[tp] = true
			continue
		}
		ti, ok := img.Topic(tp.Topic)
		if !ok {
			// Deleted: there is nothing to end (Kafka drops it too).
			done[tp] = true
			continue
		}
		pr, ok := ti.Partition(tp.Partition)
		if !ok {
			done[tp] = true
			continue
		}
		if pr.Leader < 0 {
			continue
		}
		m := byLeader[pr.Leader]
		if m == nil {
			m = map[string][]int32{}
			byLeader[pr.Leader] = m
		}
		m[tp.Topic] = append(m[tp.Topic], tp.Partition)
	}
	// One request per leader, all at once: each waits for its markers'
	// replication (acks=all), and the transaction completes only when the
	// slowest leader answers.
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for leader, topics := range byLeader {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		mk := kmsg.NewWriteTxnMarkersRequestMarker()
		mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = t.ProducerID, t.ProducerEpoch, t.State == metadata.TxnPrepareCommit, coordEpoch
		for topic, parts := range topics {
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = topic, parts
			mk.Topics = append(mk.Topics, mt)
		}
		req.Markers = append(req.Markers, mk)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(c.ctx, c.cfg.WriteTimeout)
			resp, err := c.markers.WriteMarkers(ctx, leader, req)
			cancel()
			if err != nil {
				c.log.Debug().Err(err).Int32("leader", leader).Str("transactional_id", t.TransactionalID).Msg("WriteTxnMarkers failed; retrying")
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if c.markerAnswer(t, resp, done) {
				stop = true
			}
		}()
	}
	wg.Wait()
	return stop
}

// markerAnswer marks the partitions a WriteTxnMarkers answer wrote; true
// when a leader says this coordinator is fenced.
func (c *Coordinator) markerAnswer(t *metadata.Transaction, resp *kmsg.WriteTxnMarkersResponse, done map[metadata.TopicPartition]bool) (fenced bool) {
	for _, rm := range resp.Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				tp := metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
				switch rp.ErrorCode {
				case 0:
					done[tp] = true
				case kerr.TransactionCoordinatorFenced.Code:
					c.log.Info().Str("transactional_id", t.TransactionalID).Str("topic", rt.Topic).Int32("partition", rp.Partition).
						Msg("a newer transaction coordinator wrote to this partition; leaving the transaction to it")
					fenced = true
				case kerr.InvalidProducerEpoch.Code, kerr.ProducerFenced.Code:
					// The partition has seen a newer epoch of this
					// producer, whose marker ended this transaction there.
					c.log.Warn().Str("transactional_id", t.TransactionalID).Str("topic", rt.Topic).Int32("partition", rp.Partition).
						Msg("partition refused the marker for a stale producer epoch; counting it written")
					done[tp] = true
				default:
					c.log.Debug().Int16("error", rp.ErrorCode).Str("topic", rt.Topic).Int32("partition", rp.Partition).
						Str("transactional_id", t.TransactionalID).Msg("marker not written; retrying")
				}
			}
		}
	}
	return fenced
}

// scan finishes what a failed coordinator left (Prepare* states of the
// slots this broker leads), aborts timed-out transactions and removes
// expired ids.
func (c *Coordinator) scan() {
	defer c.wg.Done()
	resume := time.NewTicker(c.cfg.ResumeInterval)
	defer resume.Stop()
	abort := time.NewTicker(c.cfg.AbortTimedOutInterval)
	defer abort.Stop()
	remove := time.NewTicker(c.cfg.RemoveExpiredInterval)
	defer remove.Stop()
	for {
		var expire func(*metadata.Transaction) bool
		select {
		case <-c.ctx.Done():
			return
		case <-resume.C:
		case <-abort.C:
			expire = func(t *metadata.Transaction) bool { return t.State == metadata.TxnOngoing }
		case <-remove.C:
			expire = func(t *metadata.Transaction) bool { return stable(t.State) }
		}
		img, _ := c.md.Current()
		if img == nil {
			continue
		}
		for _, t := range img.Transactions() {
			if code, _ := ownership(img, c.cfg.NodeID, t.TransactionalID); code != 0 {
				continue
			}
			switch {
			case t.State == metadata.TxnPrepareCommit || t.State == metadata.TxnPrepareAbort:
				c.startCompleting(t.TransactionalID)
			case expire != nil && expire(&t):
				c.expire(t.TransactionalID)
			}
		}
	}
}

func (c *Coordinator) expire(id string) {
	err := c.step(c.ctx, id, func(cur *metadata.Transaction, ce int32) (*metadata.Transaction, int16) {
		if cur == nil {
			return nil, 0
		}
		next := Expire(cur, c.cfg.Limits, c.now(), ce)
		if next != nil {
			ev := c.log.Info().Str("transactional_id", id).Int64("producer_id", cur.ProducerID)
			if next.State == metadata.TxnDead {
				ev.Msg("transactional id expired (transactional.id.expiration.ms)")
			} else {
				ev.Int32("timeout_ms", cur.TimeoutMs).Msg("aborting a timed-out transaction and fencing its producer")
			}
		}
		return next, 0
	})
	if err != nil {
		c.log.Debug().Err(err).Str("transactional_id", id).Msg("expiring a transaction failed; the next scan retries")
	}
}
