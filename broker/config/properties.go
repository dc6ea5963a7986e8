package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/magiconair/properties"
)

// Config is a node's validated configuration. Keys that become topic config
// defaults keep Kafka's int64 milliseconds (they are handed on as
// retention.ms, segment.ms, flush.ms); timeouts of the process itself are
// time.Durations.
type Config struct {
	NodeID int32
	Roles  Roles
	Voters []Voter
	// BootstrapServers is controller.quorum.bootstrap.servers: host:port
	// of controller listeners, for a dynamic quorum (Voters empty).
	BootstrapServers   []string
	ElectionTimeout    time.Duration // controller.quorum.election.timeout.ms
	QuorumFetchTimeout time.Duration // controller.quorum.fetch.timeout.ms
	Rack               string        // broker.rack; empty when unset

	Listeners           []Listener
	AdvertisedListeners []Listener // without controller listeners
	// ControllerListenerNames keeps the configured order; the first name is
	// the one used to reach other controllers.
	ControllerListenerNames     []string
	InterBrokerListenerName     string
	ListenerSecurityProtocolMap map[string]string
	MetricsListener             string // host:port, or empty for none
	MetricsPprofEnable          bool   // metrics.pprof.enable
	MetricsConsumerLagMaxSeries int32  // raftka.metrics.consumer.lag.max.series
	ConsoleEnable               bool   // console.enable
	// Security is each listener's TLS and SASL settings by upper-case
	// listener name (security.go); every listener has an entry.
	Security map[string]*ListenerSecurity
	// FailedAuthenticationDelay is connection.failed.authentication.delay.ms.
	FailedAuthenticationDelay time.Duration
	// ConnectionsMaxReauth is connections.max.reauth.ms (KIP-368); 0 is off.
	ConnectionsMaxReauth time.Duration
	// SASLMechanismInterBroker is sasl.mechanism.inter.broker.protocol,
	// upper-case.
	SASLMechanismInterBroker string
	// SASLMechanismController is sasl.mechanism.controller.protocol,
	// upper-case: how this node logs in to the controller listeners.
	SASLMechanismController string
	// AuthorizerEnabled: authorizer.class.name names the StandardAuthorizer.
	AuthorizerEnabled bool
	// SuperUsers is super.users as given (metadata.ParseSuperUsers reads it).
	SuperUsers string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACLFound bool
	// Client quota sampling: quota.window.size.seconds, quota.window.num.
	QuotaWindowSize time.Duration
	QuotaWindowNum  int32
	// MaxConnectionCreationRate is max.connection.creation.rate (KIP-612).
	MaxConnectionCreationRate int32
	// ListenerMaxConnectionCreationRate is
	// listener.name.<l>.max.connection.creation.rate by listener name
	// (upper case): that listener's own limit (KIP-612).
	ListenerMaxConnectionCreationRate map[string]int32

	LogDirs        []string
	MetadataLogDir string

	// Metadata snapshots (raftka.metadata.snapshot.*).
	SnapshotThreshold    uint64
	SnapshotInterval     time.Duration
	SnapshotTrailingLogs uint64

	NumPartitions               int32
	DefaultReplicationFactor    int16
	MinInsyncReplicas           int32
	AutoCreateTopicsEnable      bool
	DeleteTopicEnable           bool
	UncleanLeaderElectionEnable bool
	MessageMaxBytes             int32

	OffsetsTopicReplicationFactor        int16
	OffsetsTopicNumPartitions            int32
	OffsetsRetention                     time.Duration
	OffsetsRetentionCheckInterval        time.Duration
	TransactionStateLogReplicationFactor int16
	TransactionStateLogMinISR            int32
	TransactionStateLogNumPartitions     int32
	TransactionMaxTimeout                time.Duration
	TransactionalIDExpiration            time.Duration
	TransactionAbortTimedOutInterval     time.Duration
	TransactionRemoveExpiredInterval     time.Duration
	TransactionPartitionVerification     bool
	ProducerIDExpiration                 time.Duration

	// LogRetentionMs is -1 for no time limit (any negative setting).
	LogRetentionMs                   int64
	LogRetentionBytes                int64
	LogSegmentBytes                  int32
	LogRollMs                        int64
	LogIndexIntervalBytes            int32
	LogIndexSizeMaxBytes             int32
	LogFlushIntervalMessages         int64
	LogFlushIntervalMs               int64
	LogFlushOffsetCheckpointInterval time.Duration
	LogFlushStartOffsetCheckpoint    time.Duration
	LogRetentionCheckInterval        time.Duration
	LogMessageTimestampType          string // CreateTime or LogAppendTime

	SocketRequestMaxBytes       int32
	FetchMaxBytes               int32
	ConnectionsMaxIdle          time.Duration // negative: never
	ReplicaLagTimeMax           time.Duration
	ReplicaFetchMaxBytes        int32
	ReplicaFetchResponseMaxByte int32
	ReplicaFetchMinBytes        int32
	ReplicaFetchWaitMax         time.Duration
	ReplicaFetchBackoff         time.Duration
	ReplicaSocketTimeout        time.Duration
	RecoveryThreadsPerDataDir   int32
	FetchSessionCacheSlots      int32
	FetchSessionEvictionMin     time.Duration
	NumReplicaFetchers          int32
	// FollowerReplicationThrottledRate is follower.replication.throttled.rate
	// (bytes/s for throttled replicas out of the ISR, KIP-73).
	FollowerReplicationThrottledRate int64
	// LeaderReplicationThrottledRate is leader.replication.throttled.rate
	// (bytes/s a leader sends to throttled followers out of the ISR).
	LeaderReplicationThrottledRate int64
	HighWatermarkCheckpoint        time.Duration
	FollowerDropBehind             int64 // raftka.follower.drop.behind.bytes

	// Topic defaults for compaction: log.cleanup.policy,
	// log.cleaner.min.cleanable.ratio, .delete.retention.ms,
	// .min.compaction.lag.ms, .max.compaction.lag.ms (the topic configs
	// read them through StaticConfigs; kept here so they are parsed and
	// validated like every key).
	LogCleanupPolicy             []string
	LogCleanerMinCleanableRatio  float64
	LogCleanerDeleteRetentionMs  int64
	LogCleanerMinCompactionLagMs int64
	LogCleanerMaxCompactionLagMs int64

	// Topic defaults for compression: compression.type and the
	// compression.gzip/lz4/zstd.level keys.
	CompressionType      string
	CompressionGzipLevel int32
	CompressionLZ4Level  int32
	CompressionZstdLevel int32

	// log.cleaner.enable, .threads, .dedupe.buffer.size,
	// .io.max.bytes.per.second, .backoff.ms.
	LogCleanerEnable              bool
	LogCleanerThreads             int32
	LogCleanerDedupeBufferSize    int64
	LogCleanerIOMaxBytesPerSecond float64
	LogCleanerBackoff             time.Duration
	// raftka.log.cleaner.busy.io.max.bytes.per.second (0: none).
	LogCleanerBusyIOBytesPerSecond int64

	BrokerSessionTimeout               time.Duration
	BrokerHeartbeatInterval            time.Duration
	ControlledShutdownEnable           bool
	AutoLeaderRebalanceEnable          bool
	LeaderImbalanceCheckInterval       time.Duration
	LeaderImbalancePerBrokerPercentage int32
	GroupInitialRebalanceDelay         time.Duration
	GroupMinSessionTimeout             time.Duration
	GroupMaxSessionTimeout             time.Duration
	GroupMaxSize                       int32
	// Share groups (group.share.*).
	ShareGroupSessionTimeout, ShareGroupMinSessionTimeout, ShareGroupMaxSessionTimeout          time.Duration
	ShareGroupHeartbeatInterval, ShareGroupMinHeartbeatInterval, ShareGroupMaxHeartbeatInterval time.Duration
	ShareGroupMaxSize                                                                           int32
	ShareGroupAssignors                                                                         []string
	// Share-partition delivery (group.share.record.lock.duration.ms and the rest).
	ShareRecordLockDuration, ShareMinRecordLockDuration, ShareMaxRecordLockDuration time.Duration
	ShareDeliveryCountLimit, SharePartitionMaxRecordLocks, ShareMaxShareSessions    int32
	// KIP-848 consumer groups (group.consumer.*).
	GroupConsumerSessionTimeout       time.Duration
	GroupConsumerMinSessionTimeout    time.Duration
	GroupConsumerMaxSessionTimeout    time.Duration
	GroupConsumerHeartbeatInterval    time.Duration
	GroupConsumerMinHeartbeatInterval time.Duration
	GroupConsumerMaxHeartbeatInterval time.Duration
	GroupConsumerMaxSize              int32
	GroupConsumerAssignors            []string
	// GroupConsumerMigrationPolicy is group.consumer.migration.policy as
	// given (compare case-insensitively).
	GroupConsumerMigrationPolicy string
	// GroupCoordinatorRebalanceProtocols is
	// group.coordinator.rebalance.protocols: without "consumer" the
	// broker does not serve ConsumerGroupHeartbeat/Describe.
	GroupCoordinatorRebalanceProtocols []string

	settings     []Setting
	securityBare map[string]string // security keys given without a listener prefix
}

