package raftfsm

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config operations: AlterConfigs (replace a resource's whole dynamic set)
// and IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT per key), for
// topic and broker resources; a broker resource with an empty name is the
// cluster-wide default.

// resource resolves a config resource to its metadata type, name and
// current dynamic values.
func resource(img *metadata.Image, typ int8, name string) (metadata.ConfigResourceType, map[string]string, error) {
	switch typ {
	case 2:
		t, ok := img.Topic(name)
		if !ok {
			return 0, nil, fmt.Errorf("%w: %s", metadata.ErrUnknownTopic, name)
		}
		return metadata.ConfigResourceTopic, t.Configs, nil
	case 4:
		if name == "" {
			return metadata.ConfigResourceCluster, img.ClusterConfigs(), nil
		}
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil || id < 0 || strconv.Itoa(int(id)) != name {
			// Replay accepts only the canonical form ("7", not "07" or "-7").
			return 0, nil, fmt.Errorf("%w: broker resource %q is not a broker id", metadata.ErrInvalidRequest, name)
		}
		return metadata.ConfigResourceBroker, img.BrokerConfigs(int32(id)), nil
	case 32:
		if name == "" {
			return 0, nil, fmt.Errorf("%w: a group config resource needs a group id", metadata.ErrInvalidRequest)
		}
		return metadata.ConfigResourceGroup, img.GroupConfigs(name), nil
	}
	return 0, nil, fmt.Errorf("%w: config resource type %d is not supported", metadata.ErrInvalidRequest, typ)
}

// configRecords turns a resource's old and new dynamic sets into Config
// records, after validating them: a topic's whole set by its topic config
// rules (Kafka's controller validates the resulting set), a broker or
// cluster resource's new and changed keys by metadata.ValidateBrokerConfig
// (deleting any key is always allowed, so a key refused today can still be
// cleared).
func configRecords(rt metadata.ConfigResourceType, name string, old, next map[string]string) ([]metadata.Record, error) {
	if _, ok := next[""]; ok {
		return nil, fmt.Errorf("%w: empty config name", metadata.ErrInvalidConfig)
	}
	if rt == metadata.ConfigResourceTopic {
		if err := metadata.ValidateTopicConfigs(next); err != nil {
			return nil, err
		}
	}
	var recs []metadata.Record
	for _, k := range sortedKeys(next) {
		if ov, ok := old[k]; !ok || ov != next[k] {
			switch rt {
			case metadata.ConfigResourceTopic:
			case metadata.ConfigResourceGroup:
				if err := metadata.ValidateGroupConfig(k, next[k]); err != nil {
					return nil, err
				}
			default:
				if err := metadata.ValidateBrokerConfig(k, next[k]); err != nil {
					return nil, err
				}
			}
			recs = append(recs, &metadata.Config{ResourceType: rt, ResourceName: name, Key: k, Value: next[k]})
		}
	}
	for _, k := range sortedKeys(old) {
		if _, ok := next[k]; !ok {
			recs = append(recs, &metadata.Config{ResourceType: rt, ResourceName: name, Key: k, Delete: true})
		}
	}
	return recs, nil
}

// alterResource decides one resource of an AlterConfigs or
// IncrementalAlterConfigs: next computes the new dynamic set from the
// current one; the records are returned only when they should be
// committed (not for validate-only requests).
func alterResource(img *metadata.Image, typ int8, name string, validateOnly bool, next func(rt metadata.ConfigResourceType, old map[string]string) (map[string]string, error)) ([]metadata.Record, error) {
	rt, old, err := resource(img, typ, name)
	if err != nil {
		return nil, err
	}
	want, err := next(rt, old)
	if err != nil {
		return nil, err
	}
	recs, err := configRecords(rt, name, old, want)
	if err != nil || validateOnly {
		return nil, err
	}
	return recs, nil
}

func decideAlterConfigs(req *kmsg.AlterConfigsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		var recs []metadata.Record
		for _, r := range req.Resources {
			out := kmsg.NewAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName = r.ResourceType, r.ResourceName
			rs, err := alterResource(img, int8(r.ResourceType), r.ResourceName, req.ValidateOnly, func(metadata.ConfigResourceType, map[string]string) (map[string]string, error) {
				next := map[string]string{}
				for _, kv := range r.Configs {
					if kv.Value != nil {
						next[kv.Name] = *kv.Value
					}
				}
				return next, nil
			})
			out.ErrorCode, out.ErrorMessage = errCode(err), errMsg(err)
			recs = append(recs, rs...)
			resp.Resources = append(resp.Resources, out)
		}
		return c.withConfigElections(img, recs, resp)
	}
}

func decideIncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		var recs []metadata.Record
		for _, r := range req.Resources {
			out := kmsg.NewIncrementalAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName = r.ResourceType, r.ResourceName
			rs, err := alterResource(img, int8(r.ResourceType), r.ResourceName, req.ValidateOnly, func(rt metadata.ConfigResourceType, old map[string]string) (map[string]string, error) {
				return applyIncremental(rt, old, r.Configs)
			})
			out.ErrorCode, out.ErrorMessage = errCode(err), errMsg(err)
			recs = append(recs, rs...)
			resp.Resources = append(resp.Resources, out)
		}
		return c.withConfigElections(img, recs, resp)
	}
}

