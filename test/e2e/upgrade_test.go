package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// previousRevision is the release the upgrade test starts from: v0.1.0,
// the landing before gating (metadata.version 27, record types 1-19). It is
// named by its commit rather than its tag so that a clone made without tags
// runs the test too. `make build-previous REV=1490988` prebuilds it under
// the name the test looks for.
const previousRevision = "1490988"

// Rolling upgrade in place (issue 16): three nodes of the previous
// revision take an idempotent acks=all load on an RF=3 topic; each node in
// turn is stopped (SIGTERM) and started on this tree's binary, and once all
// three run it, one is rolled back and forward again. Until then
// metadata.version stays at the previous release's 27, and finalizing 28
// is refused while a node of the previous release is registered (it
// advertises no features). Then `raftka features upgrade` finalizes 28,
// a downgrade is refused as Kafka 4.1 refuses it, and every acknowledged
// record is read back exactly once.
func TestRollingUpgradeFromPreviousRevision(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, partitions = "rolling", 3
	prev := cluster.BuildRevision(t, previousRevision)
	c := cluster.Start(t, cluster.Nodes(3), cluster.WithBinary(prev), cluster.LogLevel("info"),
		cluster.Override("min.insync.replicas", "2"))
	h := harness{Cluster: c}
	ctx := ctxFor(t, 5*time.Minute)
	cl := client(t, c)

	createAssigned(t, ctx, cl, topic, map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}})
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })
	var rec invariants.Recorder
	prod, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: h.Seeds(), Topic: topic, Partitions: partitions,
		Name: "upgrade", Rate: 300, MaxRecords: 200_000}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Stop(5 * time.Second)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return rec.Count() >= 500, fmt.Sprintf("%d acknowledged", rec.Count()) })

	roll := func(n *cluster.Node, bin, what string) {
		t.Helper()
		before := rec.Count()
		n.SetBinary(bin)
		n.Restart()
		cluster.WaitFor(t, 90*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })
		cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
			return rec.Count() >= before+200, fmt.Sprintf("%d acknowledged since node %d %s", rec.Count()-before, n.ID(), what)
		})
		t.Logf("node %d %s: %d acknowledged so far", n.ID(), what, rec.Count())
	}
	cur := cluster.Binary(t)
	roll(c.Node(1), cur, "upgraded")
	wantFinalized(t, ctx, c, 27)
	// Nodes 2 and 3 still run the previous release: refused by a new
	// controller (they advertise no range) or, when an old one is active,
	// by node 1, which sees the level did not move.
	out, err := cluster.Run(t, "features", "upgrade", "--bootstrap-server", c.Node(1).ClientAddr(), "--metadata", "0.2")
	if err == nil || !(strings.Contains(out, "only supports versions 27-27") || strings.Contains(out, "does not serve UpdateFeatures")) {
		t.Fatalf("upgrade with older nodes registered: %v\n%s", err, out)
	}
	t.Logf("upgrade refused with older nodes registered: %s", strings.TrimSpace(out))
	roll(c.Node(2), cur, "upgraded")
	roll(c.Node(3), cur, "upgraded")
	// Back to the previous release and forward again, before finalizing:
	// nothing this binary wrote at 27 is beyond the previous release.
	roll(c.Node(3), prev, "rolled back")
	// Node 3's SIGTERM handed Raft leadership to a node of this release,
	// whose controller refuses the level node 3 cannot run.
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		out, err = cluster.Run(t, "features", "upgrade", "--bootstrap-server", c.Node(1).ClientAddr(), "--metadata", "0.2")
		return err != nil && strings.Contains(out, "broker 3 only supports versions 27-27"), out
	})
	roll(c.Node(3), cur, "upgraded again")
	wantFinalized(t, ctx, c, 27)
	// Every node runs this release, but at 27 nothing is written that the
	// previous release could not read: a client quota (record type 35,
	// level 28) is refused.
	if code, msg := alterQuota(t, ctx, cl); code != kerr.UnsupportedVersion.Code || !strings.Contains(msg, "metadata.version") {
		t.Fatalf("quota at metadata.version 27: %v %q, want UNSUPPORTED_VERSION naming metadata.version", kerr.ErrorForCode(code), msg)
	}

	// A controller that took over (each roll moved Raft leadership) learns
	// each broker's range from its heartbeats: retry briefly.
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		out, err = cluster.Run(t, "features", "upgrade", "--bootstrap-server", c.Bootstrap(), "--metadata", "0.2")
		return err == nil, out
	})
	if !strings.Contains(out, "metadata.version was upgraded to 0.2-IV0.") {
		t.Fatalf("upgrade output: %s", out)
	}
	wantFinalized(t, ctx, c, 28)
	if out, err := cluster.Run(t, "features", "describe", "--bootstrap-server", c.Bootstrap()); err != nil ||
		!strings.Contains(out, "Feature: metadata.version\tSupportedMinVersion: 4.1-IV1\tSupportedMaxVersion: 0.2-IV0\tFinalizedVersionLevel: 0.2-IV0") {
		t.Fatalf("describe: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"--metadata", "4.1-IV1"}, {"--metadata", "4.1-IV1", "--unsafe"}} {
		out, err := cluster.Run(t, append([]string{"features", "downgrade", "--bootstrap-server", c.Bootstrap()}, args...)...)
		if err == nil || !strings.Contains(out, "INVALID_UPDATE_VERSION") {
			t.Fatalf("downgrade %v: %v\n%s", args, err, out)
		}
	}
	if code, msg := alterQuota(t, ctx, cl); code != 0 {
		t.Fatalf("quota at metadata.version 28: %v %s", kerr.ErrorForCode(code), msg)
	}
	// transaction.version needs 28 (its records).
	if out, err := cluster.Run(t, "features", "upgrade", "--bootstrap-server", c.Bootstrap(), "--feature", "transaction.version=2"); err != nil {
		t.Fatalf("transaction.version: %v\n%s", err, out)
	}
	// So does share.version: share groups are refused until it is 1.
	wantShareGroups(ctx, t, cl, kerr.UnsupportedVersion)
	if out, err := cluster.Run(t, "features", "upgrade", "--bootstrap-server", c.Bootstrap(), "--feature", "share.version=1"); err != nil {
		t.Fatalf("share.version: %v\n%s", err, out)
	}
	wantShareGroups(ctx, t, cl, nil)

	before := rec.Count()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		return rec.Count() >= before+200, fmt.Sprintf("%d acknowledged since finalizing", rec.Count()-before)
	})
	if _, err := prod.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	r := invariants.Check(rec.Acks(), read)
	checkReport(t, h, topic, "rolling upgrade", r)
	if r.Lost > 0 || r.Duplicated > 0 {
		t.Fatalf("lost %d, duplicated %d of %d acknowledged", r.Lost, r.Duplicated, rec.Count())
	}
	t.Logf("%d acknowledged, all read back once", rec.Count())
}

