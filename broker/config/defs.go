package config

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Type says how a key's text becomes a value. The parsed Go type is noted on
// each constant; validators receive that type.
type Type int

const (
	TypeInt        Type = iota + 1 // int32
	TypeLong                       // int64
	TypeBool                       // bool; "true" or "false", any case, as Kafka
	TypeString                     // string, surrounding spaces trimmed
	TypeList                       // []string: comma separated, entries trimmed, empty entries dropped
	TypeClass                      // string naming a Java class (accepted only where raftka can honour it)
	TypePassword                   // string kept verbatim and never shown by Settings
	TypeDurationMs                 // int64 milliseconds
)

func (t Type) String() string {
	switch t {
	case TypeInt:
		return "int"
	case TypeLong:
		return "long"
	case TypeBool:
		return "bool"
	case TypeString:
		return "string"
	case TypeList:
		return "list"
	case TypeClass:
		return "class"
	case TypePassword:
		return "password"
	case TypeDurationMs:
		return "duration-ms"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Def describes one key raftka acts on.
type Def struct {
	Name string
	Type Type
	// Default is the text form of the default, parsed like a file value.
	// It is ignored when NoDefault is set.
	Default string
	// NoDefault marks keys that stay unset unless given (Kafka's null
	// defaults, and node.id / process.roles which must be given).
	NoDefault bool
	// Validate checks a parsed value (see Type for its Go type); nil accepts
	// every value of the type.
	Validate func(v any) error
	Doc      string
	// set stores the parsed value in a Config (set.go). A key with no setter
	// is read by a rule (validate.go) instead; some are read by both.
	set setter
}

// Defs returns the table of keys raftka acts on, sorted by name. The slice
// is a copy; changing it changes nothing.
func Defs() []Def {
	out := slices.Clone(defs)
	slices.SortFunc(out, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
	return out
}

var defsByName = func() map[string]*Def {
	m := make(map[string]*Def, len(defs))
	for i := range defs {
		if _, dup := m[defs[i].Name]; dup {
			panic("config: key defined twice: " + defs[i].Name)
		}
		m[defs[i].Name] = &defs[i]
	}
	return m
}()

var maxLong = strconv.Itoa(math.MaxInt64) // used as a text default

// defs is the one table. Defaults are Kafka's unless the doc says otherwise.
var defs = []Def{
	// Server basics.
	{Name: "node.id", Type: TypeInt, NoDefault: true, Validate: atLeast(0),
		set: to(func(c *Config) *int32 { return &c.NodeID }),
		Doc: "This node's id, unique in the cluster. Required."},
	{Name: "process.roles", Type: TypeList, NoDefault: true, Validate: rolesValid,
		set: setRoles,
		Doc: "broker, controller, or both. Required: raftka runs in KRaft mode only."},
	{Name: "controller.quorum.voters", Type: TypeList, Default: "",
		set: setVoters,
		Doc: "The Raft voters as id@host:port, the port being each voter's controller listener: a static quorum (kraft.version 0). Set this or controller.quorum.bootstrap.servers."},
	{Name: "controller.quorum.bootstrap.servers", Type: TypeList, Default: "",
		set: setBootstrapServers,
		Doc: "Controller listeners (host:port) to reach the quorum by when controller.quorum.voters is empty: a dynamic quorum (KIP-853, kraft.version 1) whose voters storage format --standalone / --initial-controllers set and AddRaftVoter / RemoveRaftVoter (raftka cluster add-controller / remove-controller) change."},
	{Name: "controller.quorum.election.timeout.ms", Type: TypeDurationMs, Default: "1000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.ElectionTimeout }),
		Doc: "How long a voter waits without hearing from a leader before it starts an election."},
	{Name: "controller.quorum.fetch.timeout.ms", Type: TypeDurationMs, Default: "2000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.QuorumFetchTimeout }),
		Doc: "How long a follower waits for the leader before it treats it as lost."},
	{Name: "broker.rack", Type: TypeString, NoDefault: true,
		set: to(func(c *Config) *string { return &c.Rack }),
		Doc: "The rack of this broker, used for rack-aware replica placement."},

	// Listeners.
	{Name: "listeners", Type: TypeList, Default: "PLAINTEXT://:9092",
		set: setListeners,
		Doc: "Where this node listens, as NAME://host:port; an empty host binds every interface."},
	{Name: "advertised.listeners", Type: TypeList, NoDefault: true,
		Doc: "What clients are told to connect to. Default: listeners without the controller listeners."},
	{Name: "controller.listener.names", Type: TypeList, Default: "",
		set: setControllerListenerNames,
		Doc: "The listener names that carry Raft and controller RPCs; the first is used to reach other controllers."},
	{Name: "inter.broker.listener.name", Type: TypeString, NoDefault: true,
		Doc: "The listener brokers use to fetch from each other. Default: the listener named after security.inter.broker.protocol."},
	{Name: "security.inter.broker.protocol", Type: TypeString, Default: "PLAINTEXT", Validate: oneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
		Doc: "The security protocol between brokers, naming the listener used when inter.broker.listener.name is not set."},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: TypeString, Default: "GSSAPI",
		set: func(c *Config, v any) error { c.SASLMechanismInterBroker = strings.ToUpper(v.(string)); return nil },
		Doc: "The SASL mechanism a broker uses to fetch from others when the inter-broker listener is SASL; its credentials are the username and password of that listener's JAAS config for the mechanism."},
	{Name: "sasl.mechanism.controller.protocol", Type: TypeString, Default: "GSSAPI",
		set: func(c *Config, v any) error { c.SASLMechanismController = strings.ToUpper(v.(string)); return nil },
		Doc: "The SASL mechanism a node uses to reach the controller listeners (Raft and the controller RPCs) when the controller listener is SASL; its credentials are the username and password of that listener's JAAS config for the mechanism."},
	{Name: "listener.security.protocol.map", Type: TypeList,
		Default: "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
		set:     setProtocolMap,
		Doc:     "Listener name to security protocol, as NAME:PROTOCOL pairs."},
	// Off unless given: a fixed default port collides when several nodes
	// share a host (three Kafka-style configs on one machine), and a
	// default bound to every interface exposes an operator port nobody
	// asked for. Deployments that scrape set it explicitly (deploy/).
	{Name: "metrics.listener", Type: TypeString, Default: "", Validate: hostPortOrEmpty,
		set: to(func(c *Config) *string { return &c.MetricsListener }),
		Doc: "raftka's own: host:port for Prometheus metrics, /healthz and /readyz. Default: off (no listener)."},
	{Name: "metrics.pprof.enable", Type: TypeBool, Default: "false",
		set: to(func(c *Config) *bool { return &c.MetricsPprofEnable }),
		Doc: "raftka's own: also serve the Go profiler under /debug/pprof/ on metrics.listener."},
	{Name: "console.enable", Type: TypeBool, Default: "false",
		set: to(func(c *Config) *bool { return &c.ConsoleEnable }),
		Doc: "raftka's own: serve the read-only web console (cluster, topics with their recent records, consumer groups with lag, brokers) on metrics.listener. It shows record keys and values: enable it only where that listener is reachable by operators alone."},
	{Name: "raftka.metrics.consumer.lag.max.series", Type: TypeInt, Default: "10000", Validate: atLeast(0),
		set: to(func(c *Config) *int32 { return &c.MetricsConsumerLagMaxSeries }),
		Doc: "raftka's own: at most this many raftka_consumer_group_lag series (one per group and partition with a committed offset) a coordinator exports per scrape, the first by group, topic and partition; the rest are counted in raftka_consumer_group_lag_series_dropped. 0 exports none."},

	// Log directories.
	{Name: "log.dirs", Type: TypeList, NoDefault: true,
		Doc: "The directories partition logs are kept in. Overrides log.dir. One of the two is required."},
	{Name: "log.dir", Type: TypeString, NoDefault: true,
		Doc: "The single log directory, used when log.dirs is not set."},
	{Name: "metadata.log.dir", Type: TypeString, NoDefault: true,
		set: to(func(c *Config) *string { return &c.MetadataLogDir }),
		Doc: "Where the Raft log and snapshots live. Default: the first log directory."},
	// hashicorp/raft counts snapshot thresholds in log entries, not bytes as
	// Kafka's metadata.log.max.record.bytes.between.snapshots does, so these
	// are raftka's own keys rather than a reinterpretation of Kafka's.
	{Name: "raftka.metadata.snapshot.threshold", Type: TypeLong, Default: "8192", Validate: atLeast(1),
		set: toUint64(func(c *Config) *uint64 { return &c.SnapshotThreshold }),
		Doc: "raftka: take a metadata snapshot after this many new Raft log entries."},
	{Name: "raftka.metadata.snapshot.interval.ms", Type: TypeDurationMs, Default: "120000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.SnapshotInterval }),
		Doc: "raftka: how often the snapshot threshold is checked."},
	{Name: "raftka.metadata.snapshot.trailing.logs", Type: TypeLong, Default: "10240", Validate: atLeast(0),
		set: toUint64(func(c *Config) *uint64 { return &c.SnapshotTrailingLogs }),
		Doc: "raftka: Raft log entries kept behind a snapshot, so a briefly absent node catches up from the log rather than a snapshot."},

	// Topic defaults.
	{Name: "num.partitions", Type: TypeInt, Default: "1", Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.NumPartitions }),
		Doc: "Partitions of an auto-created topic, and of a CreateTopics request that leaves the count to the broker."},
	{Name: "default.replication.factor", Type: TypeInt, Default: "1", Validate: between(1, math.MaxInt16),
		set: toInt16(func(c *Config) *int16 { return &c.DefaultReplicationFactor }),
		Doc: "Replication factor of auto-created topics and of requests that leave it to the broker."},
	{Name: "min.insync.replicas", Type: TypeInt, Default: "1", Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.MinInsyncReplicas }),
		Doc: "Topic default: how many in-sync replicas an acks=all write needs."},
	{Name: "auto.create.topics.enable", Type: TypeBool, Default: "true",
		set: to(func(c *Config) *bool { return &c.AutoCreateTopicsEnable }),
		Doc: "Whether a Metadata request for an unknown topic creates it."},
	{Name: "delete.topic.enable", Type: TypeBool, Default: "true",
		set: to(func(c *Config) *bool { return &c.DeleteTopicEnable }),
		Doc: "Whether DeleteTopics is allowed."},
	{Name: "unclean.leader.election.enable", Type: TypeBool, Default: "false",
		set: to(func(c *Config) *bool { return &c.UncleanLeaderElectionEnable }),
		Doc: "Topic default: whether a replica outside the ISR may become leader when no ISR member is alive."},
	{Name: "message.max.bytes", Type: TypeInt, Default: "1048588", Validate: atLeast(0),
		set: to(func(c *Config) *int32 { return &c.MessageMaxBytes }),
		Doc: "Topic default (max.message.bytes): the largest record batch a topic accepts."},

	// Internal topics, which raftka keeps in the Raft metadata but sizes like Kafka.
	{Name: "offsets.topic.replication.factor", Type: TypeInt, Default: "3", Validate: between(1, math.MaxInt16),
		set: toInt16(func(c *Config) *int16 { return &c.OffsetsTopicReplicationFactor }),
		Doc: "Replicas of each group coordinator slot."},
	{Name: "offsets.topic.num.partitions", Type: TypeInt, Default: "50", Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.OffsetsTopicNumPartitions }),
		Doc: "Number of group coordinator slots."},
	{Name: "offsets.retention.minutes", Type: TypeInt, Default: "10080", Validate: atLeast(1),
		set: minutesToDuration(func(c *Config) *time.Duration { return &c.OffsetsRetention }),
		Doc: "How long committed offsets of an empty group (from when it became empty) or of a standalone consumer (from each commit) are kept (KIP-211); the active controller removes them."},
	{Name: "offsets.retention.check.interval.ms", Type: TypeDurationMs, Default: "600000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.OffsetsRetentionCheckInterval }),
		Doc: "How often the active controller looks for expired committed offsets."},
	{Name: "transaction.state.log.replication.factor", Type: TypeInt, Default: "3", Validate: between(1, math.MaxInt16),
		set: toInt16(func(c *Config) *int16 { return &c.TransactionStateLogReplicationFactor }),
		Doc: "Replicas of each transaction coordinator slot."},
	{Name: "transaction.state.log.min.isr", Type: TypeInt, Default: "2", Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.TransactionStateLogMinISR }),
		Doc: "min.insync.replicas of the transaction coordinator slots."},
	{Name: "transaction.state.log.num.partitions", Type: TypeInt, Default: "50", Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.TransactionStateLogNumPartitions }),
		Doc: "Number of transaction coordinator slots."},
	{Name: "transaction.max.timeout.ms", Type: TypeDurationMs, Default: "900000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.TransactionMaxTimeout }),
		Doc: "The largest transaction timeout a producer may ask for."},
	{Name: "transactional.id.expiration.ms", Type: TypeDurationMs, Default: "604800000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.TransactionalIDExpiration }),
		Doc: "How long an idle transactional id is remembered."},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: TypeDurationMs, Default: "10000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.TransactionAbortTimedOutInterval }),
		Doc: "How often a transaction coordinator aborts the transactions open past their timeout (fencing their producers)."},
	{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: TypeDurationMs, Default: "3600000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.TransactionRemoveExpiredInterval }),
		Doc: "How often a transaction coordinator removes the transactional ids idle past transactional.id.expiration.ms."},
	{Name: "transaction.partition.verification.enable", Type: TypeBool, Default: "true",
		set: to(func(c *Config) *bool { return &c.TransactionPartitionVerification }),
		Doc: "A partition leader asks the transaction coordinator whether a producer's transaction includes the partition before it appends the producer's first transactional batch there (KIP-890); off, such a batch is appended unasked."},
	{Name: "producer.id.expiration.ms", Type: TypeDurationMs, Default: "86400000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.ProducerIDExpiration }),
		Doc: "How long an idle producer id's sequence state is kept."},

	// Log segments, retention and flushing.
	{Name: "log.retention.ms", Type: TypeLong, NoDefault: true,
		Doc: "Topic default (retention.ms); wins over log.retention.minutes and log.retention.hours. Negative: no time limit."},
	{Name: "log.retention.minutes", Type: TypeInt, NoDefault: true,
		Doc: "Retention in minutes; wins over log.retention.hours."},
	{Name: "log.retention.hours", Type: TypeInt, Default: "168",
		Doc: "Retention in hours, used when neither log.retention.ms nor log.retention.minutes is set."},
	{Name: "log.retention.bytes", Type: TypeLong, Default: "-1",
		set: to(func(c *Config) *int64 { return &c.LogRetentionBytes }),
		Doc: "Topic default (retention.bytes): the size a partition is cut back to. -1: no size limit."},
	{Name: "log.segment.bytes", Type: TypeInt, Default: "1073741824", Validate: atLeast(14),
		set: to(func(c *Config) *int32 { return &c.LogSegmentBytes }),
		Doc: "Topic default (segment.bytes): a segment rolls when it would grow past this."},
	{Name: "log.roll.ms", Type: TypeLong, NoDefault: true, Validate: atLeast(1),
		Doc: "Topic default (segment.ms): a segment rolls once its first batch is this old. Wins over log.roll.hours."},
	{Name: "log.roll.hours", Type: TypeInt, Default: "168", Validate: atLeast(1),
		Doc: "Segment roll age in hours, used when log.roll.ms is not set."},
	{Name: "log.index.interval.bytes", Type: TypeInt, Default: "4096", Validate: atLeast(0),
		set: to(func(c *Config) *int32 { return &c.LogIndexIntervalBytes }),
		Doc: "Topic default (index.interval.bytes): bytes between offset index entries."},
	{Name: "log.index.size.max.bytes", Type: TypeInt, Default: "10485760", Validate: atLeast(4),
		set: to(func(c *Config) *int32 { return &c.LogIndexSizeMaxBytes }),
		Doc: "Topic default (segment.index.bytes): the size an index file is preallocated to; a full index rolls the segment."},
	{Name: "log.flush.interval.messages", Type: TypeLong, Default: maxLong, Validate: atLeast(1),
		set: to(func(c *Config) *int64 { return &c.LogFlushIntervalMessages }),
		Doc: "Topic default (flush.messages): fsync after this many unflushed records. 1 is durable mode: every replica fsyncs a record (one group commit per log dir) before it counts toward acknowledgement."},
	{Name: "log.flush.interval.ms", Type: TypeLong, NoDefault: true,
		Doc: "Topic default (flush.ms): fsync once the oldest unflushed record is this old. Default: log.flush.scheduler.interval.ms."},
	{Name: "log.flush.scheduler.interval.ms", Type: TypeLong, Default: maxLong,
		Doc: "The flush age used when log.flush.interval.ms is not set."},
	{Name: "log.flush.offset.checkpoint.interval.ms", Type: TypeDurationMs, Default: "60000", Validate: between(0, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.LogFlushOffsetCheckpointInterval }),
		Doc: "How often each log dir's recovery-point checkpoint is written."},
	{Name: "log.flush.start.offset.checkpoint.interval.ms", Type: TypeDurationMs, Default: "60000", Validate: between(0, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.LogFlushStartOffsetCheckpoint }),
		Doc: "How often each log dir's log-start-offset checkpoint is written."},
	{Name: "log.retention.check.interval.ms", Type: TypeDurationMs, Default: "300000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.LogRetentionCheckInterval }),
		Doc: "How often segments are checked against the retention limits."},
	{Name: "log.cleanup.policy", Type: TypeList, Default: "delete", Validate: listOf("delete", "compact"),
		set: to(func(c *Config) *[]string { return &c.LogCleanupPolicy }),
		Doc: "Topic default (cleanup.policy): delete drops old segments by retention, compact keeps each key's last record, both do both."},
	{Name: "log.cleaner.min.cleanable.ratio", Type: TypeString, Default: "0.5", Validate: floatBetween(0, 1),
		set: func(c *Config, v any) (err error) {
			c.LogCleanerMinCleanableRatio, err = strconv.ParseFloat(v.(string), 64)
			return err
		},
		Doc: "Topic default (min.cleanable.dirty.ratio): the dirty share of a log above which the cleaner compacts it."},
	{Name: "log.cleaner.delete.retention.ms", Type: TypeLong, Default: "86400000", Validate: atLeast(0),
		set: to(func(c *Config) *int64 { return &c.LogCleanerDeleteRetentionMs }),
		Doc: "Topic default (delete.retention.ms): how long compaction keeps tombstones after the clean that first sees them."},
	{Name: "log.cleaner.min.compaction.lag.ms", Type: TypeLong, Default: "0", Validate: atLeast(0),
		set: to(func(c *Config) *int64 { return &c.LogCleanerMinCompactionLagMs }),
		Doc: "Topic default (min.compaction.lag.ms): records younger than this are not compacted."},
	{Name: "log.cleaner.max.compaction.lag.ms", Type: TypeLong, Default: "9223372036854775807", Validate: atLeast(1),
		set: to(func(c *Config) *int64 { return &c.LogCleanerMaxCompactionLagMs }),
		Doc: "Topic default (max.compaction.lag.ms): a log with a dirty record older than this is compacted whatever its dirty ratio."},
	{Name: "compression.type", Type: TypeString, Default: "producer", Validate: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
		set: to(func(c *Config) *string { return &c.CompressionType }),
		Doc: "Topic default (compression.type): the codec the leader stores produced batches in; producer stores them as sent."},
	{Name: "compression.gzip.level", Type: TypeInt, Default: "-1", Validate: gzipLevel,
		set: to(func(c *Config) *int32 { return &c.CompressionGzipLevel }),
		Doc: "Topic default (compression.gzip.level): 1..9, or -1 for zlib's default."},
	{Name: "compression.lz4.level", Type: TypeInt, Default: "9", Validate: between(1, 17),
		set: to(func(c *Config) *int32 { return &c.CompressionLZ4Level }),
		Doc: "Topic default (compression.lz4.level): 1..17."},
	{Name: "compression.zstd.level", Type: TypeInt, Default: "3", Validate: between(-131072, 22),
		set: to(func(c *Config) *int32 { return &c.CompressionZstdLevel }),
		Doc: "Topic default (compression.zstd.level): -131072..22."},
	{Name: "log.cleaner.enable", Type: TypeBool, Default: "true",
		set: to(func(c *Config) *bool { return &c.LogCleanerEnable }),
		Doc: "Run the log cleaner, which compacts topics whose cleanup.policy includes compact."},
	{Name: "log.cleaner.threads", Type: TypeInt, Default: "1", Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.LogCleanerThreads }),
		Doc: "Cleaner threads; each cleans one log at a time, the dirtiest first."},
	{Name: "log.cleaner.dedupe.buffer.size", Type: TypeLong, Default: "134217728", Validate: atLeast(1),
		set: to(func(c *Config) *int64 { return &c.LogCleanerDedupeBufferSize }),
		Doc: "Memory for the cleaners' key maps, shared by the threads (24 bytes a key): a clean covers as many dirty segments as their keys fit."},
	{Name: "log.cleaner.io.max.bytes.per.second", Type: TypeString, Default: "1.7976931348623157E308", Validate: nonNegativeFloat,
		set: func(c *Config, v any) (err error) {
			c.LogCleanerIOMaxBytesPerSecond, err = strconv.ParseFloat(v.(string), 64)
			return err
		},
		Doc: "Bytes per second the cleaners may read and write together; the default is no limit."},
	// Kafka has no such key: its cleaner never yields to produce.
	{Name: "raftka.log.cleaner.busy.io.max.bytes.per.second", Type: TypeLong, Default: "80000000", Validate: atLeast(0),
		set: to(func(c *Config) *int64 { return &c.LogCleanerBusyIOBytesPerSecond }),
		Doc: "raftka: bytes per second the cleaners may read and write together while the broker's logs take appends (and for half a second after), so cleaning yields to produce; log.cleaner.io.max.bytes.per.second still caps it and applies alone when appends stop. 0 turns it off, as in Kafka."},
	{Name: "log.cleaner.backoff.ms", Type: TypeDurationMs, Default: "15000", Validate: atLeast(0),
		set: toDuration(func(c *Config) *time.Duration { return &c.LogCleanerBackoff }),
		Doc: "How long a cleaner thread sleeps when no log needs cleaning."},
	{Name: "log.message.timestamp.type", Type: TypeString, Default: "CreateTime", Validate: oneOf("CreateTime", "LogAppendTime"),
		set: to(func(c *Config) *string { return &c.LogMessageTimestampType }),
		Doc: "Topic default (message.timestamp.type): CreateTime keeps the producer's timestamps, LogAppendTime stamps the broker's clock."},

	// Authentication (the per-listener TLS and SASL keys are in security.go).
	{Name: "connection.failed.authentication.delay.ms", Type: TypeDurationMs, Default: "100", Validate: atLeast(0),
		set: toDuration(func(c *Config) *time.Duration { return &c.FailedAuthenticationDelay }),
		Doc: "How long a connection whose SASL authentication failed is kept open after the error is sent, to slow down password guessing."},
	{Name: "connections.max.reauth.ms", Type: TypeDurationMs, Default: "0", Validate: atLeast(0),
		set: toDuration(func(c *Config) *time.Duration { return &c.ConnectionsMaxReauth }),
		Doc: "KIP-368: the longest a SASL session lasts; SaslAuthenticate v1+ tells the client, which must re-authenticate on the open connection before then, and a connection that sends a request after it without re-authenticating is closed. 0 (the default) leaves sessions unbounded, except by an OAUTHBEARER token's exp."},

	// Requests and replication.
	{Name: "socket.request.max.bytes", Type: TypeInt, Default: "104857600", Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.SocketRequestMaxBytes }),
		Doc: "The largest request frame accepted; a larger one closes the connection."},
	{Name: "fetch.max.bytes", Type: TypeInt, Default: "57671680", Validate: atLeast(1024),
		set: to(func(c *Config) *int32 { return &c.FetchMaxBytes }),
		Doc: "The most bytes one Fetch response carries, whatever the client asks for."},
	{Name: "connections.max.idle.ms", Type: TypeDurationMs, Default: "600000",
		set: toDuration(func(c *Config) *time.Duration { return &c.ConnectionsMaxIdle }),
		Doc: "Idle client connections are closed after this long; negative never closes them."},
	{Name: "replica.lag.time.max.ms", Type: TypeDurationMs, Default: "30000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.ReplicaLagTimeMax }),
		Doc: "A follower that has not caught up with the leader for this long leaves the ISR."},
	{Name: "replica.fetch.max.bytes", Type: TypeInt, Default: "1048576", Validate: atLeast(0),
		set: to(func(c *Config) *int32 { return &c.ReplicaFetchMaxBytes }),
		Doc: "Bytes per partition a follower asks for in one fetch (at least one batch is always returned)."},
	{Name: "replica.fetch.response.max.bytes", Type: TypeInt, Default: "10485760", Validate: atLeast(0),
		set: to(func(c *Config) *int32 { return &c.ReplicaFetchResponseMaxByte }),
		Doc: "Bytes a follower asks for in one fetch over all partitions."},
	{Name: "replica.fetch.min.bytes", Type: TypeInt, Default: "1", Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.ReplicaFetchMinBytes }),
		Doc: "Bytes a follower fetch waits for, up to replica.fetch.wait.max.ms."},
	{Name: "replica.fetch.wait.max.ms", Type: TypeDurationMs, Default: "500", Validate: between(0, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.ReplicaFetchWaitMax }),
		Doc: "How long a follower fetch waits at the leader for data."},
	{Name: "replica.fetch.backoff.ms", Type: TypeDurationMs, Default: "1000", Validate: between(0, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.ReplicaFetchBackoff }),
		Doc: "How long a follower waits after a failed fetch."},
	{Name: "num.recovery.threads.per.data.dir", Type: TypeInt, Default: "0", Validate: atLeast(0),
		set: to(func(c *Config) *int32 { return &c.RecoveryThreadsPerDataDir }),
		Doc: "Threads per log directory that open (and after an unclean stop, recover) partition logs at start. 0, raftka's default, lets raftka choose (opening is I/O-bound; Kafka's default is 1)."},
	// Kafka has no such key: it keeps a follower's copy in the page cache.
	{Name: "raftka.follower.drop.behind.bytes", Type: TypeLong, Default: "8388608", Validate: atLeast(0),
		set: to(func(c *Config) *int64 { return &c.FollowerDropBehind }),
		Doc: "raftka: a follower replica asks the kernel to write back and drop from the page cache what it appended, in steps of this many bytes (nothing reads a follower's copy until it leads, and the cache is better spent on the leaders' data consumers read). 0 keeps follower data cached, as Kafka does."},
	{Name: "replica.socket.timeout.ms", Type: TypeDurationMs, Default: "30000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.ReplicaSocketTimeout }),
		Doc: "How long a follower waits for the leader to answer a request beyond the fetch's own wait."},
	{Name: "max.incremental.fetch.session.cache.slots", Type: TypeInt, Default: "1000", Validate: atLeast(0),
		set: to(func(c *Config) *int32 { return &c.FetchSessionCacheSlots }),
		Doc: "How many incremental fetch sessions (KIP-227) a broker keeps; 0 turns sessions off."},
	{Name: "min.incremental.fetch.session.eviction.ms", Type: TypeDurationMs, Default: "120000", Validate: atLeast(0),
		set: toDuration(func(c *Config) *time.Duration { return &c.FetchSessionEvictionMin }),
		Doc: "How long a fetch session must be unused before a new session may evict it."},
	{Name: "follower.replication.throttled.rate", Type: TypeLong, Default: "9223372036854775807", Validate: atLeast(0),
		set: to(func(c *Config) *int64 { return &c.FollowerReplicationThrottledRate }),
		Doc: "Bytes per second this broker's fetchers may copy, together, for the replicas its topics list in follower.replication.throttled.replicas while they are out of the ISR (KIP-73); usually set as a dynamic broker config by a reassignment's --throttle."},
	{Name: "leader.replication.throttled.rate", Type: TypeLong, Default: "9223372036854775807", Validate: atLeast(0),
		set: to(func(c *Config) *int64 { return &c.LeaderReplicationThrottledRate }),
		Doc: "Bytes per second this broker, as leader, may send, together, to followers out of the ISR fetching the replicas its topics list in leader.replication.throttled.replicas (KIP-73); over it those partitions are answered without records. Usually set as a dynamic broker config by a reassignment's --throttle."},
	{Name: "num.replica.fetchers", Type: TypeInt, Default: "1", Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.NumReplicaFetchers }),
		Doc: "Fetcher connections per source broker."},
	{Name: "replica.high.watermark.checkpoint.interval.ms", Type: TypeDurationMs, Default: "5000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.HighWatermarkCheckpoint }),
		Doc: "How often each log dir's high-watermark checkpoint is written."},

	// Broker liveness and leadership.
	{Name: "broker.session.timeout.ms", Type: TypeDurationMs, Default: "9000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.BrokerSessionTimeout }),
		Doc: "A broker without a heartbeat for this long is fenced by the controller."},
	{Name: "broker.heartbeat.interval.ms", Type: TypeDurationMs, Default: "2000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.BrokerHeartbeatInterval }),
		Doc: "How often a broker heartbeats to the controller."},
	{Name: "controlled.shutdown.enable", Type: TypeBool, Default: "true",
		set: to(func(c *Config) *bool { return &c.ControlledShutdownEnable }),
		Doc: "Whether SIGTERM moves this broker's leaderships away before the process exits."},
	{Name: "auto.leader.rebalance.enable", Type: TypeBool, Default: "true",
		set: to(func(c *Config) *bool { return &c.AutoLeaderRebalanceEnable }),
		Doc: "Whether the controller moves leadership back to preferred replicas."},
	{Name: "leader.imbalance.check.interval.seconds", Type: TypeLong, Default: "300", Validate: atLeast(1),
		set: secondsToDuration(func(c *Config) *time.Duration { return &c.LeaderImbalanceCheckInterval }),
		Doc: "How often the controller checks for leadership imbalance."},
	{Name: "leader.imbalance.per.broker.percentage", Type: TypeInt, Default: "10", Validate: between(0, 100),
		set: to(func(c *Config) *int32 { return &c.LeaderImbalancePerBrokerPercentage }),
		Doc: "Accepted for compatibility; like Kafka 4's KRaft controller, raftka moves every non-preferred leader on each check."},

	// Group coordinator.
	{Name: "group.initial.rebalance.delay.ms", Type: TypeDurationMs, Default: "3000", Validate: between(0, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.GroupInitialRebalanceDelay }),
		Doc: "How long the first rebalance of an empty group waits for more members."},
	{Name: "group.min.session.timeout.ms", Type: TypeDurationMs, Default: "6000", Validate: between(0, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.GroupMinSessionTimeout }),
		Doc: "The smallest session timeout a group member may ask for."},
	{Name: "group.max.session.timeout.ms", Type: TypeDurationMs, Default: "1800000", Validate: between(0, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.GroupMaxSessionTimeout }),
		Doc: "The largest session timeout a group member may ask for."},
	{Name: "group.max.size", Type: TypeInt, Default: strconv.Itoa(math.MaxInt32), Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.GroupMaxSize }),
		Doc: "The most members one group may have."},
	{Name: "group.coordinator.rebalance.protocols", Type: TypeList, Default: "classic,consumer", Validate: rebalanceProtocols,
		set: to(func(c *Config) *[]string { return &c.GroupCoordinatorRebalanceProtocols }),
		Doc: "The group protocols served: classic (JoinGroup/SyncGroup) always; consumer is KIP-848 (ConsumerGroupHeartbeat, ConsumerGroupDescribe), which clients such as franz-go switch to as soon as it is advertised."},
	{Name: "group.consumer.session.timeout.ms", Type: TypeDurationMs, Default: "45000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.GroupConsumerSessionTimeout }),
		Doc: "A consumer-protocol member is fenced after this long without a heartbeat (per group: consumer.session.timeout.ms)."},
	{Name: "group.consumer.min.session.timeout.ms", Type: TypeDurationMs, Default: "45000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.GroupConsumerMinSessionTimeout }),
		Doc: "The smallest consumer.session.timeout.ms a group may set."},
	{Name: "group.consumer.max.session.timeout.ms", Type: TypeDurationMs, Default: "60000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.GroupConsumerMaxSessionTimeout }),
		Doc: "The largest consumer.session.timeout.ms a group may set."},
	{Name: "group.consumer.heartbeat.interval.ms", Type: TypeDurationMs, Default: "5000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.GroupConsumerHeartbeatInterval }),
		Doc: "The heartbeat interval consumer-protocol members are told to keep (per group: consumer.heartbeat.interval.ms)."},
	{Name: "group.consumer.min.heartbeat.interval.ms", Type: TypeDurationMs, Default: "5000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.GroupConsumerMinHeartbeatInterval }),
		Doc: "The smallest consumer.heartbeat.interval.ms a group may set."},
	{Name: "group.consumer.max.heartbeat.interval.ms", Type: TypeDurationMs, Default: "15000", Validate: between(1, math.MaxInt32),
		set: toDuration(func(c *Config) *time.Duration { return &c.GroupConsumerMaxHeartbeatInterval }),
		Doc: "The largest consumer.heartbeat.interval.ms a group may set."},
	{Name: "group.consumer.max.size", Type: TypeInt, Default: strconv.Itoa(math.MaxInt32), Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.GroupConsumerMaxSize }),
		Doc: "The most members one consumer-protocol group may have (GROUP_MAX_SIZE_REACHED beyond)."},
	{Name: "group.consumer.assignors", Type: TypeList, Default: "uniform,range", Validate: assignorNames,
		set: to(func(c *Config) *[]string { return &c.GroupConsumerAssignors }),
		Doc: "The server-side assignors of consumer-protocol groups, by Kafka's short names; the first is the default."},
	{Name: "group.consumer.migration.policy", Type: TypeString, Default: "bidirectional", Validate: migrationPolicy,
		set: to(func(c *Config) *string { return &c.GroupConsumerMigrationPolicy }),
		Doc: "KIP-848's online upgrade and downgrade (case-insensitive): upgrade lets a classic group with members become a consumer group when a consumer-protocol member joins, downgrade turns a consumer group back into a classic one when its last consumer-protocol member leaves, bidirectional both, disabled neither."},

	// Share groups (KIP-932; broker/group/sharegroup), Kafka 4.2's ranges.
	{Name: "group.share.session.timeout.ms", Type: TypeDurationMs, Default: "45000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.ShareGroupSessionTimeout }),
		Doc: "How long a share group member stays without a heartbeat before it is removed."},
	{Name: "group.share.min.session.timeout.ms", Type: TypeDurationMs, Default: "45000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.ShareGroupMinSessionTimeout }),
		Doc: "The smallest group.share.session.timeout.ms a share group may have."},
	{Name: "group.share.max.session.timeout.ms", Type: TypeDurationMs, Default: "60000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.ShareGroupMaxSessionTimeout }),
		Doc: "The largest group.share.session.timeout.ms a share group may have."},
	{Name: "group.share.heartbeat.interval.ms", Type: TypeDurationMs, Default: "5000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.ShareGroupHeartbeatInterval }),
		Doc: "How often share group members are told to heartbeat."},
	{Name: "group.share.min.heartbeat.interval.ms", Type: TypeDurationMs, Default: "5000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.ShareGroupMinHeartbeatInterval }),
		Doc: "The smallest group.share.heartbeat.interval.ms a share group may have."},
	{Name: "group.share.max.heartbeat.interval.ms", Type: TypeDurationMs, Default: "15000", Validate: atLeast(1),
		set: toDuration(func(c *Config) *time.Duration { return &c.ShareGroupMaxHeartbeatInterval }),
		Doc: "The largest group.share.heartbeat.interval.ms a share group may have."},
	{Name: "group.share.max.size", Type: TypeInt, Default: "200", Validate: between(1, 1000),
		set: to(func(c *Config) *int32 { return &c.ShareGroupMaxSize }),
		Doc: "The most members one share group may have."},
	{Name: "group.share.assignors", Type: TypeList, Default: "simple", Validate: onlySimpleAssignor,
		set: func(c *Config, v any) error { c.ShareGroupAssignors = v.([]string); return nil },
		Doc: "The share group assignors; Kafka 4.2 has one, simple."},
	{Name: "group.share.record.lock.duration.ms", Type: TypeDurationMs, Default: "30000", Validate: between(1000, 3600000),
		set: toDuration(func(c *Config) *time.Duration { return &c.ShareRecordLockDuration }),
		Doc: "How long a share group member holds the records a ShareFetch acquired for it before they go to another (per group: share.record.lock.duration.ms)."},
	{Name: "group.share.min.record.lock.duration.ms", Type: TypeDurationMs, Default: "15000", Validate: between(1000, 3600000),
		set: toDuration(func(c *Config) *time.Duration { return &c.ShareMinRecordLockDuration }),
		Doc: "The smallest share.record.lock.duration.ms a share group may set."},
	{Name: "group.share.max.record.lock.duration.ms", Type: TypeDurationMs, Default: "60000", Validate: between(1000, 3600000),
		set: toDuration(func(c *Config) *time.Duration { return &c.ShareMaxRecordLockDuration }),
		Doc: "The largest share.record.lock.duration.ms a share group may set."},
	{Name: "group.share.delivery.count.limit", Type: TypeInt, Default: "5", Validate: between(2, 10),
		set: to(func(c *Config) *int32 { return &c.ShareDeliveryCountLimit }),
		Doc: "How many times a share group delivers a record before it archives it instead (per group: share.delivery.count.limit)."},
	{Name: "group.share.partition.max.record.locks", Type: TypeInt, Default: "2000", Validate: between(100, 10000),
		set: to(func(c *Config) *int32 { return &c.SharePartitionMaxRecordLocks }),
		Doc: "How many records past the share-partition start offset may be in flight (acquired or waiting for redelivery) in one share-partition."},
	{Name: "group.share.max.share.sessions", Type: TypeInt, Default: "2000", Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.ShareMaxShareSessions }),
		Doc: "How many share sessions one broker keeps (SHARE_SESSION_LIMIT_REACHED beyond)."},

	// Client quotas (broker/quota.go).
	{Name: "quota.window.size.seconds", Type: TypeInt, Default: "1", Validate: atLeast(1),
		set: func(c *Config, v any) error { c.QuotaWindowSize = time.Duration(v.(int32)) * time.Second; return nil },
		Doc: "The length of one sample of a client quota's rate."},
	{Name: "quota.window.num", Type: TypeInt, Default: "11", Validate: atLeast(1),
		set: to(func(c *Config) *int32 { return &c.QuotaWindowNum }),
		Doc: "How many samples a client quota's rate is measured over."},
	{Name: "max.connection.creation.rate", Type: TypeInt, Default: "2147483647", Validate: atLeast(0),
		set: to(func(c *Config) *int32 { return &c.MaxConnectionCreationRate }),
		Doc: "KIP-612: new connections per second the broker accepts on all its listeners but the inter-broker one together, measured over the quota windows; above it, accepting waits until the rate is back under it. listener.name.<l>.max.connection.creation.rate limits one listener alone (the inter-broker one too; not the controller listener), and the longer wait of the two applies. Per-IP limits are the connection_creation_rate client quota."},

	// Authorization (raftka's StandardAuthorizer, metadata/authorizer.go).
	{Name: "authorizer.class.name", Type: TypeClass, Default: "", Validate: authorizerClass,
		set: setAuthorizer,
		Doc: "The ACL authorizer: org.apache.kafka.metadata.authorizer.StandardAuthorizer (or raftka's short name, standard) keeps ACLs in the Raft metadata with Kafka's semantics; empty means no authorization (everything allowed, the ACL APIs answer SECURITY_DISABLED)."},
	{Name: "super.users", Type: TypeString, Default: "",
		set: to(func(c *Config) *string { return &c.SuperUsers }),
		Doc: "Principals (User:name, separated by ';') that the authorizer allows everything."},
	{Name: "allow.everyone.if.no.acl.found", Type: TypeBool, Default: "false",
		set: to(func(c *Config) *bool { return &c.AllowEveryoneIfNoACLFound }),
		Doc: "With an authorizer: whether a resource no ACL names is open to everyone (Kafka's default is false: closed)."},
}

