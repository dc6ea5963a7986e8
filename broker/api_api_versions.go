package broker

// ApiVersions (key 18): v0-v4, as Kafka 4.2.
//
// Behaviour:
//   - ApiKeys lists every API in the server's table with its advertised
//     range, so nothing is advertised without a handler. Produce-style
//     entries advertise their advertisedMin, not the accepted minimum.
//   - A version we do not serve (above v4, or negative) is answered per
//     KIP-511 by the connection code, not here: a v0 body with
//     UNSUPPORTED_VERSION and only our ApiVersions range, so the client
//     retries at a version we speak. kgo, which first asks at kmsg's max (v5),
//     relies on this.
//   - The response header is always v0 (no tagged fields), even at v3+
//     (conn.writeResponse).
//
// Version notes:
//   - v1: ThrottleMillis (always 0: no quotas yet).
//   - v3: flexible; ClientSoftwareName and ClientSoftwareVersion, which must
//     match [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? or the answer is
//     INVALID_REQUEST with no keys (librdkafka then retries at v0);
//     SupportedFeatures and FinalizedFeatures (KIP-584).
//   - v5 (KIP-1242, cluster and node id checks) is not served: Kafka 4.2 stops
//     at v4.
//
// Features (KIP-584): SupportedFeatures lists the levels this binary can
// run (metadata.SupportedFeatures): metadata.version 27 (Kafka 4.1's
// 4.1-IV1, the level of raftka's releases before gating, whose protocol
// maxima are the ones advertised) to 28, share.version 0-1 and
// transaction.version 0-2.
// FinalizedFeatures come from the metadata image, where the active
// controller of a new cluster finalizes the newest levels (transaction.
// version 2 is KIP-890, served: broker/txn EndV2, the leaders' implicit
// AddPartitionsToTxn) and UpdateFeatures moves them; levels above 0 only,
// min = max = level, and FinalizedFeaturesEpoch the image's Raft index, as
// Kafka reports them.
// group.version is 0 and so absent, as Kafka lists it until it is
// finalized: kgo and the Java client read these levels to choose
// protocols. share.version 1 is finalized on a new cluster, as Kafka 4.2
// does; below it the share group APIs (76-79, 90-92) stay listed and
// answer UNSUPPORTED_VERSION, as Kafka's.

import (
	"context"
	"slices"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const apiVersionsKey = 18

func init() {
	register(apiEntry{
		key:           apiVersionsKey,
		advertisedMin: 0, min: 0, max: 4,
		concurrent: true,
		handle:     handleAPIVersions,
	})
}

// supportedFeatures are the features this binary runs (metadata's
// table), sorted by name; a feature at level 0 only is not listed, as
// Kafka's BrokerFeatures leaves such features out.
var supportedFeatures = func() []kmsg.ApiVersionsResponseSupportedFeature {
	names := make([]string, 0, len(metadata.SupportedFeatures))
	for n, r := range metadata.SupportedFeatures {
		if r.Max > 0 {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := make([]kmsg.ApiVersionsResponseSupportedFeature, 0, len(names))
	for _, n := range names {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = n, metadata.SupportedFeatures[n].Min, metadata.SupportedFeatures[n].Max
		out = append(out, sf)
	}
	return out
}()

func handleAPIVersions(_ context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)

	if req.Version >= 3 {
		if !validSoftwareField(req.ClientSoftwareName) || !validSoftwareField(req.ClientSoftwareVersion) {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
		rc.conn.software.Store(&clientSoftware{name: req.ClientSoftwareName, version: req.ClientSoftwareVersion})
	}

	resp.ApiKeys = rc.conn.srv.table.apiKeys()
	if req.Version < 3 {
		return resp, nil
	}
	resp.SupportedFeatures = append(resp.SupportedFeatures, supportedFeatures...)
	if md := rc.conn.srv.deps.Metadata; md != nil {
		img, index := md.Current()
		// Kafka reports the metadata offset the features were read at.
		resp.FinalizedFeaturesEpoch = int64(index)
		levels := img.Features()
		names := make([]string, 0, len(levels))
		for name, level := range levels {
			if level > 0 {
				names = append(names, name)
			}
		}
		slices.Sort(names) // a stable answer, not map order
		for _, name := range names {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, levels[name], levels[name]
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
	return resp, nil
}

// unsupportedAPIVersionsResponse is the KIP-511 answer to an ApiVersions
// version we do not serve: v0, UNSUPPORTED_VERSION, and our ApiVersions
// range only.
func unsupportedAPIVersionsResponse(t *apiTable) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	if e := t.lookup(apiVersionsKey); e != nil {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = e.key, e.advertisedMin, e.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// validSoftwareField matches Kafka's pattern for the KIP-511 client software
// name and version: alphanumeric at both ends, '-' and '.' also inside.
func validSoftwareField(s string) bool {
	alnum := func(c byte) bool {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	if s == "" || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}
