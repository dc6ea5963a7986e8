package main

import (
	"fmt"

	"github.com/raftka/raftka/broker/config"
)

// notApplied lists, for the start-up log, the keys raftka parses and
// validates but whose Kafka behaviour it does not have yet, so nobody relies
// on them unknowingly. A key leaves this list when what it configures is
// implemented. It warns whether or not the key is set: Kafka's default acts
// too.
func notApplied(cfg *config.Config) []string {
	return []string{
		fmt.Sprintf("offsets.retention.minutes (%s) is not applied: committed offsets are kept until their group is deleted, while Kafka expires an empty group's offsets after this long", cfg.OffsetsRetention),
	}
}
