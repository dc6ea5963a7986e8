package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Delta says what one Apply changed. Every list is sorted and lists the net
// change over the whole batch: a partition changed twice appears once, with
// the state before the batch and after it.
type Delta struct {
	// TopicsCreated holds the new topics as they are in the new image.
	TopicsCreated []TopicImage
	// TopicsRemoved holds the removed topics as they were in the old image.
	TopicsRemoved []TopicImage
	// ChangedPartitions lists every partition whose registration changed,
	// including the partitions of created topics and added partitions (Old
	// nil), but not those of removed topics (see TopicsRemoved).
	ChangedPartitions []PartitionDelta

	BrokersRegistered   []int32 // new, or re-registered with a new epoch
	BrokersUnregistered []int32
	BrokersFenced       []int32 // was unfenced, now fenced
	BrokersUnfenced     []int32 // was fenced or absent, now unfenced
	// BrokersShuttingDown lists brokers that entered controlled shutdown.
	BrokersShuttingDown []int32
	// BrokersChanged lists every broker whose registration changed in any way
	// (a superset of the lists above, including leaving controlled shutdown).
	BrokersChanged []int32

	ConfigsChanged []ConfigChange
	// OffsetsCommitted lists every offset a CommitOffsets in the batch set.
	OffsetsCommitted []GroupTopicPartition
	// GroupsChanged lists groups whose generation changed, or whose offsets
	// were deleted, or that were deleted.
	GroupsChanged []string

	ClusterIDChanged   bool
	FeaturesChanged    bool
	ProducerIDsChanged bool

	// Skipped lists the records Apply did not apply, with why.
	Skipped []SkippedRecord
}

// PartitionDelta is one partition's change.
type PartitionDelta struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
	Old       *PartitionRegistration // nil for a new partition
	New       *PartitionRegistration
}

// LeaderChanged reports whether the leader or leader epoch changed (true
// for a new partition).
func (d PartitionDelta) LeaderChanged() bool {
	return d.Old == nil || d.Old.Leader != d.New.Leader || d.Old.LeaderEpoch != d.New.LeaderEpoch
}

// ConfigChange names one config key whose value changed or was deleted.
type ConfigChange struct {
	ResourceType ConfigResourceType
	ResourceName string
	Key          string
}

// GroupTopicPartition names one committed offset.
type GroupTopicPartition struct {
	Group     string
	Topic     string
	Partition int32
}

// SkippedRecord is a record Apply left out; Err wraps a sentinel
// (ErrUnknownTopic, ErrStaleBrokerEpoch, ErrInvalidRecord, ...).
type SkippedRecord struct {
	Index  int // position in the batch
	Record Record
	Err    error
}

// Empty reports whether the batch changed nothing.
func (d *Delta) Empty() bool {
	return len(d.TopicsCreated) == 0 && len(d.TopicsRemoved) == 0 && len(d.ChangedPartitions) == 0 &&
		len(d.BrokersRegistered) == 0 && len(d.BrokersUnregistered) == 0 && len(d.BrokersFenced) == 0 &&
		len(d.BrokersUnfenced) == 0 && len(d.BrokersShuttingDown) == 0 && len(d.BrokersChanged) == 0 && len(d.ConfigsChanged) == 0 &&
		len(d.OffsetsCommitted) == 0 && len(d.GroupsChanged) == 0 && !d.ClusterIDChanged &&
		!d.FeaturesChanged && !d.ProducerIDsChanged
}

// Apply replays a batch of records onto the image and returns the new image
// and what changed. It never modifies img. It is deterministic and total:
// the same image and records give an equal image on every node, and a record
// that does not fit the state (an unknown topic or broker, a stale epoch, an
// inconsistent partition) is skipped, listed in Delta.Skipped, and changes
// nothing. It never panics on any record values.
//
// The cost is proportional to what the batch touches: untouched brokers,
// topics, shards of the topic and group maps, and groups are shared with img.
func (img *Image) Apply(recs []Record) (*Image, *Delta) {
	b := newApplier(img)
	for i, r := range recs {
		if err := b.replay(r); err != nil {
			b.delta.Skipped = append(b.delta.Skipped, SkippedRecord{Index: i, Record: r, Err: err})
		}
	}
	return b.finish()
}

