// Package cluster is the multi-process test harness every end-to-end test
// uses: it builds bin/raftka once per test binary, starts N nodes as real
// processes on free loopback ports (or namespace addresses, Isolated) with
// their own temp dirs, waits until each answers a Kafka ApiVersions
// request, and can SIGKILL, SIGTERM,
// SIGSTOP/SIGCONT and restart any node. When a test fails it prints each
// node's log tail.
//
// A test package using it calls Main from TestMain:
//
//	func TestMain(m *testing.M) { cluster.Main(m) }
//
//	func TestX(t *testing.T) {
//		c := cluster.Start(t, cluster.Nodes(3))
//		client := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...))
//		...
//		c.Node(1).Kill()
//		cluster.WaitFor(t, 10*time.Second, func() (bool, string) { ... })
//	}
//
// An upgrade test starts the nodes on an earlier revision's binary
// (BuildRevision, WithBinary) and rolls them with SetBinary and Restart.
// With Isolated every node runs in a network namespace the harness makes
// (a bridge in a namespace of its own, one veth per node, one to the test
// process; `ip`, root), so Node.Cut and Heal can take one node off the
// network while its process runs; StartNodes starts nodes kept back.
//
// Processes are started in their own process group and, on Linux, with a
// parent-death signal, so they die with the test binary; cleanup kills only
// the process groups it started. Node and Cluster methods report failures
// with t.Fatalf and must be called from the test's goroutine.
//
// The harness is black-box: it drives the binary and the wire protocol and
// imports none of raftka's packages (its own tests do, to check what it
// writes). Unix only.
//
//arch:imports std github.com/twmb/franz-go/pkg/kmsg go.uber.org/goleak
//arch:importers none
package cluster
