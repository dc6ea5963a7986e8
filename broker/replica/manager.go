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
	// ELR is eligible.leader.replicas.version 1 (KIP-966): the leader's HW
	// then moves only while the ISR has MinInsyncReplicas members, so a
	// replica that left a short ISR holds every acknowledged record and
	// the controller may elect it.
	ELR bool
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
	// OnOffline, when set, is told of replicas taken offline here: those
	// of a log dir that failed (HandleDirFailure, with the dir), and
	// those that cannot be opened because a log dir is offline since the
	// start (dir ""). The broker tells the controller. It must not block
	// on the Manager.
	OnOffline func(dir string, parts []storage.TopicPartition)
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
	// offline holds the partitions whose log dir failed, with the dir
	// (HandleDirFailure): they answer KAFKA_STORAGE_ERROR and are not
	// opened again until the broker restarts.
	offline map[storage.TopicPartition]string

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
	// leaderQuota is leader.replication.throttled.rate (throttle.go).
	leaderQuota *rateQuota

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
		fetchers: map[fetcherKey]*fetcher{}, parts: map[storage.TopicPartition]*Partition{}, offline: map[storage.TopicPartition]string{},
		appliedCh: make(chan struct{}), followerQuota: newRateQuota(), leaderQuota: newRateQuota(), lost: map[int32]time.Time{},
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
	dir, offline := m.offline[storage.TopicPartition{Topic: topic, Partition: partition}]
	m.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	if offline {
		// Kafka answers a replica in a failed log dir so
		// (ReplicaManager's HostedPartition.Offline).
		if dir == "" {
			return nil, fmt.Errorf("%w: %s-%d cannot be opened while a log dir is offline", kerr.KafkaStorageError, topic, partition)
		}
		return nil, fmt.Errorf("%w: %s-%d is in log dir %s, which is offline", kerr.KafkaStorageError, topic, partition, dir)
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
					mine = append(mine, newPartition{t.Name, t.ID, reg.Partition, false})
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
		var gone []*Partition
		for _, p := range m.partitions() {
			if !want[storage.TopicPartition{Topic: p.Topic(), Partition: p.Index()}] {
				gone = append(gone, p)
			}
		}
		m.removeAll(gone)
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
		var gone []*Partition
		for _, pd := range local.Deletes {
			if p := m.get(pd.Topic, pd.Partition); p != nil && p.TopicID() == pd.TopicID {
				gone = append(gone, p)
			}
		}
		m.removeAll(gone)
		var added []newPartition
		for _, list := range [][]metadata.PartitionDelta{local.Leaders, local.Followers} {
			for _, pd := range list {
				added = append(added, newPartition{pd.Topic, pd.TopicID, pd.New.Partition, pd.Old == nil || !slices.Contains(pd.Old.Replicas, self)})
			}
		}
		m.openNew(img, added)
		for _, pd := range local.Leaders {
			m.reconcileNew(img, pd.Topic, pd.TopicID, *pd.New, pd.Old == nil || !slices.Contains(pd.Old.Replicas, self))
		}
		for _, pd := range local.Followers {
			m.reconcileNew(img, pd.Topic, pd.TopicID, *pd.New, pd.Old == nil || !slices.Contains(pd.Old.Replicas, self))
		}
		if len(delta.ConfigsChanged) > 0 || delta.FeaturesChanged {
			topics := map[string]bool{}
			// eligible.leader.replicas.version changes every leader's HW rule.
			all := delta.FeaturesChanged
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
	// isNew: the image just gave this broker the partition (a new topic
	// or partition, a reassignment adding it), so its log may be made
	// even while a log dir is offline (storage.Manager.GetOrCreateNew).
	isNew bool
}

// openParallel bounds the logs openNew creates (and removeAll deletes) at
// once. Creating a log is a handful of fsyncs of small files and
// directories; the file system's journal commits concurrent fsyncs
// together, so more at once is cheaper per log: on this project's test
// machine (ext4 on a virtual disk) 8 concurrent writers got 5,300
// fsyncs/s, 32 got 14,400 and 128 got 20,200.
const openParallel = 32

// openNew opens, in parallel, the logs of the partitions in ps that are not
// hosted here yet, before reconcile walks them one by one: creating a log
// is a handful of files and fsyncs, and a topic's partitions one after the
// other made a creation (and the answer to CreateTopics, which waits for
// every replica to serve it) wait for their sum. A log that fails to open
// here is left to reconcile, which tries again and logs why.
func (m *Manager) openNew(img *metadata.Image, ps []newPartition) {
	todo := ps[:0:0]
	for _, np := range ps {
		if m.get(np.topic, np.partition) == nil && !m.isOffline(np.topic, np.partition) {
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
				_, _ = m.open(img, np.topic, np.topicID, np.partition, m.topicConfig(img, np.topic), np.isNew)
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
		tc = TopicConfig{Log: storage.DefaultConfig(), MinInsyncReplicas: 1, ELR: img.ELREnabled()}
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
	m.reconcileNew(img, topic, topicID, reg, false)
}

func (m *Manager) reconcileNew(img *metadata.Image, topic string, topicID [16]byte, reg metadata.PartitionRegistration, isNew bool) {
	if m.isOffline(topic, reg.Partition) {
		return // its log dir failed: nothing to serve or fetch until a restart
	}
	p := m.get(topic, reg.Partition)
	if p != nil && p.TopicID() != topicID {
		// The topic was deleted and re-created under the same name.
		m.remove(p)
		p = nil
	}
	tc := m.topicConfig(img, topic)
	if p == nil {
		var err error
		if p, err = m.open(img, topic, topicID, reg.Partition, tc, isNew); err != nil {
			if errors.Is(err, storage.ErrLogDirFailed) {
				// Its log may be in a dir that is offline since the
				// start: the replica is offline too, as in Kafka.
				m.mu.Lock()
				m.offline[storage.TopicPartition{Topic: topic, Partition: reg.Partition}] = ""
				m.mu.Unlock()
				if m.cfg.OnOffline != nil {
					m.cfg.OnOffline("", []storage.TopicPartition{{Topic: topic, Partition: reg.Partition}})
				}
			}
			m.log.Error().Err(err).Str("topic", topic).Int32("partition", reg.Partition).Msg("cannot open partition log; it stays offline here")
			return
		}
	}
	if reg.Leader == m.cfg.BrokerID {
		m.fetcherRemove(p)
		if err := p.makeLeader(reg, tc); err != nil {
			m.log.Error().Err(err).Stringer("partition", p).Msg("cannot become leader")
			return
		}
		m.log.Debug().Stringer("partition", p).Int32("epoch", reg.LeaderEpoch).Ints32("isr", reg.ISR).Msg("leader")
		return
	}
	if p.makeFollower(reg, tc) {
		m.fetcherRemove(p)
		if reg.Leader >= 0 {
			m.fetcherAdd(reg.Leader, p, reg.LeaderEpoch)
		}
		m.log.Debug().Stringer("partition", p).Int32("leader", reg.Leader).Int32("epoch", reg.LeaderEpoch).Msg("follower")
	}
}

// open creates or opens the partition's log, making sure partition.metadata
// names this topic: a log left by an earlier topic of the same name is
// deleted first. A log it creates gets its partition.metadata and, where
// img names this broker its leader, its first leader epoch, in the
// creation's one directory fsync (storage.NewLog): before, each was a file
// and a directory fsync of its own after the creation's, and the epoch's
// ran in reconcile, one partition after another.
func (m *Manager) open(img *metadata.Image, topic string, topicID [16]byte, index int32, tc TopicConfig, isNew bool) (*Partition, error) {
	nl := &storage.NewLog{TopicID: storage.TopicID(topicID), LeaderEpoch: -1}
	if t, ok := img.Topic(topic); ok && t.ID == topicID {
		for _, reg := range t.Partitions {
			if reg.Partition == index && reg.Leader == m.cfg.BrokerID {
				nl.LeaderEpoch = reg.LeaderEpoch
			}
		}
	}
	l, err := m.cfg.Storage.GetOrCreateWith(topic, index, tc.Log, isNew, nl)
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
		if l, err = m.cfg.Storage.GetOrCreateWith(topic, index, tc.Log, true, nl); err != nil {
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
		topic: topic, index: index, topicID: topicID, leader: metadata.NoLeader, leaderEpoch: -1, minISR: tc.MinInsyncReplicas, hwMinISR: hwMinISR(tc),
	}
	p.logp.Store(l)
	// Durable mode: the log dir's group commit tells the partition when
	// its durable end moved, which may move the HW or answer acks=1.
	l.OnDurable(p.durableMoved)
	m.mu.Lock()
	m.parts[storage.TopicPartition{Topic: topic, Partition: index}] = p
	m.mu.Unlock()
	return p, nil
}

// remove stops a partition and deletes its log.
func (m *Manager) remove(p *Partition) { m.removeAll([]*Partition{p}) }

// removeAll stops partitions and deletes their logs. The stops run here, in
// order (the fetchers are the apply goroutine's); the deletions run in
// parallel, openParallel at a time, so the log dir fsync and the checkpoint
// rewrite each deletion needs are shared (storage's group sync) instead of
// taken once per partition in turn: a DeleteTopics of a 6-partition topic
// cost each replica broker six times four checkpoint files, each fsynced
// with its directory.
func (m *Manager) removeAll(ps []*Partition) {
	for _, p := range ps {
		m.fetcherRemove(p)
		p.stop()
		m.mu.Lock()
		delete(m.parts, storage.TopicPartition{Topic: p.Topic(), Partition: p.Index()})
		m.mu.Unlock()
	}
	work := make(chan *Partition)
	var wg sync.WaitGroup
	for range min(openParallel, len(ps)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				if err := m.cfg.Storage.Delete(p.Topic(), p.Index()); err != nil {
					m.log.Error().Err(err).Stringer("partition", p).Msg("deleting the log of a removed partition")
				}
				m.log.Debug().Stringer("partition", p).Msg("removed")
			}
		}()
	}
	for _, p := range ps {
		work <- p
	}
	close(work)
	wg.Wait()
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

func (m *Manager) isOffline(topic string, partition int32) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.offline[storage.TopicPartition{Topic: topic, Partition: partition}]
	return ok
}

// HandleDirFailure stops serving and fetching the partitions whose logs
// were in a log dir that failed (storage.ManagerOptions.OnDirFailure), as
// Kafka's ReplicaManager.handleLogDirFailure does: they are offline here
// until the broker restarts, and answer KAFKA_STORAGE_ERROR. Telling the
// controller, which moves their leaderships away and takes this replica
// out of their ISRs, is the caller's part.
func (m *Manager) HandleDirFailure(dir string, parts []storage.TopicPartition) {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	for _, tp := range parts {
		p := m.get(tp.Topic, tp.Partition)
		m.mu.Lock()
		m.offline[tp] = dir
		delete(m.parts, tp)
		m.mu.Unlock()
		if p != nil {
			m.fetcherRemove(p)
			p.stop()
		}
	}
	for id, f := range m.fetchers {
		if f.empty() {
			f.cancel()
			delete(m.fetchers, id)
		}
	}
	m.log.Error().Str("dir", dir).Int("partitions", len(parts)).Msg("log dir failed: its partitions are offline on this broker")
	if m.cfg.OnOffline != nil {
		m.cfg.OnOffline(dir, parts)
	}
}

// OfflinePartitions returns the partitions HandleDirFailure took offline,
// with their log dir.
func (m *Manager) OfflinePartitions() map[storage.TopicPartition]string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[storage.TopicPartition]string, len(m.offline))
	for tp, d := range m.offline {
		out[tp] = d
	}
	return out
}

