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

// Parallel tests: the package runs about 20 minutes under -race in CI,
// most of it waiting (session timeouts, elections, loads at a fixed rate),
// not computing. A few long tests whose clusters are their own (random
// loopback ports, no Docker, no network namespaces, no rate assertions)
// call t.Parallel, so they overlap each other (go test's -parallel,
// GOMAXPROCS by default) after the sequential tests.
