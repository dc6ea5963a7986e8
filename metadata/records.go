package metadata

// RecordType identifies a record's kind in the encoding. The numbers are
// stable: they are written into the Raft log and into snapshots, so a number
// is never reused for a different record, even after its record is retired.
type RecordType int16

// Record type ids. Append new ones at the end.
const (
	TypeClusterID        RecordType = 1
	TypeFeatureLevel     RecordType = 2
	TypeRegisterBroker   RecordType = 3
	TypeUnregisterBroker RecordType = 4
	TypeFenceBroker      RecordType = 5
	TypeUnfenceBroker    RecordType = 6
	TypeBrokerShutdown   RecordType = 7
	TypeCreateTopic      RecordType = 8
	TypePartitionChange  RecordType = 9
	TypeRemoveTopic      RecordType = 10
	TypeConfig           RecordType = 11
	TypeCommitOffsets    RecordType = 12
	TypeGroupGeneration  RecordType = 13
	TypeProducerIds      RecordType = 14
	TypeAddPartitions    RecordType = 15
	TypeDeleteOffsets    RecordType = 16
	TypeDeleteGroup      RecordType = 17

	TypeUserScramCredential       RecordType = 18
	TypeRemoveUserScramCredential RecordType = 19

	// Transaction state (20-29 are the transaction coordinator's).
	TypeTransaction     RecordType = 20
	TypeTxnOffsetCommit RecordType = 21

	// 30-39: authorization and quotas.
	TypeAccessControlEntry       RecordType = 30
	TypeRemoveAccessControlEntry RecordType = 31
	TypeClientQuota              RecordType = 35

	// 40-49: KIP-848 consumer groups.
	TypeConsumerGroup       RecordType = 40
	TypeRemoveConsumerGroup RecordType = 41
	// TypeConsumerGroupDelta is a change of a recorded consumer group: its
	// header and only the members that changed or left.
	TypeConsumerGroupDelta RecordType = 42
	// TypePartitionReassignment is in 60-69, the range issue 16's cluster
	// operations records use.
	TypePartitionReassignment RecordType = 60

	// Log dirs (JBOD).
	TypeOfflineReplicas RecordType = 67

	// TypeVoterDirectory: a controller quorum voter's directory id
	// (KIP-858), set when it joins the voters and removed when it leaves.
	TypeVoterDirectory RecordType = 61
)

func (t RecordType) String() string {
	switch t {
	case TypeClusterID:
		return "ClusterID"
	case TypeFeatureLevel:
		return "FeatureLevel"
	case TypeRegisterBroker:
		return "RegisterBroker"
	case TypeUnregisterBroker:
		return "UnregisterBroker"
	case TypeFenceBroker:
		return "FenceBroker"
	case TypeUnfenceBroker:
		return "UnfenceBroker"
	case TypeBrokerShutdown:
		return "BrokerShutdown"
	case TypeOfflineReplicas:
		return "OfflineReplicas"
	case TypeCreateTopic:
		return "CreateTopic"
	case TypePartitionChange:
		return "PartitionChange"
	case TypeRemoveTopic:
		return "RemoveTopic"
	case TypeConfig:
		return "Config"
	case TypeCommitOffsets:
		return "CommitOffsets"
	case TypeGroupGeneration:
		return "GroupGeneration"
	case TypeProducerIds:
		return "ProducerIds"
	case TypeAddPartitions:
		return "AddPartitions"
	case TypeDeleteOffsets:
		return "DeleteOffsets"
	case TypeDeleteGroup:
		return "DeleteGroup"
	case TypeUserScramCredential:
		return "UserScramCredential"
	case TypePartitionReassignment:
		return "PartitionReassignment"
	case TypeVoterDirectory:
		return "VoterDirectory"
	case TypeRemoveUserScramCredential:
		return "RemoveUserScramCredential"
	case TypeAccessControlEntry:
		return "AccessControlEntry"
	case TypeRemoveAccessControlEntry:
		return "RemoveAccessControlEntry"
	case TypeClientQuota:
		return "ClientQuota"
	case TypeTransaction:
		return "Transaction"
	case TypeTxnOffsetCommit:
		return "TxnOffsetCommit"
	case TypeConsumerGroup:
		return "ConsumerGroup"
	case TypeRemoveConsumerGroup:
		return "RemoveConsumerGroup"
	case TypeConsumerGroupDelta:
		return "ConsumerGroupDelta"
	case TypeSharePartitionState:
		return "SharePartitionState"
	}
	if name, ok := shareRecordTypeName(t); ok {
		return name
	}
	return "RecordType(unknown)"
}

