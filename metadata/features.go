package metadata

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// metadata.version gating, as KRaft's MetadataVersion and
// FeatureControlManager: every record type and version is tied to the
// metadata.version level that introduced it, the active controller writes a
// record only when the finalized level allows it, and the level moves up
// only when every registered broker can read what the new level allows. A
// rolling upgrade therefore runs the new binary at the old level (writing
// only what the old binary reads) until the operator finalizes the new one
// (`raftka features upgrade`, kafka-features.sh's upgrade).

// MetadataVersionMin is the lowest metadata.version this binary runs at:
// Kafka 4.1-IV1's number, the level every raftka release before gating
// finalized. Those releases read record types 1-19 at version 0 (and
// GroupGeneration v1) and nothing else.
const MetadataVersionMin int16 = 27

// MetadataVersionLevel is the newest metadata.version this binary serves,
// the level a new cluster is bootstrapped at.
const MetadataVersionLevel int16 = 28

// MetadataVersionInfo names one metadata.version level.
type MetadataVersionInfo struct {
	Level int16
	// Name is what `raftka features upgrade --metadata` takes, as
	// kafka-features.sh takes Kafka's "4.1-IV1".
	Name string
	// Release is the raftka release that introduced the level, which
	// `--release-version` takes.
	Release string
	Doc     string
}

// MetadataVersions lists every level this binary knows, oldest first.
// 28 and up are raftka's own: Kafka 4.2 uses the same numbers for levels
// whose meaning is Kafka's, but no Kafka client chooses protocols by
// metadata.version, and kafka-features.sh prints a level it cannot name as
// its number.
var MetadataVersions = []MetadataVersionInfo{
	{Level: 27, Name: "4.1-IV1", Release: "0.1", Doc: "brokers, topics, configs, group offsets and generations, producer ids, SCRAM credentials"},
	{Level: 28, Name: "0.2-IV0", Release: "0.2", Doc: "transactions, ACLs, client quotas, partition reassignment, KIP-848 consumer groups, share group membership"},
}

// recordLevel ties one record type at one version to the metadata.version
// level that introduced it.
type recordLevel struct {
	typ   RecordType
	ver   int16
	level int16
}

// recordLevels is the table an engineer adding a record type (or a new
// version of one) adds a row to, with the level a binary must have to read
// it: a record with no row is never written. A new level also needs a row
// in MetadataVersions and MetadataVersionLevel raised.
var recordLevels = []recordLevel{
	{TypeClusterID, 0, 27},
	{TypeFeatureLevel, 0, 27},
	{TypeRegisterBroker, 0, 27},
	{TypeUnregisterBroker, 0, 27},
	{TypeFenceBroker, 0, 27},
	{TypeUnfenceBroker, 0, 27},
	{TypeBrokerShutdown, 0, 27},
	{TypeCreateTopic, 0, 27},
	{TypePartitionChange, 0, 27},
	{TypeRemoveTopic, 0, 27},
	{TypeConfig, 0, 27},
	{TypeCommitOffsets, 0, 27},
	{TypeGroupGeneration, 0, 27},
	{TypeGroupGeneration, 1, 27},
	{TypeProducerIds, 0, 27},
	{TypeAddPartitions, 0, 27},
	{TypeDeleteOffsets, 0, 27},
	{TypeDeleteGroup, 0, 27},
	{TypeUserScramCredential, 0, 27},
	{TypeRemoveUserScramCredential, 0, 27},

	{TypeTransaction, 0, 28},
	{TypeTxnOffsetCommit, 0, 28},
	{TypeAccessControlEntry, 0, 28},
	{TypeRemoveAccessControlEntry, 0, 28},
	{TypeClientQuota, 0, 28},
	{TypeVoterDirectory, 0, 28},
	{TypePartitionReassignment, 0, 28},
	{TypeOfflineReplicas, 0, 28},
	{TypeConsumerGroup, 0, 28},
	{TypeConsumerGroup, 1, 28},
	{TypeConsumerGroupDelta, 0, 28},
	{TypeConsumerGroupDelta, 1, 28},
	// Version 2: the regexes' resolutions (Kafka's record 16), written
	// only when a member subscribes by regex.
	{TypeConsumerGroup, 2, 28},
	{TypeConsumerGroupDelta, 2, 28},
	{TypeRemoveConsumerGroup, 0, 28},
	{TypeShareGroupEpoch, 0, 28},
	{TypeShareGroupMember, 0, 28},
	{TypeShareGroupRemoveMember, 0, 28},
	{TypeShareGroupTargetAssignment, 0, 28},
	{TypeShareGroupDelete, 0, 28},
	{TypeSharePartitionState, 0, 28},
	// KIP-966's ELR fields, written only with eligible.leader.replicas.version 1.
	{TypeCreateTopic, 1, 28},
	{TypeAddPartitions, 1, 28},
	{TypePartitionChange, 1, 28},
}

