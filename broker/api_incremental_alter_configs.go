package broker

// IncrementalAlterConfigs (key 44): v0-v1, as Kafka 4.2, forwarded to the
// active controller. Each config of a resource is changed by an operation:
// SET (0) a value, DELETE (1) the override (back to the default), APPEND (2)
// or SUBTRACT (3) items of a list-typed config.
//
// Behaviour (Kafka's ConfigAdminManager.preprocess, then the controller's
// ConfigurationControlManager.incrementalAlterConfigResource):
//   - TOPIC and BROKER resources are forwarded in one call; the controller
//     applies the operations to the resource's current dynamic set,
//     validates the result (INVALID_CONFIG with a message), and commits
//     nothing for ValidateOnly. Once it returns, this broker's image shows
//     the change.
//   - Answered here, not forwarded, as INVALID_REQUEST: a resource named
//     twice, a config named twice within a resource, an unknown operation,
//     and resource types raftka has no configs for. APPEND or SUBTRACT on a
//     known config that is not a list is INVALID_CONFIG ("Can't APPEND to
//     key ... because its type is not LIST."), as in Kafka. Every entry of
//     a resource named twice is answered, each "Each resource must appear
//     at most once.".
//   - A BROKER resource naming another broker is INVALID_REQUEST ("Unexpected
//     broker id"), and one whose log.cleaner.threads would leave half to
//     double this broker's current count is INVALID_REQUEST, both here
//     (dynamic_configs.go).
//   - A failed call answers each forwarded resource with its code.
//
// Version notes: v1 is flexible.

import (
	"context"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           44,
		advertisedMin: 0, min: 0, max: 1,
		concurrent: false, // a DescribeConfigs after it must see the change
		handle:     handleIncrementalAlterConfigs,
	})
}

func handleIncrementalAlterConfigs(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	srv := rc.conn.srv

	count := map[configResource]int{}
	for _, r := range req.Resources {
		count[configResource{r.ResourceType, r.ResourceName}]++
	}
	results := map[configResource]kmsg.IncrementalAlterConfigsResponseResource{}
	fwd := kmsg.NewPtrIncrementalAlterConfigsRequest()
	fwd.ValidateOnly = req.ValidateOnly
	for _, r := range req.Resources {
		key := configResource{r.ResourceType, r.ResourceName}
		var names []string
		for _, c := range r.Configs {
			names = append(names, c.Name)
		}
		code, msg := preprocessAlter(key, names, count[key], true, rc.authorize)
		if code == 0 {
			code, msg = checkIncrementalOps(key.typ, r.Configs)
		}
		if code == 0 && key.typ == kmsg.ConfigResourceTypeBroker {
			code, msg = srv.checkBrokerAlter(key.name, func(old map[string]string) map[string]string { return incrementalNext(old, r.Configs) })
		}
		if code != 0 {
			results[key] = incrementalResult(key, code, kmsg.StringPtr(msg))
			continue
		}
		fwd.Resources = append(fwd.Resources, r)
	}

	if len(fwd.Resources) > 0 {
		forwardIncrementalAlterConfigs(ctx, srv, fwd, results)
	}
	for _, r := range req.Resources {
		key := configResource{r.ResourceType, r.ResourceName}
		rr, ok := results[key]
		if !ok {
			rr = incrementalResult(key, kerr.UnknownServerError.Code, kmsg.StringPtr("the controller did not answer for this resource"))
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

// checkIncrementalOps rejects unknown operations, and APPEND or SUBTRACT on
// a config whose type is known and not a list. Unknown config names are
// left to the controller, which knows which keys it accepts.
func checkIncrementalOps(typ kmsg.ConfigResourceType, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
	for _, o := range ops {
		switch o.Op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if isList, known := configIsList(typ, o.Name); known && !isList {
				return kerr.InvalidConfig.Code, "Can't " + o.Op.String() + " to key " + o.Name + " because its type is not LIST."
			}
		default:
			return kerr.InvalidRequest.Code, "Unknown operation " + o.Op.String() + " for key " + o.Name + "."
		}
	}
	return 0, ""
}

// configIsList reports whether a config of the resource type is a list;
// known is false for a name raftka does not define.
func configIsList(typ kmsg.ConfigResourceType, name string) (isList, known bool) {
	if typ == kmsg.ConfigResourceTypeTopic {
		d, ok := metadata.LookupTopicConfig(name)
		return ok && d.Type == metadata.ConfigTypeList, ok
	}
	d, ok := brokerDefs().byName[name]
	return ok && d.Type == config.TypeList, ok
}

func forwardIncrementalAlterConfigs(ctx context.Context, srv *Server, fwd *kmsg.IncrementalAlterConfigsRequest, results map[configResource]kmsg.IncrementalAlterConfigsResponseResource) {
	fail := func(code int16, msg *string) {
		for _, r := range fwd.Resources {
			key := configResource{r.ResourceType, r.ResourceName}
			results[key] = incrementalResult(key, code, msg)
		}
	}
	if srv.deps.Admin == nil {
		fail(adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker"))
		return
	}
	cctx, cancel := forwardContext(ctx, 0)
	defer cancel()
	cresp, err := srv.deps.Admin.IncrementalAlterConfigs(cctx, fwd)
	if err != nil {
		fail(forwardFailure(err))
		return
	}
	for _, rr := range cresp.Resources {
		clearTags(&rr.UnknownTags)
		results[configResource{rr.ResourceType, rr.ResourceName}] = rr
	}
}

func incrementalResult(r configResource, code int16, msg *string) kmsg.IncrementalAlterConfigsResponseResource {
	out := kmsg.NewIncrementalAlterConfigsResponseResource()
	out.ResourceType, out.ResourceName, out.ErrorCode, out.ErrorMessage = r.typ, r.name, code, msg
	return out
}
