package main

import (
	"strings"
	"testing"

	"github.com/raftka/raftka/broker/config"
)

// Keys parsed but not applied are named at start-up, with their value.
func TestNotAppliedNamesOffsetsRetention(t *testing.T) {
	cfg, _, err := config.Parse([]byte("process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\nlisteners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\ncontroller.listener.names=CONTROLLER\nlog.dirs=data\noffsets.retention.minutes=60\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, w := range notApplied(cfg) {
		if strings.HasPrefix(w, "offsets.retention.minutes (1h0m0s) is not applied") {
			found = true
		}
	}
	if !found {
		t.Errorf("warnings %q do not name offsets.retention.minutes", notApplied(cfg))
	}
}
