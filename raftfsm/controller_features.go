package raftfsm

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Feature levels (KIP-584, KIP-778): the active controller finalizes
// metadata.version through UpdateFeatures only within what every registered
// broker supports, and writes no record the finalized level does not allow
// (metadata.CheckRecords, in process). A broker's supported ranges are not
// in the image, since the records that would carry them cannot be written
// at the level a rolling upgrade starts from: each broker sends them in its
// registration (BrokerRegistration's Features) and in every heartbeat
// (SupportedFeaturesTag), and the controller keeps the last it heard. A
// broker that sends none is a release from before gating
// (metadata.LegacyFeatures). A controller that took over knows a broker's
// ranges from its next heartbeat; until then an upgrade is refused.

// SupportedFeaturesTag carries a broker's supported feature ranges in its
// BrokerHeartbeat request: per feature a uvarint name length, the name,
// then min and max as big-endian int16s.
const SupportedFeaturesTag uint32 = 10060

func encodeFeatureRanges(m map[string]metadata.FeatureRange) []byte {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	var b []byte
	for _, n := range names {
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
		b = binary.BigEndian.AppendUint16(b, uint16(m[n].Min))
		b = binary.BigEndian.AppendUint16(b, uint16(m[n].Max))
	}
	return b
}

var errBadFeatureTag = errors.New("raftfsm: malformed supported-features tag")

func decodeFeatureRanges(b []byte) (map[string]metadata.FeatureRange, error) {
	m := map[string]metadata.FeatureRange{}
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) || uint64(len(b)-k)-n < 4 {
			return nil, errBadFeatureTag
		}
		b = b[k:]
		name := string(b[:n])
		b = b[n:]
		m[name] = metadata.FeatureRange{Min: int16(binary.BigEndian.Uint16(b)), Max: int16(binary.BigEndian.Uint16(b[2:]))}
		b = b[4:]
	}
	return m, nil
}

// registrationFeatures is what a BrokerRegistration says its broker runs.
func registrationFeatures(req *kmsg.BrokerRegistrationRequest) map[string]metadata.FeatureRange {
	if len(req.Features) == 0 {
		return metadata.LegacyFeatures
	}
	m := make(map[string]metadata.FeatureRange, len(req.Features))
	for _, f := range req.Features {
		m[f.Name] = metadata.FeatureRange{Min: f.MinSupportedVersion, Max: f.MaxSupportedVersion}
	}
	return m
}

// heartbeatFeatures is what a heartbeat says its broker runs.
func heartbeatFeatures(req *kmsg.BrokerHeartbeatRequest) map[string]metadata.FeatureRange {
	feats := metadata.LegacyFeatures
	req.UnknownTags.Each(func(k uint32, v []byte) {
		if k == SupportedFeaturesTag {
			if m, err := decodeFeatureRanges(v); err == nil {
				feats = m
			}
		}
	})
	return feats
}

// withSupportedFeatures fills what this binary runs into a broker's
// registration or heartbeat, so the controller (which may be another
// binary) can check it.
func withSupportedFeatures(req kmsg.Request) {
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		if len(r.Features) > 0 {
			return
		}
		names := make([]string, 0, len(metadata.SupportedFeatures))
		for n := range metadata.SupportedFeatures {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			f := kmsg.NewBrokerRegistrationRequestFeature()
			f.Name, f.MinSupportedVersion, f.MaxSupportedVersion = n, metadata.SupportedFeatures[n].Min, metadata.SupportedFeatures[n].Max
			r.Features = append(r.Features, f)
		}
	case *kmsg.BrokerHeartbeatRequest:
		found := false
		r.UnknownTags.Each(func(k uint32, _ []byte) { found = found || k == SupportedFeaturesTag })
		if !found {
			r.UnknownTags.Set(SupportedFeaturesTag, encodeFeatureRanges(metadata.SupportedFeatures))
		}
	}
}

// bootstrapFeatures finalizes a new cluster's features at this binary's
// newest levels. A cluster that already has a metadata.version keeps it
// (and what it has of the others): only UpdateFeatures moves them, so a
// node rolled to a newer binary does not raise the level under brokers
// that cannot read what it allows.
func (c *controller) bootstrapFeatures() error {
	img, _ := c.n.pub.Latest()
	if img.FeatureLevel() != 0 {
		return nil
	}
	if err := c.commit(metadata.BootstrapFeatures()); err != nil {
		return err
	}
	c.n.log.Info().Int16("metadata_version", metadata.MetadataVersionLevel).Msg("finalized the features of a new cluster")
	return nil
}

func decideUpdateFeatures(req *kmsg.UpdateFeaturesRequest) decideFunc {
	return func(c *controller, img *metadata.Image, _ time.Time) decision {
		resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
		updates := make([]metadata.FeatureUpdate, 0, len(req.FeatureUpdates))
		for _, u := range req.FeatureUpdates {
			t := metadata.UpgradeType(u.UpgradeType)
			if req.Version == 0 {
				t = metadata.UpgradeTypeUpgrade
				if u.AllowDowngrade {
					t = metadata.UpgradeTypeSafeDowngrade
				}
			}
			updates = append(updates, metadata.FeatureUpdate{Name: u.Feature, Level: u.MaxVersionLevel, Type: t})
		}
		recs, err := metadata.PlanFeatureUpdates(img, updates, metadata.SupportedFeatures, c.features)
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = errCode(err), errMsg(err)
		}
		if req.Version < 2 {
			// v0-v1 answer per feature; all or nothing, so each carries the
			// request's outcome, as Kafka's createWithErrors.
			for _, u := range req.FeatureUpdates {
				r := kmsg.NewUpdateFeaturesResponseResult()
				r.Feature, r.ErrorCode, r.ErrorMessage = u.Feature, resp.ErrorCode, resp.ErrorMessage
				resp.Results = append(resp.Results, r)
			}
		}
		if err != nil || req.ValidateOnly {
			return decision{resp: resp}
		}
		if next, d := img.Apply(recs); len(d.Skipped) == 0 && !next.ELREnabled() && img.ELREnabled() {
			// Nobody tracks eligibility any more (Kafka clears the ELR
			// when the feature is turned off).
			recs = append(recs, clearELRs(next, func(metadata.TopicImage) bool { return true })...)
		}
		return decision{recs: recs, resp: resp}
	}
}