// Roles is process.roles.
type Roles struct{ Broker, Controller bool }

func (r Roles) String() string {
	switch {
	case r.Broker && r.Controller:
		return "broker,controller"
	case r.Broker:
		return "broker"
	case r.Controller:
		return "controller"
	}
	return ""
}

// Source says where a setting's value came from, in the terms of Kafka's
// DescribeConfigs.
type Source int

const (
	SourceDefault  Source = iota // the table's default
	SourceFile                   // the properties file
	SourceOverride               // --override key=value
)

func (s Source) String() string {
	return [...]string{"default", "file", "override"}[s]
}

// Setting is one key raftka acts on with its effective text value.
type Setting struct {
	Name      string
	Value     string // empty for an unset key without default; "[hidden]" for passwords
	Set       bool   // false when the key has no default and was not given
	Source    Source
	Sensitive bool
}

// Settings lists every key of the table with its value and where it came
// from, sorted by name: what a startup log line or DescribeConfigs shows.
func (c *Config) Settings() []Setting { return slices.Clone(c.settings) }

// ControllerListener is the first controller listener among Listeners, the
// one this node serves Raft on; ok is false on a broker-only node.
func (c *Config) ControllerListener() (l Listener, ok bool) {
	for _, name := range c.ControllerListenerNames {
		for _, l := range c.Listeners {
			if l.Name == name {
				return l, true
			}
		}
	}
	return Listener{}, false
}

