package broker

import (
	"sync"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configResource identifies a config resource in a request.
type configResource struct {
	typ  kmsg.ConfigResourceType
	name string
}

// authorizeConfigResource is KafkaApis' check of a config resource: op
// (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic for a topic
// (TOPIC_AUTHORIZATION_FAILED), on the group for a group
// (GROUP_AUTHORIZATION_FAILED), on the cluster otherwise
// (CLUSTER_AUTHORIZATION_FAILED). 0 when allowed.
func authorizeConfigResource(rc *request, op metadata.ACLOperation, r configResource) int16 {
	return configResourceCheck(r, rc.authorize, op)
}

// configResourceCheck is authorizeConfigResource with the decision given
// as allow.
func configResourceCheck(r configResource, allow func(metadata.ACLOperation, metadata.ACLResourceType, string) bool, op metadata.ACLOperation) int16 {
	switch r.typ {
	case kmsg.ConfigResourceTypeTopic:
		if !allow(op, resTopic, r.name) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !allow(op, resGroup, r.name) {
			return kerr.GroupAuthorizationFailed.Code
		}
	default:
		if !allow(op, resCluster, metadata.ClusterResourceName) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	}
	return 0
}

// precheckConfigResource answers what Kafka's broker answers before
// forwarding: resource types raftka has no configs for, and names given
// twice; and, unlike Kafka, Kafka keys raftka does not apply (kafka_keys.go).
// It returns 0 for a resource to forward.
func precheckConfigResource(r configResource, names []string) (int16, string) {
	switch r.typ {
	case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker:
	case kmsg.ConfigResourceTypeGroupConfig:
		if r.name == "" {
			return kerr.InvalidRequest.Code, "Group name must not be empty."
		}
		for _, n := range names {
			if _, ok := metadata.LookupGroupConfig(n); !ok {
				return kerr.InvalidConfig.Code, "Unknown group config name: " + n
			}
		}
	default:
		return kerr.InvalidRequest.Code, "Unsupported resource type: " + r.typ.String()
	}
	if r.typ == kmsg.ConfigResourceTypeTopic && r.name == metadataTopic {
		return kerr.InvalidRequest.Code, "The configs of " + metadataTopic + " cannot be changed."
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return kerr.InvalidRequest.Code, "Duplicate config key " + n + "."
		}
		seen[n] = true
	}
	return refuseUnapplied(r.typ, names)
}

// preprocessAlter is ConfigAdminManager.preprocess's answer for one
// resource of AlterConfigs or IncrementalAlterConfigs, named times in the
// request, before the API's own checks; 0 for a resource to go on with.
// Both APIs must answer in the same order: a resource named twice is
// refused before anything else, and a failed authorization replaces any
// other answer. AlterConfigs passes groupConfigs false: Kafka alters group
// configs only through IncrementalAlterConfigs. allow is request.authorize
// (a parameter so the order can be tested without a connection); it is not
// asked about a resource named twice, whose answer no decision changes.
func preprocessAlter(key configResource, names []string, times int, groupConfigs bool, allow func(metadata.ACLOperation, metadata.ACLResourceType, string) bool) (int16, string) {
	if times != 1 {
		return kerr.InvalidRequest.Code, "Each resource must appear at most once."
	}
	code, msg := precheckConfigResource(key, names)
	if !groupConfigs && key.typ == kmsg.ConfigResourceTypeGroupConfig {
		code, msg = kerr.InvalidRequest.Code, "Unsupported resource type: "+key.typ.String()
	}
	if ac := configResourceCheck(key, allow, opAlterConfigs); ac != 0 {
		code, msg = ac, ""
	}
	return code, msg
}

// brokerDefTable indexes broker/config's key table for DescribeConfigs.
type brokerDefTable struct {
	list   []config.Def
	byName map[string]config.Def
	// groups maps each broker key that supplies a topic config's default
	// to all keys supplying that config, in precedence order (Kafka's
	// broker synonyms).
	groups map[string][]string
	// dynamic holds the keys a dynamic broker config takes effect for:
	// those that supply topic config defaults, and the keys of metadata's
	// dynamic broker table (the cleaner's).
	dynamic map[string]bool
}

var brokerDefs = sync.OnceValue(func() *brokerDefTable {
	t := &brokerDefTable{list: config.Defs(), byName: map[string]config.Def{}, groups: map[string][]string{}, dynamic: map[string]bool{}}
	for _, d := range t.list {
		t.byName[d.Name] = d
	}
	for _, td := range metadata.TopicConfigDefs() {
		var keys []string
		for _, b := range td.Brokers {
			keys = append(keys, b.Key)
		}
		for _, k := range keys {
			t.groups[k] = keys
			t.dynamic[k] = true
		}
	}
	for _, d := range metadata.DynamicBrokerConfigDefs() {
		t.dynamic[d.Name] = true
	}
	return t
})
