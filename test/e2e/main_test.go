// Package e2e runs real raftka processes through the test/cluster harness
// and talks to them only over the wire, with real Kafka clients.
package e2e

import (
	"testing"

	"github.com/raftka/raftka/test/cluster"
)

func TestMain(m *testing.M) { cluster.Main(m) }