// Validators. Numbers arrive as int32 or int64 depending on the key's type.

func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int32:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

func atLeast(lo int64) func(any) error {
	return func(v any) error {
		if n, ok := asInt64(v); ok && n < lo {
			return fmt.Errorf("must be at least %d", lo)
		}
		return nil
	}
}

func between(lo, hi int64) func(any) error {
	return func(v any) error {
		if n, ok := asInt64(v); ok && (n < lo || n > hi) {
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		return nil
	}
}

// migrationPolicy checks group.consumer.migration.policy as Kafka's
// case-insensitive ConsumerGroupMigrationPolicy names.
func migrationPolicy(v any) error {
	if s, ok := v.(string); ok && !slices.Contains([]string{"disabled", "downgrade", "upgrade", "bidirectional"}, strings.ToLower(s)) {
		return fmt.Errorf("must be one of disabled, downgrade, upgrade, bidirectional")
	}
	return nil
}

func oneOf(allowed ...string) func(any) error {
	return func(v any) error {
		if s, ok := v.(string); ok && !slices.Contains(allowed, s) {
			return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
		}
		return nil
	}
}

// gzipLevel checks compression.gzip.level: 1..9 or -1, as Kafka's.
func gzipLevel(v any) error {
	if n, ok := asInt64(v); ok && n != -1 && (n < 1 || n > 9) {
		return fmt.Errorf("must be -1 or between 1 and 9")
	}
	return nil
}

// floatBetween checks a Kafka double written as text.
func floatBetween(lo, hi float64) func(any) error {
	return func(v any) error {
		s, _ := v.(string)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f >= lo && f <= hi) {
			return fmt.Errorf("must be a number between %g and %g", lo, hi)
		}
		return nil
	}
}

