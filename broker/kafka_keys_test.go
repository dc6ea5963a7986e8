package broker

import (
	"slices"
	"strings"
	"testing"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The key table is sorted, has no duplicates and only known types.
func TestKafkaKeyTable(t *testing.T) {
	for name, keys := range map[string][]kafkaKey{"broker": kafkaBrokerKeys, "topic": kafkaTopicKeys} {
		if !slices.IsSortedFunc(keys, func(a, b kafkaKey) int { return strings.Compare(a.name, b.name) }) {
			t.Errorf("%s keys are not sorted by name", name)
		}
		for i, k := range keys {
			if i > 0 && keys[i-1].name == k.name {
				t.Errorf("%s key %s listed twice", name, k.name)
			}
			if k.typ == kmsg.ConfigTypeUnknown {
				t.Errorf("%s key %s has no type", name, k.name)
			}
		}
	}
	// Every topic config raftka defines is a Kafka topic config.
	kafka := map[string]bool{}
	for _, k := range kafkaTopicKeys {
		kafka[k.name] = true
	}
	for _, d := range metadata.TopicConfigDefs() {
		if !kafka[d.Name] && d.Name != "message.downconversion.enable" {
			t.Errorf("raftka's topic config %s is not in Kafka's table", d.Name)
		}
	}
}

// A Kafka key raftka does not apply is described with Kafka's default,
// read-only, whether named or listed with everything; names Kafka does not
// know get no entry.
func TestDescribeUnappliedKafkaKeys(t *testing.T) {
	s := adminServer(t, configImage(t), nil, testConfig(t, ""))
	resp := call[*kmsg.DescribeConfigsResponse](t, s, describeReq(4, true, false,
		resource(kmsg.ConfigResourceTypeBroker, "1", "num.io.threads", "queued.max.requests", "ssl.key.password", "log.cleaner.backoff.ms", "log.retention.ms", "no.such.key"),
		resource(kmsg.ConfigResourceTypeTopic, "orders", "remote.storage.enable", "local.retention.ms", "retention.ms", "no.such.key"),
	))
	broker, topic := configsByName(resp.Resources[0]), configsByName(resp.Resources[1])
	if len(broker) != 5 || len(topic) != 3 {
		t.Errorf("%d broker and %d topic entries, want one per Kafka key asked for (5, 3): %v %v", len(broker), len(topic), broker, topic)
	}
	for _, c := range []struct {
		got   map[string]kmsg.DescribeConfigsResponseResourceConfig
		name  string
		value *string
		typ   kmsg.ConfigType
	}{
		{broker, "num.io.threads", kmsg.StringPtr("8"), kmsg.ConfigTypeInt},
		{broker, "queued.max.requests", kmsg.StringPtr("500"), kmsg.ConfigTypeInt},
		{broker, "ssl.key.password", nil, kmsg.ConfigTypePassword},
		{topic, "remote.storage.enable", kmsg.StringPtr("false"), kmsg.ConfigTypeBoolean},
		{topic, "local.retention.ms", kmsg.StringPtr("-2"), kmsg.ConfigTypeLong},
	} {
		e, ok := c.got[c.name]
		switch {
		case !ok:
			t.Errorf("%s: no entry", c.name)
		case !e.ReadOnly || e.Source != kmsg.ConfigSourceDefaultConfig || e.ConfigType != c.typ:
			t.Errorf("%s: %+v, want read-only, DEFAULT_CONFIG, type %v", c.name, e, c.typ)
		case (e.Value == nil) != (c.value == nil) || (c.value != nil && *e.Value != *c.value):
			t.Errorf("%s = %v, want Kafka's default %v", c.name, e.Value, c.value)
		case len(e.ConfigSynonyms) != 1 || e.ConfigSynonyms[0].Source != kmsg.ConfigSourceDefaultConfig:
			t.Errorf("%s synonyms %+v", c.name, e.ConfigSynonyms)
		}
	}
	if e := broker["ssl.key.password"]; !e.IsSensitive {
		t.Error("ssl.key.password not sensitive")
	}
	// Applied by raftka or not, sarama's key is answered with 15000.
	if e := broker["log.cleaner.backoff.ms"]; e.Value == nil || *e.Value != "15000" {
		t.Errorf("log.cleaner.backoff.ms = %+v", e)
	}
	if e := broker["log.retention.ms"]; e.ReadOnly {
		t.Error("log.retention.ms, which raftka applies, shown read-only")
	}

	all := call[*kmsg.DescribeConfigsResponse](t, s, describeReq(4, false, false,
		resource(kmsg.ConfigResourceTypeBroker, "1"), resource(kmsg.ConfigResourceTypeTopic, "orders")))
	for i, name := range []string{"num.io.threads", "remote.storage.enable"} {
		if _, ok := configsByName(all.Resources[i])[name]; !ok {
			t.Errorf("%s missing from the full listing", name)
		}
	}
	for _, r := range all.Resources {
		if !slices.IsSortedFunc(r.Configs, func(a, b kmsg.DescribeConfigsResponseResourceConfig) int { return strings.Compare(a.Name, b.Name) }) {
			t.Errorf("%s listing not sorted by name", r.ResourceName)
		}
	}
}

// Altering such a key is refused with INVALID_CONFIG naming it, before
// anything reaches the controller.
func TestAlterUnappliedKafkaKeysRefused(t *testing.T) {
	fa := &adminCtrl{}
	s := adminServer(t, configImage(t), fa, testConfig(t, ""))
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, r := range []struct {
		typ        kmsg.ConfigResourceType
		name, key  string
		otherValid string
	}{
		{kmsg.ConfigResourceTypeBroker, "1", "num.io.threads", "log.retention.ms"},
		{kmsg.ConfigResourceTypeTopic, "orders", "remote.storage.enable", "retention.ms"},
	} {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		for _, k := range []string{r.otherValid, r.key} {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = k, kmsg.StringPtr("1000")
			rr.Configs = append(rr.Configs, c)
		}
		inc.Resources = append(inc.Resources, rr)
	}
	iresp := call[*kmsg.IncrementalAlterConfigsResponse](t, s, inc)
	for i, want := range []string{"num.io.threads", "remote.storage.enable"} {
		r := iresp.Resources[i]
		if r.ErrorCode != kerr.InvalidConfig.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, want) || !strings.Contains(*r.ErrorMessage, "not supported") {
			t.Errorf("IncrementalAlterConfigs %s: %d %v", want, r.ErrorCode, r.ErrorMessage)
		}
	}

	alt := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "background.threads", kmsg.StringPtr("4")
	ar.Configs = append(ar.Configs, c)
	alt.Resources = append(alt.Resources, ar)
	aresp := call[*kmsg.AlterConfigsResponse](t, s, alt)
	if r := aresp.Resources[0]; r.ErrorCode != kerr.InvalidConfig.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "background.threads") {
		t.Errorf("AlterConfigs background.threads: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if n := len(fa.requests()); n != 0 {
		t.Errorf("%d calls reached the controller", n)
	}
}

