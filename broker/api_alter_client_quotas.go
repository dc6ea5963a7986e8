package broker

// AlterClientQuotas (key 49) v0-v1, as Kafka 4.1 serves them. Forwarded to
// the active controller (raftfsm's controller_quotas.go decides, Kafka's
// ClientQuotaControlManager rules, INVALID_REQUEST per entry), answered
// once this broker's image has the change. ALTER_CONFIGS on the CLUSTER is
// needed (CLUSTER_AUTHORIZATION_FAILED on every entry).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// QuotaAdmin forwards AlterClientQuotas to the active controller.
// *raftfsm.ControllerClient satisfies it.
type QuotaAdmin interface {
	AlterClientQuotas(ctx context.Context, req *kmsg.AlterClientQuotasRequest) (*kmsg.AlterClientQuotasResponse, error)
}

func init() {
	register(apiEntry{
		key:           49,
		advertisedMin: 0, min: 0, max: 1,
		concurrent: false,
		handle:     handleAlterClientQuotas,
	})
}

func handleAlterClientQuotas(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterClientQuotasRequest)
	srv := rc.conn.srv
	failAll := func(code int16, msg *string) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		for _, en := range req.Entries {
			r := kmsg.NewAlterClientQuotasResponseEntry()
			r.ErrorCode, r.ErrorMessage = code, msg
			for _, e := range en.Entity {
				re := kmsg.NewAlterClientQuotasResponseEntryEntity()
				re.Type, re.Name = e.Type, e.Name
				r.Entity = append(r.Entity, re)
			}
			resp.Entries = append(resp.Entries, r)
		}
		return resp
	}
	switch {
	case !rc.authorizeCluster(opAlterConfigs):
		return failAll(kerr.ClusterAuthorizationFailed.Code, nil), nil
	case srv.deps.Quotas == nil:
		return failAll(adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker")), nil
	case len(req.Entries) == 0:
		return req.ResponseKind(), nil
	}
	cctx, cancel := forwardContext(ctx, 0)
	defer cancel()
	cresp, err := srv.deps.Quotas.AlterClientQuotas(cctx, req)
	if err != nil {
		return failAll(forwardFailure(err)), nil
	}
	clearTags(&cresp.UnknownTags)
	return cresp, nil
}
