package replica

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicConfig is what a partition obeys from its topic's effective config.
type TopicConfig struct {
	Log               storage.Config
	MinInsyncReplicas int // min.insync.replicas
}

// Config configures a Manager. Zero durations and sizes take Kafka's
// defaults.
type Config struct {
	// BrokerID is this broker's node.id.
	BrokerID int32
	// Storage holds the partition logs.
	Storage *storage.Manager
	// TopicConfig returns a topic's effective config in img (the topic's
	// overrides over the broker's defaults). Required.
	TopicConfig func(img *metadata.Image, topic string) (TopicConfig, error)
	// Controller receives AlterPartition. Required.
	Controller AlterPartitionClient
	// Dial connects to a leader for follower fetching. Required.
	Dial Dialer
	// InterBrokerListener names the listener whose endpoint in the image a
	// fetcher dials (inter.broker.listener.name).
	InterBrokerListener string
	Logger              zerolog.Logger
	// Now is the clock for lag decisions; time.Now if nil.
	Now func() time.Time

	ReplicaLagTimeMax      time.Duration // replica.lag.time.max.ms, 30s
	FetchWaitMax           time.Duration // replica.fetch.wait.max.ms, 500ms
	FetchMaxBytes          int           // replica.fetch.response.max.bytes, 10 MiB
	FetchPartitionMaxBytes int           // replica.fetch.max.bytes, 1 MiB
	FetchMinBytes          int           // replica.fetch.min.bytes, 1
	FetchBackoff           time.Duration // replica.fetch.backoff.ms, 1s
	// RequestTimeout bounds an AlterPartition or OffsetForLeaderEpoch
	// exchange, and a Fetch beyond its wait (replica.socket.timeout.ms, 30s).
	RequestTimeout time.Duration
	// NumFetchers is num.replica.fetchers: fetchers (each its own
	// connection and goroutine) per source broker, partitions spread
	// across them as Kafka does (fetcherID); zero means 1.
	NumFetchers int
	// SourceLost, when set, hears of a fetcher whose connection to its
	// source broker broke (closed or reset by the peer, or a dial
	// refused): the sign of a leader whose process died, which the
	// broker reports to the controller for a probe. It must not block.
	SourceLost func(source int32)
}

func (c *Config) defaults() error {
	if c.Storage == nil || c.TopicConfig == nil || c.Controller == nil || c.Dial == nil {
		return errors.New("replica: Config needs Storage, TopicConfig, Controller and Dial")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ReplicaLagTimeMax, 30*time.Second)
	def(&c.FetchWaitMax, 500*time.Millisecond)
	def(&c.FetchBackoff, time.Second)
	def(&c.RequestTimeout, 30*time.Second)
	if c.NumFetchers <= 0 {
		c.NumFetchers = 1
	}
	if c.FetchMaxBytes <= 0 {
		c.FetchMaxBytes = 10 << 20
	}
	if c.FetchPartitionMaxBytes <= 0 {
		c.FetchPartitionMaxBytes = 1 << 20
	}
	if c.FetchMinBytes <= 0 {
		c.FetchMinBytes = 1
	}
	return nil
}

// ErrManagerClosed is returned by WaitApplied once the manager has closed.
var ErrManagerClosed = errors.New("replica: manager closed")

// Manager owns this broker's partitions: it follows the metadata image
// (Apply), runs the fetchers and the ISR expiry, and hands Partitions to the
// request handlers. One per broker.
type Manager struct {
	cfg Config
	log zerolog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	goMu   sync.Mutex // guards stopping and wg.Add against Close's Wait
	wg     sync.WaitGroup
	stop   bool

	applyMu  sync.Mutex
	closed   bool                    // under applyMu
	fetchers map[fetcherKey]*fetcher // under applyMu

	img atomic.Pointer[metadata.Image]
	seq atomic.Uint64

	// applied is the Raft index of the last image Apply finished with, so a
	// request handler can tell "not hosted here" from "not hosted here yet":
	// the node's image can name this broker leader a moment before Apply has
	// opened the log (see WaitApplied).
	appliedMu sync.Mutex
	applied   atomic.Uint64 // written under appliedMu
	appliedCh chan struct{} // closed and replaced when applied moves

	mu    sync.RWMutex
	parts map[storage.TopicPartition]*Partition

	// ISR changes the controller accepted (Kafka's IsrShrinksPerSec and
	// IsrExpandsPerSec), read by Health.
	isrShrinks, isrExpands atomic.Uint64

	// alters sends the ISR changes of every partition led here, batched.
	alters *alterBatcher

	// tcImg and tcMap memoize topicConfig for the last image asked about.
	tcMu  sync.Mutex
	tcImg *metadata.Image
	tcMap map[string]TopicConfig

	// followerQuota is follower.replication.throttled.rate (throttle.go).
	followerQuota *rateQuota

	// lost holds the sources whose connection broke, since when, until a
	// fetch from them succeeds (unreachable.go); lostN is len(lost).
	lostMu sync.Mutex
	lost   map[int32]time.Time
	lostN  atomic.Int32
}