type configKey struct {
	typ  ConfigResourceType
	name string
	key  string
}

// applier holds one Apply's work in progress: the next image, which parts
// of it this batch already owns (copied, so writable), and what it touched.
type applier struct {
	old *Image
	img Image

	brokersOwned, featuresOwned, brokerCfgOwned bool

	topics      *shardBuilder[[16]byte, *TopicImage]
	names       *shardBuilder[string, [16]byte]
	groups      *shardBuilder[string, *groupImage]
	topicOwned  map[[16]byte]bool
	groupOwned  map[string]bool
	touchTopic  map[[16]byte]bool
	touchBroker map[int32]bool
	touchConfig map[configKey]bool
	touchGroup  map[string]bool
	committed   map[GroupTopicPartition]bool

	delta Delta
}

func newApplier(old *Image) *applier {
	b := &applier{old: old, img: *old}
	b.topics = newShardBuilder(&old.topics)
	b.names = newShardBuilder(&old.topicNames)
	b.groups = newShardBuilder(&old.groups)
	return b
}

func mark[K comparable](m *map[K]bool, k K) {
	if *m == nil {
		*m = make(map[K]bool)
	}
	(*m)[k] = true
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRecord, fmt.Sprintf(format, args...))
}

func (b *applier) replay(rec Record) error {
	switch r := rec.(type) {
	case *ClusterID:
		return b.clusterID(r)
	case *FeatureLevel:
		return b.featureLevel(r)
	case *RegisterBroker:
		return b.registerBroker(r)
	case *UnregisterBroker:
		return b.unregisterBroker(r)
	case *FenceBroker:
		return b.changeBroker(r.BrokerID, r.BrokerEpoch, func(br *BrokerRegistration) { br.Fenced = true })
	case *UnfenceBroker:
		return b.changeBroker(r.BrokerID, r.BrokerEpoch, func(br *BrokerRegistration) { br.Fenced = false })
	case *BrokerShutdown:
		return b.changeBroker(r.BrokerID, r.BrokerEpoch, func(br *BrokerRegistration) { br.InControlledShutdown = r.InControlledShutdown })
	case *CreateTopic:
		return b.createTopic(r)
	case *AddPartitions:
		return b.addPartitions(r)
	case *PartitionChange:
		return b.partitionChange(r)
	case *RemoveTopic:
		return b.removeTopic(r)
	case *Config:
		return b.config(r)
	case *CommitOffsets:
		return b.commitOffsets(r)
	case *DeleteOffsets:
		return b.deleteOffsets(r)
	case *DeleteGroup:
		return b.deleteGroup(r)
	case *GroupGeneration:
		return b.groupGeneration(r)
	case *ProducerIds:
		return b.producerIDs(r)
	case nil:
		return invalid("nil record")
	}
	return invalid("unsupported record implementation %T", rec)
}

func (b *applier) clusterID(r *ClusterID) error {
	switch {
	case r.ID == "":
		return invalid("empty cluster id")
	case b.img.clusterID == r.ID:
		return nil
	case b.img.clusterID != "":
		return fmt.Errorf("%w: have %q, record has %q", ErrClusterIDMismatch, b.img.clusterID, r.ID)
	}
	b.img.clusterID = r.ID
	b.delta.ClusterIDChanged = true
	return nil
}

func (b *applier) featureLevel(r *FeatureLevel) error {
	if r.Name == "" || r.Level < 0 {
		return invalid("feature %q level %d", r.Name, r.Level)
	}
	if !b.featuresOwned {
		b.img.features = maps.Clone(b.img.features)
		if b.img.features == nil {
			b.img.features = make(map[string]int16)
		}
		b.featuresOwned = true
	}
	if r.Level == 0 {
		delete(b.img.features, r.Name)
	} else {
		b.img.features[r.Name] = r.Level
	}
	b.delta.FeaturesChanged = true
	return nil
}

