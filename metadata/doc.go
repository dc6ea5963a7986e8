// Package metadata owns the cluster metadata model: the immutable Image, the
// Records that change it, the Delta between two images, and the pure decisions
// the controller makes (replica placement, leader election, ISR rules, topic
// names and topic configs).
//
// It is pure: standard library only, no I/O, no goroutines, no clocks (time is
// a parameter) and no logging. It must not import any other raftka package,
// nor kmsg: the Kafka wire types stay in raftfsm and broker, which translate.
//
// # Files
//
//	records.go        record types (stable numeric ids, versions)
//	codec.go          batch encoding: one Raft entry = one batch, CRC-32C
//	image.go          Image and its read accessors
//	delta.go          Delta; Apply: replay a batch through one applier per
//	                  domain, build the next Image and the Delta
//	apply_cluster.go  cluster id, feature levels, producer id block
//	apply_brokers.go  broker registrations, fencing, controlled shutdown
//	apply_topics.go   topics and partitions (create, add, change, remove)
//	apply_configs.go  cluster, broker and topic configs
//	apply_groups.go   committed offsets, group generations, deletions
//	apply_txns.go     transaction state: TxnState, the transition rule
//	                  (CheckTxnTransition, CheckTxnOffsetCommit), pending
//	                  transactional offsets, their applier and records
//	share_groups.go   share groups (KIP-932, records 55-59): epoch and
//	                  subscription metadata, members, target assignment,
//	                  their applier, codec and snapshot records
//	scram.go          SCRAM credentials: records, their applier, the key
//	                  derivation of RFC 5802 (NewScramCredential)
//	acl.go            ACL bindings (Kafka's resource, pattern, operation and
//	                  permission codes), their records, filters, validation
//	apply_acls.go     the ACL applier and the authorizer's index
//	authorizer.go     Authorizer: Kafka's StandardAuthorizer decision as a
//	                  pure function of the image (super.users,
//	                  allow.everyone.if.no.acl.found, implied operations)
//	quotas.go         client quotas (KIP-13/124/257): the record, entity and
//	                  key rules, the applier, Kafka's precedence (ResolveQuota)
//	local_changes.go  Delta.LocalChanges: one broker's view of a delta (the
//	                  partitions it now leads, follows, or drops)
//	image_records.go  Image.Records: the image as records (Raft snapshots)
//	shardmap.go       the copy-on-write sharded map under topics and groups
//	names.go          topic name rules
//	placement.go      replica placement, manual assignment validation
//	election.go       leader election, the PartitionChange builder, the
//	                  preferred-leader rebalance rule
//	isr.go            AlterPartition validation
//	reassign.go       partition reassignment (KIP-455): the
//	                  PartitionReassignment record's applier, the plan
//	                  (start, complete, cancel) as Kafka's controller
//	topic_configs.go  topic config definitions, validation, effective values
//	broker_configs.go dynamic broker keys that are not topic defaults (the
//	                  cleaner's, producer.id.expiration.ms,
//	                  num.replica.fetchers), their validation
//	errors.go         sentinel errors (one per Kafka error kind)
//
// # Decide, record, replay
//
// The controller decides with the pure functions here against the current
// Image (CheckNewTopicName, ValidateTopicConfigs, ValidateBrokerConfig,
// PlaceReplicas, NewPartitions, BuildPartitionChange, ValidateAlterPartition,
// PreferredLeaderElections, PlanReassignment, CompleteReassignment,
// CheckOffsetCommit, CheckTxnTransition, CheckTxnOffsetCommit), commits the resulting
// records through Raft, and every node replays the committed batch with
// Image.Apply. Apply re-checks what a record needs to be meaningful (with
// the same functions where a decision checks the same rule) and skips (and
// reports in Delta.Skipped) a record that no longer fits, so replay is
// total and identical on every node even if a decision raced an earlier
// commit.
//
// # Concurrency
//
// An Image is immutable once Apply returns it: any goroutine may read it
// without locks. Apply itself only reads its receiver, so it may run
// concurrently with readers; callers publish the result (an atomic pointer
// swap in raftfsm). Nothing in the package holds state between calls.
//
// # Errors
//
// Every error wraps one of the sentinels in errors.go; the broker maps
// kinds to Kafka error codes in one place (see each sentinel's comment).
//
//arch:imports std
package metadata
