package main

import (
	"strings"
	"testing"

	"github.com/raftka/raftka/broker/config"
)

// offsets.retention.minutes is applied (the controller expires offsets),
// so start-up no longer warns about it.
func TestNotAppliedLeavesOffsetsRetentionOut(t *testing.T) {
	cfg, _, err := config.Parse([]byte("process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\nlisteners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\ncontroller.listener.names=CONTROLLER\nlog.dirs=data\noffsets.retention.minutes=60\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OffsetsRetention.Minutes() != 60 {
		t.Fatalf("offsets.retention.minutes read as %v", cfg.OffsetsRetention)
	}
	for _, w := range notApplied(cfg) {
		if strings.Contains(w, "offsets.retention") {
			t.Errorf("start-up still warns %q", w)
		}
	}
}
