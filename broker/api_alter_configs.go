package broker

// AlterConfigs (key 33): v0-v2, as Kafka 4.2, forwarded to the active
// controller. The legacy API: each resource's dynamic configs are replaced
// by exactly the set given (a config left out returns to its default).
//
// Behaviour (Kafka's ConfigAdminManager.preprocess, then the controller's
// ConfigurationControlManager):
//   - TOPIC and BROKER resources (a broker id, or an empty name for the
//     cluster-wide default) are forwarded in one call; the controller
//     validates topic configs (INVALID_CONFIG with a message), answers an
//     unknown topic UNKNOWN_TOPIC_OR_PARTITION, and commits nothing for
//     ValidateOnly. Once it returns, this broker's image (and so
//     DescribeConfigs here) shows the new values.
//   - A resource named twice, a config named twice within one resource, or
//     another resource type (BROKER_LOGGER and the like: raftka has none)
//     is answered INVALID_REQUEST and not forwarded; every entry of a
//     resource named twice is answered ("Each resource must appear at most
//     once.", as ConfigAdminManager.preprocess).
//   - A BROKER resource naming another broker, or setting a
//     log.cleaner.threads this broker cannot move to, is INVALID_REQUEST
//     and not forwarded (dynamic_configs.go), as in Kafka.
//   - A failed call answers each forwarded resource with its code.
//
// Version notes: v1 is v0; v2 is flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           33,
		advertisedMin: 0, min: 0, max: 2,
		concurrent: false, // a DescribeConfigs after it must see the change
		handle:     handleAlterConfigs,
	})
}

func handleAlterConfigs(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	srv := rc.conn.srv

	count := map[configResource]int{}
	for _, r := range req.Resources {
		count[configResource{r.ResourceType, r.ResourceName}]++
	}
	results := map[configResource]kmsg.AlterConfigsResponseResource{}
	fwd := kmsg.NewPtrAlterConfigsRequest()
	fwd.ValidateOnly = req.ValidateOnly
	for _, r := range req.Resources {
		key := configResource{r.ResourceType, r.ResourceName}
		var names []string
		for _, c := range r.Configs {
			names = append(names, c.Name)
		}
		code, msg := preprocessAlter(key, names, count[key], false, rc.authorize)
		if code == 0 && key.typ == kmsg.ConfigResourceTypeBroker {
			code, msg = srv.checkBrokerAlter(key.name, func(map[string]string) map[string]string {
				next := map[string]string{}
				for _, c := range r.Configs {
					if c.Value != nil {
						next[c.Name] = *c.Value
					}
				}
				return next
			})
		}
		if code != 0 {
			results[key] = alterConfigsResult(key, code, kmsg.StringPtr(msg))
			continue
		}
		fwd.Resources = append(fwd.Resources, r)
	}

	if len(fwd.Resources) > 0 {
		forwardAlterConfigs(ctx, srv, fwd, results)
	}
	for _, r := range req.Resources {
		key := configResource{r.ResourceType, r.ResourceName}
		rr, ok := results[key]
		if !ok {
			rr = alterConfigsResult(key, kerr.UnknownServerError.Code, kmsg.StringPtr("the controller did not answer for this resource"))
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

func forwardAlterConfigs(ctx context.Context, srv *Server, fwd *kmsg.AlterConfigsRequest, results map[configResource]kmsg.AlterConfigsResponseResource) {
	fail := func(code int16, msg *string) {
		for _, r := range fwd.Resources {
			key := configResource{r.ResourceType, r.ResourceName}
			results[key] = alterConfigsResult(key, code, msg)
		}
	}
	if srv.deps.Admin == nil {
		fail(adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker"))
		return
	}
	cctx, cancel := forwardContext(ctx, 0)
	defer cancel()
	cresp, err := srv.deps.Admin.AlterConfigs(cctx, fwd)
	if err != nil {
		fail(forwardFailure(err))
		return
	}
	for _, rr := range cresp.Resources {
		clearTags(&rr.UnknownTags)
		results[configResource{rr.ResourceType, rr.ResourceName}] = rr
	}
}

func alterConfigsResult(r configResource, code int16, msg *string) kmsg.AlterConfigsResponseResource {
	out := kmsg.NewAlterConfigsResponseResource()
	out.ResourceType, out.ResourceName, out.ErrorCode, out.ErrorMessage = r.typ, r.name, code, msg
	return out
}
