package broker

import (
	"strconv"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Dynamic broker configs beyond topic defaults.
//
// metadata's dynamic broker table (the cleaner's log.cleaner.threads,
// .dedupe.buffer.size, .io.max.bytes.per.second, .backoff.ms,
// producer.id.expiration.ms and num.replica.fetchers) lists keys that a dynamic broker config, per
// broker or the cluster-wide default, changes on a running node: cmd/raftka
// applies them to the storage and replica Managers. The controller validates each value's type and range
// (metadata.ValidateBrokerConfig). As in Kafka, the broker that receives
// the alter first checks what depends on its own running state
// (ConfigAdminManager.validateBrokerConfigChange): the resource names this
// broker or the cluster default, and a resulting thread count
// (log.cleaner.threads, num.replica.fetchers) is at least 1 and within half
// and double of the current one (LogCleaner.validateReconfiguration,
// DynamicThreadPool.validateReconfiguration), all INVALID_REQUEST.

// checkBrokerAlter runs the broker-side checks of a BROKER resource whose
// dynamic set would become next(old).
func (s *Server) checkBrokerAlter(name string, next func(old map[string]string) map[string]string) (int16, string) {
	if code, msg := s.checkBrokerResourceName(name); code != 0 {
		return code, msg
	}
	img := metadata.NewImage()
	if s.deps.Metadata != nil {
		img, _ = s.deps.Metadata.Current()
	}
	old := img.ClusterConfigs()
	if name != "" {
		old = img.BrokerConfigs(s.nodeID)
	}
	return s.checkBrokerReconfiguration(img, name, next(old))
}

// checkBrokerResourceName answers a BROKER resource of an alter that names
// another node, as Kafka's validateResourceNameIsCurrentNodeId: clients
// send a broker's configs to that broker.
func (s *Server) checkBrokerResourceName(name string) (int16, string) {
	if name == "" {
		return 0, ""
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest.Code, "Node id must be an integer, but it is: " + name
	}
	if int32(id) != s.nodeID {
		return kerr.InvalidRequest.Code, "Unexpected broker id, expected " + strconv.Itoa(int(s.nodeID)) + ", but received " + name
	}
	return 0, ""
}

// threadCountRule is how a running broker bounds a change of one thread
// count: at least 1, at least half and at most double the current value.
// msg renders the refusal of each bound, Kafka's words for the key.
type threadCountRule struct {
	key string
	msg func(bound string, v string, cur int64) string
}

var threadCountRules = []threadCountRule{
	// LogCleaner.validateReconfiguration.
	{"log.cleaner.threads", func(bound, _ string, cur int64) string {
		switch bound {
		case "min":
			return "Log cleaner threads should be at least 1"
		case "half":
			return "Log cleaner threads cannot be reduced to less than half the current value " + strconv.FormatInt(cur, 10)
		}
		return "Log cleaner threads cannot be increased to more than double the current value " + strconv.FormatInt(cur, 10)
	}},
	// DynamicThreadPool.validateReconfiguration.
	{"num.replica.fetchers", func(bound, v string, cur int64) string {
		m := "Dynamic thread count update validation failed for num.replica.fetchers=" + v
		switch bound {
		case "min":
			return m + ", value should be at least 1"
		case "half":
			return m + ", value should be at least half the current value " + strconv.FormatInt(cur, 10)
		}
		return m + ", value should not be greater than double the current value " + strconv.FormatInt(cur, 10)
	}},
}

// checkBrokerReconfiguration checks a BROKER resource's resulting dynamic
// set (next; the cluster default when name is empty) against this broker's
// running thread counts, as Kafka's reconfigurables validate a change.
func (s *Server) checkBrokerReconfiguration(img *metadata.Image, name string, next map[string]string) (int16, string) {
	broker, cluster := img.BrokerConfigs(s.nodeID), img.ClusterConfigs()
	nb, nc := broker, cluster
	if name == "" {
		nc = next
	} else {
		nb = next
	}
	for _, r := range threadCountRules {
		cur, ok := s.effectiveInt(r.key, broker, cluster)
		if !ok {
			continue
		}
		want, ok := s.effectiveInt(r.key, nb, nc)
		if !ok || want == cur {
			continue // not a number: the controller refuses it with the reason
		}
		v := strconv.FormatInt(want, 10)
		switch {
		case want < 1:
			return kerr.InvalidRequest.Code, r.msg("min", v, cur)
		case want < cur/2:
			return kerr.InvalidRequest.Code, r.msg("half", v, cur)
		case want > cur*2:
			return kerr.InvalidRequest.Code, r.msg("double", v, cur)
		}
	}
	return 0, ""
}

// effectiveInt is a broker key's value as this broker would run with it:
// its own dynamic config, the cluster default, server.properties, the
// built-in default.
func (s *Server) effectiveInt(key string, broker, cluster map[string]string) (int64, bool) {
	v, ok := broker[key]
	if !ok {
		v, ok = cluster[key]
	}
	if !ok && s.config != nil {
		for _, st := range s.config.Settings() {
			if st.Name == key && st.Set {
				v, ok = st.Value, true
			}
		}
	}
	if !ok {
		if d, known := brokerDefs().byName[key]; known && !d.NoDefault {
			v, ok = d.Default, true
		}
	}
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// incrementalNext applies an IncrementalAlterConfigs resource's SET and
// DELETE operations to a dynamic set (APPEND and SUBTRACT apply to list
// keys only, none of which this check reads).
func incrementalNext(old map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) map[string]string {
	next := make(map[string]string, len(old))
	for k, v := range old {
		next[k] = v
	}
	for _, o := range ops {
		switch o.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if o.Value != nil {
				next[o.Name] = *o.Value
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, o.Name)
		}
	}
	return next
}
