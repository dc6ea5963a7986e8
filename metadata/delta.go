package metadata

import (
	"fmt"
	"maps"
	"slices"
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
	// VotersChanged: a controller voter's directory id was set or removed.
	VotersChanged bool
	// ScramChanged: a SCRAM credential was set or removed.
	ScramChanged bool
	// ACLsChanged: an ACL binding was added or removed.
	ACLsChanged bool
	// QuotasChanged: a client quota was set or removed.
	QuotasChanged bool
	// TxnsChanged lists the transactional ids whose state or pending
	// offsets changed (Dead ones included: they are gone).
	TxnsChanged []string
	// ShareGroupsChanged lists the share groups a record of the batch set,
	// changed or deleted.
	ShareGroupsChanged []string

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
		!d.FeaturesChanged && !d.ProducerIDsChanged && !d.VotersChanged && !d.ScramChanged && !d.ACLsChanged && !d.QuotasChanged &&
		len(d.TxnsChanged) == 0
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

// applier holds one Apply's work in progress: the next image, shared by one
// applier per domain, each of which knows which parts of the image the
// batch already owns (copied, so writable) and what it touched, and
// computes its part of the Delta at the end.
type applier struct {
	old   *Image
	img   Image
	delta Delta

	cluster clusterApplier
	brokers brokerApplier
	topics  topicApplier
	configs configApplier
	groups  groupApplier
	scram   scramApplier
	acls    aclApplier
	quotas  quotaApplier
	txns    txnApplier
	share   shareGroupApplier
	sparts  sharePartitionApplier
}

func newApplier(old *Image) *applier {
	b := &applier{old: old, img: *old}
	b.cluster = clusterApplier{img: &b.img, delta: &b.delta}
	b.brokers = brokerApplier{img: &b.img}
	b.topics = newTopicApplier(&b.img)
	// Topic configs live in the topic images, so the config applier writes
	// through the topic applier's copy-on-write.
	b.configs = configApplier{img: &b.img, topics: &b.topics}
	b.groups = newGroupApplier(&b.img)
	b.scram = scramApplier{img: &b.img}
	b.acls = aclApplier{img: &b.img}
	b.quotas = quotaApplier{img: &b.img}
	b.txns = newTxnApplier(&b.img, &b.groups)
	b.share = shareGroupApplier{img: &b.img}
	b.sparts = sharePartitionApplier{img: &b.img}
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
		return b.cluster.clusterID(r)
	case *FeatureLevel:
		return b.cluster.featureLevel(r)
	case *ProducerIds:
		return b.cluster.producerIDs(r)
	case *VoterDirectory:
		return b.cluster.voterDirectory(r)
	case *RegisterBroker:
		return b.brokers.register(r)
	case *UnregisterBroker:
		return b.brokers.unregister(r)
	case *FenceBroker:
		return b.brokers.change(r.BrokerID, r.BrokerEpoch, func(br *BrokerRegistration) { br.Fenced = true })
	case *UnfenceBroker:
		return b.brokers.change(r.BrokerID, r.BrokerEpoch, func(br *BrokerRegistration) { br.Fenced = false })
	case *BrokerShutdown:
		return b.brokers.change(r.BrokerID, r.BrokerEpoch, func(br *BrokerRegistration) { br.InControlledShutdown = r.InControlledShutdown })
	case *OfflineReplicas:
		return b.brokers.offlineReplicas(r)
	case *CreateTopic:
		return b.topics.create(r)
	case *AddPartitions:
		return b.topics.addPartitions(r)
	case *PartitionChange:
		return b.topics.partitionChange(r)
	case *PartitionReassignment:
		return b.topics.reassignment(r)
	case *RemoveTopic:
		return b.topics.remove(r)
	case *Config:
		return b.configs.config(r)
	case *CommitOffsets:
		return b.groups.commitOffsets(r)
	case *DeleteOffsets:
		return b.groups.deleteOffsets(r)
	case *DeleteGroup:
		return b.groups.deleteGroup(r)
	case *GroupGeneration:
		return b.groups.generation(r)
	case *ConsumerGroup:
		return b.groups.consumerGroup(r)
	case *RemoveConsumerGroup:
		return b.groups.removeConsumerGroup(r)
	case *ConsumerGroupDelta:
		return b.groups.consumerGroupDelta(r)
	case *UserScramCredential:
		return b.scram.upsert(r)
	case *RemoveUserScramCredential:
		return b.scram.remove(r)
	case *AccessControlEntry:
		return b.acls.add(r)
	case *RemoveAccessControlEntry:
		return b.acls.remove(r)
	case *ClientQuota:
		return b.quotas.apply(r)
	case *Transaction:
		return b.txns.transaction(r)
	case *TxnOffsetCommit:
		return b.txns.offsetCommit(r)
	case *SharePartitionState:
		return b.sparts.state(r)
	case nil:
		return invalid("nil record")
	}
	if ok, err := b.share.apply(rec); ok {
		if d, isDelete := rec.(*ShareGroupDelete); isDelete && err == nil {
			b.sparts.dropGroup(d.Group)
		}
		return err
	}
	return invalid("unsupported record implementation %T", rec)
}

// finish seals the new image and computes the net delta: each domain
// compares what the batch touched in the old and new images.
func (b *applier) finish() (*Image, *Delta) {
	// The sharded maps first: the diffs (topic configs among them) read
	// the sealed image.
	b.topics.seal()
	b.txns.seal()
	b.groups.seal()
	next, d := &b.img, &b.delta
	b.topics.diff(b.old, next, d)
	b.brokers.diff(b.old, next, d)
	b.configs.diff(b.old, next, d)
	b.groups.diff(b.old, next, d)
	d.ScramChanged = b.scram.changed
	b.acls.seal()
	d.ACLsChanged = b.acls.changed
	d.QuotasChanged = b.quotas.changed
	b.txns.diff(b.old, next, d)
	d.ShareGroupsChanged = slices.Sorted(maps.Keys(b.share.changed))
	// The results are copied out of the builder: a pointer into it would
	// keep the whole builder alive, and with it b.old, so every image
	// would hold its predecessor and a node the image of every entry it
	// ever applied (TestApplyDoesNotRetainPreviousImages).
	out, delta := new(Image), new(Delta)
	*out, *delta = *next, *d
	return out, delta
}