// NewManager starts a Manager (its ISR expiry loop); feed it metadata with
// Apply and stop it with Close. It does not close cfg.Storage.
func NewManager(cfg Config) (*Manager, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	m := &Manager{
		cfg: cfg, log: cfg.Logger.With().Str("component", "replica").Int32("broker", cfg.BrokerID).Logger(),
		fetchers: map[fetcherKey]*fetcher{}, parts: map[storage.TopicPartition]*Partition{},
		appliedCh: make(chan struct{}), followerQuota: newRateQuota(), lost: map[int32]time.Time{},
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.img.Store(metadata.NewImage())
	m.alters = &alterBatcher{
		client: cfg.Controller, self: cfg.BrokerID, image: m.img.Load, start: m.goStart, ctx: m.ctx,
		timeout: cfg.RequestTimeout, log: m.log, max: alterBatchMax,
		accepted: func(shrink bool) {
			if shrink {
				m.isrShrinks.Add(1)
			} else {
				m.isrExpands.Add(1)
			}
		},
	}
	m.goStart(m.isrLoop)
	return m, nil
}

func (m *Manager) now() time.Time { return m.cfg.Now() }

func (m *Manager) nextSeq() uint64 { return m.seq.Add(1) }

// goStart runs fn on a goroutine Close waits for; false after Close began.
func (m *Manager) goStart(fn func()) bool {
	m.goMu.Lock()
	defer m.goMu.Unlock()
	if m.stop {
		return false
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		fn()
	}()
	return true
}

// Close stops the fetchers and the ISR loop, waits for them and for
// AlterPartitions in flight, and stops every partition (waiting produces and
// fetches answer NOT_LEADER_OR_FOLLOWER). Logs stay open: storage's owner
// closes them.
func (m *Manager) Close() error {
	m.applyMu.Lock()
	m.closed = true
	for id, f := range m.fetchers {
		f.cancel()
		delete(m.fetchers, id)
	}
	m.applyMu.Unlock()
	m.goMu.Lock()
	m.stop = true
	m.goMu.Unlock()
	m.cancel()
	m.wg.Wait()
	for _, p := range m.partitions() {
		p.stop()
	}
	return nil
}

// Image is the last image Apply received.
func (m *Manager) Image() *metadata.Image { return m.img.Load() }

func (m *Manager) partitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		out = append(out, p)
	}
	return out
}

// Partitions returns every partition hosted here.
func (m *Manager) Partitions() []*Partition { return m.partitions() }

// Partition returns a hosted partition (leader or follower: its methods say
// NOT_LEADER_OR_FOLLOWER where that matters). A partition the image knows
// but this broker does not host is NOT_LEADER_OR_FOLLOWER; one the image
// does not know is UNKNOWN_TOPIC_OR_PARTITION.
func (m *Manager) Partition(topic string, partition int32) (*Partition, error) {
	m.mu.RLock()
	p := m.parts[storage.TopicPartition{Topic: topic, Partition: partition}]
	m.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	if t, ok := m.img.Load().Topic(topic); ok {
		if _, ok := t.Partition(partition); ok {
			return nil, fmt.Errorf("%w: %s-%d is not hosted on broker %d", kerr.NotLeaderForPartition, topic, partition, m.cfg.BrokerID)
		}
	}
	return nil, fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, topic, partition)
}

func (m *Manager) get(topic string, partition int32) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.parts[storage.TopicPartition{Topic: topic, Partition: partition}]
}

// eligible reports whether a broker may join an ISR: registered, unfenced,
// not shutting down (KIP-841).
func (m *Manager) eligible(id int32) bool {
	b, ok := m.img.Load().Broker(id)
	return ok && b.Usable()
}

func (m *Manager) alive(id int32) bool {
	b, ok := m.img.Load().Broker(id)
	return ok && !b.Fenced
}