// ErrUnsupportedByMetadataVersion is a write the finalized metadata.version
// does not allow; the API that needed it answers UNSUPPORTED_VERSION.
var ErrUnsupportedByMetadataVersion = errors.New("metadata: not allowed by the finalized metadata.version")

// RecordLevel is the metadata.version that introduced typ at version ver;
// false when no level does (a record this binary does not write).
func RecordLevel(typ RecordType, ver int16) (int16, bool) {
	for _, r := range recordLevels {
		if r.typ == typ && r.ver == ver {
			return r.level, true
		}
	}
	return 0, false
}

// CheckRecords returns an error wrapping ErrUnsupportedByMetadataVersion
// for the first record the finalized metadata.version (level) does not
// allow. A cluster whose level is unset (before bootstrap) allows only the
// baseline.
func CheckRecords(recs []Record, level int16) error {
	level = max(level, MetadataVersionMin)
	for _, r := range recs {
		need, ok := RecordLevel(r.Type(), r.Version())
		if !ok {
			return fmt.Errorf("%w: no metadata.version writes %v v%d", ErrUnsupportedByMetadataVersion, r.Type(), r.Version())
		}
		if need > level {
			return fmt.Errorf("%w: %v needs metadata.version %s or later, the cluster is at %s (raise it with `raftka features upgrade`)",
				ErrUnsupportedByMetadataVersion, r.Type(), MetadataVersionName(need), MetadataVersionName(level))
		}
	}
	return nil
}

// MetadataVersionName is a level's name, or its number for a level this
// binary does not know.
func MetadataVersionName(level int16) string {
	for _, v := range MetadataVersions {
		if v.Level == level {
			return v.Name
		}
	}
	return strconv.Itoa(int(level))
}

// ParseMetadataVersion reads a level given by name ("0.2-IV0"), by release
// ("0.2") or by number ("28").
func ParseMetadataVersion(s string) (int16, error) {
	for _, v := range MetadataVersions {
		if s == v.Name || s == v.Release {
			return v.Level, nil
		}
	}
	if n, err := strconv.ParseInt(s, 10, 16); err == nil {
		for _, v := range MetadataVersions {
			if int16(n) == v.Level {
				return v.Level, nil
			}
		}
	}
	names := make([]string, 0, len(MetadataVersions))
	for _, v := range MetadataVersions {
		names = append(names, v.Name)
	}
	return 0, fmt.Errorf("unknown metadata.version %q (known: %s)", s, strings.Join(names, ", "))
}

// FeatureRange is the levels of one feature a node can run.
type FeatureRange struct{ Min, Max int16 }

func (r FeatureRange) String() string { return fmt.Sprintf("%d-%d", r.Min, r.Max) }

// SupportedFeatures are the features this binary runs and their ranges.
// A feature not listed runs at level 0 only.
var SupportedFeatures = map[string]FeatureRange{
	MetadataVersionFeature:    {Min: MetadataVersionMin, Max: MetadataVersionLevel},
	TransactionVersionFeature: {Min: 0, Max: TransactionVersionLevel},
	ShareVersionFeature:       {Min: 0, Max: ShareVersionLevel},
	ELRFeature:                {Min: 0, Max: 1},
	KRaftVersionFeature:       {Min: 0, Max: 1},
}

