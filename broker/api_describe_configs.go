package broker

// DescribeConfigs (key 32): v1-v4, as Kafka 4.2 (v0 was removed in 4.0),
// answered by this broker from its metadata image and server.properties.
//
// Behaviour (Kafka's ConfigHelper.describeConfigs):
//   - TOPIC: every topic config with its effective value and source, by
//     Kafka's precedence (topic override, this broker's dynamic config, the
//     cluster-wide dynamic default, server.properties, the built-in default;
//     metadata.EffectiveTopicConfigs). An invalid name is
//     INVALID_TOPIC_EXCEPTION, an unknown topic UNKNOWN_TOPIC_OR_PARTITION.
//     Topic configs are never read-only or sensitive.
//   - BROKER named by this node's id: every key of server.properties raftka
//     acts on (broker/config), with the dynamic configs for this broker and
//     the cluster default over them, sources DYNAMIC_BROKER_CONFIG,
//     DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG (the file or
//     --override) or DEFAULT_CONFIG. Keys that set topic defaults and the
//     runtime keys of metadata's dynamic broker table (the cleaner's
//     log.cleaner.threads, .dedupe.buffer.size, .io.max.bytes.per.second,
//     .backoff.ms, and producer.id.expiration.ms) are writable (AlterConfigs takes effect for them); all
//     others are read-only, as a restart is needed. Sensitive values are
//     null.
//   - BROKER with an empty name: the cluster-wide dynamic defaults only.
//     Another broker's id is INVALID_REQUEST, as in Kafka: clients send a
//     broker resource to the broker it names.
//   - Other resource types (BROKER_LOGGER, CLIENT_METRICS, GROUP) are
//     INVALID_REQUEST: raftka has none of them.
//   - Kafka 4.1's keys raftka does not apply (kafka_keys.go) are listed for
//     TOPIC and BROKER resources too, each with Kafka's default, source
//     DEFAULT_CONFIG and read-only, so a client asking for one by name gets
//     its entry as from Kafka.
//   - ConfigNames, when non-empty, keeps only the named configs (unknown
//     names are left out, not errors).
//
// Version notes:
//   - v1: Source per config; ConfigSynonyms when IncludeSynonyms: every
//     layer that sets the config, the winning one first, then the built-in
//     default; for broker keys that share one topic config (log.retention.ms,
//     .minutes, .hours) the layers of each key of the group in precedence
//     order, as Kafka lists them.
//   - v3: ConfigType, and Documentation when IncludeDocumentation.
//   - v4: flexible.

import (
	"context"
	"slices"
	"strconv"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           32,
		advertisedMin: 1, min: 1, max: 4,
		concurrent: true, // reads one image, no side effects
		handle:     handleDescribeConfigs,
	})
}

func handleDescribeConfigs(_ context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	return rc.conn.srv.describeConfigs(req, func(r configResource) int16 {
		return authorizeConfigResource(rc, opDescribeConfigs, r)
	}), nil
}

// DescribeConfigsFor answers DescribeConfigs for principal connecting from
// host, as this node's broker would on one of its listeners: the node's
// controller listener serves it with this (KIP-919's
// --bootstrap-controller tools).
func (s *Server) DescribeConfigsFor(principal, host string, req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	return s.describeConfigs(req, func(r configResource) int16 {
		a := s.authorizer
		if a == nil {
			return 0
		}
		img := metadata.NewImage()
		if s.deps.Metadata != nil {
			img, _ = s.deps.Metadata.Current()
		}
		return configResourceCheck(r, func(op metadata.ACLOperation, rt metadata.ACLResourceType, name string) bool {
			return a.Authorize(img, principal, host, op, rt, name)
		}, opDescribeConfigs)
	})
}

func (s *Server) describeConfigs(req *kmsg.DescribeConfigsRequest, authorize func(configResource) int16) *kmsg.DescribeConfigsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	resp.SetVersion(req.Version)
	img := metadata.NewImage()
	if s.deps.Metadata != nil {
		img, _ = s.deps.Metadata.Current()
	}
	opts := describeOpts{
		synonyms: req.IncludeSynonyms,
		docs:     req.Version >= 3 && req.IncludeDocumentation,
		types:    req.Version >= 3,
	}
	for _, r := range req.Resources {
		out := kmsg.NewDescribeConfigsResponseResource()
		out.ResourceType, out.ResourceName = r.ResourceType, r.ResourceName
		entries, code, msg := s.describeResource(img, r)
		if ac := authorize(configResource{r.ResourceType, r.ResourceName}); ac != 0 {
			code, msg = ac, ""
		}
		if code != 0 {
			out.ErrorCode, out.ErrorMessage = code, kmsg.StringPtr(msg)
			out.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
		} else {
			out.Configs = opts.render(filterConfigs(entries, r.ConfigNames))
		}
		resp.Resources = append(resp.Resources, out)
	}
	return resp
}

// describeOpts are the request's switches for what each entry carries.
type describeOpts struct{ synonyms, docs, types bool }

