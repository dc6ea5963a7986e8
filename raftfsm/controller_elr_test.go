package raftfsm

import (
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestControllerELR runs KIP-966 through the controller's own paths: the
// fencing evacuation and the election on unfencing use the topic's
// min.insync.replicas (server.properties' default here) and the
// eligible.leader.replicas.version feature; a min.insync.replicas change
// and turning the feature off clear the ELR.
func TestControllerELR(t *testing.T) {
	c := testDecider()
	c.n.cfg.DefaultMinInsyncReplicas = 2
	elrOn := []metadata.Record{&metadata.FeatureLevel{Name: metadata.MetadataVersionFeature, Level: 28}, &metadata.FeatureLevel{Name: metadata.ELRFeature, Level: 1}}
	img := newImg(t, 3).with(elrOn...).topic("t", nil, pspec{ids(1, 2, 3), ids(1, 2), 1}).build()

	// Follower 2 leaves an ISR at min.insync.replicas: it stays eligible.
	fence := func(img *metadata.Image, id int32) *metadata.Image {
		t.Helper()
		b, _ := img.Broker(id)
		next, _ := img.Apply([]metadata.Record{&metadata.FenceBroker{BrokerID: id, BrokerEpoch: b.Epoch}})
		recs := evacuate(next, id, metadata.ReasonBrokerFenced, c.unclean(next))
		out, d := next.Apply(recs)
		if len(d.Skipped) > 0 {
			t.Fatalf("records do not apply: %v", d.Skipped[0].Err)
		}
		return out
	}
	img = fence(img, 2)
	p, _ := img.Partition(topicID("t"), 0)
	if p.Leader != 1 || !slices.Equal(p.ISR, ids(1)) || !slices.Equal(p.ELR, ids(2)) {
		t.Fatalf("after 2 fenced: leader %d ISR %v ELR %v, want 1 [1] [2]", p.Leader, p.ISR, p.ELR)
	}
	img = fence(img, 1)
	p, _ = img.Partition(topicID("t"), 0)
	if p.Leader != metadata.NoLeader || len(p.ISR) != 0 || !slices.Equal(p.ELR, ids(1, 2)) {
		t.Fatalf("after 1 fenced: leader %d ISR %v ELR %v, want none [] [1 2]", p.Leader, p.ISR, p.ELR)
	}
	// 2 returns: elected from the ELR.
	b, _ := img.Broker(2)
	img, _ = img.Apply([]metadata.Record{&metadata.UnfenceBroker{BrokerID: 2, BrokerEpoch: b.Epoch}})
	recs := electLeaderless(img, c.unclean(img))
	p = after(t, img, recs, "t", 0)
	if p.Leader != 2 || !slices.Equal(p.ISR, ids(2)) || !slices.Equal(p.ELR, ids(1)) {
		t.Fatalf("after 2 unfenced: leader %d ISR %v ELR %v, want 2 [2] [1]", p.Leader, p.ISR, p.ELR)
	}
	img, _ = img.Apply(recs)

	// A topic override that moves min.insync.replicas clears the ELR.
	cfg := []metadata.Record{&metadata.Config{ResourceType: metadata.ConfigResourceTopic, ResourceName: "t", Key: "min.insync.replicas", Value: "3"}}
	d := c.withConfigElections(img, cfg, nil)
	if p := after(t, img, d.recs, "t", 0); len(p.ELR) != 0 {
		t.Fatalf("ELR %v after a min.insync.replicas change, want none", p.ELR)
	}
	// The same value again moves nothing: the ELR stays.
	same := []metadata.Record{&metadata.Config{ResourceType: metadata.ConfigResourceTopic, ResourceName: "t", Key: "min.insync.replicas", Value: "2"}}
	d = c.withConfigElections(img, same, nil)
	if p := after(t, img, d.recs, "t", 0); !slices.Equal(p.ELR, ids(1)) {
		t.Fatalf("ELR %v after setting the value in force, want [1]", p.ELR)
	}
	// Turning the feature off clears it too.
	off := clearELRs(img, func(metadata.TopicImage) bool { return true })
	if p := after(t, img, off, "t", 0); len(p.ELR) != 0 {
		t.Fatalf("ELR %v after clearing, want none", p.ELR)
	}

	// At version 0 the same fencing keeps the last member in the ISR and
	// makes nobody eligible.
	img = newImg(t, 3).topic("t", nil, pspec{ids(1, 2, 3), ids(1, 2), 1}).build()
	img = fence(img, 2)
	img = fence(img, 1)
	p, _ = img.Partition(topicID("t"), 0)
	if p.Leader != metadata.NoLeader || !slices.Equal(p.ISR, ids(1)) || len(p.ELR) != 0 {
		t.Fatalf("without ELR: leader %d ISR %v ELR %v, want none [1] []", p.Leader, p.ISR, p.ELR)
	}
}

// TestDowngradeELRClearsLists: UpdateFeatures taking
// eligible.leader.replicas.version to 0 clears every ELR in the same batch.
func TestDowngradeELRClearsLists(t *testing.T) {
	c := testDecider()
	img := newImg(t, 3).with(&metadata.FeatureLevel{Name: metadata.MetadataVersionFeature, Level: 28}, &metadata.FeatureLevel{Name: metadata.ELRFeature, Level: 1}).
		topic("t", nil, pspec{ids(1, 2, 3), ids(1), 1}).build()
	img, _ = img.Apply([]metadata.Record{&metadata.PartitionChange{TopicID: topicID("t"), Partition: 0, Leader: metadata.NoLeaderChange, ELR: ids(2)}})
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.SetVersion(1)
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = metadata.ELRFeature, 0, int8(metadata.UpgradeTypeSafeDowngrade)
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	d := decideUpdateFeatures(req)(c, img, time.Now())
	if resp := d.resp.(*kmsg.UpdateFeaturesResponse); resp.ErrorCode != 0 {
		t.Fatalf("downgrade refused: %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	p := after(t, img, d.recs, "t", 0)
	if len(p.ELR) != 0 {
		t.Fatalf("ELR %v after the feature went to 0", p.ELR)
	}
	next, _ := img.Apply(d.recs)
	if next.ELREnabled() {
		t.Fatal("feature still on")
	}
}