// listOf checks every entry of a list is one of allowed, once.
func listOf(allowed ...string) func(any) error {
	return func(v any) error {
		l, _ := v.([]string)
		for i, e := range l {
			if !slices.Contains(allowed, e) {
				return fmt.Errorf("%q is not one of %s", e, strings.Join(allowed, ", "))
			}
			if slices.Contains(l[:i], e) {
				return fmt.Errorf("%q is listed twice", e)
			}
		}
		return nil
	}
}

// nonNegativeFloat checks a Kafka double written as text.
func nonNegativeFloat(v any) error {
	s, _ := v.(string)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0) {
		return fmt.Errorf("must be a number at least 0")
	}
	return nil
}

// StandardAuthorizerClass is Kafka's KRaft authorizer, the one raftka
// implements; AuthorizerShortName is raftka's name for it.
const (
	StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	AuthorizerShortName     = "standard"
)

func authorizerClass(v any) error {
	switch v.(string) {
	case "", StandardAuthorizerClass, AuthorizerShortName:
		return nil
	}
	return fmt.Errorf("must be empty, %s or %s: raftka implements only Kafka's StandardAuthorizer", StandardAuthorizerClass, AuthorizerShortName)
}

func setAuthorizer(c *Config, v any) error {
	c.AuthorizerEnabled = v.(string) != ""
	return nil
}