// Apply follows one published metadata event; call it in publish order from
// one goroutine. reset (or a nil delta) rebuilds from img: partitions not
// assigned here in img are removed. Otherwise only the delta's
// LocalChanges for this broker are touched (and configs and brokers it
// names): events in order keep the hosted partitions equal to this broker's
// replicas in the image, so the local view of each delta is all that moves
// them. Removing a partition deletes its log.
//
// A partition that fails to open is logged and left out (it is offline on
// this broker); the next event touching it tries again.
func (m *Manager) Apply(img *metadata.Image, delta *metadata.Delta, reset bool) {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	if m.closed || img == nil {
		return
	}
	m.img.Store(img)
	self := m.cfg.BrokerID
	if reset || delta == nil {
		want := map[storage.TopicPartition]bool{}
		var mine []newPartition
		for _, t := range img.Topics() {
			for _, reg := range t.Partitions {
				if slices.Contains(reg.Replicas, self) {
					mine = append(mine, newPartition{t.Name, t.ID, reg.Partition})
				}
			}
		}
		m.openNew(img, mine)
		for _, t := range img.Topics() {
			for _, reg := range t.Partitions {
				if slices.Contains(reg.Replicas, self) {
					want[storage.TopicPartition{Topic: t.Name, Partition: reg.Partition}] = true
					m.reconcile(img, t.Name, t.ID, reg)
				}
			}
		}
		for _, p := range m.partitions() {
			if !want[storage.TopicPartition{Topic: p.Topic(), Partition: p.Index()}] {
				m.remove(p)
			}
		}
		m.refreshConfigs(img, nil)
		// A snapshot or a coalesced run of events may hide a broker's
		// re-registration at a new address; a fetcher whose source did not
		// move keeps its connection.
		for _, f := range m.fetchers {
			if f.endpointMoved(img) {
				f.reconnect()
			}
		}
	} else {
		// Deletes first: a topic removed and re-created under the same
		// name in one batch leaves its old log before the new one opens.
		local := delta.LocalChanges(self)
		for _, pd := range local.Deletes {
			if p := m.get(pd.Topic, pd.Partition); p != nil && p.TopicID() == pd.TopicID {
				m.remove(p)
			}
		}
		var added []newPartition
		for _, list := range [][]metadata.PartitionDelta{local.Leaders, local.Followers} {
			for _, pd := range list {
				added = append(added, newPartition{pd.Topic, pd.TopicID, pd.New.Partition})
			}
		}
		m.openNew(img, added)
		for _, pd := range local.Leaders {
			m.reconcile(img, pd.Topic, pd.TopicID, *pd.New)
		}
		for _, pd := range local.Followers {
			m.reconcile(img, pd.Topic, pd.TopicID, *pd.New)
		}
		if len(delta.ConfigsChanged) > 0 {
			topics := map[string]bool{}
			all := false
			for _, c := range delta.ConfigsChanged {
				if c.ResourceType == metadata.ConfigResourceTopic {
					topics[c.ResourceName] = true
				} else {
					all = true // broker defaults feed every topic
				}
			}
			if all {
				topics = nil
			}
			m.refreshConfigs(img, topics)
		}
		for _, id := range delta.BrokersChanged {
			// Its endpoint may have moved (a restart re-registers).
			for k, f := range m.fetchers {
				if k.source == id {
					f.reconnect()
				}
			}
		}
	}
	for id, f := range m.fetchers {
		if f.empty() {
			f.cancel()
			delete(m.fetchers, id)
			continue
		}
		f.interruptForAdded()
	}
}

// newPartition names a partition an image gives this broker.
type newPartition struct {
	topic     string
	topicID   [16]byte
	partition int32
}

// openParallel bounds the logs openNew creates at once.
const openParallel = 8

// openNew opens, in parallel, the logs of the partitions in ps that are not
// hosted here yet, before reconcile walks them one by one: creating a log
// is a handful of files and fsyncs, and a topic's partitions one after the
// other made a creation (and the answer to CreateTopics, which waits for
// every replica to serve it) wait for their sum. A log that fails to open
// here is left to reconcile, which tries again and logs why.
func (m *Manager) openNew(img *metadata.Image, ps []newPartition) {
	todo := ps[:0:0]
	for _, np := range ps {
		if m.get(np.topic, np.partition) == nil {
			todo = append(todo, np)
		}
	}
	if len(todo) < 2 {
		return // reconcile opens a single one as fast
	}
	work := make(chan newPartition)
	var wg sync.WaitGroup
	for range min(openParallel, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for np := range work {
				_, _ = m.open(np.topic, np.topicID, np.partition, m.topicConfig(img, np.topic))
			}
		}()
	}
	for _, np := range todo {
		work <- np
	}
	close(work)
	wg.Wait()
}

