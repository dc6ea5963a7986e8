package metadata

import (
	"errors"
	"strings"
	"testing"
)

// Every record type this binary knows has a level row for version 0, so
// none is unwritable by accident; a branch adding a type must add its row.
func TestEveryRecordTypeHasALevel(t *testing.T) {
	for typ := RecordType(1); typ < 200; typ++ {
		if typ.String() == "RecordType(unknown)" {
			continue
		}
		l, ok := RecordLevel(typ, 0)
		if !ok {
			t.Errorf("%v has no metadata.version row in recordLevels", typ)
			continue
		}
		if l < MetadataVersionMin || l > MetadataVersionLevel {
			t.Errorf("%v at level %d, outside %d-%d", typ, l, MetadataVersionMin, MetadataVersionLevel)
		}
	}
	for _, r := range recordLevels {
		if MetadataVersionName(r.level) == "" || !knownLevel(r.level) {
			t.Errorf("%v v%d at level %d, which MetadataVersions does not name", r.typ, r.ver, r.level)
		}
	}
	if last := MetadataVersions[len(MetadataVersions)-1].Level; last != MetadataVersionLevel {
		t.Errorf("newest named level %d, MetadataVersionLevel %d", last, MetadataVersionLevel)
	}
}

func knownLevel(l int16) bool {
	for _, v := range MetadataVersions {
		if v.Level == l {
			return true
		}
	}
	return false
}

func TestCheckRecords(t *testing.T) {
	tests := []struct {
		name  string
		recs  []Record
		level int16
		ok    bool
	}{
		{"baseline at 27", []Record{&CreateTopic{}, &RegisterBroker{}, &GroupGeneration{}}, 27, true},
		{"unset level is the baseline", []Record{&ClusterID{ID: "x"}}, 0, true},
		{"unset level refuses 28", []Record{&AccessControlEntry{}}, 0, false},
		{"ACL at 27", []Record{&CreateTopic{}, &AccessControlEntry{}}, 27, false},
		{"ACL at 28", []Record{&AccessControlEntry{}}, 28, true},
		{"transaction at 27", []Record{&Transaction{}}, 27, false},
		{"reassignment at 27", []Record{&PartitionReassignment{}}, 27, false},
		{"voter directory at 27", []Record{&VoterDirectory{}}, 27, false},
		{"voter directory at 28", []Record{&VoterDirectory{}}, 28, true},
		{"quota at 28", []Record{&ClientQuota{}}, 28, true},
		{"nothing", nil, 27, true},
	}
	for _, tt := range tests {
		err := CheckRecords(tt.recs, tt.level)
		if (err == nil) != tt.ok {
			t.Errorf("%s: %v", tt.name, err)
		}
		if err != nil && !errors.Is(err, ErrUnsupportedByMetadataVersion) {
			t.Errorf("%s: %v does not wrap ErrUnsupportedByMetadataVersion", tt.name, err)
		}
	}
}

