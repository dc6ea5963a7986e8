package metadata

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ConfigType is a config's type, with Kafka's DescribeConfigs ids.
type ConfigType int8

const (
	ConfigTypeBoolean ConfigType = 1
	ConfigTypeString  ConfigType = 2
	ConfigTypeInt     ConfigType = 3
	ConfigTypeLong    ConfigType = 5
	ConfigTypeDouble  ConfigType = 6
	ConfigTypeList    ConfigType = 7
)

// ConfigSource says where a config value comes from, with Kafka's
// DescribeConfigs (v1+) ids.
type ConfigSource int8

const (
	SourceUnknown                    ConfigSource = 0
	SourceDynamicTopicConfig         ConfigSource = 1
	SourceDynamicBrokerConfig        ConfigSource = 2
	SourceDynamicDefaultBrokerConfig ConfigSource = 3
	SourceStaticBrokerConfig         ConfigSource = 4
	SourceDefaultConfig              ConfigSource = 5
)

// BrokerSynonym is a broker-level key a topic config falls back to. Scale
// converts its unit to the topic config's (log.retention.hours to
// retention.ms is 3600000); 0 means 1.
type BrokerSynonym struct {
	Key   string
	Scale int64
}

// TopicConfigDef defines one topic-level config.
type TopicConfigDef struct {
	Name    string
	Type    ConfigType
	Default string // as DescribeConfigs shows it
	// Brokers are the broker-level keys that supply the default, in
	// precedence order (Kafka's synonyms, e.g. log.retention.ms, then
	// log.retention.minutes, then log.retention.hours).
	Brokers []BrokerSynonym
	Doc     string
	// check validates an already type-checked value.
	check func(v string) error
}

const maxLong = "9223372036854775807"

func atLeast(min int64) func(string) error {
	return func(v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		if n < min {
			return fmt.Errorf("must be at least %d", min)
		}
		return nil
	}
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(values, v) {
			return fmt.Errorf("must be one of %s", strings.Join(values, ", "))
		}
		return nil
	}
}

// listOf accepts a comma-separated list of the given values. An empty list
// is valid, as Kafka's ValidList allows (IncrementalAlterConfigs SUBTRACT can
// empty a list; an empty cleanup.policy neither deletes nor compacts).
func listOf(values ...string) func(string) error {
	return func(v string) error {
		items := splitList(v)
		for i, it := range items {
			if !slices.Contains(values, it) {
				return fmt.Errorf("%q is not one of %s", it, strings.Join(values, ", "))
			}
			if slices.Contains(items[:i], it) {
				return fmt.Errorf("%q is listed twice", it)
			}
		}
		return nil
	}
}

func between(lo, hi float64) func(string) error {
	return func(v string) error {
		f, _ := strconv.ParseFloat(v, 64)
		if f < lo || f > hi {
			return fmt.Errorf("must be between %g and %g", lo, hi)
		}
		return nil
	}
}

