package broker

import (
	"fmt"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configImage is clusterImage plus configs on every dynamic layer.
func configImage(t *testing.T) *metadata.Image {
	img := clusterImage(t, 9001)
	img, d := img.Apply([]metadata.Record{
		&metadata.Config{ResourceType: metadata.ConfigResourceTopic, ResourceName: "orders", Key: "cleanup.policy", Value: "compact"},
		&metadata.Config{ResourceType: metadata.ConfigResourceCluster, Key: "log.retention.ms", Value: "3600000"},
		&metadata.Config{ResourceType: metadata.ConfigResourceBroker, ResourceName: "1", Key: "log.segment.bytes", Value: "1048576"},
	})
	if len(d.Skipped) > 0 {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	return img
}

func describeReq(version int16, synonyms, docs bool, resources ...kmsg.DescribeConfigsRequestResource) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.IncludeSynonyms, req.IncludeDocumentation, req.Resources = version, synonyms, docs, resources
	return req
}

func resource(typ kmsg.ConfigResourceType, name string, configs ...string) kmsg.DescribeConfigsRequestResource {
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, configs
	return r
}

func configsByName(r kmsg.DescribeConfigsResponseResource) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	m := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range r.Configs {
		m[c.Name] = c
	}
	return m
}

func TestDescribeConfigsTopicSources(t *testing.T) {
	s := adminServer(t, configImage(t), nil, testConfig(t, "min.insync.replicas=2\n"))
	for v := int16(1); v <= 4; v++ {
		for _, syn := range []bool{false, true} {
			t.Run(fmt.Sprintf("v%d synonyms=%v", v, syn), func(t *testing.T) {
				resp := call[*kmsg.DescribeConfigsResponse](t, s, describeReq(v, syn, true, resource(kmsg.ConfigResourceTypeTopic, "orders")))
				r := resp.Resources[0]
				if r.ErrorCode != 0 || r.ResourceName != "orders" || r.ResourceType != kmsg.ConfigResourceTypeTopic {
					t.Fatalf("resource answer %+v", r)
				}
				got := configsByName(r)
				if want := len(metadata.TopicConfigDefs()) + len(unappliedKafkaKeys().topic); len(got) != want {
					t.Errorf("%d configs, want every topic config raftka applies and every other Kafka topic config (%d)", len(got), want)
				}
				for _, tc := range []struct {
					name, value string
					source      kmsg.ConfigSource
					// source:name of each synonym; metadata lists the built-in
					// default under the topic config's own name.
					synonyms []string
				}{
					{"cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig, []string{"1:cleanup.policy", "5:cleanup.policy"}},
					{"retention.ms", "3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig, []string{"3:log.retention.ms", "5:retention.ms"}},
					{"segment.bytes", "1048576", kmsg.ConfigSourceDynamicBrokerConfig, []string{"2:log.segment.bytes", "5:segment.bytes"}},
					{"min.insync.replicas", "2", kmsg.ConfigSourceStaticBrokerConfig, []string{"4:min.insync.replicas", "5:min.insync.replicas"}},
					{"retention.bytes", "-1", kmsg.ConfigSourceDefaultConfig, []string{"5:retention.bytes"}},
				} {
					c, ok := got[tc.name]
					switch {
					case !ok:
						t.Errorf("%s missing", tc.name)
						continue
					case deref(c.Value) != tc.value || c.Source != tc.source || c.ReadOnly || c.IsSensitive:
						t.Errorf("%s = %s source %d readOnly %v, want %s source %d", tc.name, deref(c.Value), c.Source, c.ReadOnly, tc.value, tc.source)
					}
					var syns []string
					for _, sy := range c.ConfigSynonyms {
						syns = append(syns, fmt.Sprintf("%d:%s", sy.Source, sy.Name))
					}
					want := tc.synonyms
					if !syn {
						want = nil
					}
					if fmt.Sprint(syns) != fmt.Sprint(want) {
						t.Errorf("%s synonyms %v, want %v", tc.name, syns, want)
					}
					if v >= 3 && (c.ConfigType == kmsg.ConfigTypeUnknown || c.Documentation == nil) {
						t.Errorf("%s: v%d lacks type or documentation", tc.name, v)
					}
				}
			})
		}
	}
}

func TestDescribeConfigsResourceErrorsAndFilter(t *testing.T) {
	s := adminServer(t, configImage(t), nil, testConfig(t, ""))
	resp := call[*kmsg.DescribeConfigsResponse](t, s, describeReq(4, false, false,
		resource(kmsg.ConfigResourceTypeTopic, "nope"),
		resource(kmsg.ConfigResourceTypeTopic, "bad/name"),
		resource(kmsg.ConfigResourceTypeTopic, "orders", "retention.ms", "no.such.config"),
		resource(kmsg.ConfigResourceTypeBroker, "2"),
		resource(kmsg.ConfigResourceTypeBroker, "x"),
		resource(kmsg.ConfigResourceTypeBrokerLogger, "1"),
		resource(kmsg.ConfigResourceTypeBroker, ""),
	))
	want := []int16{kerr.UnknownTopicOrPartition.Code, kerr.InvalidTopicException.Code, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, 0}
	for i, r := range resp.Resources {
		if r.ErrorCode != want[i] {
			t.Errorf("resource %d (%s): code %d, want %d", i, r.ResourceName, r.ErrorCode, want[i])
		}
		if r.ErrorCode != 0 && (r.ErrorMessage == nil || len(r.Configs) != 0) {
			t.Errorf("resource %d: error without message or with configs", i)
		}
	}
	if f := resp.Resources[2].Configs; len(f) != 1 || f[0].Name != "retention.ms" {
		t.Errorf("ConfigNames filter kept %+v", f)
	}
	cluster := configsByName(resp.Resources[6])
	if len(cluster) != 1 || deref(cluster["log.retention.ms"].Value) != "3600000" || cluster["log.retention.ms"].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("cluster defaults %+v", resp.Resources[6].Configs)
	}
}

func TestDescribeConfigsBroker(t *testing.T) {
	s := adminServer(t, configImage(t), nil, testConfig(t, "log.retention.hours=48\nnum.partitions=6\n"))
	resp := call[*kmsg.DescribeConfigsResponse](t, s, describeReq(4, true, true, resource(kmsg.ConfigResourceTypeBroker, "1")))
	r := resp.Resources[0]
	if r.ErrorCode != 0 {
		t.Fatalf("code %d %s", r.ErrorCode, deref(r.ErrorMessage))
	}
	got := configsByName(r)
	for _, tc := range []struct {
		name, value string
		source      kmsg.ConfigSource
		readOnly    bool
		synonyms    string
	}{
		{"num.partitions", "6", kmsg.ConfigSourceStaticBrokerConfig, true, "[4:num.partitions 5:num.partitions]"},
		{"log.segment.bytes", "1048576", kmsg.ConfigSourceDynamicBrokerConfig, false, "[2:log.segment.bytes 5:log.segment.bytes]"},
		{"log.retention.ms", "3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig, false, "[3:log.retention.ms 4:log.retention.hours 5:log.retention.hours]"},
		{"log.retention.hours", "48", kmsg.ConfigSourceStaticBrokerConfig, false, "[3:log.retention.ms 4:log.retention.hours 5:log.retention.hours]"},
		{"delete.topic.enable", "true", kmsg.ConfigSourceDefaultConfig, true, "[5:delete.topic.enable]"},
	} {
		c, ok := got[tc.name]
		if !ok {
			t.Errorf("%s missing", tc.name)
			continue
		}
		var syns []string
		for _, sy := range c.ConfigSynonyms {
			syns = append(syns, fmt.Sprintf("%d:%s", sy.Source, sy.Name))
		}
		if deref(c.Value) != tc.value || c.Source != tc.source || c.ReadOnly != tc.readOnly || fmt.Sprint(syns) != tc.synonyms {
			t.Errorf("%s = %s source %d readOnly %v synonyms %v; want %s %d %v %s", tc.name, deref(c.Value), c.Source, c.ReadOnly, syns, tc.value, tc.source, tc.readOnly, tc.synonyms)
		}
		if c.ConfigType == kmsg.ConfigTypeUnknown || c.Documentation == nil {
			t.Errorf("%s lacks type or documentation", tc.name)
		}
	}
	// A key without a default and not set has no value.
	if c, ok := got["log.retention.minutes"]; !ok || c.Value != nil {
		t.Errorf("log.retention.minutes: %+v", c)
	}
}