func TestParseMetadataVersion(t *testing.T) {
	for in, want := range map[string]int16{"4.1-IV1": 27, "0.1": 27, "27": 27, "0.2-IV0": 28, "0.2": 28, "28": 28} {
		if got, err := ParseMetadataVersion(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "26", "29", "4.2-IV0", "x"} {
		if _, err := ParseMetadataVersion(in); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}

func featureImage(t *testing.T, mv, tv int16, brokers ...int32) *Image {
	t.Helper()
	recs := []Record{&ClusterID{ID: "c"}, &FeatureLevel{Name: MetadataVersionFeature, Level: mv}}
	if tv > 0 {
		recs = append(recs, &FeatureLevel{Name: TransactionVersionFeature, Level: tv})
	}
	for _, id := range brokers {
		recs = append(recs, &RegisterBroker{BrokerID: id, BrokerEpoch: 1})
	}
	img, d := NewImage().Apply(recs)
	if len(d.Skipped) > 0 {
		t.Fatal(d.Skipped)
	}
	return img
}

func TestPlanFeatureUpdates(t *testing.T) {
	newer := map[string]FeatureRange{MetadataVersionFeature: {27, 28}, TransactionVersionFeature: {0, 2}}
	ctrl := SupportedFeatures
	type upd = FeatureUpdate
	tests := []struct {
		name    string
		mv, tv  int16
		brokers map[int32]map[string]FeatureRange
		ids     []int32
		updates []upd
		want    map[string]int16 // levels after, nil: refused
		errHas  string
	}{
		{name: "upgrade, every broker new", mv: 27, ids: []int32{1, 2}, brokers: map[int32]map[string]FeatureRange{1: newer, 2: newer},
			updates: []upd{{MetadataVersionFeature, 28, UpgradeTypeUpgrade}}, want: map[string]int16{MetadataVersionFeature: 28}},
		{name: "upgrade with a legacy broker", mv: 27, ids: []int32{1, 2}, brokers: map[int32]map[string]FeatureRange{1: newer, 2: LegacyFeatures},
			updates: []upd{{MetadataVersionFeature, 28, UpgradeTypeUpgrade}}, errHas: "broker 2 only supports versions 27-27"},
		{name: "upgrade with a broker not heard from", mv: 27, ids: []int32{1, 2}, brokers: map[int32]map[string]FeatureRange{1: newer},
			updates: []upd{{MetadataVersionFeature, 28, UpgradeTypeUpgrade}}, errHas: "broker 2 has not told"},
		{name: "past the controller", mv: 27, updates: []upd{{MetadataVersionFeature, 29, UpgradeTypeUpgrade}}, errHas: "controller only supports versions 27-28"},
		{name: "unknown feature", mv: 27, updates: []upd{{"group.version", 1, UpgradeTypeUpgrade}}, errHas: "does not support the given feature"},
		{name: "same level is a no-op", mv: 28, updates: []upd{{MetadataVersionFeature, 28, UpgradeTypeUpgrade}}, want: map[string]int16{}},
		{name: "downgrade as upgrade", mv: 28, updates: []upd{{MetadataVersionFeature, 27, UpgradeTypeUpgrade}}, errHas: "without setting the upgrade type"},
		{name: "safe metadata downgrade", mv: 28, updates: []upd{{MetadataVersionFeature, 27, UpgradeTypeSafeDowngrade}}, errHas: "might delete metadata information"},
		{name: "unsafe metadata downgrade", mv: 28, updates: []upd{{MetadataVersionFeature, 27, UpgradeTypeUnsafeDowngrade}}, errHas: "unsafe metadata downgrade is not supported"},
		{name: "upgrade typed as downgrade", mv: 27, updates: []upd{{MetadataVersionFeature, 28, UpgradeTypeSafeDowngrade}}, errHas: "downgrade upgrade type"},
		{name: "bad upgrade type", mv: 27, updates: []upd{{MetadataVersionFeature, 28, 4}}, errHas: "unknown upgrade type"},
		{name: "named twice", mv: 27, updates: []upd{{MetadataVersionFeature, 28, 1}, {MetadataVersionFeature, 28, 1}}, errHas: "named twice"},
		{name: "transaction.version needs 28", mv: 27, updates: []upd{{TransactionVersionFeature, 2, UpgradeTypeUpgrade}}, errHas: "metadata.version 28 or later is needed"},
		{name: "both at once, in either order", mv: 27, ids: []int32{1}, brokers: map[int32]map[string]FeatureRange{1: newer},
			updates: []upd{{TransactionVersionFeature, 2, 1}, {MetadataVersionFeature, 28, 1}},
			want:    map[string]int16{MetadataVersionFeature: 28, TransactionVersionFeature: 2}},
		{name: "legacy broker and transaction.version", mv: 28, ids: []int32{1}, brokers: map[int32]map[string]FeatureRange{1: LegacyFeatures},
			updates: []upd{{TransactionVersionFeature, 2, 1}}, errHas: "broker 1 only supports versions 0-0"},
		{name: "transaction.version safe downgrade", mv: 28, tv: 2, updates: []upd{{TransactionVersionFeature, 0, UpgradeTypeSafeDowngrade}},
			want: map[string]int16{TransactionVersionFeature: 0}},
		{name: "share.version needs 28", mv: 27, updates: []upd{{ShareVersionFeature, 1, UpgradeTypeUpgrade}}, errHas: "metadata.version 28 or later is needed"},
		{name: "share.version upgrade", mv: 28, ids: []int32{1}, brokers: map[int32]map[string]FeatureRange{1: SupportedFeatures},
			updates: []upd{{ShareVersionFeature, 1, UpgradeTypeUpgrade}}, want: map[string]int16{ShareVersionFeature: 1}},
		{name: "share.version past the controller", mv: 28, updates: []upd{{ShareVersionFeature, 2, UpgradeTypeUpgrade}}, errHas: "controller only supports versions 0-1"},
		{name: "a broker without share.version", mv: 28, ids: []int32{1}, brokers: map[int32]map[string]FeatureRange{1: newer},
			updates: []upd{{ShareVersionFeature, 1, UpgradeTypeUpgrade}}, errHas: "broker 1 only supports versions 0-0"},
		{name: "a level below 0 deletes", mv: 28, tv: 2, updates: []upd{{TransactionVersionFeature, -1, UpgradeTypeSafeDowngrade}},
			want: map[string]int16{TransactionVersionFeature: 0}},
	}
	for _, tt := range tests {
		img := featureImage(t, tt.mv, tt.tv, tt.ids...)
		recs, err := PlanFeatureUpdates(img, tt.updates, ctrl, tt.brokers)
		if tt.want == nil {
			if err == nil || !errors.Is(err, ErrInvalidUpdateVersion) || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("%s: %v, want INVALID_UPDATE_VERSION with %q", tt.name, err, tt.errHas)
			}
			if recs != nil {
				t.Errorf("%s: refused with records %v", tt.name, recs)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got := map[string]int16{}
		for i, r := range recs {
			fl := r.(*FeatureLevel)
			got[fl.Name] = fl.Level
			if fl.Name == MetadataVersionFeature && i != 0 {
				t.Errorf("%s: metadata.version is record %d, not first", tt.name, i)
			}
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: %s = %d, want %d", tt.name, k, got[k], v)
			}
		}
		if _, d := img.Apply(recs); len(d.Skipped) > 0 {
			t.Errorf("%s: records skipped: %v", tt.name, d.Skipped)
		}
	}
}

func TestCheckBrokerFeatures(t *testing.T) {
	newer := map[string]FeatureRange{MetadataVersionFeature: {27, 28}, TransactionVersionFeature: {0, 2}}
	tests := []struct {
		name   string
		mv, tv int16
		feats  map[string]FeatureRange
		ok     bool
	}{
		{"legacy at 27", 27, 0, LegacyFeatures, true},
		{"legacy at 28", 28, 0, LegacyFeatures, false},
		{"legacy with transaction.version", 27, 2, LegacyFeatures, false},
		{"new at 27", 27, 0, newer, true},
		{"new at 28 with transaction.version", 28, 2, newer, true},
	}
	for _, tt := range tests {
		err := CheckBrokerFeatures(featureImage(t, tt.mv, tt.tv), tt.feats)
		if (err == nil) != tt.ok {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestBootstrapFeatures(t *testing.T) {
	recs := BootstrapFeatures()
	if len(recs) != 3 || recs[0].(*FeatureLevel).Name != MetadataVersionFeature || recs[0].(*FeatureLevel).Level != MetadataVersionLevel ||
		recs[1].(*FeatureLevel).Name != ShareVersionFeature || recs[1].(*FeatureLevel).Level != ShareVersionLevel ||
		recs[2].(*FeatureLevel).Name != TransactionVersionFeature || recs[2].(*FeatureLevel).Level != TransactionVersionLevel {
		t.Fatalf("%v", recs)
	}
}