func rolesValid(v any) error {
	roles, _ := v.([]string)
	if len(roles) == 0 {
		return fmt.Errorf("must name broker, controller or both (raftka runs in KRaft mode only)")
	}
	seen := map[string]bool{}
	for _, r := range roles {
		if r != "broker" && r != "controller" {
			return fmt.Errorf("unknown role %q: want broker, controller or both", r)
		}
		if seen[r] {
			return fmt.Errorf("role %q given twice", r)
		}
		seen[r] = true
	}
	return nil
}

func hostPortOrEmpty(v any) error {
	s, _ := v.(string)
	if s == "" {
		return nil
	}
	_, err := splitHostPort(s)
	return err
}

// splitHostPort parses host:port (host may be empty or a bracketed IPv6
// address) and checks the port range.
func splitHostPort(s string) (hostPort, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return hostPort{}, fmt.Errorf("want host:port: %v", err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return hostPort{}, fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return hostPort{host: host, port: int(p)}, nil
}

type hostPort struct {
	host string
	port int
}

// rebalanceProtocols is group.coordinator.rebalance.protocols' rule: Kafka's
// values, classic among them; streams and share are accepted (a Kafka 4.1
// file names streams) and warned about (softChecks), as they are not built.
func rebalanceProtocols(v any) error {
	l, _ := v.([]string)
	if !slices.Contains(l, "classic") {
		return fmt.Errorf("must include classic")
	}
	return listOf("classic", "consumer", "streams", "share")(v)
}

// assignorNames is group.consumer.assignors' rule: at least one, each one
// raftka has (Kafka's short names; class names are not loadable here).
func assignorNames(v any) error {
	l, _ := v.([]string)
	if len(l) == 0 {
		return fmt.Errorf("must name at least one assignor")
	}
	return listOf("uniform", "range")(v)
}