// MarkApplied records that the image of Raft entry index has been applied
// (the feed calls it after Apply) and wakes WaitApplied.
func (m *Manager) MarkApplied(index uint64) {
	m.appliedMu.Lock()
	defer m.appliedMu.Unlock()
	if index <= m.applied.Load() {
		return
	}
	m.applied.Store(index)
	close(m.appliedCh)
	m.appliedCh = make(chan struct{})
}

// AppliedIndex is the last index given to MarkApplied.
func (m *Manager) AppliedIndex() uint64 { return m.applied.Load() }

// WaitApplied blocks until the image of Raft entry index (or a later one)
// has been applied, ctx ends, or the manager closes.
func (m *Manager) WaitApplied(ctx context.Context, index uint64) error {
	for {
		m.appliedMu.Lock()
		done, ch := m.applied.Load() >= index, m.appliedCh
		m.appliedMu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-m.ctx.Done():
			return ErrManagerClosed
		}
	}
}

func (m *Manager) topicConfig(img *metadata.Image, topic string) TopicConfig {
	// A topic's config is a function of the image (Config.TopicConfig),
	// so it is worked out once per topic and image, not once per
	// partition: resolving the precedence chain was over half the time
	// Apply took for a delta moving 10,000 partitions of one topic (a
	// broker fenced or back).
	m.tcMu.Lock()
	if m.tcImg != img {
		m.tcImg, m.tcMap = img, map[string]TopicConfig{}
	} else if tc, ok := m.tcMap[topic]; ok {
		m.tcMu.Unlock()
		return tc
	}
	m.tcMu.Unlock()
	tc, err := m.cfg.TopicConfig(img, topic)
	if err != nil {
		m.log.Error().Err(err).Str("topic", topic).Msg("topic config unusable; using defaults")
		tc = TopicConfig{Log: storage.DefaultConfig(), MinInsyncReplicas: 1}
	}
	m.tcMu.Lock()
	if m.tcImg == img {
		m.tcMap[topic] = tc
	}
	m.tcMu.Unlock()
	return tc
}

// refreshConfigs re-reads the config of the named topics (nil: all).
func (m *Manager) refreshConfigs(img *metadata.Image, topics map[string]bool) {
	for _, p := range m.partitions() {
		if topics != nil && !topics[p.Topic()] {
			continue
		}
		if err := p.applyConfig(m.topicConfig(img, p.Topic())); err != nil {
			m.log.Error().Err(err).Stringer("partition", p).Msg("topic config refused by the log")
		}
	}
}

// reconcile makes partition reg of the topic named topic, of id topicID,
// match the image.
func (m *Manager) reconcile(img *metadata.Image, topic string, topicID [16]byte, reg metadata.PartitionRegistration) {
	p := m.get(topic, reg.Partition)
	if p != nil && p.TopicID() != topicID {
		// The topic was deleted and re-created under the same name.
		m.remove(p)
		p = nil
	}
	tc := m.topicConfig(img, topic)
	if p == nil {
		var err error
		if p, err = m.open(topic, topicID, reg.Partition, tc); err != nil {
			m.log.Error().Err(err).Str("topic", topic).Int32("partition", reg.Partition).Msg("cannot open partition log; it stays offline here")
			return
		}
	}
	if reg.Leader == m.cfg.BrokerID {
		m.fetcherRemove(p)
		if err := p.makeLeader(reg, tc.MinInsyncReplicas); err != nil {
			m.log.Error().Err(err).Stringer("partition", p).Msg("cannot become leader")
			return
		}
		m.log.Debug().Stringer("partition", p).Int32("epoch", reg.LeaderEpoch).Ints32("isr", reg.ISR).Msg("leader")
		return
	}
	if p.makeFollower(reg, tc.MinInsyncReplicas) {
		m.fetcherRemove(p)
		if reg.Leader >= 0 {
			m.fetcherAdd(reg.Leader, p, reg.LeaderEpoch)
		}
		m.log.Debug().Stringer("partition", p).Int32("leader", reg.Leader).Int32("epoch", reg.LeaderEpoch).Msg("follower")
	}
}