func (b *applier) ownBrokers() {
	if !b.brokersOwned {
		m := make(map[int32]*BrokerRegistration, len(b.img.brokers)+1)
		maps.Copy(m, b.img.brokers)
		b.img.brokers = m
		b.brokersOwned = true
	}
}

func (b *applier) registerBroker(r *RegisterBroker) error {
	if r.BrokerID < 0 {
		return invalid("broker id %d", r.BrokerID)
	}
	if cur, ok := b.img.brokers[r.BrokerID]; ok && r.BrokerEpoch <= cur.Epoch {
		return fmt.Errorf("%w: broker %d registration epoch %d, current %d", ErrStaleBrokerEpoch, r.BrokerID, r.BrokerEpoch, cur.Epoch)
	}
	b.ownBrokers()
	b.img.brokers[r.BrokerID] = &BrokerRegistration{
		ID: r.BrokerID, IncarnationID: r.IncarnationID, Epoch: r.BrokerEpoch,
		Endpoints: slices.Clone(r.Endpoints), Rack: r.Rack, Fenced: r.Fenced,
		InControlledShutdown: r.InControlledShutdown,
	}
	mark(&b.touchBroker, r.BrokerID)
	return nil
}

func (b *applier) brokerAt(id int32, epoch int64) (*BrokerRegistration, error) {
	cur, ok := b.img.brokers[id]
	if !ok {
		return nil, fmt.Errorf("%w: broker %d", ErrUnknownBroker, id)
	}
	if cur.Epoch != epoch {
		return nil, fmt.Errorf("%w: broker %d epoch %d, current %d", ErrStaleBrokerEpoch, id, epoch, cur.Epoch)
	}
	return cur, nil
}

func (b *applier) unregisterBroker(r *UnregisterBroker) error {
	if _, err := b.brokerAt(r.BrokerID, r.BrokerEpoch); err != nil {
		return err
	}
	b.ownBrokers()
	delete(b.img.brokers, r.BrokerID)
	mark(&b.touchBroker, r.BrokerID)
	return nil
}

func (b *applier) changeBroker(id int32, epoch int64, f func(*BrokerRegistration)) error {
	cur, err := b.brokerAt(id, epoch)
	if err != nil {
		return err
	}
	next := *cur
	f(&next)
	b.ownBrokers()
	b.img.brokers[id] = &next
	mark(&b.touchBroker, id)
	return nil
}

// checkPartition holds a registration to the invariants every image keeps,
// so a bad record is skipped rather than stored.
func checkPartition(p *PartitionRegistration) error {
	if len(p.Replicas) == 0 {
		return invalid("partition %d has no replicas", p.Partition)
	}
	for i, r := range p.Replicas {
		if r < 0 || slices.Contains(p.Replicas[:i], r) {
			return invalid("partition %d replicas %v", p.Partition, p.Replicas)
		}
	}
	for i, r := range p.ISR {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.ISR[:i], r) {
			return invalid("partition %d ISR %v not a set within replicas %v", p.Partition, p.ISR, p.Replicas)
		}
	}
	if p.Leader != NoLeader && !slices.Contains(p.Replicas, p.Leader) {
		return invalid("partition %d leader %d not in replicas %v", p.Partition, p.Leader, p.Replicas)
	}
	if p.LeaderEpoch < 0 || p.PartitionEpoch < 0 {
		return invalid("partition %d negative epoch", p.Partition)
	}
	return nil
}

func clonePartition(p PartitionRegistration) PartitionRegistration {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	return p
}

func checkNewPartitions(ps []PartitionRegistration, first int) error {
	for i := range ps {
		if int(ps[i].Partition) != first+i {
			return invalid("partition %d where %d was expected", ps[i].Partition, first+i)
		}
		if err := checkPartition(&ps[i]); err != nil {
			return err
		}
	}
	return nil
}

