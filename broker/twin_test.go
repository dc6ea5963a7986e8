package broker

import (
	"context"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/rs/zerolog"
)

// startTwin runs the controller as raftfsm's in-memory twin, its image
// built from img (img's cluster id, then the rest of its records as
// given), so requests that reach it take the real decisions, commit and
// publisher. The brokers in img never heartbeat, so sessions outlive the
// test. opt, when set, adjusts the node's config.
func startTwin(t testing.TB, img *metadata.Image, opt func(*raftfsm.Config)) *raftfsm.Node {
	t.Helper()
	cfg := raftfsm.Config{NodeID: 1, ClusterID: img.ClusterID(), SessionTimeout: time.Hour, Logger: zerolog.Nop()}
	if opt != nil {
		opt(&cfg)
	}
	node, err := raftfsm.StartInMemory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Shutdown() })
	var recs []metadata.Record
	for _, r := range img.Records() {
		if _, ok := r.(*metadata.ClusterID); !ok {
			recs = append(recs, r)
		}
	}
	if len(recs) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := node.CommitRecords(ctx, recs...); err != nil {
			t.Fatal(err)
		}
	}
	return node
}