// Record is one change to the metadata image. Records are values: Apply copies
// what it keeps, so a caller may reuse a record after applying it. The set of
// record types is closed; EncodeRecords rejects any other implementation.
type Record interface {
	Type() RecordType
	Version() int16
}

// Special leader values, as in Kafka's PartitionRecord/PartitionChangeRecord.
const (
	// NoLeader means the partition has no leader (offline).
	NoLeader int32 = -1
	// NoLeaderChange in PartitionChange.Leader keeps the current leader and
	// leader epoch.
	NoLeaderChange int32 = -2
)

// ClusterID sets the cluster id. It is written once, at bootstrap; a later
// record with a different id is skipped (ErrClusterIDMismatch).
type ClusterID struct {
	ID string
}

// FeatureLevel finalizes a feature's level, like Kafka's FeatureLevelRecord.
// Level 0 removes the feature.
type FeatureLevel struct {
	Name  string
	Level int16
}

// TransactionVersionFeature is Kafka's transaction.version; level 2 is
// KIP-890's transactions (the epoch bumped at every EndTxn, partitions
// added by their leaders), which the active controller finalizes
// (TransactionVersionLevel) and clients choose by.
const (
	TransactionVersionFeature       = "transaction.version"
	TransactionVersionLevel   int16 = 2
)

// ShareVersionFeature is Kafka's share.version: at level 1 share groups
// (KIP-932) are usable; below it their APIs answer UNSUPPORTED_VERSION,
// as Kafka's KafkaApis answers while share groups are not enabled. A new
// cluster finalizes it (Kafka 4.2 does: share groups are production
// ready there); a cluster bootstrapped before it finalizes it with
// `raftka features upgrade --feature share.version=1`.
const (
	ShareVersionFeature       = "share.version"
	ShareVersionLevel   int16 = 1
)

// MetadataVersionFeature is the feature whose level Image.FeatureLevel
// returns. Its levels gate which records the controller writes
// (features.go). The other features Kafka 4.1 finalizes (group.version,
// share.version, eligible.leader.replicas.version) stay at 0, which is
// absent: clients choose protocols by these levels, and raftka serves none
// of what they name.
const MetadataVersionFeature = "metadata.version"

// ELRFeature is KIP-966's eligible.leader.replicas.version: at 1 the
// controller tracks eligible leader replicas (PartitionRegistration.ELR)
// and leaders hold the HW while the ISR is below min.insync.replicas.
const ELRFeature = "eligible.leader.replicas.version"

// KRaftVersionFeature is kraft.version (KIP-853): 1 when the controller
// quorum's voters may change at run time (AddRaftVoter, RemoveRaftVoter),
// 0 when they are the static controller.quorum.voters. storage format
// --standalone / --initial-controllers / --no-initial-controllers
// bootstrap a cluster at 1; a static cluster moves to 1 by UpdateFeatures,
// as Kafka 4.1's does, and never back.
const KRaftVersionFeature = "kraft.version"

// VoterDirectory records the metadata log directory id (KIP-858,
// meta.properties directory.id) of controller quorum voter NodeID, or with
// Remove that the voter left. The voter set itself is the Raft
// configuration; the directory id tells one incarnation of a node id from
// the next (a wiped disk formatted again gets a new one), which the Raft
// configuration, keyed by node id, cannot.
type VoterDirectory struct {
	NodeID      int32
	DirectoryID [16]byte
	Remove      bool
}

// Endpoint is one listener a broker advertises.
type Endpoint struct {
	Listener         string // listener name, e.g. "PLAINTEXT"
	Host             string
	Port             uint16
	SecurityProtocol int16 // Kafka's ids: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL
}

// RegisterBroker registers (or re-registers) a broker, like Kafka's
// RegisterBrokerRecord. BrokerEpoch must grow with every registration of the
// same id (the controller uses the Raft index): an older epoch is skipped.
// A new registration replaces the old one whole, so a restarted broker comes
// back fenced and out of controlled shutdown unless the record says otherwise.
type RegisterBroker struct {
	BrokerID             int32
	IncarnationID        [16]byte
	BrokerEpoch          int64
	Endpoints            []Endpoint
	Rack                 string
	Fenced               bool
	InControlledShutdown bool
}

// UnregisterBroker removes a broker's registration. It applies only when
// BrokerEpoch matches the registration, so an unregister that raced a newer
// registration is skipped.
type UnregisterBroker struct {
	BrokerID    int32
	BrokerEpoch int64
}