// configEntry is one config as DescribeConfigs shows it, whatever the
// resource type.
type configEntry struct {
	name      string
	value     *string // nil: unset without default, or sensitive
	source    kmsg.ConfigSource
	readOnly  bool
	sensitive bool
	typ       kmsg.ConfigType
	doc       string
	synonyms  []configSynonym
}

type configSynonym struct {
	name   string
	value  *string
	source kmsg.ConfigSource
}

func (o describeOpts) render(entries []configEntry) []kmsg.DescribeConfigsResponseResourceConfig {
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(entries))
	for _, e := range entries {
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.Source = e.name, e.value, e.source
		c.ReadOnly, c.IsSensitive = e.readOnly, e.sensitive
		c.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig
		if o.synonyms {
			c.ConfigSynonyms = make([]kmsg.DescribeConfigsResponseResourceConfigConfigSynonym, 0, len(e.synonyms))
			for _, s := range e.synonyms {
				cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				cs.Name, cs.Value, cs.Source = s.name, s.value, s.source
				c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
			}
		}
		if o.types {
			c.ConfigType = e.typ
		}
		if o.docs && e.doc != "" {
			c.Documentation = kmsg.StringPtr(e.doc)
		}
		out = append(out, c)
	}
	return out
}

// filterConfigs keeps the named configs; no names means all of them.
func filterConfigs(entries []configEntry, names []string) []configEntry {
	if len(names) == 0 {
		return entries
	}
	var out []configEntry
	for _, e := range entries {
		if slices.Contains(names, e.name) {
			out = append(out, e)
		}
	}
	return out
}

// describeResource returns a resource's entries, or the code and message
// the resource is answered with.
func (s *Server) describeResource(img *metadata.Image, r kmsg.DescribeConfigsRequestResource) ([]configEntry, int16, string) {
	switch r.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		if err := metadata.ValidateTopicName(r.ResourceName); err != nil {
			return nil, kerr.InvalidTopicException.Code, err.Error()
		}
		if _, ok := img.Topic(r.ResourceName); !ok {
			return nil, kerr.UnknownTopicOrPartition.Code, "Topic " + r.ResourceName + " does not exist."
		}
		return withUnapplied(r.ResourceType, topicConfigEntries(metadata.EffectiveTopicConfigs(s.topicConfigSources(img, r.ResourceName)))), 0, ""
	case kmsg.ConfigResourceTypeBroker:
		if r.ResourceName == "" {
			return clusterDefaultEntries(img.ClusterConfigs()), 0, ""
		}
		id, err := strconv.ParseInt(r.ResourceName, 10, 32)
		if err != nil || int32(id) != s.nodeID {
			return nil, kerr.InvalidRequest.Code, "Unexpected broker id, expected " + strconv.Itoa(int(s.nodeID)) + " or empty string, but received " + r.ResourceName
		}
		return withUnapplied(r.ResourceType, s.withSecurityEntries(s.brokerConfigEntries(img))), 0, ""
	case kmsg.ConfigResourceTypeGroupConfig:
		if r.ResourceName == "" {
			return nil, kerr.InvalidRequest.Code, "Group name must not be empty."
		}
		return s.groupConfigEntries(img, r.ResourceName), 0, ""
	}
	return nil, kerr.InvalidRequest.Code, "Unsupported resource type: " + r.ResourceType.String()
}

func topicConfigEntries(effective []metadata.ConfigEntry) []configEntry {
	out := make([]configEntry, 0, len(effective))
	for _, e := range effective {
		ce := configEntry{
			name:   e.Name,
			value:  kmsg.StringPtr(e.Value),
			source: kmsg.ConfigSource(e.Source),
			typ:    kmsg.ConfigType(e.Type),
			doc:    e.Doc,
		}
		for _, s := range e.Synonyms {
			ce.synonyms = append(ce.synonyms, configSynonym{name: s.Name, value: kmsg.StringPtr(s.Value), source: kmsg.ConfigSource(s.Source)})
		}
		out = append(out, ce)
	}
	return out
}

func clusterDefaultEntries(cluster map[string]string) []configEntry {
	defs := brokerDefs()
	out := make([]configEntry, 0, len(cluster))
	for _, name := range sortedNames(cluster) {
		v := cluster[name]
		src := kmsg.ConfigSourceDynamicDefaultBrokerConfig
		e := configEntry{name: name, value: kmsg.StringPtr(v), source: src, readOnly: false,
			synonyms: []configSynonym{{name: name, value: kmsg.StringPtr(v), source: src}}}
		if d, ok := defs.byName[name]; ok {
			e.typ, e.doc = configTypeOf(d.Type), d.Doc
		}
		out = append(out, e)
	}
	return out
}

