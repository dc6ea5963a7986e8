package broker

// DescribeClientQuotas (key 48) v0-v1, as Kafka 4.1 serves them. Answered
// from this broker's image with ClientQuotasImage.describe's filter rules:
// each component names an entity type at most once, EXACT (a name),
// DEFAULT (the default) or SPECIFIED (any) (INVALID_REQUEST otherwise, an
// unknown type UNSUPPORTED_VERSION), ip not with user or client-id; strict
// asks for entities with exactly the filtered types. DESCRIBE_CONFIGS on
// the CLUSTER is needed (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"slices"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           48,
		advertisedMin: 0, min: 0, max: 1,
		concurrent: true,
		handle:     handleDescribeClientQuotas,
	})
}

func handleDescribeClientQuotas(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !rc.authorizeCluster(opDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	exact := map[string]*string{} // nil: the default
	specified := map[string]bool{}
	fail := func(code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		return resp, nil
	}
	for _, c := range req.Components {
		_, dupExact := exact[c.EntityType]
		switch {
		case c.EntityType == "":
			return fail(kerr.InvalidRequest.Code, "Invalid empty entity type.")
		case dupExact || specified[c.EntityType]:
			return fail(kerr.InvalidRequest.Code, fmt.Sprintf("Entity type %s cannot appear more than once in the filter.", c.EntityType))
		case !slices.Contains([]string{metadata.QuotaEntityUser, metadata.QuotaEntityClientID, metadata.QuotaEntityIP}, c.EntityType):
			return fail(kerr.UnsupportedVersion.Code, "Unsupported entity type "+c.EntityType)
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return fail(kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			exact[c.EntityType] = c.Match
		case kmsg.QuotasMatchTypeDefault:
			if c.Match != nil {
				return fail(kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			exact[c.EntityType] = nil
		case kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return fail(kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			specified[c.EntityType] = true
		default:
			return fail(kerr.UnsupportedVersion.Code, fmt.Sprintf("Unknown match type %d", c.MatchType))
		}
	}
	has := func(t string) bool { _, e := exact[t]; return e || specified[t] }
	if has(metadata.QuotaEntityIP) && (has(metadata.QuotaEntityUser) || has(metadata.QuotaEntityClientID)) {
		return fail(kerr.InvalidRequest.Code, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, q := range rc.authImage().ClientQuotas() {
		if !quotaFilterMatches(q.Entity, exact, specified, req.Strict) {
			continue
		}
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range q.Entity {
			pe := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			pe.Type = p.Type
			if !p.Default {
				pe.Name = kmsg.StringPtr(p.Name)
			}
			e.Entity = append(e.Entity, pe)
		}
		keys := make([]string, 0, len(q.Values))
		for k := range q.Values {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, q.Values[k]
			e.Values = append(e.Values, v)
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

func quotaFilterMatches(e metadata.QuotaEntity, exact map[string]*string, specified map[string]bool, strict bool) bool {
	if strict && len(e) != len(exact)+len(specified) {
		return false
	}
	for t, name := range exact {
		p, ok := e.Part(t)
		if !ok || p.Default != (name == nil) || (name != nil && p.Name != *name) {
			return false
		}
	}
	for t := range specified {
		if _, ok := e.Part(t); !ok {
			return false
		}
	}
	return true
}