// FenceBroker fences a broker (Kafka's FenceBrokerRecord); BrokerEpoch must
// match the registration.
type FenceBroker struct {
	BrokerID    int32
	BrokerEpoch int64
}

// UnfenceBroker unfences a broker (Kafka's UnfenceBrokerRecord); BrokerEpoch
// must match the registration.
type UnfenceBroker struct {
	BrokerID    int32
	BrokerEpoch int64
}

// BrokerShutdown sets or clears a broker's controlled-shutdown state (the
// part of Kafka's BrokerRegistrationChangeRecord raftka uses); BrokerEpoch must
// match the registration.
type BrokerShutdown struct {
	BrokerID             int32
	BrokerEpoch          int64
	InControlledShutdown bool
}

// ReplicaRef names one partition of a topic by the topic's id.
type ReplicaRef struct {
	TopicID   [16]byte
	Partition int32
}

// OfflineReplicas sets the replicas of a broker that are offline because
// the log dir holding them failed (Kafka keeps the same knowledge as
// PartitionRecord Directories plus the broker's offline dirs). Replicas
// is the whole set, sorted, replacing the last; BrokerEpoch must match the
// registration, and a new registration clears it. An offline replica may
// not lead or stay in the ISR.
type OfflineReplicas struct {
	BrokerID    int32
	BrokerEpoch int64
	Replicas    []ReplicaRef
}

// PartitionRegistration is a partition's replication state.
type PartitionRegistration struct {
	Partition      int32
	Replicas       []int32 // preferred leader first
	ISR            []int32
	Leader         int32 // NoLeader when offline
	LeaderEpoch    int32
	PartitionEpoch int32
	// AddingReplicas and RemovingReplicas are an ongoing reassignment
	// (KIP-455), nil when there is none: Replicas is then the union of
	// the original and the target replicas, the target is Replicas minus
	// RemovingReplicas, and the original is Replicas minus AddingReplicas.
	// Only PartitionReassignment sets them; CreateTopic and AddPartitions
	// never carry them (their encoding has no such fields).
	AddingReplicas   []int32
	RemovingReplicas []int32
	// ELR is KIP-966's eligible leader replicas: members that left the
	// ISR while it was below min.insync.replicas, after which the HW did
	// not move, so each holds every acknowledged record and may lead when
	// the ISR is empty. LastKnownELR is the ELR members that lost
	// eligibility while the ISR was below min.insync.replicas, kept for
	// an operator's recovery. Both are empty unless
	// eligible.leader.replicas.version is 1; records carry them from
	// version 1 (CreateTopic and AddPartitions v1, PartitionChange v1).
	ELR          []int32
	LastKnownELR []int32
}

// CreateTopic creates a topic with all its partitions (Kafka's TopicRecord
// plus one PartitionRecord per partition plus its ConfigRecords).
// Partitions must be numbered 0..n-1 in order. The epochs in Partitions are
// taken as given, so an image's records restore it exactly; a new topic
// normally has both epochs 0.
type CreateTopic struct {
	Name       string
	ID         [16]byte
	Configs    map[string]string
	Partitions []PartitionRegistration
}

// AddPartitions adds partitions to an existing topic (CreatePartitions).
// The new partitions must continue the numbering without a gap.
type AddPartitions struct {
	TopicID    [16]byte
	Partitions []PartitionRegistration
}

// PartitionChange changes one partition, with Kafka's PartitionChangeRecord
// semantics: a nil ISR or Replicas leaves that field unchanged; Leader
// NoLeaderChange keeps the leader and its epoch, any other value (even the
// current leader) sets the leader and bumps the leader epoch; the partition
// epoch is bumped by every PartitionChange.
type PartitionChange struct {
	TopicID   [16]byte
	Partition int32
	Leader    int32
	ISR       []int32
	Replicas  []int32
	// ELR and LastKnownELR, nil to leave unchanged, as Kafka's
	// PartitionChangeRecord tagged fields: the record is version 1 when
	// either is set, which only a cluster with
	// eligible.leader.replicas.version 1 writes.
	ELR          []int32
	LastKnownELR []int32
}

