package broker

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The cleaner's keys are dynamic broker configs, per broker and as the
// cluster default, through both alter APIs, as Kafka's LogCleaner
// reconfigurables: DescribeConfigs shows them writable with the dynamic
// layers as sources and synonyms, validate-only stores nothing, and the
// broker refuses another broker's resource and a thread count outside
// half to double of its own.
func TestDynamicCleanerConfigs(t *testing.T) {
	node, addr := startAdminNode(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(testDeadline))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*testDeadline)
	defer cancel()

	const key = "log.cleaner.backoff.ms"
	incremental := func(validateOnly bool, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeBroker, name, ops
		req.Resources = append(req.Resources, r)
		// Sent to broker 1 whatever the resource names (kgo would route
		// a broker resource to the broker it names).
		kresp, err := cl.Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatalf("IncrementalAlterConfigs: %v", err)
		}
		resp := kresp.(*kmsg.IncrementalAlterConfigsResponse)
		if len(resp.Resources) != 1 {
			t.Fatalf("IncrementalAlterConfigs: %d answers", len(resp.Resources))
		}
		msg := ""
		if m := resp.Resources[0].ErrorMessage; m != nil {
			msg = *m
		}
		return resp.Resources[0].ErrorCode, msg
	}
	set := func(k, v string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return incOp(k, kmsg.IncrementalAlterConfigOpSet, v)
	}
	del := func(k string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = k, kmsg.IncrementalAlterConfigOpDelete
		return c
	}
	describe := func(name string) kmsg.DescribeConfigsResponseResourceConfig {
		t.Helper()
		req := describeReq(4, true, false, resource(kmsg.ConfigResourceTypeBroker, name, key))
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("DescribeConfigs %q: %v %+v", name, err, resp)
		}
		e, ok := configsByName(resp.Resources[0])[key]
		if !ok && name == "" {
			return kmsg.DescribeConfigsResponseResourceConfig{}
		}
		if !ok || e.ReadOnly {
			t.Fatalf("%s on %q: %+v (found %v), want a writable entry", key, name, e, ok)
		}
		return e
	}
	synonyms := func(e kmsg.DescribeConfigsResponseResourceConfig) string {
		var out []string
		for _, s := range e.ConfigSynonyms {
			out = append(out, s.Source.String()+"="+*s.Value)
		}
		return strings.Join(out, ",")
	}

	if e := describe("1"); e.Source != kmsg.ConfigSourceDefaultConfig || *e.Value != "15000" {
		t.Fatalf("before: %+v", e)
	}
	if code, msg := incremental(true, "1", set(key, "2000")); code != 0 {
		t.Fatalf("validate-only: %d %s", code, msg)
	}
	if got := currentImage(node).BrokerConfigs(1); got != nil {
		t.Fatalf("validate-only stored %v", got)
	}
	if code, msg := incremental(false, "", set(key, "3000")); code != 0 {
		t.Fatalf("cluster default: %d %s", code, msg)
	}
	if code, msg := incremental(false, "1", set(key, "2000")); code != 0 {
		t.Fatalf("broker 1: %d %s", code, msg)
	}
	e := describe("1")
	if e.Source != kmsg.ConfigSourceDynamicBrokerConfig || *e.Value != "2000" ||
		synonyms(e) != "DYNAMIC_BROKER_CONFIG=2000,DYNAMIC_DEFAULT_BROKER_CONFIG=3000,DEFAULT_CONFIG=15000" {
		t.Fatalf("after both: %s %v, synonyms %s", e.Source, *e.Value, synonyms(e))
	}
	if e := describe(""); e.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || *e.Value != "3000" {
		t.Fatalf("cluster default: %+v", e)
	}
	if code, _ := incremental(false, "1", del(key)); code != 0 {
		t.Fatal("delete refused")
	}
	if e := describe("1"); e.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || *e.Value != "3000" {
		t.Fatalf("after the delete: %s %v", e.Source, *e.Value)
	}

	// The legacy AlterConfigs replaces the cluster default's whole set.
	alt := kmsg.NewPtrAlterConfigsRequest()
	alt.Resources = append(alt.Resources, alterResource(kmsg.ConfigResourceTypeBroker, "", "log.cleaner.threads", "2"))
	aresp, err := alt.RequestWith(ctx, cl)
	if err != nil || aresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs: %v %+v", err, aresp)
	}
	if got := currentImage(node).ClusterConfigs(); len(got) != 1 || got["log.cleaner.threads"] != "2" {
		t.Fatalf("cluster configs after AlterConfigs %v", got)
	}

	for _, c := range []struct {
		name, value string
		code        int16
		msg         string
	}{
		{"1", "5", kerr.InvalidRequest.Code, "more than double the current value 2"},
		{"", "0", kerr.InvalidRequest.Code, "at least 1"},
		{"1", "4", 0, ""},
		{"1", "1", kerr.InvalidRequest.Code, "less than half the current value 4"},
		{"2", "2", kerr.InvalidRequest.Code, "Unexpected broker id, expected 1, but received 2"},
		{"x", "2", kerr.InvalidRequest.Code, "Node id must be an integer"},
		{"1", "two", kerr.InvalidRequest.Code, "log.cleaner.threads"},
	} {
		code, msg := incremental(false, c.name, set("log.cleaner.threads", c.value))
		if code != c.code || !strings.Contains(msg, c.msg) {
			t.Errorf("threads=%s on %q: %d %q, want %d %q", c.value, c.name, code, msg, c.code, c.msg)
		}
	}
	for _, c := range []struct {
		value string
		code  int16
		msg   string
	}{
		{"3", kerr.InvalidRequest.Code, "Dynamic thread count update validation failed for num.replica.fetchers=3, value should not be greater than double the current value 1"},
		{"0", kerr.InvalidRequest.Code, "value should be at least 1"},
		{"2", 0, ""},
		{"4", 0, ""},
		{"1", kerr.InvalidRequest.Code, "value should be at least half the current value 4"},
	} {
		code, msg := incremental(false, "1", set("num.replica.fetchers", c.value))
		if code != c.code || !strings.Contains(msg, c.msg) {
			t.Errorf("num.replica.fetchers=%s: %d %q, want %d %q", c.value, code, msg, c.code, c.msg)
		}
	}
	if code, msg := incremental(false, "1", set(key, "-5")); code != kerr.InvalidRequest.Code || !strings.Contains(msg, key) {
		t.Errorf("negative backoff: %d %q", code, msg)
	}
	if code, msg := incremental(false, "1", set("log.cleaner.enable", "false")); code != kerr.InvalidRequest.Code || !strings.Contains(msg, "Cannot update these configs dynamically") {
		t.Errorf("log.cleaner.enable: %d %q, want it refused as read-only", code, msg)
	}
}
