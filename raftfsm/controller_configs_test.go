package raftfsm

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func incOp(name string, op kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, op, value
	return c
}

const (
	opSet      = kmsg.IncrementalAlterConfigOpSet
	opDelete   = kmsg.IncrementalAlterConfigOpDelete
	opAppend   = kmsg.IncrementalAlterConfigOpAppend
	opSubtract = kmsg.IncrementalAlterConfigOpSubtract
)

// Kafka's ConfigurationControlManager.incrementalAlterConfigResource.
func TestApplyIncremental(t *testing.T) {
	s := kmsg.StringPtr
	topic, broker, cluster := metadata.ConfigResourceTopic, metadata.ConfigResourceBroker, metadata.ConfigResourceCluster
	cases := []struct {
		name string
		rt   metadata.ConfigResourceType
		old  map[string]string
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want map[string]string
		err  error
	}{
		{name: "APPEND to an unset list starts from the default", rt: topic,
			ops:  []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("cleanup.policy", opAppend, s("compact"))},
			want: map[string]string{"cleanup.policy": "delete,compact"}},
		{name: "APPEND skips items already listed", rt: topic, old: map[string]string{"cleanup.policy": "compact"},
			ops:  []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("cleanup.policy", opAppend, s("compact,delete"))},
			want: map[string]string{"cleanup.policy": "compact,delete"}},
		{name: "APPEND to a set empty value does not use the default", rt: topic, old: map[string]string{"cleanup.policy": ""},
			ops:  []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("cleanup.policy", opAppend, s("compact"))},
			want: map[string]string{"cleanup.policy": "compact"}},
		{name: "SUBTRACT from an unset list starts from the default and keeps an empty value", rt: topic,
			ops:  []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("cleanup.policy", opSubtract, s("delete"))},
			want: map[string]string{"cleanup.policy": ""}},
		{name: "SUBTRACT removes the first occurrence only", rt: topic, old: map[string]string{"leader.replication.throttled.replicas": "0:1,1:2,0:1"},
			ops:  []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("leader.replication.throttled.replicas", opSubtract, s("0:1"))},
			want: map[string]string{"leader.replication.throttled.replicas": "1:2,0:1"}},
		{name: "SUBTRACT of an absent item changes nothing", rt: topic, old: map[string]string{"cleanup.policy": "compact"},
			ops:  []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("cleanup.policy", opSubtract, s("delete"))},
			want: map[string]string{"cleanup.policy": "compact"}},
		{name: "APPEND on a non-list config", rt: topic,
			ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("retention.ms", opAppend, s("5"))}, err: metadata.ErrInvalidConfig},
		{name: "SUBTRACT on an unknown config", rt: topic,
			ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("no.such.config", opSubtract, s("a"))}, err: metadata.ErrInvalidConfig},
		{name: "broker APPEND starts from the broker key's default", rt: broker,
			ops:  []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("log.cleanup.policy", opAppend, s("compact"))},
			want: map[string]string{"log.cleanup.policy": "delete,compact"}},
		{name: "cluster APPEND on a non-list broker config", rt: cluster,
			ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("log.retention.ms", opAppend, s("5"))}, err: metadata.ErrInvalidConfig},
		{name: "broker APPEND on the topic config's name", rt: broker,
			ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("cleanup.policy", opAppend, s("compact"))}, err: metadata.ErrInvalidConfig},
		{name: "SET and DELETE", rt: topic, old: map[string]string{"retention.ms": "1", "segment.ms": "2"},
			ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
				incOp("retention.ms", opSet, s("3")), incOp("segment.ms", opDelete, nil), incOp("flush.ms", opDelete, nil)},
			want: map[string]string{"retention.ms": "3"}},
		{name: "SET without a value", rt: topic,
			ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("retention.ms", opSet, nil)}, err: metadata.ErrInvalidRequest},
		{name: "unknown operation", rt: topic,
			ops: []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("retention.ms", 9, s("1"))}, err: metadata.ErrInvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := maps.Clone(tc.old)
			got, err := applyIncremental(tc.rt, tc.old, tc.ops)
			if !maps.Equal(tc.old, old) {
				t.Fatalf("the current set was modified: %v", tc.old)
			}
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// incremental runs an IncrementalAlterConfigs of one resource through the
// controller's decision and returns the answer's code and the records.
func incremental(t *testing.T, img *metadata.Image, typ kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, []metadata.Record) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = typ, name, ops
	req.Resources = append(req.Resources, r)
	d := decideIncrementalAlterConfigs(req)(nil, img, time.Time{})
	resp := d.resp.(*kmsg.IncrementalAlterConfigsResponse)
	if len(resp.Resources) != 1 {
		t.Fatalf("%d resources answered", len(resp.Resources))
	}
	return resp.Resources[0].ErrorCode, d.recs
}

