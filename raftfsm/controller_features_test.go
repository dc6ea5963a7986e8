package raftfsm

import (
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
)

// The first active controller writes metadata.version and
// transaction.version into the log, so every node's image has them without
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
		if got := img.Features(); len(got) != 2 {
			t.Errorf("node %d finalized %v, want metadata.version and transaction.version", i+1, got)
		}
	}
	// A new controller finds the level already final and keeps it.
	tc.stop(li)
	n := tc.nodes[tc.leader(10*time.Second)]
	if img, _ := n.Current(); img.FeatureLevel() != metadata.MetadataVersionLevel {
		t.Errorf("after failover metadata.version = %d", img.FeatureLevel())
	}
}