// open creates or opens the partition's log, making sure partition.metadata
// names this topic: a log left by an earlier topic of the same name is
// deleted first.
func (m *Manager) open(topic string, topicID [16]byte, index int32, tc TopicConfig) (*Partition, error) {
	l, err := m.cfg.Storage.GetOrCreate(topic, index, tc.Log)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(l.Dir(), storage.PartitionMetadataFile)
	id, ok, err := storage.ReadPartitionMetadata(path)
	if err != nil {
		return nil, err
	}
	if ok && id != storage.TopicID(topicID) {
		m.log.Warn().Str("topic", topic).Int32("partition", index).Stringer("found", id).Stringer("want", storage.TopicID(topicID)).
			Msg("log belongs to an earlier topic of the same name; deleting it")
		if err := m.cfg.Storage.Delete(topic, index); err != nil {
			return nil, err
		}
		if l, err = m.cfg.Storage.GetOrCreate(topic, index, tc.Log); err != nil {
			return nil, err
		}
		ok = false
	}
	if !ok {
		if err := storage.WritePartitionMetadata(path, storage.TopicID(topicID)); err != nil {
			return nil, err
		}
	} else if err := l.UpdateConfig(tc.Log); err != nil {
		return nil, err
	}
	p := &Partition{
		host: m, self: m.cfg.BrokerID, lagTimeMax: m.cfg.ReplicaLagTimeMax, alterBackoff: m.cfg.FetchBackoff, logger: m.log,
		topic: topic, index: index, topicID: topicID, log: l, leader: metadata.NoLeader, leaderEpoch: -1, minISR: tc.MinInsyncReplicas,
	}
	// Durable mode: the log dir's group commit tells the partition when
	// its durable end moved, which may move the HW or answer acks=1.
	l.OnDurable(p.durableMoved)
	m.mu.Lock()
	m.parts[storage.TopicPartition{Topic: topic, Partition: index}] = p
	m.mu.Unlock()
	return p, nil
}

// remove stops a partition and deletes its log.
func (m *Manager) remove(p *Partition) {
	m.fetcherRemove(p)
	p.stop()
	m.mu.Lock()
	delete(m.parts, storage.TopicPartition{Topic: p.Topic(), Partition: p.Index()})
	m.mu.Unlock()
	if err := m.cfg.Storage.Delete(p.Topic(), p.Index()); err != nil {
		m.log.Error().Err(err).Stringer("partition", p).Msg("deleting the log of a removed partition")
	}
	m.log.Debug().Stringer("partition", p).Msg("removed")
}

// fetcherKey names one fetcher: its source broker and its index among
// that source's num.replica.fetchers.
type fetcherKey struct {
	source int32
	id     int
}

func (m *Manager) fetcherAdd(leader int32, p *Partition, epoch int32) {
	k := fetcherKey{source: leader, id: fetcherID(p.Topic(), p.Index(), m.cfg.NumFetchers)}
	f := m.fetchers[k]
	if f == nil {
		// A new fetcher starts from no verdict on its source: a mark left
		// from an earlier life of that broker says nothing now.
		m.markReached(leader)
		f = newFetcher(m, leader)
		if !m.goStart(f.run) {
			return
		}
		m.fetchers[k] = f
	}
	f.add(p, epoch)
}

// fetcherID is the fetcher a partition is fetched by among n per source,
// as Kafka's AbstractFetcherManager.getFetcherId computes it:
// abs(31 * topic.hashCode() + partition) % n, with Java's String.hashCode
// and int arithmetic, so a partition lands on the same fetcher index as on
// a Kafka broker.
func fetcherID(topic string, partition int32, n int) int {
	if n <= 1 {
		return 0
	}
	var h int32
	for _, c := range utf16.Encode([]rune(topic)) {
		h = 31*h + int32(c)
	}
	v := 31*h + partition
	if v == math.MinInt32 {
		v = 0 // Kafka's Utils.abs maps MinValue to 0
	} else if v < 0 {
		v = -v
	}
	return int(v) % n
}

func (m *Manager) fetcherRemove(p *Partition) {
	for _, f := range m.fetchers {
		f.remove(p)
	}
}

// isrLoop shrinks ISRs every half lag time, as Kafka's isr-expiration task.
func (m *Manager) isrLoop() {
	t := time.NewTicker(max(m.cfg.ReplicaLagTimeMax/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			m.CheckISR()
		}
	}
}

// CheckISR runs one ISR expiry pass over the partitions led here: an ISR
// member that has not caught up within replica.lag.time.max.ms is dropped
// through AlterPartition. The ISR loop calls it; tests may too.
func (m *Manager) CheckISR() {
	for _, p := range m.partitions() {
		p.maybeShrinkISR()
	}
}

// sendAlterPartition queues one ISR change for the next AlterPartition
// (alter_batch.go) and feeds the answer back to the partition's core.
func (m *Manager) sendAlterPartition(p *Partition, leaderEpoch int32, ch *isrChange) {
	seq := ch.seq
	m.alters.submit(alterItem{
		topic: p.Topic(), topicID: p.TopicID(), partition: p.Index(), leaderEpoch: leaderEpoch, ch: ch,
		answer: func(code int16, epoch int32) { p.alterAnswered(seq, code, epoch) },
	})
}