// PartitionReassignment sets a partition's ongoing reassignment: the
// replicas being added and removed (Kafka's PartitionChangeRecord
// AddingReplicas/RemovingReplicas fields, a record of its own here so the
// older records keep their encoding). Both empty ends the reassignment.
// Both must be disjoint subsets of the partition's replicas when the record
// applies, so a batch that changes Replicas orders the records to keep that
// true after each one: clear before shrinking Replicas, set after growing
// them. It bumps no epoch: the PartitionChange beside it does when the
// replicas change.
type PartitionReassignment struct {
	TopicID   [16]byte
	Partition int32
	Adding    []int32
	Removing  []int32
}

// RemoveTopic deletes a topic, its partitions and its configs.
type RemoveTopic struct {
	TopicID [16]byte
}

// ConfigResourceType says what a Config record configures. Topic and broker
// use Kafka's ConfigResource ids; Kafka's wire form of the cluster-wide
// default is a broker resource with an empty name, which Apply treats as
// ConfigResourceCluster.
type ConfigResourceType int8

const (
	ConfigResourceCluster ConfigResourceType = 1
	ConfigResourceTopic   ConfigResourceType = 2
	ConfigResourceBroker  ConfigResourceType = 4
)

// Config sets or deletes one dynamic config key (Kafka's ConfigRecord, whose
// null value is Delete here). ResourceName is the topic name, the broker id in
// decimal, or empty for the cluster.
type Config struct {
	ResourceType ConfigResourceType
	ResourceName string
	Key          string
	Value        string
	Delete       bool
}

// OffsetCommit is one committed offset. The broker's coordinator builds it
// from an OffsetCommit request and sends it to the controller as it is;
// the controller stamps CommitTimeMs with its own clock when it records
// the commit (a coordinator leaves it zero), so replay never reads one.
type OffsetCommit struct {
	Topic        string
	Partition    int32
	Offset       int64
	LeaderEpoch  int32 // -1 when unknown
	Metadata     string
	CommitTimeMs int64
}

// CommitOffsets stores committed offsets of a consumer group. Offsets live in
// the image (Kafka keeps them in __consumer_offsets, which raftka writes only
// as a view of the image) so they survive any failover.
type CommitOffsets struct {
	Group   string
	Offsets []OffsetCommit
}

// TopicPartition names a partition by topic name.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// DeleteOffsets removes committed offsets of a group (OffsetDelete).
type DeleteOffsets struct {
	Group      string
	Partitions []TopicPartition
}

// DeleteGroup removes a group's offsets and generation (DeleteGroups).
type DeleteGroup struct {
	Group string
}

// GroupMember is one member of a group generation.
type GroupMember struct {
	MemberID   string
	InstanceID string // group.instance.id, empty for dynamic members
}

// GroupGeneration records a completed rebalance of a classic consumer group.
// Generation must grow; an older or equal generation is skipped.
type GroupGeneration struct {
	Group        string
	Generation   int32
	ProtocolType string
	Protocol     string
	Leader       string
	Members      []GroupMember
	// StateTimestampMs is when the group entered this generation, stamped
	// by the controller's clock (Kafka's currentStateTimestamp): for a
	// generation without members, when the group became empty, from which
	// its offsets' retention counts (KIP-211). Zero in version 0 records.
	StateTimestampMs int64
	// SubscribedTopics is, for a consumer group with members, the union of
	// the topics they subscribe to, sorted (Kafka's subscribedTopics): the
	// group's offsets of other topics expire from their commit times. Nil
	// when unknown (another protocol type, a subscription that does not
	// decode, no members, version 0): then no offset of a group with
	// members expires.
	SubscribedTopics []string
}

// ProducerIds allocates a block of producer ids to a broker (Kafka's
// ProducerIdsRecord): the next block starts at NextProducerID. It must grow.
type ProducerIds struct {
	BrokerID       int32
	BrokerEpoch    int64
	NextProducerID int64
}

func (*ClusterID) Type() RecordType        { return TypeClusterID }
func (*FeatureLevel) Type() RecordType     { return TypeFeatureLevel }
func (*RegisterBroker) Type() RecordType   { return TypeRegisterBroker }
func (*UnregisterBroker) Type() RecordType { return TypeUnregisterBroker }
func (*FenceBroker) Type() RecordType      { return TypeFenceBroker }
func (*UnfenceBroker) Type() RecordType    { return TypeUnfenceBroker }
func (*BrokerShutdown) Type() RecordType   { return TypeBrokerShutdown }
func (*OfflineReplicas) Type() RecordType  { return TypeOfflineReplicas }
func (*CreateTopic) Type() RecordType      { return TypeCreateTopic }
func (*AddPartitions) Type() RecordType    { return TypeAddPartitions }
func (*PartitionChange) Type() RecordType  { return TypePartitionChange }
func (*RemoveTopic) Type() RecordType      { return TypeRemoveTopic }
func (*Config) Type() RecordType           { return TypeConfig }
func (*CommitOffsets) Type() RecordType    { return TypeCommitOffsets }
func (*DeleteOffsets) Type() RecordType    { return TypeDeleteOffsets }
func (*DeleteGroup) Type() RecordType      { return TypeDeleteGroup }
func (*GroupGeneration) Type() RecordType  { return TypeGroupGeneration }
func (*ProducerIds) Type() RecordType      { return TypeProducerIds }

