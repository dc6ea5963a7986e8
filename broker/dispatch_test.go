package broker

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func nopHandler(_ context.Context, _ *request, req kmsg.Request) (kmsg.Response, error) {
	return req.ResponseKind(), nil
}

func nopReject(req kmsg.Request) kmsg.Response { return req.ResponseKind() }

func TestAPITableAdd(t *testing.T) {
	tests := []struct {
		name    string
		e       apiEntry
		wantErr bool
	}{
		{name: "ok", e: apiEntry{key: 3, min: 0, max: 13, handle: nopHandler}},
		{name: "advertised below accepted with reject", e: apiEntry{key: 0, advertisedMin: 0, min: 3, max: 13, handle: nopHandler, reject: nopReject}},
		{name: "advertised below accepted without reject", e: apiEntry{key: 0, advertisedMin: 0, min: 3, max: 13, handle: nopHandler}, wantErr: true},
		{name: "advertised above accepted", e: apiEntry{key: 0, advertisedMin: 4, min: 3, max: 13, handle: nopHandler}, wantErr: true},
		{name: "min above max", e: apiEntry{key: 3, advertisedMin: 5, min: 5, max: 4, handle: nopHandler}, wantErr: true},
		{name: "negative min", e: apiEntry{key: 3, advertisedMin: -1, min: 0, max: 4, handle: nopHandler}, wantErr: true},
		{name: "max above kmsg", e: apiEntry{key: 18, max: 99, handle: nopHandler}, wantErr: true},
		{name: "key unknown to kmsg", e: apiEntry{key: 999, max: 0, handle: nopHandler}, wantErr: true},
		{name: "negative key", e: apiEntry{key: -1, max: 0, handle: nopHandler}, wantErr: true},
		{name: "no handler", e: apiEntry{key: 3, max: 1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := newAPITable().add(tt.e)
			if (err != nil) != tt.wantErr {
				t.Fatalf("add: err = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}

	tb := newAPITable()
	if err := tb.add(apiEntry{key: 3, max: 1, handle: nopHandler}); err != nil {
		t.Fatal(err)
	}
	if err := tb.add(apiEntry{key: 3, max: 2, handle: nopHandler}); err == nil {
		t.Fatal("a key registered twice was accepted")
	}
}

func TestVersionCheck(t *testing.T) {
	e := &apiEntry{key: 0, advertisedMin: 0, min: 3, max: 13}
	tests := []struct {
		version int16
		want    versionCheck
	}{
		{-1, versionUnsupported},
		{0, versionRejected},
		{2, versionRejected},
		{3, versionOK},
		{13, versionOK},
		{14, versionUnsupported},
		{32767, versionUnsupported},
	}
	for _, tt := range tests {
		if got := e.check(tt.version); got != tt.want {
			t.Errorf("check(%d) = %d, want %d", tt.version, got, tt.want)
		}
	}
}

func TestAPIKeysAdvertiseTable(t *testing.T) {
	tb := newAPITable()
	for _, e := range []apiEntry{
		{key: 18, max: 4, handle: nopHandler},
		{key: 0, advertisedMin: 0, min: 3, max: 13, handle: nopHandler, reject: nopReject},
		{key: 3, min: 1, advertisedMin: 1, max: 13, handle: nopHandler},
	} {
		if err := tb.add(e); err != nil {
			t.Fatal(err)
		}
	}
	got := tb.apiKeys()
	want := [][3]int16{{0, 0, 13}, {3, 1, 13}, {18, 0, 4}}
	if len(got) != len(want) {
		t.Fatalf("apiKeys = %+v", got)
	}
	for i, k := range got {
		if [3]int16{k.ApiKey, k.MinVersion, k.MaxVersion} != want[i] {
			t.Errorf("apiKeys[%d] = %d %d-%d, want %v", i, k.ApiKey, k.MinVersion, k.MaxVersion, want[i])
		}
	}
}

// The package table must be serveable: every entry decodable by kmsg up to
// its max and answered by a handler; ApiVersions is in it at 0-4.
func TestDefaultTable(t *testing.T) {
	if len(defaultAPIs.entries) == 0 {
		t.Fatal("no APIs registered")
	}
	for key, e := range defaultAPIs.entries {
		if key != e.key {
			t.Errorf("entry under key %d is for key %d", key, e.key)
		}
		if err := newAPITable().add(*e); err != nil {
			t.Errorf("registered entry does not validate: %v", err)
		}
	}
	av := defaultAPIs.lookup(apiVersionsKey)
	if av == nil || av.advertisedMin != 0 || av.min != 0 || av.max != 4 || !av.concurrent {
		t.Fatalf("ApiVersions entry = %+v", av)
	}
	keys := defaultAPIs.apiKeys()
	if !slices.IsSortedFunc(keys, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) }) {
		t.Error("ApiVersions keys are not sorted")
	}
	if len(keys) != len(defaultAPIs.entries) {
		t.Errorf("advertised %d keys for %d entries", len(keys), len(defaultAPIs.entries))
	}
}
