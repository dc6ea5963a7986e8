package metadata

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
	"strings"
)

// Image is one immutable version of the cluster metadata. It never changes
// after Apply returns it, so any number of goroutines may read it and share it
// without locks; Apply builds the next image and shares every untouched part
// with this one.
//
// Accessors return values, and fresh maps where they return a map of the
// image (Offsets, ClusterConfigs, BrokerConfigs, Features); the slices and
// maps inside returned values (Replicas, ISR, Endpoints, Partitions,
// TopicImage.Configs) are shared with the image and must not be modified.
type Image struct {
	clusterID      string
	features       map[string]int16
	voterDirs      map[int32][16]byte // controller voters' directory ids (VoterDirectory)
	brokers        map[int32]*BrokerRegistration
	topics         shardMap[[16]byte, *TopicImage]
	topicNames     shardMap[string, [16]byte]
	clusterConfigs map[string]string
	brokerConfigs  map[int32]map[string]string
	groupConfigs   map[string]map[string]string // GROUP resources' dynamic configs
	groups         shardMap[string, *groupImage]
	producerIDs    ProducerIds // the last block allocated; zero when none
	scram          map[scramKey]ScramCredential
	acls           map[[16]byte]ACLBinding // by id
	aclIndex       *aclIndex               // acls as the authorizer reads them; nil when none
	quotas         map[string]*quotaImage  // client quotas by canonical entity
	txns           shardMap[string, *txnImage]
	shareGroups    map[string]*ShareGroupImage // copied on write: few, and they change on rebalances only
	// sharePartitions is copied on write per Apply (share_partitions.go).
	sharePartitions map[SharePartitionKey]*SharePartitionState
}

// BrokerRegistration is a registered broker.
type BrokerRegistration struct {
	ID                   int32
	IncarnationID        [16]byte
	Epoch                int64
	Endpoints            []Endpoint
	Rack                 string
	Fenced               bool
	InControlledShutdown bool
	// OfflineReplicas are the broker's replicas whose log dir failed
	// (OfflineReplicas record), sorted; nil when none.
	OfflineReplicas []ReplicaRef
}

// ReplicaOffline reports whether the broker's replica of the partition is
// in a log dir that failed.
func (b BrokerRegistration) ReplicaOffline(topicID [16]byte, partition int32) bool {
	_, ok := slices.BinarySearchFunc(b.OfflineReplicas, ReplicaRef{topicID, partition}, CompareReplicaRefs)
	return ok
}