// LogDirMoves returns the log dir moves in flight.
func (m *Manager) LogDirMoves() []storage.MoveState { return m.cfg.Storage.Moves() }

// MoveLogDir moves the partition's log to another of this broker's log
// dirs while it serves (AlterReplicaLogDirs; storage.Manager.MoveLog): in
// the background, returning at once. It refuses a dir that is not a log
// dir or is offline, and a partition not hosted here. A move to the dir
// the log is in does nothing; one to another dir replaces a move in
// flight.
func (m *Manager) MoveLogDir(topic string, partition int32, dir string) error {
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	if m.isOffline(topic, partition) {
		return fmt.Errorf("%w: %s-%d is offline", storage.ErrLogDirFailed, topic, partition)
	}
	p := m.get(topic, partition)
	if p == nil {
		// Kafka records the dir for when the replica comes, and answers
		// REPLICA_NOT_AVAILABLE meanwhile.
		m.cfg.Storage.PreferDir(tp, dir)
		return fmt.Errorf("%w: %s-%d", storage.ErrNoLog, topic, partition)
	}
	do, err := m.cfg.Storage.MoveTarget(tp, dir)
	if err != nil || !do {
		return err
	}
	m.goStart(func() {
		err := m.cfg.Storage.MoveLog(tp, dir, storage.MoveOptions{
			Stop: m.ctx.Done(),
			// Role changes (which assign leader epochs in the log) wait
			// for the swap, a few milliseconds.
			Hold: func(cancel <-chan struct{}) (func(), bool) {
				for !m.applyMu.TryLock() {
					select {
					case <-cancel:
						return nil, false
					case <-m.ctx.Done():
						return nil, false
					case <-time.After(time.Millisecond):
					}
				}
				return m.applyMu.Unlock, true
			},
			Swap: func(nl *storage.Log) {
				old := p.logp.Swap(nl)
				old.OnDurable(nil)
				nl.OnDurable(p.durableMoved)
				p.wakeAll()
			},
		})
		if err != nil {
			m.log.Warn().Err(err).Stringer("partition", p).Str("dir", dir).Msg("moving the log to another log dir failed; it stays where it was")
			return
		}
		m.log.Info().Stringer("partition", p).Str("dir", dir).Msg("log moved to another log dir")
	})
	return nil
}