func (b *applier) createTopic(r *CreateTopic) error {
	if err := ValidateTopicName(r.Name); err != nil {
		return err
	}
	if _, ok := b.names.get(r.Name, hashString(r.Name)); ok {
		return fmt.Errorf("%w: %q", ErrTopicExists, r.Name)
	}
	if r.ID == ([16]byte{}) {
		return invalid("topic %q has the zero id", r.Name)
	}
	if _, ok := b.topics.get(r.ID, hashID(r.ID)); ok {
		return fmt.Errorf("%w: topic id of %q already in use", ErrTopicExists, r.Name)
	}
	if len(r.Partitions) == 0 || len(r.Partitions) > maxPartitions {
		return fmt.Errorf("%w: topic %q with %d partitions", ErrInvalidPartitions, r.Name, len(r.Partitions))
	}
	if err := checkNewPartitions(r.Partitions, 0); err != nil {
		return err
	}
	t := &TopicImage{Name: r.Name, ID: r.ID, Partitions: make([]PartitionRegistration, len(r.Partitions))}
	if len(r.Configs) > 0 {
		t.Configs = maps.Clone(r.Configs)
	}
	for i, p := range r.Partitions {
		t.Partitions[i] = clonePartition(p)
	}
	b.topics.set(r.ID, hashID(r.ID), t)
	b.names.set(r.Name, hashString(r.Name), r.ID)
	mark(&b.topicOwned, r.ID)
	mark(&b.touchTopic, r.ID)
	return nil
}

// maxPartitions bounds a topic's partition count so partition numbers fit
// in int32 with room to spare.
const maxPartitions = 1 << 20

// ownTopic returns a writable copy of a topic, copying it once per batch.
func (b *applier) ownTopic(id [16]byte) (*TopicImage, error) {
	t, ok := b.topics.get(id, hashID(id))
	if !ok {
		return nil, fmt.Errorf("%w: id %x", ErrUnknownTopic, id)
	}
	if !b.topicOwned[id] {
		c := *t
		c.Partitions = slices.Clone(t.Partitions)
		t = &c
		b.topics.set(id, hashID(id), t)
		mark(&b.topicOwned, id)
	}
	mark(&b.touchTopic, id)
	return t, nil
}

func (b *applier) addPartitions(r *AddPartitions) error {
	t, ok := b.topics.get(r.TopicID, hashID(r.TopicID))
	if !ok {
		return fmt.Errorf("%w: id %x", ErrUnknownTopic, r.TopicID)
	}
	if len(r.Partitions) == 0 || len(t.Partitions)+len(r.Partitions) > maxPartitions {
		return fmt.Errorf("%w: adding %d to %d", ErrInvalidPartitions, len(r.Partitions), len(t.Partitions))
	}
	if err := checkNewPartitions(r.Partitions, len(t.Partitions)); err != nil {
		return err
	}
	t, _ = b.ownTopic(r.TopicID)
	for _, p := range r.Partitions {
		t.Partitions = append(t.Partitions, clonePartition(p))
	}
	return nil
}

func (b *applier) partitionChange(r *PartitionChange) error {
	t, ok := b.topics.get(r.TopicID, hashID(r.TopicID))
	if !ok {
		return fmt.Errorf("%w: id %x", ErrUnknownTopic, r.TopicID)
	}
	cur, ok := t.Partition(r.Partition)
	if !ok {
		return fmt.Errorf("%w: %s-%d", ErrUnknownPartition, t.Name, r.Partition)
	}
	next := cur
	if r.Replicas != nil {
		next.Replicas = slices.Clone(r.Replicas)
	}
	if r.ISR != nil {
		next.ISR = slices.Clone(r.ISR)
	}
	if r.Leader != NoLeaderChange {
		if r.Leader < NoLeader {
			return invalid("leader %d", r.Leader)
		}
		next.Leader = r.Leader
		next.LeaderEpoch++
	}
	next.PartitionEpoch++
	if next.LeaderEpoch < 0 || next.PartitionEpoch < 0 {
		return invalid("%s-%d epoch overflow", t.Name, r.Partition)
	}
	if err := checkPartition(&next); err != nil {
		return err
	}
	t, _ = b.ownTopic(r.TopicID)
	t.Partitions[r.Partition] = next
	return nil
}

