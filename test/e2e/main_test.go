package e2e

import (
	"flag"
	"fmt"
	"os"
	"strconv"
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
	setParallel()
	cluster.Main(m)
}

// Parallel tests: the package is the longest of `make test` (about 21
// minutes under -race when its tests ran one at a time), and most of its
// time is waiting (session timeouts, elections, loads at a fixed rate,
// consumer groups settling), not computing. So every test whose cluster is
// its own (random loopback ports, no Docker) calls t.Parallel, and
// e2eParallel of them run at once after the sequential ones. A test stays
// sequential when it measures a rate or a time bound against the clock
// (throttles, quotas, fencing and SIGSTOP windows, lock expiry,
// reauthentication, the minority-leader freeze), builds network namespaces,
// drives chromium, runs `raftka local` (freeBasePort picks ports by PID), or
// starts a startSASLSSLCluster (invariants.UseClientSecurity sets the
// security of every invariants client in the process: a parallel test's
// harness would dial its plaintext cluster with TLS, and the other way);
// a test that does none of that and runs longer than a few seconds should
// call t.Parallel.
//
// e2eParallel is more than GOMAXPROCS (go test's default for -parallel)
// because the waiting does not use the cores; -parallel on the command line
// or RAFTKA_E2E_PARALLEL overrides it.
const e2eParallel = 4

func setParallel() {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if explicit {
		return
	}
	n := strconv.Itoa(e2eParallel)
	if v := os.Getenv("RAFTKA_E2E_PARALLEL"); v != "" {
		n = v
	}
	if err := flag.Set("test.parallel", n); err != nil {
		fmt.Fprintf(os.Stderr, "RAFTKA_E2E_PARALLEL=%q: %v\n", n, err)
		os.Exit(2)
	}
}
