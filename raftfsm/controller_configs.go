package raftfsm

import (
	"fmt"
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

// validateTopicConfigs checks topic overrides against metadata's topic
// config definitions.
func validateTopicConfigs(cfg map[string]string) error { return metadata.ValidateTopicConfigs(cfg) }

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
		if err != nil {
			return 0, nil, fmt.Errorf("%w: broker resource %q is not a broker id", metadata.ErrInvalidRequest, name)
		}
		return metadata.ConfigResourceBroker, img.BrokerConfigs(int32(id)), nil
	}
	return 0, nil, fmt.Errorf("%w: config resource type %d is not supported", metadata.ErrInvalidRequest, typ)
}

// configRecords turns a resource's old and new dynamic sets into Config
// records, after validating topic sets.
func configRecords(rt metadata.ConfigResourceType, name string, old, next map[string]string) ([]metadata.Record, error) {
	if rt == metadata.ConfigResourceTopic {
		if err := validateTopicConfigs(next); err != nil {
			return nil, err
		}
	}
	var recs []metadata.Record
	for _, k := range sortedKeys(next) {
		if ov, ok := old[k]; !ok || ov != next[k] {
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

func decideAlterConfigs(req *kmsg.AlterConfigsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		var recs []metadata.Record
		for _, r := range req.Resources {
			out := kmsg.NewAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName = r.ResourceType, r.ResourceName
			rt, old, err := resource(img, int8(r.ResourceType), r.ResourceName)
			var rs []metadata.Record
			if err == nil {
				next := map[string]string{}
				for _, kv := range r.Configs {
					if kv.Value != nil {
						next[kv.Name] = *kv.Value
					}
				}
				rs, err = configRecords(rt, r.ResourceName, old, next)
			}
			out.ErrorCode, out.ErrorMessage = errCode(err), errMsg(err)
			if err == nil && !req.ValidateOnly {
				recs = append(recs, rs...)
			}
			resp.Resources = append(resp.Resources, out)
		}
		return decision{recs: recs, resp: resp}
	}
}

func decideIncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		var recs []metadata.Record
		for _, r := range req.Resources {
			out := kmsg.NewIncrementalAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName = r.ResourceType, r.ResourceName
			rt, old, err := resource(img, int8(r.ResourceType), r.ResourceName)
			var rs []metadata.Record
			if err == nil {
				var next map[string]string
				next, err = applyIncremental(old, r.Configs)
				if err == nil {
					rs, err = configRecords(rt, r.ResourceName, old, next)
				}
			}
			out.ErrorCode, out.ErrorMessage = errCode(err), errMsg(err)
			if err == nil && !req.ValidateOnly {
				recs = append(recs, rs...)
			}
			resp.Resources = append(resp.Resources, out)
		}
		return decision{recs: recs, resp: resp}
	}
}

// applyIncremental applies SET (0), DELETE (1), APPEND (2) and SUBTRACT (3)
// to a copy of the current set. APPEND and SUBTRACT treat the value as a
// comma-separated list, as Kafka does for list-typed configs.
func applyIncremental(old map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, error) {
	next := map[string]string{}
	for k, v := range old {
		next[k] = v
	}
	for _, o := range ops {
		switch o.Op {
		case 0:
			if o.Value == nil {
				return nil, fmt.Errorf("%w: SET %s without a value", metadata.ErrInvalidConfig, o.Name)
			}
			next[o.Name] = *o.Value
		case 1:
			delete(next, o.Name)
		case 2, 3:
			if o.Value == nil {
				return nil, fmt.Errorf("%w: APPEND/SUBTRACT %s without a value", metadata.ErrInvalidConfig, o.Name)
			}
			var list []string
			if cur := next[o.Name]; cur != "" {
				list = strings.Split(cur, ",")
			}
			for _, item := range strings.Split(*o.Value, ",") {
				item = strings.TrimSpace(item)
				if item == "" {
					continue
				}
				if o.Op == 2 && !slices.Contains(list, item) {
					list = append(list, item)
				}
				if o.Op == 3 {
					list = slices.DeleteFunc(list, func(s string) bool { return s == item })
				}
			}
			if len(list) == 0 {
				delete(next, o.Name)
			} else {
				next[o.Name] = strings.Join(list, ",")
			}
		default:
			return nil, fmt.Errorf("%w: unknown operation %d", metadata.ErrInvalidRequest, o.Op)
		}
	}
	return next, nil
}