// Listener returns the listener with the given (upper-case) name.
func (c *Config) Listener(name string) (Listener, bool) {
	for _, l := range c.Listeners {
		if l.Name == name {
			return l, true
		}
	}
	return Listener{}, false
}

// IsControllerListener reports whether name is in controller.listener.names.
func (c *Config) IsControllerListener(name string) bool {
	return slices.Contains(c.ControllerListenerNames, name)
}

// AllDirs is every directory that must be formatted: the log dirs, then the
// metadata dir unless it is one of them.
func (c *Config) AllDirs() []string {
	dirs := slices.Clone(c.LogDirs)
	if !slices.Contains(dirs, c.MetadataLogDir) {
		dirs = append(dirs, c.MetadataLogDir)
	}
	return dirs
}

// Load reads the properties file at path, applies overrides (each
// "key=value", later ones winning) and returns the validated Config and one
// warning per ignored or unknown key, for the caller to log.
func Load(path string, overrides []string) (*Config, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	cfg, warnings, err := Parse(data, overrides)
	if err != nil {
		return nil, warnings, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, warnings, nil
}

// Parse is Load on the file's bytes.
//
// The text is read as UTF-8 (Java reads properties files as ISO-8859-1, but
// UTF-8 paths are what a Linux operator writes); \uXXXX escapes work either
// way. ${...} is not expanded, as Kafka does not expand it.
func Parse(data []byte, overrides []string) (*Config, []string, error) {
	loader := properties.Loader{Encoding: properties.UTF8, DisableExpansion: true}
	props, err := loader.LoadBytes(data)
	if err != nil {
		return nil, nil, fmt.Errorf("not a properties file: %w", err)
	}
	raw := make(map[string]string, props.Len())
	src := make(map[string]Source, props.Len())
	order := props.Keys()
	for _, k := range order {
		v, _ := props.Get(k)
		raw[k], src[k] = v, SourceFile
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, nil, fmt.Errorf("override %q: want key=value", o)
		}
		if _, seen := raw[k]; !seen {
			order = append(order, k)
		}
		raw[k], src[k] = strings.TrimLeft(v, " \t"), SourceOverride
	}
	return build(raw, src, order)
}