func splitList(v string) []string {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// topicConfigDefs is the one table of topic configs: Kafka's names,
// defaults, validators and broker fallbacks (TopicConfig / LogConfig).
var topicConfigDefs = []TopicConfigDef{
	{Name: "cleanup.policy", Type: ConfigTypeList, Default: "delete", Brokers: []BrokerSynonym{{Key: "log.cleanup.policy"}},
		Doc: "delete: drop old segments by retention; compact: keep the latest record per key", check: listOf("delete", "compact")},
	{Name: "compression.gzip.level", Type: ConfigTypeInt, Default: "-1", Brokers: []BrokerSynonym{{Key: "compression.gzip.level"}},
		Doc: "gzip level when compression.type is gzip: 1..9, or -1 for zlib's default", check: func(v string) error {
			if n, _ := strconv.ParseInt(v, 10, 64); n != -1 && (n < 1 || n > 9) {
				return errors.New("must be -1 or between 1 and 9")
			}
			return nil
		}},
	{Name: "compression.lz4.level", Type: ConfigTypeInt, Default: "9", Brokers: []BrokerSynonym{{Key: "compression.lz4.level"}},
		Doc: "lz4 level when compression.type is lz4", check: between(1, 17)},
	{Name: "compression.type", Type: ConfigTypeString, Default: "producer", Brokers: []BrokerSynonym{{Key: "compression.type"}},
		Doc: "codec stored batches use; producer keeps what the producer sent", check: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")},
	{Name: "compression.zstd.level", Type: ConfigTypeInt, Default: "3", Brokers: []BrokerSynonym{{Key: "compression.zstd.level"}},
		Doc: "zstd level when compression.type is zstd", check: between(-131072, 22)},
	{Name: "delete.retention.ms", Type: ConfigTypeLong, Default: "86400000", Brokers: []BrokerSynonym{{Key: "log.cleaner.delete.retention.ms"}},
		Doc: "how long compaction keeps tombstones", check: atLeast(0)},
	{Name: "file.delete.delay.ms", Type: ConfigTypeLong, Default: "60000", Brokers: []BrokerSynonym{{Key: "log.segment.delete.delay.ms"}},
		Doc: "delay before a deleted segment's files are removed", check: atLeast(0)},
	{Name: "flush.messages", Type: ConfigTypeLong, Default: maxLong, Brokers: []BrokerSynonym{{Key: "log.flush.interval.messages"}},
		Doc: "fsync after this many messages", check: atLeast(1)},
	{Name: "flush.ms", Type: ConfigTypeLong, Default: maxLong, Brokers: []BrokerSynonym{{Key: "log.flush.interval.ms"}},
		Doc: "fsync when data is this old", check: atLeast(0)},
	{Name: "follower.replication.throttled.replicas", Type: ConfigTypeList, Default: "",
		Doc: "replicas (partition:broker, or *) whose fetchers on that broker are held to its follower.replication.throttled.rate while out of the ISR", check: throttledReplicaList},
	{Name: "index.interval.bytes", Type: ConfigTypeInt, Default: "4096", Brokers: []BrokerSynonym{{Key: "log.index.interval.bytes"}},
		Doc: "bytes between offset index entries", check: atLeast(0)},
	{Name: "leader.replication.throttled.replicas", Type: ConfigTypeList, Default: "",
		Doc: "replicas (partition:broker, or *) that broker, while it leads them, sends to followers out of the ISR within its leader.replication.throttled.rate", check: throttledReplicaList},
	{Name: "max.compaction.lag.ms", Type: ConfigTypeLong, Default: maxLong, Brokers: []BrokerSynonym{{Key: "log.cleaner.max.compaction.lag.ms"}},
		Doc: "longest a record stays uncompacted", check: atLeast(1)},
	{Name: "max.message.bytes", Type: ConfigTypeInt, Default: "1048588", Brokers: []BrokerSynonym{{Key: "message.max.bytes"}},
		Doc: "largest record batch accepted", check: atLeast(0)},
	{Name: "message.downconversion.enable", Type: ConfigTypeBoolean, Default: "true", Brokers: []BrokerSynonym{{Key: "log.message.downconversion.enable"}},
		Doc: "accepted for compatibility; raftka serves v2 batches only"},
	{Name: "message.timestamp.after.max.ms", Type: ConfigTypeLong, Default: maxLong, Brokers: []BrokerSynonym{{Key: "log.message.timestamp.after.max.ms"}},
		Doc: "how far in the future a CreateTime timestamp may be", check: atLeast(0)},
	{Name: "message.timestamp.before.max.ms", Type: ConfigTypeLong, Default: maxLong, Brokers: []BrokerSynonym{{Key: "log.message.timestamp.before.max.ms"}},
		Doc: "how far in the past a CreateTime timestamp may be", check: atLeast(0)},
	{Name: "message.timestamp.type", Type: ConfigTypeString, Default: "CreateTime", Brokers: []BrokerSynonym{{Key: "log.message.timestamp.type"}},
		Doc: "CreateTime keeps the producer's timestamp; LogAppendTime sets the broker's", check: oneOf("CreateTime", "LogAppendTime")},
	{Name: "min.cleanable.dirty.ratio", Type: ConfigTypeDouble, Default: "0.5", Brokers: []BrokerSynonym{{Key: "log.cleaner.min.cleanable.ratio"}},
		Doc: "dirty share of the log that triggers compaction", check: between(0, 1)},
	{Name: "min.compaction.lag.ms", Type: ConfigTypeLong, Default: "0", Brokers: []BrokerSynonym{{Key: "log.cleaner.min.compaction.lag.ms"}},
		Doc: "shortest time a record stays uncompacted", check: atLeast(0)},
	{Name: "min.insync.replicas", Type: ConfigTypeInt, Default: "1", Brokers: []BrokerSynonym{{Key: "min.insync.replicas"}},
		Doc: "ISR size below which acks=all produce fails with NOT_ENOUGH_REPLICAS", check: atLeast(1)},
	{Name: "preallocate", Type: ConfigTypeBoolean, Default: "false", Brokers: []BrokerSynonym{{Key: "log.preallocate"}},
		Doc: "preallocate segment files"},
	{Name: "retention.bytes", Type: ConfigTypeLong, Default: "-1", Brokers: []BrokerSynonym{{Key: "log.retention.bytes"}},
		Doc: "partition size above which old segments are deleted; -1 for no limit"},
	{Name: "retention.ms", Type: ConfigTypeLong, Default: "604800000",
		Brokers: []BrokerSynonym{{Key: "log.retention.ms"}, {Key: "log.retention.minutes", Scale: 60000}, {Key: "log.retention.hours", Scale: 3600000}},
		Doc:     "age after which segments are deleted; -1 for no limit", check: atLeast(-1)},
	{Name: "segment.bytes", Type: ConfigTypeInt, Default: "1073741824", Brokers: []BrokerSynonym{{Key: "log.segment.bytes"}},
		Doc: "segment size at which a new segment is rolled", check: atLeast(14)},
	{Name: "segment.index.bytes", Type: ConfigTypeInt, Default: "10485760", Brokers: []BrokerSynonym{{Key: "log.index.size.max.bytes"}},
		Doc: "largest offset or time index file", check: atLeast(4)},
	{Name: "segment.jitter.ms", Type: ConfigTypeLong, Default: "0",
		Brokers: []BrokerSynonym{{Key: "log.roll.jitter.ms"}, {Key: "log.roll.jitter.hours", Scale: 3600000}},
		Doc:     "random jitter subtracted from segment.ms", check: atLeast(0)},
	{Name: "segment.ms", Type: ConfigTypeLong, Default: "604800000",
		Brokers: []BrokerSynonym{{Key: "log.roll.ms"}, {Key: "log.roll.hours", Scale: 3600000}},
		Doc:     "age at which a new segment is rolled", check: atLeast(1)},
	{Name: "unclean.leader.election.enable", Type: ConfigTypeBoolean, Default: "false", Brokers: []BrokerSynonym{{Key: "unclean.leader.election.enable"}},
		Doc: "elect a replica outside the ISR when no ISR member is alive (may lose data)"},
}

var topicConfigIndex = func() map[string]int {
	m := make(map[string]int, len(topicConfigDefs))
	for i, d := range topicConfigDefs {
		m[d.Name] = i
	}
	return m
}()

// brokerSynonymIndex maps each broker-level key in a Brokers list to its
// topic config (an index into topicConfigDefs) and scale.
var brokerSynonymIndex = func() map[string]brokerSynonymRef {
	m := map[string]brokerSynonymRef{}
	for i, d := range topicConfigDefs {
		for _, b := range d.Brokers {
			m[b.Key] = brokerSynonymRef{def: i, scale: b.Scale}
		}
	}
	return m
}()

type brokerSynonymRef struct {
	def   int
	scale int64
}

// TopicConfigDefs returns the topic config definitions, sorted by name.
func TopicConfigDefs() []TopicConfigDef { return slices.Clone(topicConfigDefs) }

// LookupTopicConfig returns one definition.
func LookupTopicConfig(name string) (TopicConfigDef, bool) {
	i, ok := topicConfigIndex[name]
	if !ok {
		return TopicConfigDef{}, false
	}
	return topicConfigDefs[i], true
}

// LookupBrokerSynonym returns the topic config whose default the
// broker-level key supplies (log.retention.hours: retention.ms) and the
// factor that converts the key's unit to the topic config's (1 when they
// agree). ok is false for every other key.
func LookupBrokerSynonym(key string) (def TopicConfigDef, scale int64, ok bool) {
	r, ok := brokerSynonymIndex[key]
	if !ok {
		return TopicConfigDef{}, 0, false
	}
	return topicConfigDefs[r.def], max(r.scale, 1), true
}

// ValidateBrokerConfig checks one dynamic broker-level config, set on a
// BROKER resource (a broker id, or the cluster-wide default) by
// AlterConfigs or IncrementalAlterConfigs. Dynamic broker configs take
// effect in raftka as topic config defaults (a broker synonym of a topic
// config: log.retention.ms, log.segment.bytes, ...; LookupBrokerSynonym)
// and for the keys of the dynamic broker table (the cleaner's
// log.cleaner.threads, .backoff.ms, ..., producer.id.expiration.ms and
// num.replica.fetchers; LookupDynamicBrokerConfig), all of
// which Kafka updates dynamically; any other key is refused, as Kafka
// refuses its read-only keys ("Cannot update these configs dynamically").
// The value must be valid for the key (for a synonym, for the topic config
// once converted to its unit). Both are ErrInvalidRequest: Kafka's broker
// answers INVALID_REQUEST for a broker config it cannot apply
// (ConfigAdminManager.validateBrokerConfigChange).
func ValidateBrokerConfig(key, value string) error {
	if bd, ok := LookupDynamicBrokerConfig(key); ok {
		return validateDynamicBrokerKey(bd, value)
	}
	d, scale, ok := LookupBrokerSynonym(key)
	if !ok {
		return fmt.Errorf("%w: Cannot update these configs dynamically: %s (raftka applies dynamic broker configs as topic config defaults, for the log cleaner's keys, producer.id.expiration.ms and num.replica.fetchers)", ErrInvalidRequest, key)
	}
	if _, err := scaleValue(d, value, scale); err != nil {
		reason := err.Error()
		var ce *ConfigError
		if errors.As(err, &ce) {
			reason = ce.Reason
		}
		return fmt.Errorf("%w: Invalid value %s for configuration %s: %s", ErrInvalidRequest, value, key, reason)
	}
	return nil
}

// ConfigError is an invalid config; it wraps ErrInvalidConfig and names the
// key, so the broker answers INVALID_CONFIG with a message Kafka users know.
type ConfigError struct {
	Key    string
	Value  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("metadata: invalid value %q for configuration %s: %s", e.Value, e.Key, e.Reason)
}

func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// Validate checks a value's type and range.
func (d TopicConfigDef) Validate(v string) error {
	fail := func(reason string) error { return &ConfigError{Key: d.Name, Value: v, Reason: reason} }
	switch d.Type {
	case ConfigTypeBoolean:
		if t := strings.TrimSpace(v); !strings.EqualFold(t, "true") && !strings.EqualFold(t, "false") {
			return fail("expected true or false")
		}
	case ConfigTypeInt:
		if _, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err != nil {
			return fail("expected a 32-bit integer")
		}
		v = strings.TrimSpace(v)
	case ConfigTypeLong:
		if _, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
			return fail("expected a 64-bit integer")
		}
		v = strings.TrimSpace(v)
	case ConfigTypeDouble:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fail("expected a number")
		}
		v = strings.TrimSpace(v)
	}
	if d.check != nil {
		if err := d.check(v); err != nil {
			return fail(err.Error())
		}
	}
	return nil
}

