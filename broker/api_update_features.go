package broker

// UpdateFeatures (key 57, v0-v2, as Kafka 4.1) on the client listener,
// forwarded to the active controller as Kafka's broker forwards it
// (Admin.updateFeatures, kafka-features.sh upgrade | downgrade, `raftka
// features`). DescribeFeatures is ApiVersions' SupportedFeatures and
// FinalizedFeatures.
//
// Behaviour (Kafka's FeatureControlManager, decided by metadata's
// PlanFeatureUpdates): all or nothing; INVALID_UPDATE_VERSION with a
// message for a feature the controller does not run, a level outside what
// the controller or any registered broker supports (a broker whose ranges
// the controller has not heard yet counts as not supporting it), a
// downgrade without a downgrade upgrade type, any metadata.version
// downgrade (Kafka 4.1 refuses safe and unsafe ones), or a feature whose
// dependency would be unmet (transaction.version 1+ needs metadata.version
// 28). v0's AllowDowngrade is a safe downgrade; v1+ has UpgradeType and
// ValidateOnly; v0-v1 answer per feature, v2 at the top level only.
// ALTER on the cluster, as ControllerApis checks.
//
// A controller running a binary from before gating does not serve the
// API; its answer can carry no error, so the levels are checked in this
// broker's image (which the forward waited for) and a level that did not
// move is UNSUPPORTED_VERSION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FeatureUpdater forwards UpdateFeatures to the active controller;
// Deps.Admin serves it when it implements this interface
// (*raftfsm.ControllerClient does).
type FeatureUpdater interface {
	UpdateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) (*kmsg.UpdateFeaturesResponse, error)
}

func init() {
	register(apiEntry{
		key:           57,
		advertisedMin: 0, min: 0, max: 2,
		concurrent: false, // an ApiVersions after it must see the levels
		handle:     handleUpdateFeatures,
	})
}

func handleUpdateFeatures(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	fail := func(code int16, msg *string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		resp.Results = nil
		if req.Version < 2 {
			for _, u := range req.FeatureUpdates {
				r := kmsg.NewUpdateFeaturesResponseResult()
				r.Feature, r.ErrorCode, r.ErrorMessage = u.Feature, code, msg
				resp.Results = append(resp.Results, r)
			}
		}
		return resp, nil
	}
	if !rc.authorizeCluster(opAlter) {
		return fail(kerr.ClusterAuthorizationFailed.Code, nil)
	}
	fu, ok := rc.conn.srv.deps.Admin.(FeatureUpdater)
	if !ok {
		return fail(adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker"))
	}
	fwd := kmsg.NewPtrUpdateFeaturesRequest()
	fwd.Version = 2
	fwd.TimeoutMillis, fwd.ValidateOnly = req.TimeoutMillis, req.ValidateOnly
	for _, u := range req.FeatureUpdates {
		if req.Version == 0 {
			u.UpgradeType = 1
			if u.AllowDowngrade {
				u.UpgradeType = 2
			}
		}
		u.AllowDowngrade = false
		fwd.FeatureUpdates = append(fwd.FeatureUpdates, u)
	}
	cctx, cancel := forwardContext(ctx, req.TimeoutMillis)
	defer cancel()
	cresp, err := fu.UpdateFeatures(cctx, fwd)
	if err != nil {
		return fail(forwardFailure(err))
	}
	if cresp.ErrorCode != 0 {
		return fail(cresp.ErrorCode, cresp.ErrorMessage)
	}
	if md := rc.conn.srv.deps.Metadata; md != nil && !req.ValidateOnly {
		img, _ := md.Current()
		for _, u := range req.FeatureUpdates {
			if l, _ := img.Feature(u.Feature); l != u.MaxVersionLevel && !(u.MaxVersionLevel < 0 && l == 0) {
				return fail(kerr.UnsupportedVersion.Code, kmsg.StringPtr("the active controller did not apply the update: it runs a binary that does not serve UpdateFeatures; roll it to this release first"))
			}
		}
	}
	return fail(0, nil)
}
