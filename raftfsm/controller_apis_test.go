package raftfsm

import (
	"maps"
	"slices"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every request the controller listener serves has a rule for principals
// that are not brokers: a cluster operation, a per-resource check, or
// broker-only. The broker-only list is written out so that a new request
// has to be placed on purpose.
func TestControllerAdminRulesCoverServedRequests(t *testing.T) {
	brokerOnly := []int16{8, 14, 42, 56, 58, 62, 63, 67, 82} // 82: UpdateRaftVoter, sent by the voter itself
	for _, k := range controllerAPIKeys {
		_, cluster := clusterOps[k]
		n := 0
		for _, b := range []bool{cluster, resourceChecked[k], slices.Contains(brokerOnly, k)} {
			if b {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: in %d of clusterOps, resourceChecked and the broker-only list, want exactly 1", kmsg.NameForKey(k), n)
		}
	}
}

// allowOnly allows exactly the listed (operation, resource type, name).
func allowOnly(grants ...[3]any) func(metadata.ACLOperation, metadata.ACLResourceType, string) bool {
	return func(op metadata.ACLOperation, rt metadata.ACLResourceType, name string) bool {
		for _, g := range grants {
			if g[0] == op && g[1] == rt && g[2] == name {
				return true
			}
		}
		return false
	}
}

func TestAuthorizeResources(t *testing.T) {
	topic, clusterRes, cname := metadata.ACLResourceTopic, metadata.ACLResourceCluster, metadata.ClusterResourceName
	createReq := func(names ...string) *kmsg.CreateTopicsRequest {
		r := kmsg.NewPtrCreateTopicsRequest()
		for _, n := range names {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = n
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	configReq := func(res ...kmsg.IncrementalAlterConfigsRequestResource) *kmsg.IncrementalAlterConfigsRequest {
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.Resources = res
		return r
	}
	cres := func(rt kmsg.ConfigResourceType, name string) kmsg.IncrementalAlterConfigsRequestResource {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = rt, name
		return r
	}
	deleteReq := func(names ...string) *kmsg.DeleteTopicsRequest {
		r := kmsg.NewPtrDeleteTopicsRequest()
		for _, n := range names {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	for _, tc := range []struct {
		name  string
		req   kmsg.Request
		allow func(metadata.ACLOperation, metadata.ACLResourceType, string) bool
		// run: the names left in the request to run (nil: nothing runs);
		// refused: name -> code in the answer of the refused part.
		run     []string
		refused map[string]int16
	}{
		{"create: cluster CREATE allows every topic", createReq("a", "b"), allowOnly([3]any{metadata.ACLOpCreate, clusterRes, cname}), []string{"a", "b"}, nil},
		{"create: topic CREATE allows that topic", createReq("a", "b"), allowOnly([3]any{metadata.ACLOpCreate, topic, "b"}), []string{"b"}, map[string]int16{"a": kerr.TopicAuthorizationFailed.Code}},
		{"create: nothing allowed", createReq("a"), allowOnly(), nil, map[string]int16{"a": kerr.TopicAuthorizationFailed.Code}},
		{"create: ALTER is not CREATE", createReq("a"), allowOnly([3]any{metadata.ACLOpAlter, topic, "a"}), nil, map[string]int16{"a": kerr.TopicAuthorizationFailed.Code}},
		{"delete: DELETE on the topic", deleteReq("a", "b"), allowOnly([3]any{metadata.ACLOpDelete, topic, "a"}), []string{"a"}, map[string]int16{"b": kerr.TopicAuthorizationFailed.Code}},
		{"configs: topic and broker", configReq(cres(kmsg.ConfigResourceTypeTopic, "t"), cres(kmsg.ConfigResourceTypeBroker, "1")),
			allowOnly([3]any{metadata.ACLOpAlterConfigs, topic, "t"}), []string{"t"}, map[string]int16{"1": kerr.ClusterAuthorizationFailed.Code}},
		{"configs: broker with cluster ALTER_CONFIGS", configReq(cres(kmsg.ConfigResourceTypeBroker, "1")),
			allowOnly([3]any{metadata.ACLOpAlterConfigs, clusterRes, cname}), []string{"1"}, nil},
		{"configs: group", configReq(cres(kmsg.ConfigResourceTypeGroupConfig, "g")), allowOnly(), nil, map[string]int16{"g": kerr.GroupAuthorizationFailed.Code}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, resp, merge := authorizeResources(metadata.NewImage(), tc.req, tc.allow)
			if (run == nil) != (tc.run == nil) {
				t.Fatalf("run %v, want %v", run, tc.run)
			}
			if run != nil {
				if got := requestNames(run); !slices.Equal(got, tc.run) {
					t.Fatalf("runs %v, want %v", got, tc.run)
				}
				if len(tc.refused) == 0 && (run != tc.req || merge != nil) {
					t.Fatal("everything allowed, yet the request was split")
				}
				if len(tc.refused) > 0 {
					if merge == nil {
						t.Fatal("a refused part and no merge")
					}
					resp = run.ResponseKind()
					merge(resp)
				}
			} else if resp == nil {
				t.Fatal("neither a request to run nor an answer")
			}
			if len(tc.refused) == 0 {
				return
			}
			if got := responseCodes(resp); !maps.Equal(got, tc.refused) {
				t.Fatalf("refusals %v, want %v", got, tc.refused)
			}
		})
	}
}

func requestNames(req kmsg.Request) []string {
	var out []string
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		for _, t := range r.Topics {
			out = append(out, t.Topic)
		}
	case *kmsg.DeleteTopicsRequest:
		for _, t := range r.Topics {
			out = append(out, *t.Topic)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, res := range r.Resources {
			out = append(out, res.ResourceName)
		}
	}
	return out
}

func responseCodes(resp kmsg.Response) map[string]int16 {
	out := map[string]int16{}
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			out[t.Topic] = t.ErrorCode
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			out[*t.Topic] = t.ErrorCode
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, res := range r.Resources {
			out[res.ResourceName] = res.ErrorCode
		}
	}
	return out
}