// ValidateTopicConfigs checks topic config overrides (CreateTopics,
// AlterConfigs): every key must be a known topic config and every value
// valid for it. It reports the first problem in key order, as a
// *ConfigError wrapping ErrInvalidConfig.
func ValidateTopicConfigs(configs map[string]string) error {
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := ValidateTopicConfig(k, configs[k]); err != nil {
			return err
		}
	}
	return nil
}

// ValidateTopicConfig checks one key and value.
func ValidateTopicConfig(key, value string) error {
	d, ok := LookupTopicConfig(key)
	if !ok {
		return &ConfigError{Key: key, Value: value, Reason: "unknown topic config name"}
	}
	return d.Validate(value)
}

// ConfigSources holds every layer a topic config can come from, most
// specific first. Broker-level maps are keyed by broker config names
// (log.retention.ms, ...).
type ConfigSources struct {
	Topic          map[string]string // the topic's dynamic overrides
	DynamicBroker  map[string]string // this broker's dynamic configs
	DynamicCluster map[string]string // cluster-wide dynamic broker defaults
	Static         map[string]string // server.properties as given
}

// ConfigSynonym is one layer that sets a config, as DescribeConfigs lists
// synonyms.
type ConfigSynonym struct {
	Name   string
	Value  string
	Source ConfigSource
}

