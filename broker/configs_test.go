package broker

import (
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPreprocessAlter holds both alter APIs to one order of answers: a
// resource named twice first, then the resource's own checks, then
// authorization over both.
func TestPreprocessAlter(t *testing.T) {
	topic := configResource{kmsg.ConfigResourceTypeTopic, "orders"}
	group := configResource{kmsg.ConfigResourceTypeGroupConfig, "g"}
	logger := configResource{kmsg.ConfigResourceTypeBrokerLogger, "1"}
	const twice = "Each resource must appear at most once."
	cases := []struct {
		name         string
		key          configResource
		names        []string
		times        int
		groupConfigs bool
		allowed      bool
		code         int16
		msg          string
		asked        bool
	}{
		{"topic", topic, []string{"retention.ms"}, 1, false, true, 0, "", true},
		{"named twice", topic, []string{"retention.ms"}, 2, false, true, kerr.InvalidRequest.Code, twice, false},
		{"named twice, unauthorized", topic, nil, 2, true, false, kerr.InvalidRequest.Code, twice, false},
		{"duplicate key", topic, []string{"retention.ms", "retention.ms"}, 1, true, true, kerr.InvalidRequest.Code, "Duplicate config key retention.ms.", true},
		{"unauthorized topic", topic, []string{"retention.ms"}, 1, false, false, kerr.TopicAuthorizationFailed.Code, "", true},
		{"unauthorized over a refusal", logger, []string{"root"}, 1, false, false, kerr.ClusterAuthorizationFailed.Code, "", true},
		{"group by IncrementalAlterConfigs", group, []string{"consumer.session.timeout.ms"}, 1, true, true, 0, "", true},
		{"group by AlterConfigs", group, []string{"consumer.session.timeout.ms"}, 1, false, true, kerr.InvalidRequest.Code, "Unsupported resource type: GROUP_CONFIG", true},
		{"group by AlterConfigs, unauthorized", group, []string{"consumer.session.timeout.ms"}, 1, false, false, kerr.GroupAuthorizationFailed.Code, "", true},
		{"unknown group key", group, []string{"x"}, 1, true, true, kerr.InvalidConfig.Code, "Unknown group config name: x", true},
		{"metadata topic", configResource{kmsg.ConfigResourceTypeTopic, metadataTopic}, nil, 1, false, true, kerr.InvalidRequest.Code, "The configs of " + metadataTopic + " cannot be changed.", true},
	}
	for _, c := range cases {
		asked := false
		allow := func(op metadata.ACLOperation, _ metadata.ACLResourceType, _ string) bool {
			asked = true
			if op != opAlterConfigs {
				t.Errorf("%s: asked about %v", c.name, op)
			}
			return c.allowed
		}
		code, msg := preprocessAlter(c.key, c.names, c.times, c.groupConfigs, allow)
		if code != c.code || msg != c.msg || asked != c.asked {
			t.Errorf("%s: %d %q (authorizer asked %v), want %d %q (%v)", c.name, code, msg, asked, c.code, c.msg, c.asked)
		}
	}
}
