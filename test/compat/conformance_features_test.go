package compat

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// featureRows are UpdateFeatures (57) rows. The one-node cluster runs at
// the newest metadata.version, so the upgrade itself is tested where an
// older binary is rolled (test/e2e's upgrade test, raftfsm's gating test).
func featureRows() []row {
	return []row{
		{57, lowest, "unknown feature", "FeatureControlManager.updateFeature: a feature the controller does not support is INVALID_UPDATE_VERSION; v0-v1 answer each feature with the request's error (UpdateFeaturesResponse.createWithErrors) and the top level carries it too",
			func(v int16, e *env) kmsg.Request { return updateFeatures(v, "no.such.feature", 1, 1) },
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.UpdateFeaturesResponse)
				if err := want("top level", resp.ErrorCode, kerr.InvalidUpdateVersion.Code); err != nil {
					return err
				}
				if len(resp.Results) != 1 || resp.Results[0].Feature != "no.such.feature" {
					return fmt.Errorf("results %+v, want one for no.such.feature", resp.Results)
				}
				return want("result", resp.Results[0].ErrorCode, kerr.InvalidUpdateVersion.Code)
			}},
		{57, highest, "metadata.version downgrade", "FeatureControlManager.updateMetadataVersion: a safe downgrade is refused (it might delete metadata information), INVALID_UPDATE_VERSION; v2 answers at the top level only",
			func(v int16, e *env) kmsg.Request { return updateFeatures(v, "metadata.version", 27, 2) },
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.UpdateFeaturesResponse)
				if len(resp.Results) != 0 {
					return fmt.Errorf("v2 results %+v, want none", resp.Results)
				}
				if resp.ErrorMessage == nil {
					return fmt.Errorf("no error message")
				}
				return want("top level", resp.ErrorCode, kerr.InvalidUpdateVersion.Code)
			}},
		{57, highest, "validate only at the current level", "FeatureControlManager.updateFeatures: the finalized level again is no change, NONE; ValidateOnly writes nothing",
			func(v int16, e *env) kmsg.Request {
				r := updateFeatures(v, "metadata.version", 28, 1)
				r.ValidateOnly = true
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.UpdateFeaturesResponse).ErrorCode, 0)
			}},
	}
}

func updateFeatures(v int16, feature string, level int16, typ int8) *kmsg.UpdateFeaturesRequest {
	r := kmsg.NewPtrUpdateFeaturesRequest()
	r.Version, r.TimeoutMillis = v, 30000
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = feature, level, typ
	r.FeatureUpdates = append(r.FeatureUpdates, u)
	return r
}