// ConfigEntry is a config's effective value with where it came from.
type ConfigEntry struct {
	Name     string
	Value    string
	Source   ConfigSource
	Type     ConfigType
	Doc      string
	Synonyms []ConfigSynonym // every layer that sets it, winner first, default last
}

// IsDefault reports whether the value is the built-in default.
func (e ConfigEntry) IsDefault() bool { return e.Source == SourceDefaultConfig }

// EffectiveTopicConfigs resolves every topic config for DescribeConfigs:
// the topic override wins, then this broker's dynamic config, then the
// cluster's dynamic default, then server.properties, then the built-in
// default (Kafka's precedence). A broker-level value that is malformed or
// out of range is passed over (Kafka would have refused it at startup or
// AlterConfigs). Entries are sorted by name.
func EffectiveTopicConfigs(src ConfigSources) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(topicConfigDefs))
	for _, d := range topicConfigDefs {
		out = append(out, effective(d, src))
	}
	return out
}

// EffectiveTopicConfig resolves one topic config; ok is false for an
// unknown name.
func EffectiveTopicConfig(name string, src ConfigSources) (ConfigEntry, bool) {
	d, ok := LookupTopicConfig(name)
	if !ok {
		return ConfigEntry{}, false
	}
	return effective(d, src), true
}

