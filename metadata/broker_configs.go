package metadata

import (
	"errors"
	"fmt"
	"slices"
)

// BrokerConfigDef is a broker key that is not a topic config default but
// that Kafka updates on a running broker (DynamicBrokerConfig's
// reconfigurables) and raftka applies to a running component: set as a
// dynamic broker config, per broker or as the cluster-wide default, it
// reaches that component without a restart.
type BrokerConfigDef struct {
	Name    string
	Type    ConfigType
	Default string
	Doc     string
	check   func(v string) error
}

// Validate checks a value's type and range, as a *ConfigError.
func (d BrokerConfigDef) Validate(v string) error {
	return TopicConfigDef{Name: d.Name, Type: d.Type, check: d.check}.Validate(v)
}

// dynamicBrokerConfigDefs are the keys of LogCleaner.ReconfigurableConfigs
// that raftka's cleaner has: Kafka restarts its cleaner threads with the
// new values (LogCleaner.reconfigure), and so does the storage Manager.
// log.cleaner.io.buffer.size and .io.buffer.load.factor are in Kafka's set
// too but raftka's cleaner has no such buffers (broker/kafka_keys.go).
// And producer.id.expiration.ms (DynamicProducerStateManagerConfig), which
// every log applies from its next expiry pass, and num.replica.fetchers
// (DynamicThreadPool), to which the replica manager resizes its fetchers,
// and follower.replication.throttled.rate and leader.replication.throttled.rate
// (DynamicReplicationQuota), the two sides of KIP-73.
var dynamicBrokerConfigDefs = []BrokerConfigDef{
	{Name: "log.cleaner.backoff.ms", Type: ConfigTypeLong, Default: "15000", check: atLeast(0),
		Doc: "How long a cleaner thread sleeps when no log needs cleaning."},
	{Name: "log.cleaner.dedupe.buffer.size", Type: ConfigTypeLong, Default: "134217728", check: atLeast(1),
		Doc: "Memory for the cleaners' key maps, shared by the threads."},
	{Name: "log.cleaner.io.max.bytes.per.second", Type: ConfigTypeDouble, Default: "1.7976931348623157E308", check: between(0, 1.7976931348623157e308),
		Doc: "Bytes per second the cleaners may read and write together."},
	// Kafka's key accepts 0, but its reconfiguration refuses fewer than 1
	// ("Log cleaner threads should be at least 1"); a running broker
	// cannot have a cleaner of no threads either way.
	{Name: "log.cleaner.threads", Type: ConfigTypeInt, Default: "1", check: atLeast(1),
		Doc: "Cleaner threads; each cleans one log at a time."},
	{Name: "follower.replication.throttled.rate", Type: ConfigTypeLong, Default: maxLong, check: atLeast(0),
		Doc: "Bytes per second this broker's fetchers copy for throttled replicas out of the ISR (KIP-73)."},
	{Name: "leader.replication.throttled.rate", Type: ConfigTypeLong, Default: maxLong, check: atLeast(0),
		Doc: "Bytes per second this broker sends, as leader, to followers out of the ISR of throttled replicas (KIP-73)."},
	{Name: "num.replica.fetchers", Type: ConfigTypeInt, Default: "1", check: atLeast(1),
		Doc: "Fetchers per source broker that replicate the partitions followed here."},
	{Name: "producer.id.expiration.ms", Type: ConfigTypeInt, Default: "86400000", check: atLeast(1),
		Doc: "How long an idle producer id's sequence state is kept."},
}

// DynamicBrokerConfigDefs returns the table of dynamic broker keys that are
// not topic config defaults, sorted by name.
func DynamicBrokerConfigDefs() []BrokerConfigDef { return slices.Clone(dynamicBrokerConfigDefs) }

// LookupDynamicBrokerConfig finds a key of that table.
func LookupDynamicBrokerConfig(name string) (BrokerConfigDef, bool) {
	i := slices.IndexFunc(dynamicBrokerConfigDefs, func(d BrokerConfigDef) bool { return d.Name == name })
	if i < 0 {
		return BrokerConfigDef{}, false
	}
	return dynamicBrokerConfigDefs[i], true
}

// IsDynamicBrokerKey reports whether a dynamic broker config of that name
// takes effect in raftka: a topic config's broker synonym, or a key of the
// dynamic broker table.
func IsDynamicBrokerKey(key string) bool {
	if _, _, ok := LookupBrokerSynonym(key); ok {
		return true
	}
	_, ok := LookupDynamicBrokerConfig(key)
	return ok
}

// validateDynamicBrokerKey checks a key of the dynamic broker table.
func validateDynamicBrokerKey(d BrokerConfigDef, value string) error {
	if err := d.Validate(value); err != nil {
		reason := err.Error()
		var ce *ConfigError
		if errors.As(err, &ce) {
			reason = ce.Reason
		}
		return fmt.Errorf("%w: Invalid value %s for configuration %s: %s", ErrInvalidRequest, value, d.Name, reason)
	}
	return nil
}
