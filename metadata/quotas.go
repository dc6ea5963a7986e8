package metadata

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Client quotas as Kafka's KRaft keeps them (ClientQuotaRecord): an entity
// of one to two parts (user, client-id, or both; or ip alone), each naming
// a value or the default, and one key's value set or removed.

// Kafka's quota entity types.
const (
	QuotaEntityUser     = "user"
	QuotaEntityClientID = "client-id"
	QuotaEntityIP       = "ip"
)

// Kafka's quota keys.
const (
	QuotaProducerByteRate       = "producer_byte_rate"
	QuotaConsumerByteRate       = "consumer_byte_rate"
	QuotaRequestPercentage      = "request_percentage"
	QuotaControllerMutationRate = "controller_mutation_rate"
	QuotaConnectionCreationRate = "connection_creation_rate"
)

// quotaKeyIsWhole marks keys Kafka types LONG or INT (a value must be a
// whole number); the others are DOUBLE.
var quotaKeyIsWhole = map[string]bool{
	QuotaProducerByteRate: true, QuotaConsumerByteRate: true, QuotaConnectionCreationRate: true,
	QuotaRequestPercentage: false, QuotaControllerMutationRate: false,
}

// QuotaEntityPart is one part of an entity: a name, or the default.
type QuotaEntityPart struct {
	Type    string
	Name    string // "" with Default
	Default bool
}

// QuotaEntity is an entity's parts, sorted by type.
type QuotaEntity []QuotaEntityPart

// key is the entity's canonical form, the image's map key.
func (e QuotaEntity) key() string {
	var b strings.Builder
	for _, p := range e {
		b.WriteString(p.Type)
		if p.Default {
			b.WriteString("\x00\x01")
		} else {
			b.WriteString("\x00\x02")
			b.WriteString(p.Name)
		}
		b.WriteByte(0)
	}
	return b.String()
}

