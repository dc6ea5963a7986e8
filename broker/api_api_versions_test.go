package broker

import (
	"context"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// staticMetadata serves one image.
type staticMetadata struct {
	img   *metadata.Image
	index uint64
}

func (s staticMetadata) Current() (*metadata.Image, uint64) { return s.img, s.index }

// CatchUp: a static image has no Raft log behind it.
func (staticMetadata) CatchUp(context.Context) bool { return false }

// imageOf applies records to an empty image and fails on a skipped one.
func imageOf(t testing.TB, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	img, d := metadata.NewImage().Apply(recs)
	for _, s := range d.Skipped {
		t.Fatalf("record %d (%T) skipped: %v", s.Index, s.Record, s.Err)
	}
	return img
}

func callAPIVersions(t *testing.T, deps Deps, req *kmsg.ApiVersionsRequest) (*kmsg.ApiVersionsResponse, *connState) {
	t.Helper()
	s, err := newServer(Options{Logger: testLogger(t), Deps: deps}, defaultAPIs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cs := &connState{srv: s}
	rc := &request{conn: cs, key: apiVersionsKey, version: req.Version, released: make(chan struct{})}
	resp, err := handleAPIVersions(context.Background(), rc, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.ApiVersionsResponse), cs
}

func TestAPIVersionsHandler(t *testing.T) {
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raftka-test", "1.0.0"
		resp, cs := callAPIVersions(t, Deps{}, req)
		if resp.ErrorCode != 0 || resp.GetVersion() != v {
			t.Fatalf("v%d: error %d, version %d", v, resp.ErrorCode, resp.GetVersion())
		}
		want := defaultAPIs.apiKeys()
		if len(resp.ApiKeys) != len(want) {
			t.Fatalf("v%d: %d keys, want %d", v, len(resp.ApiKeys), len(want))
		}
		for i := range want {
			g := resp.ApiKeys[i]
			if g.ApiKey != want[i].ApiKey || g.MinVersion != want[i].MinVersion || g.MaxVersion != want[i].MaxVersion {
				t.Errorf("v%d: key %d = %+v, want %+v", v, i, resp.ApiKeys[i], want[i])
			}
		}
		if resp.ThrottleMillis != 0 {
			t.Errorf("v%d: throttle %d", v, resp.ThrottleMillis)
		}
		sw := cs.software.Load()
		if v >= 3 && (sw == nil || sw.name != "raftka-test" || sw.version != "1.0.0") {
			t.Errorf("v%d: client software not recorded: %+v", v, sw)
		}
		if v < 3 && sw != nil {
			t.Errorf("v%d: client software recorded from a version without it", v)
		}
		if v >= 3 && (resp.FinalizedFeaturesEpoch != -1 || len(resp.FinalizedFeatures) != 0) {
			t.Errorf("v%d: finalized features without a metadata source: %+v", v, resp)
		}
		// What the binary supports does not depend on the image.
		if sf := resp.SupportedFeatures; v >= 3 && (len(sf) != 5 ||
			sf[0].Name != "eligible.leader.replicas.version" || sf[0].MinVersion != 0 || sf[0].MaxVersion != 1 ||
			sf[1].Name != "kraft.version" || sf[1].MinVersion != 0 || sf[1].MaxVersion != 1 ||
			sf[2].Name != "metadata.version" || sf[2].MinVersion != metadata.MetadataVersionMin || sf[2].MaxVersion != metadata.MetadataVersionLevel ||
			sf[3].Name != "share.version" || sf[3].MinVersion != 0 || sf[3].MaxVersion != 1 ||
			sf[4].Name != "transaction.version" || sf[4].MinVersion != 0 || sf[4].MaxVersion != 2) {
			t.Errorf("v%d: supported features %+v, want eligible.leader.replicas.version 0-1, kraft.version 0-1, metadata.version %d-%d, share.version 0-1 and transaction.version 0-2", v, sf, metadata.MetadataVersionMin, metadata.MetadataVersionLevel)
		}
	}
}

func TestAPIVersionsSoftwareValidation(t *testing.T) {
	tests := []struct {
		name, version string
		ok            bool
	}{
		{"kgo", "v1.22.3", true},
		{"librdkafka", "2.0.2", true},
		{"confluent-kafka-python", "2.0.2-rdkafka-2.0.2", true},
		{"a", "1", true},
		{"", "1.0", false},
		{"kgo", "", false},
		{"-kgo", "1", false},
		{"kgo.", "1", false},
		{"kgo client", "1", false},
		{"kgo", "1_0", false},
		{"kgö", "1", false},
	}
	for _, tt := range tests {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = tt.name, tt.version
		resp, cs := callAPIVersions(t, Deps{}, req)
		if tt.ok {
			if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
				t.Errorf("%q %q: error %d, %d keys", tt.name, tt.version, resp.ErrorCode, len(resp.ApiKeys))
			}
			continue
		}
		if resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.ApiKeys) != 0 || cs.software.Load() != nil {
			t.Errorf("%q %q: error %d, %d keys, want INVALID_REQUEST and none", tt.name, tt.version, resp.ErrorCode, len(resp.ApiKeys))
		}
		// Below v3 the fields do not exist and are not checked.
		req.Version = 2
		if resp, _ := callAPIVersions(t, Deps{}, req); resp.ErrorCode != 0 {
			t.Errorf("%q %q at v2: error %d", tt.name, tt.version, resp.ErrorCode)
		}
	}
}

func TestAPIVersionsFinalizedFeatures(t *testing.T) {
	md := staticMetadata{index: 42, img: imageOf(t,
		&metadata.FeatureLevel{Name: "metadata.version", Level: 21},
		&metadata.FeatureLevel{Name: "a.feature", Level: 2},
	)}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 4
	req.ClientSoftwareName, req.ClientSoftwareVersion = "t", "1"
	resp, _ := callAPIVersions(t, Deps{Metadata: md}, req)
	if resp.FinalizedFeaturesEpoch != 42 {
		t.Errorf("epoch = %d", resp.FinalizedFeaturesEpoch)
	}
	got := resp.FinalizedFeatures
	if len(got) != 2 || got[0].Name != "a.feature" || got[0].MinVersionLevel != 2 || got[0].MaxVersionLevel != 2 ||
		got[1].Name != "metadata.version" || got[1].MinVersionLevel != 21 || got[1].MaxVersionLevel != 21 {
		t.Errorf("finalized features = %+v, want both, sorted, min = max = level", got)
	}
	req.Version = 2
	if resp, _ := callAPIVersions(t, Deps{Metadata: md}, req); len(resp.FinalizedFeatures) != 0 {
		t.Error("features in a v2 response")
	}
}

func TestUnsupportedAPIVersionsResponse(t *testing.T) {
	resp := unsupportedAPIVersionsResponse(defaultAPIs)
	if resp.Version != 0 || resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 {
		t.Fatalf("resp = %+v", resp)
	}
	if k := resp.ApiKeys[0]; k.ApiKey != 18 || k.MinVersion != 0 || k.MaxVersion != 4 {
		t.Fatalf("key = %+v", k)
	}
}