func (b *applier) removeTopic(r *RemoveTopic) error {
	t, ok := b.topics.get(r.TopicID, hashID(r.TopicID))
	if !ok {
		return fmt.Errorf("%w: id %x", ErrUnknownTopic, r.TopicID)
	}
	b.topics.del(r.TopicID, hashID(r.TopicID))
	b.names.del(t.Name, hashString(t.Name))
	mark(&b.touchTopic, r.TopicID)
	return nil
}

func setOrDelete(m map[string]string, r *Config) map[string]string {
	m = maps.Clone(m)
	if r.Delete {
		delete(m, r.Key)
	} else {
		if m == nil {
			m = make(map[string]string, 1)
		}
		m[r.Key] = r.Value
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

func (b *applier) config(r *Config) error {
	if r.Key == "" {
		return invalid("config with an empty key")
	}
	typ, name := r.ResourceType, r.ResourceName
	if typ == ConfigResourceBroker && name == "" {
		typ = ConfigResourceCluster
	}
	switch typ {
	case ConfigResourceCluster:
		if name != "" {
			return invalid("cluster config with resource name %q", name)
		}
		// Cluster configs are few; copying them per change keeps this simple.
		b.img.clusterConfigs = setOrDelete(b.img.clusterConfigs, r)
	case ConfigResourceBroker:
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil || id < 0 || strconv.Itoa(int(id)) != name {
			return invalid("broker config resource name %q is not a broker id", name)
		}
		if !b.brokerCfgOwned {
			b.img.brokerConfigs = maps.Clone(b.img.brokerConfigs)
			b.brokerCfgOwned = true
		}
		m := setOrDelete(b.img.brokerConfigs[int32(id)], r)
		if m == nil {
			delete(b.img.brokerConfigs, int32(id))
		} else {
			if b.img.brokerConfigs == nil {
				b.img.brokerConfigs = make(map[int32]map[string]string)
			}
			b.img.brokerConfigs[int32(id)] = m
		}
		if len(b.img.brokerConfigs) == 0 {
			b.img.brokerConfigs = nil
		}
	case ConfigResourceTopic:
		id, ok := b.names.get(name, hashString(name))
		if !ok {
			return fmt.Errorf("%w: %q", ErrUnknownTopic, name)
		}
		t, _ := b.ownTopic(id)
		t.Configs = setOrDelete(t.Configs, r)
	default:
		return invalid("config resource type %d", r.ResourceType)
	}
	mark(&b.touchConfig, configKey{typ, name, r.Key})
	return nil
}

// ownGroup returns a writable copy of a group, copying it once per batch.
func (b *applier) ownGroup(name string) *groupImage {
	h := hashString(name)
	g, ok := b.groups.get(name, h)
	if !b.groupOwned[name] {
		c := &groupImage{}
		if ok {
			c.offsets = maps.Clone(g.offsets)
			c.generation = g.generation
		}
		g = c
		b.groups.set(name, h, g)
		mark(&b.groupOwned, name)
	}
	return g
}

func (b *applier) commitOffsets(r *CommitOffsets) error {
	if r.Group == "" {
		return invalid("offset commit without a group")
	}
	for _, o := range r.Offsets {
		if o.Topic == "" || o.Partition < 0 {
			return invalid("offset commit for %q partition %d", o.Topic, o.Partition)
		}
	}
	if len(r.Offsets) == 0 {
		return nil
	}
	g := b.ownGroup(r.Group)
	if g.offsets == nil {
		g.offsets = make(map[TopicPartition]OffsetAndMetadata, len(r.Offsets))
	}
	for _, o := range r.Offsets {
		g.offsets[TopicPartition{o.Topic, o.Partition}] = OffsetAndMetadata{
			Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimeMs: o.CommitTimeMs,
		}
		mark(&b.committed, GroupTopicPartition{r.Group, o.Topic, o.Partition})
	}
	mark(&b.touchGroup, r.Group)
	return nil
}

func (b *applier) deleteOffsets(r *DeleteOffsets) error {
	g, ok := b.groups.get(r.Group, hashString(r.Group))
	if !ok {
		return nil
	}
	found := false
	for _, tp := range r.Partitions {
		if _, ok := g.offsets[tp]; ok {
			found = true
		}
	}
	if !found {
		return nil
	}
	g = b.ownGroup(r.Group)
	for _, tp := range r.Partitions {
		delete(g.offsets, tp)
		delete(b.committed, GroupTopicPartition{r.Group, tp.Topic, tp.Partition})
	}
	mark(&b.touchGroup, r.Group)
	return nil
}

func (b *applier) deleteGroup(r *DeleteGroup) error {
	if _, ok := b.groups.get(r.Group, hashString(r.Group)); !ok {
		return nil
	}
	b.groups.del(r.Group, hashString(r.Group))
	delete(b.groupOwned, r.Group)
	for k := range b.committed {
		if k.Group == r.Group {
			delete(b.committed, k)
		}
	}
	mark(&b.touchGroup, r.Group)
	return nil
}

func (b *applier) groupGeneration(r *GroupGeneration) error {
	if r.Group == "" || r.Generation < 0 {
		return invalid("group generation %q %d", r.Group, r.Generation)
	}
	if g, ok := b.groups.get(r.Group, hashString(r.Group)); ok && g.generation != nil && r.Generation <= g.generation.Generation {
		return fmt.Errorf("%w: group %q generation %d, current %d", ErrStaleRecord, r.Group, r.Generation, g.generation.Generation)
	}
	g := b.ownGroup(r.Group)
	gen := *r
	gen.Members = slices.Clone(r.Members)
	g.generation = &gen
	mark(&b.touchGroup, r.Group)
	return nil
}

func (b *applier) producerIDs(r *ProducerIds) error {
	if r.NextProducerID <= b.img.producerIDs.NextProducerID {
		return fmt.Errorf("%w: producer id block %d, next is already %d", ErrStaleRecord, r.NextProducerID, b.img.producerIDs.NextProducerID)
	}
	b.img.producerIDs = *r
	b.delta.ProducerIDsChanged = true
	return nil
}

// finish seals the new image and computes the net delta by comparing what
// the batch touched in the old and new images.
func (b *applier) finish() (*Image, *Delta) {
	b.img.topics = b.topics.build()
	b.img.topicNames = b.names.build()
	// Drop groups the batch emptied, so equal states have equal images.
	for name := range b.groupOwned {
		if g, ok := b.groups.get(name, hashString(name)); ok && len(g.offsets) == 0 && g.generation == nil {
			b.groups.del(name, hashString(name))
		} else if ok && len(g.offsets) == 0 {
			g.offsets = nil
		}
	}
	b.img.groups = b.groups.build()
	next := &b.img
	d := &b.delta
	old := b.old

	for id := range b.touchTopic {
		ot, oldOK := old.topics.get(id, hashID(id))
		nt, newOK := next.topics.get(id, hashID(id))
		switch {
		case !oldOK && newOK:
			d.TopicsCreated = append(d.TopicsCreated, *nt)
			for i := range nt.Partitions {
				d.ChangedPartitions = append(d.ChangedPartitions, PartitionDelta{TopicID: id, Topic: nt.Name, Partition: int32(i), New: &nt.Partitions[i]})
			}
		case oldOK && !newOK:
			d.TopicsRemoved = append(d.TopicsRemoved, *ot)
		case oldOK && newOK:
			for i := range nt.Partitions {
				pd := PartitionDelta{TopicID: id, Topic: nt.Name, Partition: int32(i), New: &nt.Partitions[i]}
				if i < len(ot.Partitions) {
					if ot.Partitions[i].Equal(nt.Partitions[i]) {
						continue
					}
					pd.Old = &ot.Partitions[i]
				}
				d.ChangedPartitions = append(d.ChangedPartitions, pd)
			}
		}
	}
	byName := func(a, b TopicImage) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(d.TopicsCreated, byName)
	slices.SortFunc(d.TopicsRemoved, byName)
	slices.SortFunc(d.ChangedPartitions, func(a, b PartitionDelta) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})

	for id := range b.touchBroker {
		ob, oldOK := old.brokers[id]
		nb, newOK := next.brokers[id]
		if newOK && (!oldOK || ob.Epoch != nb.Epoch || ob.IncarnationID != nb.IncarnationID) {
			d.BrokersRegistered = append(d.BrokersRegistered, id)
		}
		if oldOK && !newOK {
			d.BrokersUnregistered = append(d.BrokersUnregistered, id)
		}
		if newOK && nb.Fenced && oldOK && !ob.Fenced {
			d.BrokersFenced = append(d.BrokersFenced, id)
		}
		if newOK && !nb.Fenced && (!oldOK || ob.Fenced) {
			d.BrokersUnfenced = append(d.BrokersUnfenced, id)
		}
		if newOK && nb.InControlledShutdown && (!oldOK || !ob.InControlledShutdown) {
			d.BrokersShuttingDown = append(d.BrokersShuttingDown, id)
		}
		if oldOK != newOK || (oldOK && !ob.equal(nb)) {
			d.BrokersChanged = append(d.BrokersChanged, id)
		}
	}
	for _, l := range []*[]int32{&d.BrokersRegistered, &d.BrokersUnregistered, &d.BrokersFenced, &d.BrokersUnfenced, &d.BrokersShuttingDown, &d.BrokersChanged} {
		slices.Sort(*l)
	}

	for k := range b.touchConfig {
		ov, oldOK := old.configValue(k)
		nv, newOK := next.configValue(k)
		if oldOK != newOK || ov != nv {
			d.ConfigsChanged = append(d.ConfigsChanged, ConfigChange{k.typ, k.name, k.key})
		}
	}
	slices.SortFunc(d.ConfigsChanged, func(a, b ConfigChange) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), strings.Compare(a.ResourceName, b.ResourceName), strings.Compare(a.Key, b.Key))
	})

	for k := range b.committed {
		d.OffsetsCommitted = append(d.OffsetsCommitted, k)
	}
	slices.SortFunc(d.OffsetsCommitted, func(a, b GroupTopicPartition) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for g := range b.touchGroup {
		og, oldOK := old.groups.get(g, hashString(g))
		ng, newOK := next.groups.get(g, hashString(g))
		var ogen, ngen *GroupGeneration
		if oldOK {
			ogen = og.generation
		}
		if newOK {
			ngen = ng.generation
		}
		genChanged := (ogen == nil) != (ngen == nil) || (ogen != nil && !ogen.equal(ngen))
		offsetsRemoved := oldOK && (!newOK || len(ng.offsets) < len(og.offsets))
		if genChanged || offsetsRemoved || oldOK != newOK {
			d.GroupsChanged = append(d.GroupsChanged, g)
		}
	}
	slices.Sort(d.GroupsChanged)
	return next, d
}

func (img *Image) configValue(k configKey) (string, bool) {
	var m map[string]string
	switch k.typ {
	case ConfigResourceCluster:
		m = img.clusterConfigs
	case ConfigResourceBroker:
		id, err := strconv.ParseInt(k.name, 10, 32)
		if err != nil {
			return "", false
		}
		m = img.brokerConfigs[int32(id)]
	case ConfigResourceTopic:
		if t, ok := img.Topic(k.name); ok {
			m = t.Configs
		}
	}
	v, ok := m[k.key]
	return v, ok
}
