package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFeatureUpdatesFlags(t *testing.T) {
	tests := []struct {
		name              string
		md, release       string
		features          []string
		downgrade, unsafe bool
		want              string // "name=level/type ...", "" for an error
	}{
		{name: "metadata by name", md: "0.2-IV0", want: "metadata.version=28/1"},
		{name: "metadata by level", md: "27", downgrade: true, want: "metadata.version=27/2"},
		{name: "release", release: "0.2", want: "metadata.version=28/1"},
		{name: "unsafe", md: "4.1-IV1", downgrade: true, unsafe: true, want: "metadata.version=27/3"},
		{name: "features sorted", features: []string{"transaction.version=2", "metadata.version=0.2"}, want: "metadata.version=28/1 transaction.version=2/1"},
		{name: "metadata twice", md: "0.2", features: []string{"metadata.version=28"}},
		{name: "metadata and release", md: "0.2", release: "0.2"},
		{name: "unknown level", md: "9.9"},
		{name: "not NAME=LEVEL", features: []string{"transaction.version"}},
		{name: "level not a number", features: []string{"transaction.version=two"}},
		{name: "nothing"},
	}
	for _, tt := range tests {
		ups, err := featureUpdates(tt.md, tt.release, tt.features, tt.downgrade, tt.unsafe)
		var parts []string
		for _, u := range ups {
			parts = append(parts, fmt.Sprintf("%s=%d/%d", u.Feature, u.MaxVersionLevel, u.UpgradeType))
		}
		got := strings.Join(parts, " ")
		if tt.want == "" {
			if err == nil {
				t.Errorf("%s: %q, want an error", tt.name, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %q %v, want %q", tt.name, got, err, tt.want)
		}
	}
}

func TestPrintFeatures(t *testing.T) {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.FinalizedFeaturesEpoch = 42
	resp.SupportedFeatures = []kmsg.ApiVersionsResponseSupportedFeature{
		{Name: "transaction.version", MinVersion: 0, MaxVersion: 2},
		{Name: "metadata.version", MinVersion: 27, MaxVersion: 28},
	}
	resp.FinalizedFeatures = []kmsg.ApiVersionsResponseFinalizedFeature{{Name: "metadata.version", MinVersionLevel: 27, MaxVersionLevel: 27}}
	var b bytes.Buffer
	if err := printFeatures(&b, resp); err != nil {
		t.Fatal(err)
	}
	want := "Feature: metadata.version\tSupportedMinVersion: 4.1-IV1\tSupportedMaxVersion: 0.2-IV0\tFinalizedVersionLevel: 4.1-IV1\tEpoch: 42\n" +
		"Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 0\tEpoch: 42\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestPrintFeatureResult(t *testing.T) {
	ups, err := featureUpdates("0.2", "", nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	ok := kmsg.NewPtrUpdateFeaturesResponse()
	for _, tc := range []struct {
		resp      *kmsg.UpdateFeaturesResponse
		dry, fail bool
		want      string
	}{
		{ok, false, false, "metadata.version was upgraded to 0.2-IV0.\n"},
		{ok, true, false, "metadata.version can be upgraded to 0.2-IV0\n"},
		{&kmsg.UpdateFeaturesResponse{ErrorCode: kerr.InvalidUpdateVersion.Code, ErrorMessage: kmsg.StringPtr("broker 2 only supports versions 27-27")}, false, true,
			"Could not upgrade metadata.version to 0.2-IV0. INVALID_UPDATE_VERSION: broker 2 only supports versions 27-27\n"},
	} {
		var b bytes.Buffer
		err := printFeatureResult(&b, ups, tc.resp, false, tc.dry)
		if (err != nil) != tc.fail || b.String() != tc.want {
			t.Errorf("got %q %v, want %q (fail %v)", b.String(), err, tc.want, tc.fail)
		}
	}
}
