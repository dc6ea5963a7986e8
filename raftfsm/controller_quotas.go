package raftfsm

import (
	"fmt"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterClientQuotas, decided as Kafka's ClientQuotaControlManager: each
// entry stands alone; an entity that breaks the rules, a key named twice,
// an unknown key or a bad value fails the entry with INVALID_REQUEST and
// writes nothing of it; removing a key that is not set succeeds without a
// record; validate_only answers the same and writes nothing. Every Kafka
// key is enforced: the byte rates, request_percentage and
// connection_creation_rate by the brokers (broker/quota.go),
// controller_mutation_rate by the controller's callers.

// QuotaEntityOf reads a wire entity (a nil name is the default).
func QuotaEntityOf(types []string, names []*string) (metadata.QuotaEntity, error) {
	parts := make([]metadata.QuotaEntityPart, len(types))
	for i, t := range types {
		parts[i] = metadata.QuotaEntityPart{Type: t}
		if names[i] == nil {
			parts[i].Default = true
		} else {
			parts[i].Name = *names[i]
		}
	}
	return metadata.NormalizeQuotaEntity(parts)
}

func decideAlterClientQuotas(req *kmsg.AlterClientQuotasRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		current := map[string]map[string]float64{}
		for _, q := range img.ClientQuotas() {
			current[q.Entity.String()] = q.Values
		}
		var recs []metadata.Record
		for _, en := range req.Entries {
			r := kmsg.NewAlterClientQuotasResponseEntry()
			types, names := make([]string, len(en.Entity)), make([]*string, len(en.Entity))
			for i, e := range en.Entity {
				re := kmsg.NewAlterClientQuotasResponseEntryEntity()
				re.Type, re.Name = e.Type, e.Name
				r.Entity = append(r.Entity, re)
				types[i], names[i] = e.Type, e.Name
			}
			entryRecs, err := func() ([]metadata.Record, error) {
				entity, err := QuotaEntityOf(types, names)
				if err != nil {
					return nil, err
				}
				seen := map[string]bool{}
				var out []metadata.Record
				for _, op := range en.Ops {
					if seen[op.Key] {
						return nil, fmt.Errorf("%w: duplicate quota key %s", metadata.ErrInvalidRequest, op.Key)
					}
					seen[op.Key] = true
					if op.Remove {
						if _, set := current[entity.String()][op.Key]; set {
							out = append(out, &metadata.ClientQuota{Entity: entity, Key: op.Key, Remove: true})
						}
						continue
					}
					if err := metadata.ValidateClientQuota(entity, op.Key, op.Value); err != nil {
						return nil, err
					}
					out = append(out, &metadata.ClientQuota{Entity: entity, Key: op.Key, Value: op.Value})
				}
				return out, nil
			}()
			if err != nil {
				r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, errMsg(err)
			} else if !req.ValidateOnly {
				recs = append(recs, entryRecs...)
			}
			resp.Entries = append(resp.Entries, r)
		}
		return decision{recs: recs, resp: resp}
	}
}
