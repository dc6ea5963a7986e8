package metadata

import "errors"

// Sentinel errors. Every error this package returns wraps one of these with
// %w, so callers test the kind with errors.Is and the broker maps each kind to
// its Kafka error code in one place. The Kafka code each one corresponds to is
// named beside it.
var (
	// ErrTopicExists: TOPIC_ALREADY_EXISTS.
	ErrTopicExists = errors.New("metadata: topic already exists")
	// ErrUnknownTopic: UNKNOWN_TOPIC_OR_PARTITION (or UNKNOWN_TOPIC_ID).
	ErrUnknownTopic = errors.New("metadata: unknown topic")
	// ErrUnknownPartition: UNKNOWN_TOPIC_OR_PARTITION.
	ErrUnknownPartition = errors.New("metadata: unknown partition")
	// ErrInvalidTopicName: INVALID_TOPIC_EXCEPTION.
	ErrInvalidTopicName = errors.New("metadata: invalid topic name")
	// ErrTopicNameCollision: INVALID_TOPIC_EXCEPTION (Kafka reports the
	// '.'/'_' collision with that code too).
	ErrTopicNameCollision = errors.New("metadata: topic name collides with an existing topic")
	// ErrInvalidReplicationFactor: INVALID_REPLICATION_FACTOR.
	ErrInvalidReplicationFactor = errors.New("metadata: invalid replication factor")
	// ErrInvalidReplicaAssignment: INVALID_REPLICA_ASSIGNMENT.
	ErrInvalidReplicaAssignment = errors.New("metadata: invalid replica assignment")
	// ErrInvalidPartitions: INVALID_PARTITIONS.
	ErrInvalidPartitions = errors.New("metadata: invalid number of partitions")
	// ErrInvalidConfig: INVALID_CONFIG.
	ErrInvalidConfig = errors.New("metadata: invalid config")
	// ErrUnknownBroker: BROKER_ID_NOT_REGISTERED (or INVALID_REQUEST).
	ErrUnknownBroker = errors.New("metadata: unknown broker")
	// ErrStaleBrokerEpoch: STALE_BROKER_EPOCH.
	ErrStaleBrokerEpoch = errors.New("metadata: stale broker epoch")
	// ErrFencedLeaderEpoch: FENCED_LEADER_EPOCH.
	ErrFencedLeaderEpoch = errors.New("metadata: fenced leader epoch")
	// ErrInvalidUpdateVersion: INVALID_UPDATE_VERSION (stale partition epoch;
	// a feature level UpdateFeatures may not set).
	ErrInvalidUpdateVersion = errors.New("metadata: invalid update version (partition epoch)")
	// ErrNotLeader: INVALID_REQUEST (AlterPartition from a broker that does
	// not lead the partition at the current leader epoch, as Kafka's
	// ReplicationControlManager answers it).
	ErrNotLeader = errors.New("metadata: not the partition leader")
	// ErrIneligibleReplica: INELIGIBLE_REPLICA.
	ErrIneligibleReplica = errors.New("metadata: ineligible replica")
	// ErrInvalidRequest: INVALID_REQUEST (a malformed ISR, for example).
	ErrInvalidRequest = errors.New("metadata: invalid request")
	// ErrLeaderNotAvailable: LEADER_NOT_AVAILABLE / ELECTION_NOT_NEEDED
	// callers decide; returned when no eligible leader exists.
	ErrLeaderNotAvailable = errors.New("metadata: no eligible leader")
	// ErrElectionNotNeeded: ELECTION_NOT_NEEDED.
	ErrElectionNotNeeded = errors.New("metadata: election not needed")
	// ErrPreferredLeaderNotAvailable: PREFERRED_LEADER_NOT_AVAILABLE.
	ErrPreferredLeaderNotAvailable = errors.New("metadata: preferred leader not available")
	// ErrStaleRecord marks a record that Apply skipped because it is older than
	// the state it would change (generation, producer-id block, epoch).
	ErrStaleRecord = errors.New("metadata: stale record")
	// ErrUnacceptableCredential: UNACCEPTABLE_CREDENTIAL.
	ErrUnacceptableCredential = errors.New("metadata: unacceptable credential")
	// ErrUnsupportedSaslMechanism: UNSUPPORTED_SASL_MECHANISM.
	ErrUnsupportedSaslMechanism = errors.New("metadata: unsupported SASL mechanism")
	// ErrInvalidTxnState: INVALID_TXN_STATE (a transaction state change
	// Kafka's TransactionState does not allow, or a pending offset for a
	// transaction that is not open).
	ErrInvalidTxnState = errors.New("metadata: invalid transaction state transition")
	// ErrProducerFenced: PRODUCER_FENCED (a transaction write for an older
	// producer id or epoch than the recorded one).
	ErrProducerFenced = errors.New("metadata: producer fenced")
	// ErrTxnCoordinatorFenced: NOT_COORDINATOR (a transaction write from a
	// coordinator whose slot epoch is older than the last writer's).
	ErrTxnCoordinatorFenced = errors.New("metadata: transaction coordinator fenced")
	// ErrGroupCoordinatorFenced: NOT_COORDINATOR (a consumer group write
	// from a coordinator whose slot epoch is older than the last writer's).
	ErrGroupCoordinatorFenced = errors.New("metadata: group coordinator fenced")
	// ErrInvalidRecord marks a record that Apply skipped because its content is
	// inconsistent (a leader outside the replicas, partitions not dense, ...).
	ErrInvalidRecord = errors.New("metadata: invalid record")
	// ErrClusterIDMismatch: a second ClusterID record with a different id.
	ErrClusterIDMismatch = errors.New("metadata: cluster id already set to a different value")
	// ErrNoReassignmentInProgress: NO_REASSIGNMENT_IN_PROGRESS (a cancel of
	// a partition that is not being reassigned).
	ErrNoReassignmentInProgress = errors.New("metadata: no partition reassignment in progress")
	// ErrCorrupt marks bytes that do not decode as a record batch.
	ErrCorrupt = errors.New("metadata: corrupt record batch")
)