// values holds the parsed value of every key of the table that is set.
type values map[string]any

func (v values) int32(k string) int32   { return v[k].(int32) }
func (v values) int64(k string) int64   { return v[k].(int64) }
func (v values) str(k string) string    { s, _ := v[k].(string); return s }
func (v values) list(k string) []string { l, _ := v[k].([]string); return l }
func (v values) has(k string) bool      { _, ok := v[k]; return ok }

// only is the values of keys alone: what a rule (validate.go) may read.
func (v values) only(keys []string) values {
	out := make(values, len(keys))
	for _, k := range keys {
		if x, ok := v[k]; ok {
			out[k] = x
		}
	}
	return out
}

func build(raw map[string]string, src map[string]Source, order []string) (*Config, []string, error) {
	var warnings []string
	var errs []error
	vals := values{}
	security := map[string]string{}
	listenerRates := map[string]int32{} // listener.name.<l>.max.connection.creation.rate
	for _, k := range order {
		def, ok := defsByName[k]
		if l, isRate := listenerRateKey(k); isRate {
			v, err := parseValue(defsByName[maxConnectionCreationRate], raw[k])
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", k, err))
				continue
			}
			listenerRates[l] = v.(int32)
			continue
		}
		switch {
		case isSecurityKey(k):
			security[k] = raw[k]
		case ok:
			v, err := parseValue(def, raw[k])
			if err != nil {
				errs = append(errs, err)
				continue
			}
			vals[k] = v
		case isKafkaIgnored(k):
			warnings = append(warnings, fmt.Sprintf("%s: a Kafka setting raftka does not use; ignored", k))
		default:
			w := fmt.Sprintf("%s: unknown setting, not a Kafka broker or raftka key; ignored", k)
			if s := suggest(k); s != "" {
				w += fmt.Sprintf(" (did you mean %s?)", s)
			}
			warnings = append(warnings, w)
		}
	}
	settings := make([]Setting, 0, len(defs))
	for _, def := range Defs() {
		s := Setting{Name: def.Name, Sensitive: def.Type == TypePassword}
		if text, given := raw[def.Name]; given {
			s.Value, s.Set, s.Source = text, true, src[def.Name]
		} else if !def.NoDefault {
			v, err := parseValue(&def, def.Default)
			if err != nil {
				panic(fmt.Sprintf("config: default of %s does not parse: %v", def.Name, err))
			}
			vals[def.Name] = v
			s.Value, s.Set = def.Default, true
		}
		if s.Sensitive && s.Value != "" {
			s.Value = "[hidden]"
		}
		settings = append(settings, s)
	}
	if len(errs) > 0 {
		return nil, warnings, errors.Join(errs...)
	}
	cfg, err := fromValues(vals, src)
	if err != nil {
		return nil, warnings, err
	}
	cfg.settings = settings
	warnings = append(warnings, cfg.setListenerRates(listenerRates)...)
	secWarnings, err := buildSecurity(cfg, security)
	warnings = append(warnings, secWarnings...)
	if err != nil {
		return nil, warnings, err
	}
	warnings = append(warnings, cfg.softChecks()...)
	return cfg, warnings, nil
}