func (e QuotaEntity) String() string {
	parts := make([]string, len(e))
	for i, p := range e {
		if p.Default {
			parts[i] = p.Type + "=<default>"
		} else {
			parts[i] = p.Type + "=" + p.Name
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Part returns the entity's part of a type.
func (e QuotaEntity) Part(typ string) (QuotaEntityPart, bool) {
	for _, p := range e {
		if p.Type == typ {
			return p, true
		}
	}
	return QuotaEntityPart{}, false
}

// NormalizeQuotaEntity sorts the parts and checks Kafka's rules: known
// types, each at most once, and user, client-id, user with client-id, or
// ip alone. Errors wrap ErrInvalidRequest.
func NormalizeQuotaEntity(parts []QuotaEntityPart) (QuotaEntity, error) {
	e := QuotaEntity(slices.Clone(parts))
	slices.SortFunc(e, func(a, b QuotaEntityPart) int { return strings.Compare(a.Type, b.Type) })
	if len(e) == 0 {
		return nil, fmt.Errorf("%w: an entity needs at least one part", ErrInvalidRequest)
	}
	for i, p := range e {
		switch p.Type {
		case QuotaEntityUser, QuotaEntityClientID, QuotaEntityIP:
		default:
			return nil, fmt.Errorf("%w: unknown entity type %q", ErrInvalidRequest, p.Type)
		}
		if i > 0 && e[i-1].Type == p.Type {
			return nil, fmt.Errorf("%w: entity type %q given twice", ErrInvalidRequest, p.Type)
		}
		if p.Default && p.Name != "" {
			return nil, fmt.Errorf("%w: a default entity part has no name", ErrInvalidRequest)
		}
	}
	if _, ip := e.Part(QuotaEntityIP); ip && len(e) > 1 {
		return nil, fmt.Errorf("%w: an ip quota entity cannot be combined with user or client-id", ErrInvalidRequest)
	}
	return e, nil
}

// ValidateClientQuota checks a key and value for an entity, as Kafka's
// ClientQuotaControlManager: ip entities take connection_creation_rate
// only, the others the byte rates, request_percentage and
// controller_mutation_rate; a value is a positive finite number, whole for
// the LONG and INT keys.
func ValidateClientQuota(e QuotaEntity, key string, value float64) error {
	whole, known := quotaKeyIsWhole[key]
	_, ip := e.Part(QuotaEntityIP)
	switch {
	case !known:
		return fmt.Errorf("%w: unknown quota key %q", ErrInvalidRequest, key)
	case ip != (key == QuotaConnectionCreationRate):
		return fmt.Errorf("%w: quota key %q does not apply to entity %v", ErrInvalidRequest, key, e)
	case math.IsNaN(value) || math.IsInf(value, 0) || value <= 0:
		return fmt.Errorf("%w: quota %s=%v must be a positive number", ErrInvalidRequest, key, value)
	case whole && value != math.Trunc(value):
		return fmt.Errorf("%w: quota %s=%v must be a whole number", ErrInvalidRequest, key, value)
	}
	return nil
}

// ClientQuota sets (or with Remove, removes) one key of an entity (Kafka's
// ClientQuotaRecord).
type ClientQuota struct {
	Entity QuotaEntity
	Key    string
	Value  float64
	Remove bool
}

func (*ClientQuota) Type() RecordType { return TypeClientQuota }
func (*ClientQuota) Version() int16   { return 0 }

// QuotaEntry is one entity's quota values.
type QuotaEntry struct {
	Entity QuotaEntity
	Values map[string]float64
}

type quotaImage struct {
	entity QuotaEntity
	values map[string]float64
}

// ClientQuotas returns every entity with a quota, sorted by its canonical
// form. The maps are fresh.
func (img *Image) ClientQuotas() []QuotaEntry {
	keys := make([]string, 0, len(img.quotas))
	for k := range img.quotas {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]QuotaEntry, 0, len(keys))
	for _, k := range keys {
		q := img.quotas[k]
		vals := make(map[string]float64, len(q.values))
		for kk, v := range q.values {
			vals[kk] = v
		}
		out = append(out, QuotaEntry{Entity: slices.Clone(q.entity), Values: vals})
	}
	return out
}

// ResolvedQuota is the quota that applies to a client and the entity it
// was found on (clients that resolve to the same entity share it).
type ResolvedQuota struct {
	Value  float64
	Entity string // canonical entity; clients with equal Entity share one budget
}

// ResolveQuota finds the quota key that applies to a user and client id,
// in Kafka's order of precedence (the default ClientQuotaCallback):
// user and client id, user and default client, user, default user and
// client id, default user and default client, default user, client id,
// default client. The quota is shared by every client that resolves to
// the same entity, so the Entity returned names the budget: a user-level
// quota is the user's, whatever client ids it uses.
func (img *Image) ResolveQuota(user, clientID, key string) (ResolvedQuota, bool) {
	if len(img.quotas) == 0 {
		return ResolvedQuota{}, false
	}
	u := QuotaEntityPart{Type: QuotaEntityUser, Name: user}
	ud := QuotaEntityPart{Type: QuotaEntityUser, Default: true}
	c := QuotaEntityPart{Type: QuotaEntityClientID, Name: clientID}
	cd := QuotaEntityPart{Type: QuotaEntityClientID, Default: true}
	for _, e := range []QuotaEntity{{c, u}, {cd, u}, {u}, {c, ud}, {cd, ud}, {ud}, {c}, {cd}} {
		k := e.key()
		if q, ok := img.quotas[k]; ok {
			if v, ok := q.values[key]; ok {
				return ResolvedQuota{Value: v, Entity: k}, true
			}
		}
	}
	return ResolvedQuota{}, false
}

// ResolveIPQuota finds the connection_creation_rate of a client IP: its
// own ip entity, else the default ip entity (Kafka's order).
func (img *Image) ResolveIPQuota(ip string) (ResolvedQuota, bool) {
	if len(img.quotas) == 0 {
		return ResolvedQuota{}, false
	}
	for _, e := range []QuotaEntity{{{Type: QuotaEntityIP, Name: ip}}, {{Type: QuotaEntityIP, Default: true}}} {
		k := e.key()
		if q, ok := img.quotas[k]; ok {
			if v, ok := q.values[QuotaConnectionCreationRate]; ok {
				return ResolvedQuota{Value: v, Entity: k}, true
			}
		}
	}
	return ResolvedQuota{}, false
}

// quotaApplier replays client quotas, copying the map on a batch's first
// change.
type quotaApplier struct {
	img     *Image
	owned   map[string]bool
	copied  bool
	changed bool
}

func (a *quotaApplier) apply(r *ClientQuota) error {
	e, err := NormalizeQuotaEntity(r.Entity)
	if err != nil {
		return invalid("client quota: %v", err)
	}
	k := e.key()
	if r.Remove {
		old := a.img.quotas[k]
		if old == nil {
			return invalid("client quota %v has no %s to remove", e, r.Key)
		}
		if _, ok := old.values[r.Key]; !ok {
			return invalid("client quota %v has no %s to remove", e, r.Key)
		}
	} else if err := ValidateClientQuota(e, r.Key, r.Value); err != nil {
		return invalid("client quota: %v", err)
	}
	if !a.copied {
		m := make(map[string]*quotaImage, len(a.img.quotas)+1)
		for kk, v := range a.img.quotas {
			m[kk] = v
		}
		a.img.quotas = m
		a.copied = true
		a.owned = map[string]bool{}
	}
	q := a.img.quotas[k]
	if !a.owned[k] {
		nq := &quotaImage{entity: e, values: map[string]float64{}}
		if q != nil {
			for kk, v := range q.values {
				nq.values[kk] = v
			}
		}
		q = nq
		a.img.quotas[k] = q
		a.owned[k] = true
	}
	if r.Remove {
		delete(q.values, r.Key)
		if len(q.values) == 0 {
			delete(a.img.quotas, k)
			delete(a.owned, k)
		}
	} else {
		q.values[r.Key] = r.Value
	}
	a.changed = true
	return nil
}

func quotaImagesEqual(a, b *quotaImage) bool {
	if len(a.values) != len(b.values) {
		return false
	}
	for k, v := range a.values {
		if w, ok := b.values[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// quotaRecords is the image's quotas as records (snapshots).
func (img *Image) quotaRecords() []Record {
	var recs []Record
	for _, q := range img.ClientQuotas() {
		keys := make([]string, 0, len(q.Values))
		for k := range q.Values {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, cmp.Compare[string])
		for _, k := range keys {
			recs = append(recs, &ClientQuota{Entity: slices.Clone(q.Entity), Key: k, Value: q.Values[k]})
		}
	}
	return recs
}
