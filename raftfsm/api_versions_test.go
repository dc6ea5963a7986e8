package raftfsm

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The controller listener advertises exactly the requests it serves:
// every key decideFor maps, plus ApiVersions, and no other.
func TestControllerAPIVersionsAreWhatIsServed(t *testing.T) {
	describe := func(context.Context, string, string, *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
		return nil
	}
	for _, withDescribe := range []bool{false, true} {
		n := &Node{} // decideFor only builds closures (and reads the config)
		if withDescribe {
			n.cfg.DescribeConfigs = describe
		}
		t.Run(fmt.Sprintf("DescribeConfigs=%v", withDescribe), func(t *testing.T) { checkAdvertisedServed(t, n, ControllerAPIVersionsWith(withDescribe)) })
	}
	if !slices.ContainsFunc(ControllerAPIVersionsWith(true), func(a kmsg.ApiVersionsResponseApiKey) bool { return a.ApiKey == describeConfigsKey }) ||
		slices.ContainsFunc(ControllerAPIVersions(), func(a kmsg.ApiVersionsResponseApiKey) bool { return a.ApiKey == describeConfigsKey }) {
		t.Error("DescribeConfigs advertised other than exactly with Config.DescribeConfigs")
	}
}

func checkAdvertisedServed(t *testing.T, n *Node, list []kmsg.ApiVersionsResponseApiKey) {
	advertised := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, ak := range list {
		advertised[ak.ApiKey] = ak
	}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		req := kmsg.RequestForKey(k)
		if req == nil {
			continue
		}
		served := k == 18 || n.decideFor(req) != nil
		ak, ok := advertised[k]
		switch {
		case served && !ok:
			t.Errorf("%s is served but not advertised", kmsg.NameForKey(k))
		case !served && ok:
			t.Errorf("%s is advertised but not served", kmsg.NameForKey(k))
		case ok && (ak.MinVersion != 0 || ak.MaxVersion > req.MaxVersion()):
			t.Errorf("%s advertised v%d-%d, parseRequest decodes v0-%d", kmsg.NameForKey(k), ak.MinVersion, ak.MaxVersion, req.MaxVersion())
		}
	}
	keys := list
	if !slices.IsSortedFunc(keys, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) }) {
		t.Error("ApiVersions keys are not ascending")
	}
	if _, ok := advertised[0]; ok {
		t.Error("Produce advertised on the controller listener")
	}
}

func TestControllerAPIVersionsResponse(t *testing.T) {
	for _, tc := range []struct {
		version     int16
		wantVersion int16
		wantCode    int16
		wantKeys    int
	}{
		{0, 0, 0, len(controllerAPIKeys) + 1},
		{maxAPIVersionsVersion, maxAPIVersionsVersion, 0, len(controllerAPIKeys) + 1},
		{maxAPIVersionsVersion + 1, 0, kerr.UnsupportedVersion.Code, 1},
		{-1, 0, kerr.UnsupportedVersion.Code, 1},
	} {
		resp := APIVersionsResponse(tc.version)
		if resp.Version != tc.wantVersion || resp.ErrorCode != tc.wantCode || len(resp.ApiKeys) != tc.wantKeys {
			t.Errorf("v%d: answered v%d, error %d, %d keys; want v%d, %d, %d keys", tc.version, resp.Version, resp.ErrorCode, len(resp.ApiKeys), tc.wantVersion, tc.wantCode, tc.wantKeys)
		}
	}
}