// bootstrapLevels overrides SupportedFeatures' Max as the level a new
// cluster is finalized at. eligible.leader.replicas.version starts at 0:
// it changes when acks=all may complete (the HW waits for
// min.insync.replicas), which an operator turns on with `raftka features
// upgrade --feature eligible.leader.replicas.version=1`.
var bootstrapLevels = map[string]int16{ELRFeature: 0}

// LegacyFeatures is what a broker that advertises no features supports:
// every raftka release before gating ran metadata.version 27 only.
var LegacyFeatures = map[string]FeatureRange{
	MetadataVersionFeature: {Min: MetadataVersionMin, Max: MetadataVersionMin},
}

// featureDeps: a feature at a level (or above) needs another feature at
// least at a level, as Kafka's Features.dependencies. transaction.version
// 1 and up needs the Transaction records, and share.version 1 the share
// group and share-partition records, which metadata.version 28 brings.
var featureDeps = []struct {
	feature string
	level   int16
	needs   string
	atLeast int16
}{
	{TransactionVersionFeature, 1, MetadataVersionFeature, 28},
	{ShareVersionFeature, 1, MetadataVersionFeature, 28},
	{ELRFeature, 1, MetadataVersionFeature, 28},
}

// BootstrapFeatures are the records a new cluster is finalized with: every
// supported feature at its newest level.
func BootstrapFeatures() []Record {
	names := make([]string, 0, len(SupportedFeatures))
	for name := range SupportedFeatures {
		names = append(names, name)
	}
	// metadata.version first, so a reader sees the level before what it allows.
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == MetadataVersionFeature:
			return -1
		case b == MetadataVersionFeature:
			return 1
		}
		return strings.Compare(a, b)
	})
	recs := make([]Record, 0, len(names))
	for _, name := range names {
		if name == KRaftVersionFeature {
			// How the quorum was formatted decides it (storage format),
			// not this binary's range.
			continue
		}
		l := SupportedFeatures[name].Max
		if b, ok := bootstrapLevels[name]; ok {
			l = b
		}
		if l > 0 {
			recs = append(recs, &FeatureLevel{Name: name, Level: l})
		}
	}
	return recs
}

// UpgradeType is UpdateFeatures' upgrade type (v1+).
type UpgradeType int8

// Kafka's FeatureUpdate.UpgradeType codes.
const (
	UpgradeTypeUpgrade       UpgradeType = 1
	UpgradeTypeSafeDowngrade UpgradeType = 2
	// UpgradeTypeUnsafeDowngrade may lose metadata.
	UpgradeTypeUnsafeDowngrade UpgradeType = 3
)

// FeatureUpdate is one entry of an UpdateFeatures request.
type FeatureUpdate struct {
	Name  string
	Level int16
	Type  UpgradeType
}

