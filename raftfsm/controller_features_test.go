package raftfsm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The first active controller of a new cluster writes metadata.version,
// share.version and transaction.version into the log, so every node's image has them without
// a snapshot.
func TestControllerFinalizesMetadataVersion(t *testing.T) {
	tc := startCluster(t, 3, nil)
	li := tc.leader(10 * time.Second)
	for i, n := range tc.nodes {
		waitFor(t, 10*time.Second, "metadata.version in every image", func() bool {
			img, _ := n.Current()
			return img.FeatureLevel() == metadata.MetadataVersionLevel
		})
		waitFor(t, 10*time.Second, "transaction.version in every image", func() bool {
			img, _ := n.Current()
			l, _ := img.Feature(metadata.TransactionVersionFeature)
			return l == metadata.TransactionVersionLevel
		})
		img, _ := n.Current()
		if got := img.Features(); len(got) != 3 || got[metadata.ShareVersionFeature] != metadata.ShareVersionLevel {
			t.Errorf("node %d finalized %v, want metadata.version, share.version and transaction.version", i+1, got)
		}
	}
	// A new controller finds the level already final and keeps it.
	tc.stop(li)
	n := tc.nodes[tc.leader(10*time.Second)]
	if img, _ := n.Current(); img.FeatureLevel() != metadata.MetadataVersionLevel {
		t.Errorf("after failover metadata.version = %d", img.FeatureLevel())
	}
}

// A cluster at the baseline level (as a release before gating left it)
// keeps it across a controller start, refuses the records the level does
// not allow with UNSUPPORTED_VERSION and a message, refuses to finalize a
// level a registered legacy broker cannot run, and once that broker
// advertises the new range (its heartbeats), finalizes it and writes them.
func TestControllerGatesRecordsByMetadataVersion(t *testing.T) {
	n, err := StartInMemory(inmemConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Back to the baseline, as a cluster written by an older release.
	if _, err := n.CommitRecords(ctx,
		&metadata.FeatureLevel{Name: metadata.MetadataVersionFeature, Level: metadata.MetadataVersionMin},
		&metadata.FeatureLevel{Name: metadata.TransactionVersionFeature, Level: 0},
		&metadata.FeatureLevel{Name: metadata.ShareVersionFeature, Level: 0}); err != nil {
		t.Fatal(err)
	}
	cc := n.Client()

	acl := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:a", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	acl.Creations = append(acl.Creations, cr)
	aresp, err := cc.CreateACLs(ctx, acl)
	if err != nil {
		t.Fatal(err)
	}
	if len(aresp.Results) != 1 || aresp.Results[0].ErrorCode != kerr.UnsupportedVersion.Code ||
		aresp.Results[0].ErrorMessage == nil || !strings.Contains(*aresp.Results[0].ErrorMessage, "metadata.version") {
		t.Fatalf("CreateAcls at the baseline: %+v, want UNSUPPORTED_VERSION naming metadata.version", aresp.Results)
	}

	// A broker of an older release: no features in its registration.
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID = 7, n.cfg.ClusterID
	reg.IncarnationID = [16]byte{7}
	reg.PreviousBrokerEpoch = -1
	if resp, _, err := cc.Request(ctx, reg); err != nil || resp.(*kmsg.BrokerRegistrationResponse).ErrorCode != 0 {
		t.Fatalf("legacy registration: %v %+v", err, resp)
	}
	upd := func(level int16, typ int8) *kmsg.UpdateFeaturesResponse {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = metadata.MetadataVersionFeature, level, typ
		req.FeatureUpdates = append(req.FeatureUpdates, u)
		resp, err := cc.UpdateFeatures(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := upd(28, 1); r.ErrorCode != kerr.InvalidUpdateVersion.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "broker 7 only supports versions 27-27") {
		t.Fatalf("upgrade with a legacy broker registered: %d %v", r.ErrorCode, deref(r.ErrorMessage))
	}
	// The broker rolls to this release: a heartbeat says what it runs.
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID = 7
	img, _ := n.Current()
	b, _ := img.Broker(7)
	hb.BrokerEpoch, hb.CurrentMetadataOffset = b.Epoch, -1
	if _, err := cc.Heartbeat(ctx, hb); err != nil {
		t.Fatal(err)
	}
	if r := upd(28, 1); r.ErrorCode != 0 {
		t.Fatalf("upgrade: %d %v", r.ErrorCode, deref(r.ErrorMessage))
	}
	if img, _ := n.Current(); img.FeatureLevel() != 28 {
		t.Fatalf("metadata.version %d after the upgrade", img.FeatureLevel())
	}
	if aresp, err = cc.CreateACLs(ctx, acl); err != nil || aresp.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateAcls at 28: %v %+v", err, aresp)
	}
	// Kafka 4.1 refuses both kinds of metadata.version downgrade.
	for _, typ := range []int8{2, 3} {
		if r := upd(27, typ); r.ErrorCode != kerr.InvalidUpdateVersion.Code {
			t.Errorf("downgrade type %d: %d %v", typ, r.ErrorCode, deref(r.ErrorMessage))
		}
	}
	// A broker of an older release can no longer register.
	reg.BrokerID, reg.IncarnationID = 8, [16]byte{8}
	if resp, _, err := cc.Request(ctx, reg); err != nil || resp.(*kmsg.BrokerRegistrationResponse).ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("legacy registration at 28: %v %+v", err, resp)
	}
}

func TestFeatureRangesTagRoundTrip(t *testing.T) {
	m := map[string]metadata.FeatureRange{"metadata.version": {Min: 27, Max: 28}, "transaction.version": {Min: 0, Max: 2}}
	got, err := decodeFeatureRanges(encodeFeatureRanges(m))
	if err != nil || len(got) != 2 || got["metadata.version"] != m["metadata.version"] || got["transaction.version"] != m["transaction.version"] {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range [][]byte{{5, 'a'}, {1, 'a', 0}, {0xff}} {
		if _, err := decodeFeatureRanges(bad); err == nil {
			t.Errorf("%x decoded", bad)
		}
	}
}