// brokerConfigEntries lists this broker's configs: every key of the
// config table, and dynamic keys outside it, sorted by name.
func (s *Server) brokerConfigEntries(img *metadata.Image) []configEntry {
	defs := brokerDefs()
	layers := brokerLayers{
		dynBroker:  img.BrokerConfigs(s.nodeID),
		dynCluster: img.ClusterConfigs(),
		static:     map[string]config.Setting{},
	}
	if s.config != nil {
		for _, st := range s.config.Settings() {
			layers.static[st.Name] = st
		}
	}
	names := map[string]bool{}
	for _, d := range defs.list {
		names[d.Name] = true
	}
	for k := range layers.dynBroker {
		names[k] = true
	}
	for k := range layers.dynCluster {
		names[k] = true
	}
	out := make([]configEntry, 0, len(names))
	for _, name := range sortedNames(names) {
		d, known := defs.byName[name]
		sensitive := known && d.Type == config.TypePassword
		e := configEntry{name: name, source: kmsg.ConfigSourceDefaultConfig, sensitive: sensitive, readOnly: !defs.dynamic[name]}
		if known {
			e.typ, e.doc = configTypeOf(d.Type), d.Doc
		}
		own := layers.of(name, defs)
		if len(own) > 0 {
			e.value, e.source = own[0].value, own[0].source
		}
		group := defs.groups[name]
		if group == nil {
			group = []string{name}
		}
		for _, g := range group {
			e.synonyms = append(e.synonyms, layers.of(g, defs)...)
		}
		if sensitive {
			e.value = nil
			for i := range e.synonyms {
				e.synonyms[i].value = nil
			}
		}
		out = append(out, e)
	}
	return out
}

// brokerLayers are the places a broker config can be set.
type brokerLayers struct {
	dynBroker, dynCluster map[string]string
	static                map[string]config.Setting
}

// of returns the layers that set name, most specific first, the built-in
// default last.
func (l brokerLayers) of(name string, defs *brokerDefTable) []configSynonym {
	var out []configSynonym
	if v, ok := l.dynBroker[name]; ok {
		out = append(out, configSynonym{name: name, value: kmsg.StringPtr(v), source: kmsg.ConfigSourceDynamicBrokerConfig})
	}
	if v, ok := l.dynCluster[name]; ok {
		out = append(out, configSynonym{name: name, value: kmsg.StringPtr(v), source: kmsg.ConfigSourceDynamicDefaultBrokerConfig})
	}
	if st, ok := l.static[name]; ok && st.Set && st.Source != config.SourceDefault {
		out = append(out, configSynonym{name: name, value: kmsg.StringPtr(st.Value), source: kmsg.ConfigSourceStaticBrokerConfig})
	}
	if d, ok := defs.byName[name]; ok && !d.NoDefault {
		out = append(out, configSynonym{name: name, value: kmsg.StringPtr(d.Default), source: kmsg.ConfigSourceDefaultConfig})
	}
	return out
}

// configTypeOf maps broker/config's key types onto Kafka's config types.
func configTypeOf(t config.Type) kmsg.ConfigType {
	switch t {
	case config.TypeInt:
		return kmsg.ConfigTypeInt
	case config.TypeLong, config.TypeDurationMs:
		return kmsg.ConfigTypeLong
	case config.TypeBool:
		return kmsg.ConfigTypeBoolean
	case config.TypeString:
		return kmsg.ConfigTypeString
	case config.TypeList:
		return kmsg.ConfigTypeList
	case config.TypeClass:
		return kmsg.ConfigTypeClass
	case config.TypePassword:
		return kmsg.ConfigTypePassword
	}
	return kmsg.ConfigTypeUnknown
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// groupConfigEntries lists a GROUP resource's configs (metadata's table):
// the group's dynamic value (DYNAMIC_GROUP_CONFIG, Kafka's source 8), else
// the broker's key it defaults to (DEFAULT_CONFIG), as Kafka's
// GroupConfigManager shows them.
func (s *Server) groupConfigEntries(img *metadata.Image, group string) []configEntry {
	dyn := img.GroupConfigs(group)
	defs := brokerDefs()
	static := map[string]string{}
	if s.config != nil {
		for _, st := range s.config.Settings() {
			static[st.Name] = st.Value
		}
	}
	var out []configEntry
	for _, d := range metadata.GroupConfigDefs {
		def := static[d.BrokerDefault]
		if bd, ok := defs.byName[d.BrokerDefault]; ok && def == "" {
			def = bd.Default
		}
		typ := kmsg.ConfigTypeInt
		if d.BrokerDefault == "" {
			def, typ = d.Default, kmsg.ConfigTypeString
		}
		e := configEntry{name: d.Name, value: kmsg.StringPtr(def), source: kmsg.ConfigSourceDefaultConfig, typ: typ, doc: d.Doc}
		if v, ok := dyn[d.Name]; ok {
			e.value, e.source = kmsg.StringPtr(v), kmsg.ConfigSourceGroupConfig
			e.synonyms = append(e.synonyms, configSynonym{name: d.Name, value: kmsg.StringPtr(v), source: kmsg.ConfigSourceGroupConfig})
		}
		if d.BrokerDefault != "" {
			e.synonyms = append(e.synonyms, configSynonym{name: d.BrokerDefault, value: kmsg.StringPtr(def), source: kmsg.ConfigSourceDefaultConfig})
		}
		out = append(out, e)
	}
	return out
}
