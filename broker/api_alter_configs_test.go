package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func alterResource(typ kmsg.ConfigResourceType, name string, kv ...string) kmsg.AlterConfigsRequestResource {
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], strp(kv[i+1])
		r.Configs = append(r.Configs, c)
	}
	return r
}

func TestAlterConfigs(t *testing.T) {
	for v := int16(0); v <= 2; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			fa := &adminCtrl{}
			s := adminServer(t, clusterImage(t, 9001), fa, nil)
			req := kmsg.NewPtrAlterConfigsRequest()
			req.Version, req.ValidateOnly = v, true
			req.Resources = []kmsg.AlterConfigsRequestResource{
				alterResource(kmsg.ConfigResourceTypeTopic, "orders", "retention.ms", "1000"),
				alterResource(kmsg.ConfigResourceTypeBroker, "", "log.retention.ms", "5"),
				alterResource(kmsg.ConfigResourceTypeTopic, "twice"),
				alterResource(kmsg.ConfigResourceTypeTopic, "twice"),
				alterResource(kmsg.ConfigResourceTypeTopic, "dupkey", "a", "1", "a", "2"),
				alterResource(kmsg.ConfigResourceTypeBrokerLogger, "1", "root", "DEBUG"),
				alterResource(kmsg.ConfigResourceTypeTopic, metadataTopic, "retention.ms", "1"),
			}
			resp := call[*kmsg.AlterConfigsResponse](t, s, req)
			want := []struct {
				name string
				code int16
			}{{"orders", 0}, {"", 0}, {"twice", kerr.InvalidRequest.Code}, {"twice", kerr.InvalidRequest.Code}, {"dupkey", kerr.InvalidRequest.Code}, {"1", kerr.InvalidRequest.Code}, {metadataTopic, kerr.InvalidRequest.Code}}
			if len(resp.Resources) != len(want) {
				t.Fatalf("%d answers, want %d", len(resp.Resources), len(want))
			}
			for i, w := range want {
				r := resp.Resources[i]
				if r.ResourceName != w.name || r.ErrorCode != w.code || r.UnknownTags.Len() != 0 || (w.code != 0 && r.ErrorMessage == nil) {
					t.Errorf("answer %d: %s code %d, want %s code %d", i, r.ResourceName, r.ErrorCode, w.name, w.code)
				}
			}
			fr := fa.requests()[0].(*kmsg.AlterConfigsRequest)
			if len(fr.Resources) != 2 || !fr.ValidateOnly || fr.Resources[0].ResourceName != "orders" {
				t.Fatalf("forwarded %+v", fr)
			}
		})
	}
}

func incOp(name string, op kmsg.IncrementalAlterConfigOp, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = name, op
	if op != kmsg.IncrementalAlterConfigOpDelete {
		c.Value = strp(value)
	}
	return c
}