// PlanFeatureUpdates decides an UpdateFeatures request as Kafka's
// FeatureControlManager does, all or nothing: the FeatureLevel records to
// commit, or the first refusal (wrapping ErrInvalidUpdateVersion, Kafka's
// INVALID_UPDATE_VERSION). controller is what the deciding node itself
// runs; brokers maps every registered broker to what it advertised, and a
// registered broker missing from it is a refusal (its range is not known).
func PlanFeatureUpdates(img *Image, updates []FeatureUpdate, controller map[string]FeatureRange, brokers map[int32]map[string]FeatureRange) ([]Record, error) {
	after := img.Features()
	if after == nil {
		after = map[string]int16{}
	}
	seen := map[string]bool{}
	var recs []Record
	for _, u := range updates {
		if u.Name == "" {
			return nil, invalidUpdate(u, "the feature name is empty")
		}
		if seen[u.Name] {
			return nil, invalidUpdate(u, "the feature is named twice in the request")
		}
		seen[u.Name] = true
		cur := after[u.Name]
		if u.Type < UpgradeTypeUpgrade || u.Type > UpgradeTypeUnsafeDowngrade {
			return nil, invalidUpdate(u, fmt.Sprintf("unknown upgrade type %d", u.Type))
		}
		if u.Level < 0 {
			// Kafka: a level below 1 deletes the feature.
			u.Level = 0
		}
		r, known := controller[u.Name]
		if !known && u.Level > 0 {
			return nil, invalidUpdate(u, "the controller does not support the given feature")
		}
		if u.Level > 0 && (u.Level < r.Min || u.Level > r.Max) {
			return nil, invalidUpdate(u, fmt.Sprintf("the controller only supports versions %s", r))
		}
		switch {
		case u.Level == cur:
			continue
		case u.Level < cur && u.Type == UpgradeTypeUpgrade:
			return nil, invalidUpdate(u, "can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade")
		case u.Level < cur && u.Name == MetadataVersionFeature:
			// A lower level would have to rewrite what the current level
			// wrote (and an older binary cannot read it): Kafka 4.1 refuses
			// both kinds of metadata.version downgrade.
			if u.Type == UpgradeTypeSafeDowngrade {
				return nil, fmt.Errorf("%w: invalid metadata.version %d: refusing to perform the requested downgrade because it might delete metadata information", ErrInvalidUpdateVersion, u.Level)
			}
			return nil, fmt.Errorf("%w: invalid metadata.version %d: unsafe metadata downgrade is not supported in this version", ErrInvalidUpdateVersion, u.Level)
		case u.Level < cur && u.Name == KRaftVersionFeature:
			// The voters added since cannot be made static again.
			return nil, fmt.Errorf("%w: invalid kraft.version %d: kraft.version cannot be downgraded", ErrInvalidUpdateVersion, u.Level)
		case u.Level > cur && u.Type != UpgradeTypeUpgrade:
			return nil, invalidUpdate(u, "can't upgrade to a newer version with a downgrade upgrade type")
		}
		if u.Level > 0 {
			ids := make([]int32, 0, len(brokers))
			for _, b := range img.Brokers() {
				ids = append(ids, b.ID)
			}
			for _, id := range ids {
				feats, ok := brokers[id]
				if !ok {
					return nil, invalidUpdate(u, fmt.Sprintf("broker %d has not told this controller what it supports yet (it sends that with its heartbeats; unregister a broker that is gone for good)", id))
				}
				br, has := feats[u.Name]
				if !has || u.Level < br.Min || u.Level > br.Max {
					if !has {
						br = FeatureRange{}
					}
					return nil, invalidUpdate(u, fmt.Sprintf("broker %d only supports versions %s", id, br))
				}
			}
		}
		after[u.Name] = u.Level
		recs = append(recs, &FeatureLevel{Name: u.Name, Level: u.Level})
	}
	for _, d := range featureDeps {
		if after[d.feature] >= d.level && after[d.needs] < d.atLeast {
			return nil, fmt.Errorf("%w: invalid update version %d for feature %s: %s %d or later is needed for it, and it would be %d",
				ErrInvalidUpdateVersion, after[d.feature], d.feature, d.needs, d.atLeast, after[d.needs])
		}
	}
	// metadata.version first in the batch: the records it allows may come
	// later in the same entry from other operations.
	slices.SortStableFunc(recs, func(a, b Record) int {
		am, bm := a.(*FeatureLevel).Name == MetadataVersionFeature, b.(*FeatureLevel).Name == MetadataVersionFeature
		switch {
		case am && !bm:
			return -1
		case bm && !am:
			return 1
		}
		return 0
	})
	return recs, nil
}

// CheckBrokerFeatures is the registration rule: a broker may register only
// when it supports every finalized feature's level (a feature it does not
// list runs at 0 only). The error wraps ErrUnsupportedByMetadataVersion.
func CheckBrokerFeatures(img *Image, supported map[string]FeatureRange) error {
	levels := img.Features()
	names := make([]string, 0, len(levels))
	for name := range levels {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		l := levels[name]
		r, ok := supported[name]
		if l > 0 && (!ok || l < r.Min || l > r.Max) {
			return fmt.Errorf("%w: unable to register because the broker does not support finalized version %d of %s; the broker wants a version between %d and %d, inclusive",
				ErrUnsupportedByMetadataVersion, l, name, r.Min, r.Max)
		}
	}
	return nil
}

func invalidUpdate(u FeatureUpdate, why string) error {
	return fmt.Errorf("%w: invalid update version %d for feature %s: %s", ErrInvalidUpdateVersion, u.Level, u.Name, why)
}
