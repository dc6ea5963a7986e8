package main

import (
	"github.com/raftka/raftka/broker/config"
)

// notApplied lists, for the start-up log, the keys raftka parses and
// validates but whose Kafka behaviour it does not have yet, so nobody relies
// on them unknowingly. A key leaves this list when what it configures is
// implemented. It warns whether or not the key is set: Kafka's default acts
// too. None at present: offsets.retention.minutes, the last, is applied by
// the active controller (metadata.ExpireOffsets).
func notApplied(*config.Config) []string {
	return nil
}