func (*UserScramCredential) Type() RecordType       { return TypeUserScramCredential }
func (*PartitionReassignment) Type() RecordType     { return TypePartitionReassignment }
func (*VoterDirectory) Type() RecordType            { return TypeVoterDirectory }
func (*RemoveUserScramCredential) Type() RecordType { return TypeRemoveUserScramCredential }
func (*Transaction) Type() RecordType               { return TypeTransaction }
func (*TxnOffsetCommit) Type() RecordType           { return TypeTxnOffsetCommit }

func (*ConsumerGroup) Type() RecordType       { return TypeConsumerGroup }
func (*RemoveConsumerGroup) Type() RecordType { return TypeRemoveConsumerGroup }
func (g *ConsumerGroup) Version() int16 {
	if len(g.Regexes) > 0 {
		return 2 // with regex resolutions (and version 1's member layout)
	}
	if g.hasClassic() {
		return 1 // with classic members (the online upgrade)
	}
	return 0
}
func (*RemoveConsumerGroup) Version() int16  { return 0 }
func (*ConsumerGroupDelta) Type() RecordType { return TypeConsumerGroupDelta }

// Version is 2 when it carries regex resolutions, 1 when a member in it
// speaks the classic protocol, as ConsumerGroup's.
func (d *ConsumerGroupDelta) Version() int16 {
	if len(d.Regexes) > 0 {
		return 2
	}
	for _, m := range d.Members {
		if m.Classic != nil {
			return 1
		}
	}
	return 0
}

func (*AccessControlEntry) Type() RecordType       { return TypeAccessControlEntry }
func (*RemoveAccessControlEntry) Type() RecordType { return TypeRemoveAccessControlEntry }

// Every record is at version 0. A record that gains a field gets version 1,
// and the decoder keeps reading version 0.
func (*ClusterID) Version() int16        { return 0 }
func (*FeatureLevel) Version() int16     { return 0 }
func (*RegisterBroker) Version() int16   { return 0 }
func (*UnregisterBroker) Version() int16 { return 0 }
func (*FenceBroker) Version() int16      { return 0 }
func (*UnfenceBroker) Version() int16    { return 0 }
func (*BrokerShutdown) Version() int16   { return 0 }
func (*OfflineReplicas) Version() int16  { return 0 }
func (r *CreateTopic) Version() int16    { return partitionsVersion(r.Partitions) }
func (r *AddPartitions) Version() int16  { return partitionsVersion(r.Partitions) }
func (r *PartitionChange) Version() int16 {
	if r.ELR != nil || r.LastKnownELR != nil {
		return 1
	}
	return 0
}

// partitionsVersion is 1 when a partition carries ELR state, so a record
// without it keeps the encoding every older binary reads.
func partitionsVersion(ps []PartitionRegistration) int16 {
	for _, p := range ps {
		if len(p.ELR) > 0 || len(p.LastKnownELR) > 0 {
			return 1
		}
	}
	return 0
}
func (*RemoveTopic) Version() int16     { return 0 }
func (*Config) Version() int16          { return 0 }
func (*CommitOffsets) Version() int16   { return 0 }
func (*DeleteOffsets) Version() int16   { return 0 }
func (*DeleteGroup) Version() int16     { return 0 }
func (*GroupGeneration) Version() int16 { return 1 }
func (*ProducerIds) Version() int16     { return 0 }

func (*UserScramCredential) Version() int16       { return 0 }
func (*PartitionReassignment) Version() int16     { return 0 }
func (*VoterDirectory) Version() int16            { return 0 }
func (*RemoveUserScramCredential) Version() int16 { return 0 }

func (*AccessControlEntry) Version() int16       { return 0 }
func (*RemoveAccessControlEntry) Version() int16 { return 0 }
func (*Transaction) Version() int16              { return 0 }
func (*TxnOffsetCommit) Version() int16          { return 0 }