// wantFinalized waits until every node's ApiVersions finalizes
// metadata.version at level.
func wantFinalized(t *testing.T, ctx context.Context, c *cluster.Cluster, level int16) {
	t.Helper()
	kcl := client(t, c)
	for _, n := range c.Nodes() {
		cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
			got, err := finalizedMetadataVersion(ctx, kcl.Broker(int(n.ID())))
			if err != nil {
				return false, err.Error()
			}
			return got == level, fmt.Sprintf("node %d finalizes metadata.version %d, want %d", n.ID(), got, level)
		})
	}
}

// alterQuota sets a producer byte rate for one client id and returns the
// entry's error code and message.
func alterQuota(t *testing.T, ctx context.Context, cl *kgo.Client) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: kmsg.StringPtr("upgrade-test")}}
	e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1 << 20}}
	req.Entries = append(req.Entries, e)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Entries) != 1 {
		t.Fatalf("%d quota entries answered", len(resp.Entries))
	}
	msg := ""
	if m := resp.Entries[0].ErrorMessage; m != nil {
		msg = *m
	}
	return resp.Entries[0].ErrorCode, msg
}

func finalizedMetadataVersion(ctx context.Context, kcl *kgo.Broker) (int16, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raftka-e2e", "1"
	resp, err := req.RequestWith(ctx, kcl)
	if err != nil {
		return 0, err
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "metadata.version" {
			return f.MaxVersionLevel, nil
		}
	}
	return 0, nil
}
