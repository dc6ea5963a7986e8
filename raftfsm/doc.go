// Package raftfsm runs the hashicorp/raft node that replicates the metadata
// log: the FSM that applies committed record batches to metadata.Image and
// publishes each new image, snapshots, the boltdb stores, the transport on the
// controller listener, quorum membership, and the active controller's RPC
// service (decide, then record, then replay); and the same node in memory,
// for tests (see "In memory").
//
// It may import metadata, broker/kafkacode, hashicorp/raft, raft-boltdb,
// kmsg/kerr and zerolog. It must never import storage or any other package
// of broker. broker/kafkacode is the one table from error kinds to Kafka
// codes, shared with the brokers' handlers: a leaf with no state, which
// links storage's sentinel errors and nothing else of it.
//
// # Files
//
//	node.go        Config, Start, Shutdown (leadership transfer first), bootstrap,
//	               non-voter join, leadership watch
//	transport.go   the controller listener mux and the raft.StreamLayer
//	fsm.go         FSM Apply/Snapshot/Restore and the snapshot file format
//	publisher.go   Current, WaitForIndex, Subscribe
//	controller.go  the active controller loop (batching, group commit)
//	controller_brokers.go     registration, heartbeats, fencing, shutdown
//	controller_dirs.go        replicas in a broker's failed log dirs (JBOD):
//	                          recorded, led elsewhere, out of the ISR
//	controller_partitions.go  elections, AlterPartition, preferred-leader rebalance
//	controller_topics.go      CreateTopics, DeleteTopics, CreatePartitions
//	controller_reassign.go    AlterPartitionReassignments,
//	                          ListPartitionReassignments, completing a move
//	                          (KIP-455)
//	controller_configs.go     AlterConfigs, IncrementalAlterConfigs
//	controller_scram.go       AlterUserScramCredentials (salted password in,
//	                          stored and server keys out)
//	controller_acls.go        CreateAcls, DeleteAcls (AclControlManager's rules)
//	controller_quotas.go      AlterClientQuotas (ClientQuotaControlManager's rules)
//	controller_groups.go      offsets, generations, group and offset deletes,
//	                          offset expiry (offsets.retention.minutes)
//	controller_txns.go        transaction state writes (WriteTxn)
//	controller_share_groups.go  share group state writes (WriteShareGroup)
//	rpc_server.go  Kafka-framed controller RPCs, forwarding to the leader
//	rpc_client.go  ControllerClient (retries, read-your-writes)
//	frame.go       frame and header codec, the index tag
//	membership.go  QuorumStatus and DescribeQuorum
//	replication_view.go  the leader's view of each follower (log end, last
//	               answer, caught-up time), read off AppendEntries answers
//	               because hashicorp/raft does not export it
//	metrics.go     Observer (commit, apply, snapshot and election timings for
//	               metrics, with no metrics library here) and RaftStats
//	hclog.go       hashicorp's hclog onto zerolog
//	inmem.go       InmemNetwork, StartInMemory, CommitRecords: the in-memory twin
//
// # The controller listener
//
// Raft and the controller RPCs share one TCP listener. A Raft dial writes
// one preface byte, RaftPreface (0xFF), before hashicorp's own protocol; a
// Kafka frame starts with its int32 size, whose first byte is 0x00 for any
// frame under 16 MiB. The accept loop reads that first byte and routes the
// connection (after Config.Handshake, when the listener is TLS or SASL: the
// handshake's principal decides, with Config.Authorizer, whether a Raft
// stream is kept and each RPC is served or answered
// CLUSTER_AUTHORIZATION_FAILED; Config.Dial secures the other direction);
// everything that is not Raft is read as Kafka frames: 4-byte
// size, request header v1 or v2 (v2 when kmsg says the version is flexible),
// a kmsg request body; answers are kmsg responses with header v0/v1. Packet
// captures decode them as Kafka. Served: BrokerRegistration, BrokerHeartbeat,
// UnregisterBroker, CreateTopics, DeleteTopics, CreatePartitions,
// AlterConfigs, IncrementalAlterConfigs, AlterPartition, AllocateProducerIDs,
// ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments,
// DescribeQuorum, AlterUserScramCredentials, CreateAcls,
// DeleteAcls (controller_acls.go), AlterClientQuotas, Envelope (transaction
// state, below), UpdateFeatures (controller_features.go: feature levels,
// the brokers' supported ranges from registration and SupportedFeaturesTag
// (10060) on heartbeats; a heartbeat's SuspectedBrokersTag (10005) names the
// brokers the sender saw vanish, which the controller probes, liveness.go),
// AddRaftVoter with
// NonvoterTag (a broker-only node joining as a Raft non-voter),
// AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter without it (the
// dynamic quorum, quorum.go and vote_gate.go), and the group coordinators'
// writes below.
//
// # In memory
//
// As hashicorp/raft ships InmemStore and InmemTransport beside the real
// ones, Config.Inmem runs a node on raft.InmemStore, raft.InmemSnapshotStore
// and raft.InmemTransport over an InmemNetwork, with no data directory or
// listener. Everything above the stores is the production code: the FSM,
// the publisher, the controller loop and its decide functions, handle and
// forwarding. Only the socket is gone: a ControllerClient on the network
// (Node.Client, or ClientConfig.Inmem) frames each request as on the
// controller listener and hands it to the addressed node, which parses it,
// answers through handle and frames the answer, which the client parses;
// roundTripper is that seam (connPool over TCP, inmemClient in memory).
// Several nodes on one network form a quorum (Raft over InmemTransport);
// an address keeps its stores across a stop and a start.
//
// StartInMemory is the tests' constructor: a single voter at InmemAddr(id),
// returned once it is the active controller with the cluster id written
// (about 10 ms from start to shutdown). CommitRecords, accepted only by
// in-memory nodes, commits records as given through the controller loop,
// for a test that starts from an image requests would take long to build.
// The tests of broker, broker/group, broker/replica and cmd/raftka run
// their controller this way instead of private fakes; those packages'
// own code still reaches the controller only through their interfaces.
//
// # Group state on the wire
//
// Kafka keeps group state in __consumer_offsets and has no KRaft message for
// it; raftka keeps it in the image and reuses the client-facing group
// messages, sent by a coordinator to the controller listener, so captures
// still decode. Each is a record the controller checks and commits, never
// a group protocol step:
//
//	OffsetCommit v9       CommitOffsets record: Group, and per partition
//	                      Offset, LeaderEpoch, Metadata, the coordinator's
//	                      metadata.OffsetCommit values in request order
//	                      (Generation -1, MemberID empty: the coordinator
//	                      checked the member; the commit time is the
//	                      controller's)
//	OffsetCommit v9 with  DeleteOffsets record (Kafka's OffsetDelete, whose
//	  DeleteOffsetsTag    only version is not flexible and so could not
//	  (10002) = 1         carry IndexTag): the listed partitions' offsets go
//	SyncGroup v5          GroupGeneration record: Group, Generation,
//	                      ProtocolType, Protocol, MemberID = the leader, one
//	                      GroupAssignment entry per member (MemberID, empty
//	                      MemberAssignment, InstanceIDTag (10003) = the
//	                      group.instance.id of a static member),
//	                      SubscribedTopicsTag (10004) = the members'
//	                      topics (absent: unknown); the record's
//	                      StateTimestampMs is the controller's time
//	DeleteGroups v2       one DeleteGroup record per named group the image
//	                      holds (emptiness is the coordinator's check)
//
// The errors are Kafka's: INVALID_GROUP_ID for an empty group id,
// ILLEGAL_GENERATION for a generation not above the recorded one,
// UNKNOWN_TOPIC_OR_PARTITION for an offset replay could not store
// (metadata.CheckOffsetCommit, the rule replay applies too).
//
// # Transaction state on the wire
//
// Kafka keeps transaction state in __transaction_state; raftka keeps it in
// the image. A transaction coordinator (broker/txn) sends each write as
// Envelope v0 (Kafka's wrapper for requests a broker sends the controller
// on another's behalf) whose RequestData is one metadata record batch
// (metadata.EncodeRecords) of one record, or of several Transaction
// records of one id (each checked against the state the one before leaves;
// all are recorded or none):
//
//	Transaction       the id's whole new state; checked with
//	                  metadata.CheckTxnTransition against the image
//	TxnOffsetCommit   a group's offsets pending in an open transaction;
//	                  checked with metadata.CheckTxnOffsetCommit
//	ConsumerGroup     a KIP-848 group's whole state, from its group
//	                  coordinator; checked with metadata.CheckConsumerGroup
//	                  (coordinator epoch fencing, one owner per partition),
//	                  StateTimestampMs stamped with the controller's clock
//	ConsumerGroupDelta  a change of a recorded one (the changed members
//	                  only), checked as the whole group it makes
//	RemoveConsumerGroup  an empty consumer group becoming classic
//
// The answer's ErrorCode is 0, INVALID_REQUEST (not one such record,
// nor a sequence of one id's Transaction records),
// INVALID_TXN_STATE, PRODUCER_FENCED, or NOT_COORDINATOR (a coordinator
// epoch below the recorded one). Writes queue on the controller loop like
// offset commits, so concurrent transactions share Raft entries.
//
// Share group state (records 55-59) rides the same Envelope: a batch of
// only share group records, one change of one group (broker/group/
// sharegroup writes only what changed), recorded whole if it applies to
// the image, else INVALID_REQUEST.
//
// A request that lands on a follower is forwarded once to the Raft leader
// (with client id "raftka-controller-forward"); a forwarded request that
// still misses the leader, or one sent while no leader is known, is answered
// NOT_CONTROLLER everywhere the response has an error code, and
// ControllerClient retries with backoff until its context ends.
//
// # Read-your-writes
//
// Every controller response is flexible at the versions ControllerClient
// sends, and carries the Raft index of the entry that committed it in tagged
// field IndexTag (10000): 8 bytes, big-endian. An operation that committed
// nothing returns the index of the leader's image it was decided against.
// ControllerClient with a Waiter waits until the local node has applied that
// index before it returns, so the caller's next read of its own image sees
// the change.
//
// # Concurrency
//
//   - hashicorp/raft calls the FSM from one goroutine; Publisher.publish runs
//     only there. Current, WaitForIndex and Subscribe are safe anywhere.
//   - The active controller is one goroutine (controller.run), started when
//     this node gains Raft leadership and stopped when it loses it. It owns
//     the broker leases. Operations reach it over a buffered channel; it decides each
//     against the image as it will be after the operations before it in the
//     batch, commits all their records as one Raft entry (group commit, one
//     fsync), and answers each after the commit. Decide functions mutate
//     nothing but the loop-owned leases. The loop's own tickers add the
//     periodic decisions to batches the same way: session expiry (every
//     SessionTimeout/32) and, with Config.AutoLeaderRebalance, the
//     preferred-leader check. Time reaches a decision only as its now
//     parameter, and a record that depends on it carries it (a commit's
//     CommitTimeMs), so replay never reads a clock.
//   - Probes of suspected brokers (liveness.go) dial on goroutines of their
//     own, counted in controller.probes (stop waits for them, and they end
//     when quit closes), and come back to the loop as operations.
//   - A new active controller first waits on a Raft barrier, then gives every
//     registered broker a full session timeout of grace before fencing it
//     (unless a probe shows its listeners gone),
//     and counts a broker registered under an earlier leader as caught up
//     once it reports the log index at which this controller started.
//   - Locks: Node.ctrlMu (the current controller pointer), Publisher.mu then
//     Subscription.mu, mux.mu, connPool.mu, InmemNetwork.mu. None is held
//     while taking another except Publisher.mu -> Subscription.mu (and
//     InmemNetwork.mu around hashicorp's InmemTransport locks).
//
//arch:imports std metadata broker/kafkacode github.com/hashicorp/raft github.com/hashicorp/raft-boltdb/v2
//arch:imports go.etcd.io/bbolt github.com/hashicorp/go-hclog github.com/twmb/franz-go/pkg/kmsg
//arch:imports github.com/twmb/franz-go/pkg/kerr github.com/rs/zerolog
package raftfsm
