package e2e

import (
	"os"
	"testing"

	"github.com/raftka/raftka/test/cluster"
)

func TestMain(m *testing.M) {
	// The test binary doubles as a KIP-848 consumer process (kip848_test.go),
	// so a test can SIGKILL one member of a group.
	if os.Getenv(kip848MemberEnv) != "" {
		os.Exit(runKIP848Member())
	}
	if os.Getenv(saramaMemberEnv) != "" {
		os.Exit(runSaramaMember())
	}
	cluster.Main(m)
}