// withConfigElections adds, to config records that may have turned
// unclean.leader.election.enable on, the elections that makes possible: a
// leaderless partition of a topic that now allows unclean election gets a
// leader in the same entry (Kafka's controller does this on a timer,
// unclean.leader.election.interval.ms; doing it at once is the same rule
// applied sooner).
func (c *controller) withConfigElections(img *metadata.Image, recs []metadata.Record, resp kmsg.Response) decision {
	if len(recs) == 0 {
		return decision{resp: resp}
	}
	touched, minISR := false, false
	for _, r := range recs {
		if cr, ok := r.(*metadata.Config); ok && cr.Key == uncleanKey {
			touched = true
		}
		if cr, ok := r.(*metadata.Config); ok && cr.Key == minISRKey {
			minISR = true
		}
	}
	if minISR && img.ELREnabled() {
		// KIP-966: who is eligible was decided against the old
		// min.insync.replicas, so a topic whose value moved loses its ELR
		// (Kafka's ReplicationControlManager does the same).
		next, _ := img.Apply(recs)
		before, after := c.unclean(img), c.unclean(next)
		recs = append(recs, clearELRs(next, func(t metadata.TopicImage) bool {
			old, ok := img.TopicByID(t.ID)
			return ok && before.minInsync(old) != after.minInsync(t)
		})...)
	}
	if touched {
		next, _ := img.Apply(recs)
		recs = append(recs, electLeaderless(next, c.unclean(next))...)
	}
	return decision{recs: recs, resp: resp}
}

// applyIncremental applies SET (0), DELETE (1), APPEND (2) and SUBTRACT (3)
// to a copy of the current set, as Kafka's controller does
// (ConfigurationControlManager.incrementalAlterConfigResource):
//   - APPEND and SUBTRACT work on list-typed configs only; on any other key,
//     unknown ones included, they are INVALID_CONFIG ("Can't APPEND to key
//     ... because its type is not LIST.").
//   - They start from the resource's own value, or, when it sets none, from
//     the config's built-in default (APPEND compact to an unset
//     cleanup.policy gives "delete,compact"); empty items of that value are
//     dropped.
//   - APPEND adds each item not already listed, in order; SUBTRACT removes
//     the first occurrence of each item (Java's List.remove).
//   - The result is stored even when empty: SUBTRACT of the last item
//     leaves an empty value, not a deleted key.
//
// Items are split on commas without trimming, as Kafka's are; empty items
// of the operation's value are ignored.
func applyIncremental(rt metadata.ConfigResourceType, old map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, error) {
	next := maps.Clone(old)
	if next == nil {
		next = map[string]string{}
	}
	for _, o := range ops {
		if o.Value == nil && o.Op != kmsg.IncrementalAlterConfigOpDelete {
			// Kafka's broker refuses this before forwarding.
			return nil, fmt.Errorf("%w: Null value not supported for : %s", metadata.ErrInvalidRequest, o.Name)
		}
		switch o.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[o.Name] = *o.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, o.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			def, ok := listDefault(rt, o.Name)
			if !ok {
				return nil, fmt.Errorf("%w: Can't %s to key %s because its type is not LIST", metadata.ErrInvalidConfig, o.Op, o.Name)
			}
			cur, set := next[o.Name]
			if !set {
				cur = def
			}
			list := splitItems(cur)
			for _, item := range splitItems(*o.Value) {
				if o.Op == kmsg.IncrementalAlterConfigOpAppend {
					if !slices.Contains(list, item) {
						list = append(list, item)
					}
				} else if i := slices.Index(list, item); i >= 0 {
					list = slices.Delete(list, i, i+1)
				}
			}
			next[o.Name] = strings.Join(list, ",")
		default:
			return nil, fmt.Errorf("%w: unknown operation %d for key %s", metadata.ErrInvalidRequest, o.Op, o.Name)
		}
	}
	return next, nil
}

// listDefault reports whether key is a list-typed config of the resource
// type (Kafka's KafkaConfigSchema.isSplittable) and returns its built-in
// default (getDefault). Broker and cluster resources know the broker keys
// raftka acts on: the topic configs' broker synonyms.
func listDefault(rt metadata.ConfigResourceType, key string) (string, bool) {
	var d metadata.TopicConfigDef
	var ok bool
	if rt == metadata.ConfigResourceTopic {
		d, ok = metadata.LookupTopicConfig(key)
	} else {
		var scale int64
		d, scale, ok = metadata.LookupBrokerSynonym(key)
		ok = ok && scale == 1
	}
	if !ok || d.Type != metadata.ConfigTypeList {
		return "", false
	}
	return d.Default, true
}

// splitItems splits a list value on commas, dropping empty items.
func splitItems(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item != "" {
			out = append(out, item)
		}
	}
	return out
}