// CompareReplicaRefs orders replicas by topic id, then partition.
func CompareReplicaRefs(a, b ReplicaRef) int {
	if c := bytes.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// Usable reports whether the broker may lead or be placed on: registered,
// unfenced and not shutting down.
func (b BrokerRegistration) Usable() bool { return !b.Fenced && !b.InControlledShutdown }

// Endpoint returns the endpoint for a listener name.
func (b BrokerRegistration) Endpoint(listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// TopicImage is one topic. Configs holds only the topic's dynamic overrides
// (nil when there are none); see EffectiveTopicConfigs for defaults.
type TopicImage struct {
	Name       string
	ID         [16]byte
	Configs    map[string]string
	Partitions []PartitionRegistration // index i is partition i
}

// Partition returns partition p.
func (t TopicImage) Partition(p int32) (PartitionRegistration, bool) {
	if p < 0 || int(p) >= len(t.Partitions) {
		return PartitionRegistration{}, false
	}
	return t.Partitions[p], true
}

// OffsetAndMetadata is a committed offset.
type OffsetAndMetadata struct {
	Offset       int64
	LeaderEpoch  int32
	Metadata     string
	CommitTimeMs int64
}

// groupImage is one consumer group's committed state; a group with neither
// offsets nor a generation is not kept.
type groupImage struct {
	offsets    map[TopicPartition]OffsetAndMetadata
	generation *GroupGeneration
	consumer   *ConsumerGroup // a KIP-848 group's state; nil for classic groups
}

// NewImage returns the empty image every replay starts from.
func NewImage() *Image { return &Image{} }

// ClusterID returns the cluster id, empty before bootstrap.
func (img *Image) ClusterID() string { return img.clusterID }

// FeatureLevel returns the finalized metadata.version level (0 when unset).
func (img *Image) FeatureLevel() int16 { return img.features[MetadataVersionFeature] }

// ELREnabled reports eligible.leader.replicas.version 1 or above (KIP-966).
func (img *Image) ELREnabled() bool { return img.features[ELRFeature] >= 1 }

// Feature returns a finalized feature's level.
func (img *Image) Feature(name string) (int16, bool) {
	l, ok := img.features[name]
	return l, ok
}

// Features returns every finalized feature.
func (img *Image) Features() map[string]int16 { return maps.Clone(img.features) }

// VoterDirectory returns controller voter id's directory id (KIP-858), if
// one is recorded.
func (img *Image) VoterDirectory(id int32) ([16]byte, bool) {
	d, ok := img.voterDirs[id]
	return d, ok
}

// VoterDirectories returns every recorded voter's directory id.
func (img *Image) VoterDirectories() map[int32][16]byte { return maps.Clone(img.voterDirs) }

// Brokers returns every registered broker, sorted by id.
func (img *Image) Brokers() []BrokerRegistration {
	out := make([]BrokerRegistration, 0, len(img.brokers))
	for _, b := range img.brokers {
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b BrokerRegistration) int { return int(a.ID) - int(b.ID) })
	return out
}

// Broker returns a registered broker.
func (img *Image) Broker(id int32) (BrokerRegistration, bool) {
	b, ok := img.brokers[id]
	if !ok {
		return BrokerRegistration{}, false
	}
	return *b, true
}

// NumTopics returns the number of topics.
func (img *Image) NumTopics() int { return img.topics.len() }

// Topics returns every topic, sorted by name.
func (img *Image) Topics() []TopicImage {
	out := make([]TopicImage, 0, img.topics.len())
	img.topics.each(func(_ [16]byte, t *TopicImage) { out = append(out, *t) })
	slices.SortFunc(out, func(a, b TopicImage) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// TopicNames returns every topic name, sorted.
func (img *Image) TopicNames() []string {
	out := make([]string, 0, img.topicNames.len())
	img.topicNames.each(func(n string, _ [16]byte) { out = append(out, n) })
	slices.Sort(out)
	return out
}

// Topic returns a topic by name.
func (img *Image) Topic(name string) (TopicImage, bool) {
	id, ok := img.topicNames.get(name, hashString(name))
	if !ok {
		return TopicImage{}, false
	}
	return img.TopicByID(id)
}

// TopicByID returns a topic by id.
func (img *Image) TopicByID(id [16]byte) (TopicImage, bool) {
	t, ok := img.topics.get(id, hashID(id))
	if !ok {
		return TopicImage{}, false
	}
	return *t, true
}

// Partition returns one partition of a topic.
func (img *Image) Partition(topicID [16]byte, partition int32) (PartitionRegistration, bool) {
	t, ok := img.topics.get(topicID, hashID(topicID))
	if !ok {
		return PartitionRegistration{}, false
	}
	return t.Partition(partition)
}

// Groups returns the groups with committed offsets or a generation, sorted.
func (img *Image) Groups() []string {
	out := make([]string, 0, img.groups.len())
	img.groups.each(func(g string, _ *groupImage) { out = append(out, g) })
	slices.Sort(out)
	return out
}

// Offset returns a group's committed offset for one partition.
func (img *Image) Offset(group, topic string, partition int32) (OffsetAndMetadata, bool) {
	g, ok := img.groups.get(group, hashString(group))
	if !ok {
		return OffsetAndMetadata{}, false
	}
	o, ok := g.offsets[TopicPartition{topic, partition}]
	return o, ok
}

// Offsets returns all of a group's committed offsets (a fresh map; nil when
// the group has none).
func (img *Image) Offsets(group string) map[TopicPartition]OffsetAndMetadata {
	g, ok := img.groups.get(group, hashString(group))
	if !ok {
		return nil
	}
	return maps.Clone(g.offsets)
}

// GroupGeneration returns the group's last recorded generation.
func (img *Image) GroupGeneration(group string) (GroupGeneration, bool) {
	g, ok := img.groups.get(group, hashString(group))
	if !ok || g.generation == nil {
		return GroupGeneration{}, false
	}
	return *g.generation, true
}

// NextProducerID returns the first producer id of the next block to
// allocate (0 before any allocation: the controller then starts at 0).
func (img *Image) NextProducerID() int64 { return img.producerIDs.NextProducerID }

// LastProducerIDBlock returns the last ProducerIds record applied.
func (img *Image) LastProducerIDBlock() ProducerIds { return img.producerIDs }

// ClusterConfigs returns the dynamic cluster-wide broker configs.
func (img *Image) ClusterConfigs() map[string]string { return maps.Clone(img.clusterConfigs) }

// BrokerConfigs returns one broker's dynamic configs.
func (img *Image) BrokerConfigs(id int32) map[string]string {
	return maps.Clone(img.brokerConfigs[id])
}

// Equal reports deep equality of two images.
func (img *Image) Equal(o *Image) bool {
	if img == o {
		return true
	}
	if img == nil || o == nil {
		return false
	}
	if img.clusterID != o.clusterID || img.producerIDs != o.producerIDs ||
		!maps.Equal(img.features, o.features) || !maps.Equal(img.voterDirs, o.voterDirs) || !maps.Equal(img.clusterConfigs, o.clusterConfigs) ||
		!maps.EqualFunc(img.brokerConfigs, o.brokerConfigs, func(a, b map[string]string) bool { return maps.Equal(a, b) }) ||
		!maps.EqualFunc(img.groupConfigs, o.groupConfigs, func(a, b map[string]string) bool { return maps.Equal(a, b) }) ||
		!maps.EqualFunc(img.brokers, o.brokers, func(a, b *BrokerRegistration) bool { return a.equal(b) }) ||
		!maps.EqualFunc(img.scram, o.scram, ScramCredential.equal) || !maps.Equal(img.acls, o.acls) ||
		!maps.EqualFunc(img.quotas, o.quotas, quotaImagesEqual) ||
		!maps.EqualFunc(img.shareGroups, o.shareGroups, (*ShareGroupImage).equal) ||
		!maps.EqualFunc(img.sharePartitions, o.sharePartitions, (*SharePartitionState).equal) {
		return false
	}
	return shardEqual(&img.topics, &o.topics, func(a, b *TopicImage) bool { return a.equal(b) }) &&
		shardEqual(&img.topicNames, &o.topicNames, func(a, b [16]byte) bool { return a == b }) &&
		shardEqual(&img.groups, &o.groups, func(a, b *groupImage) bool { return a.equal(b) }) &&
		shardEqual(&img.txns, &o.txns, func(a, b *txnImage) bool { return a.equal(b) })
}

func shardEqual[K comparable, V any](a, b *shardMap[K, V], eq func(V, V) bool) bool {
	if a.n != b.n {
		return false
	}
	for i := range a.shards {
		sa, sb := a.shards[i], b.shards[i]
		if len(sa) != len(sb) {
			return false
		}
		for k, va := range sa {
			vb, ok := sb[k]
			if !ok || !eq(va, vb) {
				return false
			}
		}
	}
	return true
}

func (b *BrokerRegistration) equal(o *BrokerRegistration) bool {
	return b.ID == o.ID && b.IncarnationID == o.IncarnationID && b.Epoch == o.Epoch &&
		slices.Equal(b.Endpoints, o.Endpoints) && b.Rack == o.Rack && b.Fenced == o.Fenced &&
		b.InControlledShutdown == o.InControlledShutdown && slices.Equal(b.OfflineReplicas, o.OfflineReplicas)
}

func (t *TopicImage) equal(o *TopicImage) bool {
	return t.Name == o.Name && t.ID == o.ID && maps.Equal(t.Configs, o.Configs) &&
		slices.EqualFunc(t.Partitions, o.Partitions, func(a, b PartitionRegistration) bool { return a.Equal(b) })
}

// Equal reports whether two registrations are identical.
func (p PartitionRegistration) Equal(o PartitionRegistration) bool {
	return p.Partition == o.Partition && slices.Equal(p.Replicas, o.Replicas) && slices.Equal(p.ISR, o.ISR) &&
		p.Leader == o.Leader && p.LeaderEpoch == o.LeaderEpoch && p.PartitionEpoch == o.PartitionEpoch &&
		slices.Equal(p.AddingReplicas, o.AddingReplicas) && slices.Equal(p.RemovingReplicas, o.RemovingReplicas) &&
		slices.Equal(p.ELR, o.ELR) && slices.Equal(p.LastKnownELR, o.LastKnownELR)
}

func (g *groupImage) equal(o *groupImage) bool {
	if !maps.Equal(g.offsets, o.offsets) {
		return false
	}
	if (g.generation == nil) != (o.generation == nil) {
		return false
	}
	return (g.generation == nil || g.generation.equal(o.generation)) && g.consumer.Equal(o.consumer)
}

func (g *GroupGeneration) equal(o *GroupGeneration) bool {
	return g.Group == o.Group && g.Generation == o.Generation && g.ProtocolType == o.ProtocolType &&
		g.Protocol == o.Protocol && g.Leader == o.Leader && slices.Equal(g.Members, o.Members) &&
		g.StateTimestampMs == o.StateTimestampMs && slices.Equal(g.SubscribedTopics, o.SubscribedTopics) &&
		(g.SubscribedTopics == nil) == (o.SubscribedTopics == nil)
}