func TestDecideIncrementalAlterConfigsLists(t *testing.T) {
	img := newImg(t, 1).topic("t", nil, pspec{ids(1), ids(1), 1}).build()

	code, recs := incremental(t, img, kmsg.ConfigResourceTypeTopic, "t", incOp("cleanup.policy", opSubtract, kmsg.StringPtr("delete")))
	if code != 0 || len(recs) != 1 {
		t.Fatalf("SUBTRACT delete: code %d, %d records", code, len(recs))
	}
	if c := recs[0].(*metadata.Config); c.Delete || c.Value != "" || c.Key != "cleanup.policy" {
		t.Fatalf("SUBTRACT of the last item recorded %+v, want an empty value", c)
	}
	next, _ := img.Apply(recs)
	if tc, _ := next.Topic("t"); tc.Configs["cleanup.policy"] != "" {
		t.Fatalf("image has %q", tc.Configs["cleanup.policy"])
	} else if _, ok := tc.Configs["cleanup.policy"]; !ok {
		t.Fatal("image lost the emptied key")
	}

	code, recs = incremental(t, img, kmsg.ConfigResourceTypeTopic, "t", incOp("cleanup.policy", opAppend, kmsg.StringPtr("compact")))
	if code != 0 || len(recs) != 1 || recs[0].(*metadata.Config).Value != "delete,compact" {
		t.Fatalf("APPEND compact: code %d, records %v", code, recs)
	}

	for _, op := range []kmsg.IncrementalAlterConfigOp{opAppend, opSubtract} {
		if code, recs := incremental(t, img, kmsg.ConfigResourceTypeTopic, "t", incOp("retention.ms", op, kmsg.StringPtr("1"))); code != kerr.InvalidConfig.Code || len(recs) != 0 {
			t.Fatalf("%s on retention.ms: code %d, %d records", op, code, len(recs))
		}
		if code, recs := incremental(t, img, kmsg.ConfigResourceTypeBroker, "", incOp("log.retention.ms", op, kmsg.StringPtr("1"))); code != kerr.InvalidConfig.Code || len(recs) != 0 {
			t.Fatalf("%s on log.retention.ms: code %d, %d records", op, code, len(recs))
		}
	}
}

// Broker and cluster-default resources accept only the broker keys raftka
// acts on (the topic configs' synonyms), with values valid for the topic
// config; anything else is INVALID_REQUEST, as Kafka's broker answers.
func TestDecideBrokerConfigs(t *testing.T) {
	img := newImg(t, 2).with(
		&metadata.Config{ResourceType: metadata.ConfigResourceBroker, ResourceName: "1", Key: "stale.key", Value: "x"},
	).build()
	cases := []struct {
		name    string
		broker  string
		configs map[string]string
		code    int16
	}{
		{name: "retention by hours on a broker", broker: "1", configs: map[string]string{"log.retention.hours": "24"}},
		{name: "cluster default segment size", broker: "", configs: map[string]string{"log.segment.bytes": "1048576"}},
		{name: "invalid value", broker: "", configs: map[string]string{"log.segment.bytes": "1"}, code: kerr.InvalidRequest.Code},
		{name: "not a number", broker: "2", configs: map[string]string{"log.retention.ms": "soon"}, code: kerr.InvalidRequest.Code},
		{name: "read-only key", broker: "2", configs: map[string]string{"log.dirs": "/data"}, code: kerr.InvalidRequest.Code},
		{name: "unknown key", broker: "", configs: map[string]string{"no.such.key": "1"}, code: kerr.InvalidRequest.Code},
		{name: "topic config name on a broker", broker: "2", configs: map[string]string{"retention.ms": "1"}, code: kerr.InvalidRequest.Code},
		{name: "one bad key refuses the resource", broker: "2", configs: map[string]string{"log.retention.ms": "1", "log.dirs": "/d"}, code: kerr.InvalidRequest.Code},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// AlterConfigs replaces the set.
			req := kmsg.NewPtrAlterConfigsRequest()
			r := kmsg.NewAlterConfigsRequestResource()
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, tc.broker
			var ops []kmsg.IncrementalAlterConfigsRequestResourceConfig
			for _, k := range sortedKeys(tc.configs) {
				c := kmsg.NewAlterConfigsRequestResourceConfig()
				c.Name, c.Value = k, kmsg.StringPtr(tc.configs[k])
				r.Configs = append(r.Configs, c)
				ops = append(ops, incOp(k, opSet, kmsg.StringPtr(tc.configs[k])))
			}
			req.Resources = append(req.Resources, r)
			d := decideAlterConfigs(req)(nil, img, time.Time{})
			if code := d.resp.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode; code != tc.code {
				t.Fatalf("AlterConfigs: code %s, want %s", kerr.ErrorForCode(code), kerr.ErrorForCode(tc.code))
			}
			if tc.code != 0 && len(d.recs) != 0 {
				t.Fatalf("AlterConfigs: %d records for a refused resource", len(d.recs))
			}
			// IncrementalAlterConfigs SET decides the same.
			code, recs := incremental(t, img, kmsg.ConfigResourceTypeBroker, tc.broker, ops...)
			if code != tc.code {
				t.Fatalf("IncrementalAlterConfigs: code %s, want %s", kerr.ErrorForCode(code), kerr.ErrorForCode(tc.code))
			}
			if tc.code != 0 {
				if len(recs) != 0 {
					t.Fatalf("IncrementalAlterConfigs: %d records for a refused resource", len(recs))
				}
				return
			}
			next, sk := img.Apply(recs)
			if len(sk.Skipped) != 0 {
				t.Fatal(sk.Skipped[0].Err)
			}
			got := next.ClusterConfigs()
			if tc.broker != "" {
				got = next.BrokerConfigs(1)
			}
			for k, v := range tc.configs {
				if got[k] != v {
					t.Fatalf("%s = %q after the change, want %q", k, got[k], v)
				}
			}
		})
	}

	// A key stored before validation existed can still be deleted, and
	// AlterConfigs without it clears it.
	code, recs := incremental(t, img, kmsg.ConfigResourceTypeBroker, "1", incOp("stale.key", opDelete, nil))
	if code != 0 || len(recs) != 1 || !recs[0].(*metadata.Config).Delete {
		t.Fatalf("DELETE of a stored unknown key: code %d, records %v", code, recs)
	}
}