func effective(d TopicConfigDef, src ConfigSources) ConfigEntry {
	e := ConfigEntry{Name: d.Name, Type: d.Type, Doc: d.Doc}
	if v, ok := src.Topic[d.Name]; ok {
		e.Synonyms = append(e.Synonyms, ConfigSynonym{d.Name, v, SourceDynamicTopicConfig})
	}
	layers := []struct {
		m   map[string]string
		src ConfigSource
	}{
		{src.DynamicBroker, SourceDynamicBrokerConfig},
		{src.DynamicCluster, SourceDynamicDefaultBrokerConfig},
		{src.Static, SourceStaticBrokerConfig},
	}
	for _, l := range layers {
		for _, syn := range d.Brokers {
			raw, ok := l.m[syn.Key]
			if !ok {
				continue
			}
			v, err := scaleValue(d, raw, syn.Scale)
			if err != nil {
				continue
			}
			e.Synonyms = append(e.Synonyms, ConfigSynonym{syn.Key, v, l.src})
		}
	}
	e.Synonyms = append(e.Synonyms, ConfigSynonym{d.Name, d.Default, SourceDefaultConfig})
	e.Value, e.Source = e.Synonyms[0].Value, e.Synonyms[0].Source
	return e
}

// scaleValue converts a broker-level value to the topic config's unit and
// validates it, so an invalid broker value never becomes effective.
func scaleValue(d TopicConfigDef, raw string, scale int64) (string, error) {
	if scale > 1 {
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if err != nil {
			return "", &ConfigError{Key: d.Name, Value: raw, Reason: "expected an integer"}
		}
		if n > math.MaxInt64/scale || n < math.MinInt64/scale {
			return "", &ConfigError{Key: d.Name, Value: raw, Reason: "overflows when converted to " + d.Name}
		}
		if n < 0 {
			n = -1 // Kafka treats any negative retention as "no limit"
		} else {
			n *= scale
		}
		raw = strconv.FormatInt(n, 10)
	}
	if err := d.Validate(raw); err != nil {
		return "", err
	}
	return raw, nil
}

// throttledReplicaList is Kafka's ThrottledReplicaListValidator: "*", or
// partition:broker entries separated by commas.
func throttledReplicaList(v string) error {
	if v == "" || strings.TrimSpace(v) == "*" {
		return nil
	}
	for _, e := range strings.Split(v, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(e), ":")
		if _, err := strconv.ParseInt(p, 10, 32); !ok || err != nil {
			return fmt.Errorf("%q: want [partitionId]:[brokerId] entries or *", e)
		}
		if _, err := strconv.ParseInt(b, 10, 32); err != nil {
			return fmt.Errorf("%q: want [partitionId]:[brokerId] entries or *", e)
		}
	}
	return nil
}

// ThrottledReplicas reports whether a throttled-replicas value (see
// throttledReplicaList) names partition on broker.
func ThrottledReplicas(v string, partition, broker int32) bool {
	v = strings.TrimSpace(v)
	if v == "*" {
		return true
	}
	want := strconv.Itoa(int(partition)) + ":" + strconv.Itoa(int(broker))
	for _, e := range strings.Split(v, ",") {
		if strings.TrimSpace(e) == want {
			return true
		}
	}
	return false
}
