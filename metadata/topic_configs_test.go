package metadata

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestTopicConfigTable(t *testing.T) {
	defs := TopicConfigDefs()
	if !slices.IsSortedFunc(defs, func(a, b TopicConfigDef) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("the table is not sorted by name")
	}
	for _, d := range defs {
		if err := d.Validate(d.Default); err != nil {
			t.Errorf("%s: default %q is invalid: %v", d.Name, d.Default, err)
		}
		if d.Doc == "" {
			t.Errorf("%s: no doc", d.Name)
		}
		// Kafka gives every topic config a broker synonym except the
		// throttled-replica lists (ServerTopicConfigSynonyms).
		if noSynonym := strings.HasSuffix(d.Name, ".replication.throttled.replicas"); noSynonym != (len(d.Brokers) == 0) {
			t.Errorf("%s: broker synonyms %v", d.Name, d.Brokers)
		}
	}
	for _, k := range []string{"retention.ms", "retention.bytes", "segment.bytes", "segment.ms", "segment.index.bytes",
		"index.interval.bytes", "cleanup.policy", "min.insync.replicas", "max.message.bytes", "message.timestamp.type",
		"unclean.leader.election.enable", "flush.messages", "flush.ms", "compression.type"} {
		if _, ok := LookupTopicConfig(k); !ok {
			t.Errorf("%s is missing", k)
		}
	}
}