const maxConnectionCreationRate = "max.connection.creation.rate"

// listenerRateKey reports whether key is
// listener.name.<l>.max.connection.creation.rate, and l in upper case.
func listenerRateKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, "."+maxConnectionCreationRate)
	if !ok || name == "" || strings.Contains(name, ".") {
		return "", false
	}
	return strings.ToUpper(name), true
}

// setListenerRates keeps the per-listener connection creation rates of
// listeners this node serves Kafka clients on; the rest are warned about.
func (c *Config) setListenerRates(rates map[string]int32) []string {
	var warnings []string
	names := make([]string, 0, len(rates))
	for l := range rates {
		names = append(names, l)
	}
	slices.Sort(names)
	for _, l := range names {
		key := "listener.name." + strings.ToLower(l) + "." + maxConnectionCreationRate
		switch {
		case !c.hasListener(l):
			warnings = append(warnings, fmt.Sprintf("%s: no listener named %s; ignored", key, l))
		case slices.Contains(c.ControllerListenerNames, l):
			warnings = append(warnings, fmt.Sprintf("%s: the controller listener takes no connection creation limit in raftka; ignored", key))
		default:
			if c.ListenerMaxConnectionCreationRate == nil {
				c.ListenerMaxConnectionCreationRate = map[string]int32{}
			}
			c.ListenerMaxConnectionCreationRate[l] = rates[l]
		}
	}
	return warnings
}

// parseValue turns the text of one key into its typed value and validates it.
func parseValue(def *Def, text string) (any, error) {
	bad := func(why string) error { return fmt.Errorf("%s=%q: %s", def.Name, text, why) }
	s := strings.TrimSpace(text)
	var v any
	switch def.Type {
	case TypeInt:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, bad("not a 32-bit integer")
		}
		v = int32(n)
	case TypeLong, TypeDurationMs:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			if def.Type == TypeDurationMs {
				return nil, bad("not a whole number of milliseconds")
			}
			return nil, bad("not a 64-bit integer")
		}
		v = n
	case TypeBool:
		switch strings.ToLower(s) {
		case "true":
			v = true
		case "false":
			v = false
		default:
			return nil, bad("want true or false")
		}
	case TypeString, TypeClass:
		v = s
	case TypePassword:
		v = text
	case TypeList:
		var list []string
		for _, e := range strings.Split(s, ",") {
			if e = strings.TrimSpace(e); e != "" {
				list = append(list, e)
			}
		}
		v = list
	default:
		panic(fmt.Sprintf("config: key %s has no type", def.Name))
	}
	if def.Validate != nil {
		if err := def.Validate(v); err != nil {
			return nil, bad(err.Error())
		}
	}
	return v, nil
}

// msToDuration saturates: Kafka uses Long.MAX_VALUE milliseconds for
// "never", which overflows a time.Duration.
func msToDuration(ms int64) time.Duration {
	const maxMs = math.MaxInt64 / int64(time.Millisecond)
	switch {
	case ms > maxMs:
		return math.MaxInt64
	case ms < -maxMs:
		return math.MinInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// suggest names the known key closest to an unknown one, if it is close
// enough to be a typo.
func suggest(key string) string {
	best, bestDist := "", 3
	try := func(name string) {
		if d := editDistance(key, name, bestDist); d < bestDist {
			best, bestDist = name, d
		}
	}
	for _, d := range defs {
		try(d.Name)
	}
	for k := range kafkaIgnored {
		try(k)
	}
	return best
}

// editDistance is the Levenshtein distance, or limit when it is at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