// A broker key raftka applies only as a topic config default, outside
// broker/config's table, is described writable and may be altered.
func TestTopicDefaultSynonymsStayWritable(t *testing.T) {
	fa := &adminCtrl{}
	s := adminServer(t, configImage(t), fa, testConfig(t, ""))
	resp := call[*kmsg.DescribeConfigsResponse](t, s, describeReq(4, false, false,
		resource(kmsg.ConfigResourceTypeBroker, "1", "log.cleaner.delete.retention.ms")))
	e, ok := configsByName(resp.Resources[0])["log.cleaner.delete.retention.ms"]
	if !ok || e.ReadOnly || e.Value == nil || *e.Value != "86400000" {
		t.Fatalf("log.cleaner.delete.retention.ms: %+v (found %v)", e, ok)
	}
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "log.cleaner.delete.retention.ms", kmsg.StringPtr("1000")
	rr.Configs = append(rr.Configs, c)
	inc.Resources = append(inc.Resources, rr)
	if r := call[*kmsg.IncrementalAlterConfigsResponse](t, s, inc).Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("altering log.cleaner.delete.retention.ms: %d %v", r.ErrorCode, r.ErrorMessage)
	}
}

// Every broker key of Kafka 4.1 is one server.properties may hold: raftka
// applies it or warns that it does not, never calls it unknown.
func TestKafkaKeysKnownToConfig(t *testing.T) {
	for _, k := range kafkaBrokerKeys {
		if !config.KnownKey(k.name) {
			t.Errorf("%s: a Kafka 4.1 broker key broker/config would call unknown", k.name)
		}
	}
}

// Keys Kafka 4.0 and 4.1 added are answered with 4.1's defaults; keys they
// removed are not answered, as Kafka 4.1 does not know them.
func TestDescribeKafka41Keys(t *testing.T) {
	s := adminServer(t, configImage(t), nil, testConfig(t, ""))
	resp := call[*kmsg.DescribeConfigsResponse](t, s, describeReq(4, false, false,
		resource(kmsg.ConfigResourceTypeBroker, "1",
			"group.streams.session.timeout.ms", "share.coordinator.state.topic.replication.factor", "group.share.max.share.sessions",
			"group.coordinator.rebalance.protocols", "group.consumer.assignors", "sasl.oauthbearer.assertion.algorithm",
			"transaction.two.phase.commit.enable", "ssl.protocol",
			"password.encoder.secret", "controlled.shutdown.max.retries", "auto.include.jmx.reporter", "group.share.max.groups"),
		resource(kmsg.ConfigResourceTypeTopic, "orders", "message.timestamp.after.max.ms", "segment.jitter.ms"),
	))
	broker, topic := configsByName(resp.Resources[0]), configsByName(resp.Resources[1])
	for name, want := range map[string]string{
		"group.streams.session.timeout.ms":                 "45000",
		"share.coordinator.state.topic.replication.factor": "3",
		"group.share.max.share.sessions":                   "2000",
		"sasl.oauthbearer.assertion.algorithm":             "RS256",
		"transaction.two.phase.commit.enable":              "false",
	} {
		e, ok := broker[name]
		if !ok || e.Value == nil || *e.Value != want || !e.ReadOnly {
			t.Errorf("%s: %+v (found %v), want read-only %s", name, e, ok, want)
		}
	}
	if _, ok := broker["ssl.protocol"]; !ok {
		t.Error("ssl.protocol: no entry")
	}
	for _, gone := range []string{"password.encoder.secret", "controlled.shutdown.max.retries", "auto.include.jmx.reporter", "group.share.max.groups"} {
		if e, ok := broker[gone]; ok {
			t.Errorf("%s, which Kafka 4.1 no longer defines, answered: %+v", gone, e)
		}
	}
	if len(topic) != 2 {
		t.Errorf("topic entries %v, want both", topic)
	}
}