func TestValidateTopicConfig(t *testing.T) {
	cases := []struct {
		key, value string
		ok         bool
	}{
		{"retention.ms", "-1", true},
		{"retention.ms", "-2", false},
		{"retention.ms", "1h", false},
		{"retention.ms", " 5000 ", true},
		{"retention.bytes", "-1", true},
		{"retention.bytes", "9223372036854775808", false},
		{"segment.bytes", "1048576", true},
		{"segment.bytes", "13", false},
		{"segment.bytes", "4294967296", false}, // int, not long
		{"segment.ms", "0", false},
		{"cleanup.policy", "compact,delete", true},
		{"cleanup.policy", "delete, compact", true},
		{"cleanup.policy", "compact,compact", false},
		{"cleanup.policy", "shred", false},
		{"cleanup.policy", "", true}, // Kafka's ValidList accepts an empty list
		{"min.insync.replicas", "0", false},
		{"min.insync.replicas", "2", true},
		{"message.timestamp.type", "LogAppendTime", true},
		{"message.timestamp.type", "logappendtime", false},
		{"unclean.leader.election.enable", "TRUE", true},
		{"unclean.leader.election.enable", "yes", false},
		{"flush.messages", "0", false},
		{"flush.ms", "0", true},
		{"compression.type", "zstd", true},
		{"compression.type", "brotli", false},
		{"min.cleanable.dirty.ratio", "0.9", true},
		{"min.cleanable.dirty.ratio", "1.5", false},
		{"min.cleanable.dirty.ratio", "NaN", false},
		{"no.such.config", "1", false},
	}
	for _, c := range cases {
		err := ValidateTopicConfig(c.key, c.value)
		if (err == nil) != c.ok {
			t.Errorf("%s=%q: %v", c.key, c.value, err)
			continue
		}
		if err != nil {
			var ce *ConfigError
			if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ce) || ce.Key != c.key || !strings.Contains(err.Error(), c.key) {
				t.Errorf("%s=%q: error %v does not name the key or wrap ErrInvalidConfig", c.key, c.value, err)
			}
		}
	}
	err := ValidateTopicConfigs(map[string]string{"z.unknown": "1", "retention.ms": "x", "segment.ms": "5"})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "retention.ms" {
		t.Fatalf("first error in key order: %v", err)
	}
	if err := ValidateTopicConfigs(map[string]string{"retention.ms": "1", "cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
}

func TestEffectiveTopicConfigs(t *testing.T) {
	src := ConfigSources{
		Topic:          map[string]string{"retention.ms": "1000"},
		DynamicBroker:  map[string]string{"log.segment.bytes": "2048", "log.retention.ms": "7"},
		DynamicCluster: map[string]string{"log.segment.bytes": "4096", "min.insync.replicas": "2"},
		Static:         map[string]string{"log.retention.hours": "24", "log.roll.hours": "1", "log.flush.interval.ms": "bogus", "log.segment.bytes": "8192"},
	}
	all := EffectiveTopicConfigs(src)
	if len(all) != len(TopicConfigDefs()) {
		t.Fatalf("%d entries", len(all))
	}
	get := func(name string) ConfigEntry {
		e, ok := EffectiveTopicConfig(name, src)
		if !ok {
			t.Fatalf("%s missing", name)
		}
		return e
	}
	cases := []struct {
		name, value string
		source      ConfigSource
		synonyms    int
	}{
		{"retention.ms", "1000", SourceDynamicTopicConfig, 4}, // topic, dynamic broker ms, static hours, default
		{"segment.bytes", "2048", SourceDynamicBrokerConfig, 4},
		{"min.insync.replicas", "2", SourceDynamicDefaultBrokerConfig, 2},
		{"segment.ms", "3600000", SourceStaticBrokerConfig, 2},
		{"flush.ms", maxLong, SourceDefaultConfig, 1}, // malformed broker value passed over
		{"cleanup.policy", "delete", SourceDefaultConfig, 1},
	}
	for _, c := range cases {
		e := get(c.name)
		if e.Value != c.value || e.Source != c.source || len(e.Synonyms) != c.synonyms {
			t.Errorf("%s: %q from %d with %d synonyms %+v", c.name, e.Value, e.Source, len(e.Synonyms), e.Synonyms)
		}
	}
	if e := get("retention.ms"); e.Synonyms[2] != (ConfigSynonym{"log.retention.hours", "86400000", SourceStaticBrokerConfig}) {
		t.Errorf("hours synonym %+v", e.Synonyms[2])
	}
	if _, ok := EffectiveTopicConfig("nope", src); ok {
		t.Fatal("unknown config resolved")
	}
	// Negative hour-based retention means no limit.
	if e, _ := EffectiveTopicConfig("retention.ms", ConfigSources{Static: map[string]string{"log.retention.hours": "-1"}}); e.Value != "-1" {
		t.Fatalf("negative hours: %q", e.Value)
	}
	if e, _ := EffectiveTopicConfig("retention.ms", ConfigSources{Static: map[string]string{"log.retention.hours": "9223372036854775807"}}); e.Source != SourceDefaultConfig {
		t.Fatalf("overflowing hours became effective: %+v", e)
	}
}

func TestValidateBrokerConfig(t *testing.T) {
	cases := []struct {
		key, value string
		ok         bool
	}{
		{"log.retention.ms", "3600000", true},
		{"log.retention.ms", "-1", true},
		{"log.retention.ms", "soon", false},
		{"log.retention.hours", "24", true},
		{"log.retention.hours", "-3", true},                   // any negative retention is "no limit"
		{"log.retention.hours", "9223372036854775807", false}, // overflows retention.ms
		{"log.retention.minutes", "x", false},
		{"log.segment.bytes", "1048576", true},
		{"log.segment.bytes", "13", false}, // segment.bytes is at least 14
		{"log.roll.hours", "0", false},     // segment.ms is at least 1
		{"log.cleanup.policy", "compact,delete", true},
		{"log.cleanup.policy", "shred", false},
		{"min.insync.replicas", "2", true},
		{"min.insync.replicas", "0", false},
		{"unclean.leader.election.enable", "true", true},
		{"message.max.bytes", "2000000", true},
		{"compression.type", "zstd", true},
		{"retention.ms", "1000", false},                       // a topic config's name is not a broker key
		{"log.dirs", "/var/kafka", false},                     // read-only in Kafka too
		{"leader.replication.throttled.replicas", "*", false}, // topic-level only in Kafka
		{"no.such.key", "1", false},
		{"log.cleaner.backoff.ms", "2000", true},
		{"log.cleaner.backoff.ms", "-1", false},
		{"log.cleaner.backoff.ms", "soon", false},
		{"log.cleaner.threads", "2", true},
		{"log.cleaner.threads", "0", false}, // Kafka's reconfiguration wants at least 1
		{"log.cleaner.threads", "3000000000", false},
		{"log.cleaner.dedupe.buffer.size", "1048576", true},
		{"log.cleaner.dedupe.buffer.size", "0", false},
		{"log.cleaner.io.max.bytes.per.second", "1048576.5", true},
		{"log.cleaner.io.max.bytes.per.second", "-1", false},
		{"log.cleaner.io.max.bytes.per.second", "Infinity", false},
		{"log.cleaner.enable", "false", false},        // read-only in Kafka too
		{"log.cleaner.io.buffer.size", "1024", false}, // dynamic in Kafka, but raftka's cleaner has no such buffer
		{"producer.id.expiration.ms", "60000", true},
		{"num.replica.fetchers", "4", true},
		{"num.replica.fetchers", "0", false},
		{"producer.id.expiration.ms", "0", false},
		{"producer.id.expiration.ms", "86400000000", false}, // an int in Kafka
	}
	for _, c := range cases {
		err := ValidateBrokerConfig(c.key, c.value)
		if (err == nil) != c.ok {
			t.Errorf("%s=%q: %v", c.key, c.value, err)
			continue
		}
		if err != nil && (!errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), c.key)) {
			t.Errorf("%s=%q: error %v does not name the key or wrap ErrInvalidRequest", c.key, c.value, err)
		}
	}
	if d, scale, ok := LookupBrokerSynonym("log.retention.hours"); !ok || d.Name != "retention.ms" || scale != 3600000 {
		t.Errorf("log.retention.hours: %s %d %v", d.Name, scale, ok)
	}
	if d, scale, ok := LookupBrokerSynonym("log.segment.bytes"); !ok || d.Name != "segment.bytes" || scale != 1 {
		t.Errorf("log.segment.bytes: %s %d %v", d.Name, scale, ok)
	}
}

// Kafka's ThrottledReplicaListValidator, for both throttled-replica keys.
func TestThrottledReplicaListValidation(t *testing.T) {
	for _, key := range []string{"follower.replication.throttled.replicas", "leader.replication.throttled.replicas"} {
		d, ok := LookupTopicConfig(key)
		if !ok {
			t.Fatalf("%s is not a topic config", key)
		}
		for v, ok := range map[string]bool{"": true, "*": true, "0:1": true, "0:1,1:2": true, " 0:1 , 1:2": true,
			"0": false, "a:1": false, "0:b": false, "0:1,": false, "**": false} {
			if err := d.Validate(v); (err == nil) != ok {
				t.Errorf("%s=%q: %v, want ok %v", key, v, err, ok)
			}
		}
	}
}