func TestIncrementalAlterConfigs(t *testing.T) {
	res := func(typ kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = typ, name, ops
		return r
	}
	topic := kmsg.ConfigResourceTypeTopic
	const forwardedUnknown = "append to an unknown key goes to the controller"
	for _, tc := range []struct {
		name     string
		resource kmsg.IncrementalAlterConfigsRequestResource
		code     int16
	}{
		{"set and delete", res(topic, "orders", incOp("retention.ms", 0, "5"), incOp("segment.ms", 1, "")), 0},
		{"append to a list", res(topic, "orders", incOp("cleanup.policy", 2, "compact")), 0},
		{"subtract from a list", res(topic, "orders", incOp("leader.replication.throttled.replicas", 3, "0:1")), 0},
		{"append to a long", res(topic, "orders", incOp("retention.ms", 2, "5")), kerr.InvalidConfig.Code},
		{"subtract from a broker int", res(kmsg.ConfigResourceTypeBroker, "1", incOp("num.partitions", 3, "1")), kerr.InvalidConfig.Code},
		{forwardedUnknown, res(topic, "orders", incOp("no.such", 2, "x")), 0},
		{"unknown op", res(topic, "orders", incOp("retention.ms", 9, "5")), kerr.InvalidRequest.Code},
		{"duplicate key", res(topic, "orders", incOp("retention.ms", 0, "5"), incOp("retention.ms", 1, "")), kerr.InvalidRequest.Code},
		{"group resource, unknown key", res(kmsg.ConfigResourceTypeGroupConfig, "g", incOp("x", 0, "1")), kerr.InvalidConfig.Code},
		{"group resource without a name", res(kmsg.ConfigResourceTypeGroupConfig, "", incOp("consumer.session.timeout.ms", 0, "50000")), kerr.InvalidRequest.Code},
	} {
		for v := int16(0); v <= 1; v++ {
			fa := &adminCtrl{}
			if tc.name == forwardedUnknown {
				// The controller refuses the key (INVALID_CONFIG); what
				// is tested is that the broker forwards it instead of
				// refusing it itself, so the controller's answer is canned.
				fa.incrementalConfig = func(req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
					resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
					for _, r := range req.Resources {
						rr := kmsg.NewIncrementalAlterConfigsResponseResource()
						rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
						tagged(&rr.UnknownTags)
						resp.Resources = append(resp.Resources, rr)
					}
					return resp
				}
			}
			s := adminServer(t, clusterImage(t, 9001), fa, nil)
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			req.Version, req.Resources = v, []kmsg.IncrementalAlterConfigsRequestResource{tc.resource}
			resp := call[*kmsg.IncrementalAlterConfigsResponse](t, s, req)
			r := resp.Resources[0]
			if r.ErrorCode != tc.code || r.UnknownTags.Len() != 0 {
				t.Errorf("%s v%d: code %d (%s), want %d", tc.name, v, r.ErrorCode, deref(r.ErrorMessage), tc.code)
			}
			if forwarded := len(fa.requests()) == 1; forwarded != (tc.code == 0) {
				t.Errorf("%s v%d: forwarded %v", tc.name, v, forwarded)
			}
		}
	}

	// A resource named twice: each entry answered, as Kafka's
	// ConfigAdminManager.reassembleIncrementalResponse does, and the
	// duplicate check comes before the resource type's.
	for v := int16(0); v <= 1; v++ {
		fa := &adminCtrl{}
		s := adminServer(t, clusterImage(t, 9001), fa, nil)
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = v
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
			res(kmsg.ConfigResourceTypeGroupConfig, "g", incOp("x", 0, "1")),
			res(topic, "orders", incOp("retention.ms", 0, "5")),
			res(kmsg.ConfigResourceTypeGroupConfig, "g", incOp("x", 0, "1")),
		}
		resp := call[*kmsg.IncrementalAlterConfigsResponse](t, s, req)
		if len(resp.Resources) != 3 {
			t.Fatalf("v%d: %d answers, want 3", v, len(resp.Resources))
		}
		for _, i := range []int{0, 2} {
			r := resp.Resources[i]
			if r.ResourceName != "g" || r.ErrorCode != kerr.InvalidRequest.Code || deref(r.ErrorMessage) != "Each resource must appear at most once." {
				t.Errorf("v%d answer %d: %s code %d (%s)", v, i, r.ResourceName, r.ErrorCode, deref(r.ErrorMessage))
			}
		}
		if r := resp.Resources[1]; r.ResourceName != "orders" || r.ErrorCode != 0 {
			t.Errorf("v%d: orders code %d (%s)", v, r.ErrorCode, deref(r.ErrorMessage))
		}
	}

	// A failed controller call answers every forwarded resource.
	s := adminServer(t, clusterImage(t, 9001), &adminCtrl{err: kerr.RequestTimedOut}, nil)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res(topic, "a", incOp("retention.ms", 0, "1")), res(topic, "b", incOp("retention.ms", 0, "1"))}
	resp := call[*kmsg.IncrementalAlterConfigsResponse](t, s, req)
	for _, r := range resp.Resources {
		if r.ErrorCode != kerr.RequestTimedOut.Code {
			t.Errorf("%s: code %d", r.ResourceName, r.ErrorCode)
		}
	}
}
