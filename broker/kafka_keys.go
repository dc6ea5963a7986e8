package broker

import (
	"slices"
	"strings"
	"sync"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's config keys that raftka does not apply.
//
// Clients and tools ask for Kafka's keys by name (sarama's admin tests
// describe log.cleaner.backoff.ms on a broker, then alter it) and expect
// one entry per key, as Kafka answers. kafka_keys_table.go lists every
// broker and topic key of Kafka 4.1 with its default and type. A key of
// that table that raftka applies (broker/config's table for brokers,
// metadata's topic config table for topics) is answered from raftka's own
// table as before. Every other key is answered here:
//
//   - DescribeConfigs: one entry, Kafka's default, source DEFAULT_CONFIG,
//     read-only (nothing can change it here), sensitive for passwords, in
//     listings of all configs and when named;
//   - AlterConfigs and IncrementalAlterConfigs: the resource is refused
//     with INVALID_CONFIG naming the key as not supported, and nothing of
//     it is stored, rather than stored and ignored.
//
// The table is Kafka 4.1's generated documentation of its broker and topic
// configs (kafka_config.html and topic_config.html as published for 4.1:
// name, type, default), so it holds the keys 4.0 and 4.1 added (share and
// streams groups, the share coordinator, group.consumer.migration.policy,
// the OAuth JWT-bearer assertion keys of KIP-1139,
// remote.list.offsets.request.timeout.ms, transaction.two.phase.commit.enable,
// ...) with 4.1's defaults (group.coordinator.rebalance.protocols
// classic,consumer,streams; group.consumer.assignors uniform,range;
// group.coordinator.threads 4; ssl.protocol TLSv1.3, ...), and not those
// 4.0 and 4.1 removed (ZooKeeper-mode keys, password.encoder.*,
// controlled.shutdown.max.retries and .retry.backoff.ms,
// auto.include.jmx.reporter, leader.imbalance.per.broker.percentage,
// eligible.leader.replicas.enable, group.share.max.groups,
// log.message.format.version and message.format.version,
// message.downconversion.enable, ...). Internal keys Kafka leaves out of its
// documentation are not in it either: a request naming one gets no entry,
// as for a name Kafka does not know. TestKafkaKeysKnownToConfig keeps
// broker/config's start-up table in step: every key here is applied there
// or accepted with a warning, never reported unknown.

// kafkaKey is one of Kafka's config keys.
type kafkaKey struct {
	name string
	typ  kmsg.ConfigType
	def  string
	null bool // the default is null
}

type kafkaKeyTable struct {
	// Keys raftka does not apply, by resource type and name.
	broker, topic map[string]kafkaKey
	// synonyms are broker keys outside broker/config's table that raftka
	// applies as topic config defaults (log.cleaner.delete.retention.ms
	// for delete.retention.ms, ...): described with Kafka's default and
	// writable, as dynamic broker configs.
	synonyms map[string]kafkaKey
}

var unappliedKafkaKeys = sync.OnceValue(func() *kafkaKeyTable {
	t := &kafkaKeyTable{broker: map[string]kafkaKey{}, topic: map[string]kafkaKey{}, synonyms: map[string]kafkaKey{}}
	applied := brokerDefs().byName
	security := securityKeyNames()
	for _, k := range kafkaBrokerKeys {
		if _, ok := applied[k.name]; ok || security[k.name] {
			continue
		}
		if _, _, ok := metadata.LookupBrokerSynonym(k.name); ok {
			t.synonyms[k.name] = k
			continue
		}
		t.broker[k.name] = k
	}
	for _, k := range kafkaTopicKeys {
		if _, ok := metadata.LookupTopicConfig(k.name); !ok {
			t.topic[k.name] = k
		}
	}
	return t
})

// unapplied returns the Kafka key of a resource type raftka does not
// apply, if name is one.
func (t *kafkaKeyTable) unapplied(typ kmsg.ConfigResourceType, name string) (kafkaKey, bool) {
	var k kafkaKey
	var ok bool
	switch typ {
	case kmsg.ConfigResourceTypeBroker:
		k, ok = t.broker[name]
	case kmsg.ConfigResourceTypeTopic:
		k, ok = t.topic[name]
	}
	return k, ok
}

// entries returns the DescribeConfigs entries of every unapplied key of a
// resource type, sorted by name.
func (t *kafkaKeyTable) entries(typ kmsg.ConfigResourceType) []configEntry {
	keys := t.broker
	if typ == kmsg.ConfigResourceTypeTopic {
		keys = t.topic
	}
	out := make([]configEntry, 0, len(keys)+len(t.synonyms))
	for _, name := range sortedNames(keys) {
		out = append(out, keys[name].entry())
	}
	if typ == kmsg.ConfigResourceTypeBroker {
		for _, name := range sortedNames(t.synonyms) {
			e := t.synonyms[name].entry()
			e.readOnly = false
			e.doc = "Kafka's default for a broker config raftka applies as a topic config default; settable as a dynamic broker config."
			out = append(out, e)
		}
	}
	return out
}

func (k kafkaKey) entry() configEntry {
	e := configEntry{
		name:      k.name,
		source:    kmsg.ConfigSourceDefaultConfig,
		readOnly:  true,
		sensitive: k.typ == kmsg.ConfigTypePassword,
		typ:       k.typ,
		doc:       "A Kafka config raftka does not apply; the value shown is Kafka's default.",
	}
	if !k.null && !e.sensitive {
		e.value = kmsg.StringPtr(k.def)
	}
	e.synonyms = []configSynonym{{name: k.name, value: e.value, source: kmsg.ConfigSourceDefaultConfig}}
	return e
}

// withUnapplied merges the unapplied keys of a resource type into entries
// (sorted by name), leaving out names entries already has.
func withUnapplied(typ kmsg.ConfigResourceType, entries []configEntry) []configEntry {
	have := make(map[string]bool, len(entries))
	for _, e := range entries {
		have[e.name] = true
	}
	for _, e := range unappliedKafkaKeys().entries(typ) {
		if !have[e.name] {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b configEntry) int { return strings.Compare(a.name, b.name) })
	return entries
}

// refuseUnapplied answers an alter naming a Kafka key raftka does not
// apply: INVALID_CONFIG, naming the key, for the whole resource.
func refuseUnapplied(typ kmsg.ConfigResourceType, names []string) (int16, string) {
	t := unappliedKafkaKeys()
	for _, n := range names {
		if _, ok := t.unapplied(typ, n); ok {
			return kerr.InvalidConfig.Code, "Config " + n + " is not supported: raftka does not apply this Kafka config, so it cannot be set."
		}
	}
	return 0, ""
}
