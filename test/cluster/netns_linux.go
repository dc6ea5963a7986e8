package cluster

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// netnsNet is the network an Isolated cluster runs on: a "switch"
// namespace holding a bridge, one namespace per node with a veth into it,
// and a veth from the test's own namespace, so the test reaches every
// node. The bridge is in a namespace of its own so the host's firewall
// (a Docker engine's FORWARD policy) never sees the nodes' traffic.
type netnsNet struct {
	tag    string // prefix of every name, unique per cluster
	subnet string // "10.A.B": node id i is 10.A.B.i, the test 10.A.B.254
	nodes  []int32
	// owned: the Cluster tears the network down after its nodes are gone
	// (before, their connections to the test would hang, never reset).
	owned bool
}

func (w *netnsNet) sw() string              { return w.tag + "s" }
func (w *netnsNet) ns(id int32) string      { return w.tag + "n" + strconv.Itoa(int(id)) }
func (w *netnsNet) port(id int32) string    { return "p" + strconv.Itoa(int(id)) }
func (w *netnsNet) host(id int32) string    { return w.subnet + "." + strconv.Itoa(int(id)) }
func (w *netnsNet) testVeth() (a, b string) { return w.tag + "h", w.tag + "p" }

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// setupNetns builds the network for nodes, or skips the test (fails it
// under CI=true) when namespaces cannot be made here.
func setupNetns(t testing.TB, nodes []int32) *netnsNet {
	t.Helper()
	w := &netnsNet{
		tag:    fmt.Sprintf("rk%05d", rand.IntN(100000)),
		subnet: fmt.Sprintf("10.%d.%d", 200+rand.IntN(50), rand.IntN(256)),
		nodes:  nodes,
	}
	if err := ipCmd("netns", "add", w.sw()); err != nil {
		msg := fmt.Sprintf("test/cluster: network namespaces are not available here (needs root and iproute2): %v", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		if !w.owned {
			w.teardown()
		}
	})
	h, p := w.testVeth()
	steps := [][]string{
		{"-n", w.sw(), "link", "add", "br0", "type", "bridge"},
		{"-n", w.sw(), "link", "set", "br0", "up"},
		{"link", "add", h, "type", "veth", "peer", "name", p},
		{"link", "set", p, "netns", w.sw()},
		{"-n", w.sw(), "link", "set", p, "master", "br0"},
		{"-n", w.sw(), "link", "set", p, "up"},
		{"addr", "add", w.subnet + ".254/24", "dev", h},
		{"link", "set", h, "up"},
	}
	for _, id := range nodes {
		ns, port := w.ns(id), w.port(id)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "add", "e0", "type", "veth", "peer", "name", port},
			[]string{"-n", ns, "link", "set", port, "netns", w.sw()},
			[]string{"-n", w.sw(), "link", "set", port, "master", "br0"},
			[]string{"-n", w.sw(), "link", "set", port, "up"},
			[]string{"-n", ns, "addr", "add", w.host(id) + "/24", "dev", "e0"},
			[]string{"-n", ns, "link", "set", "e0", "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"},
		)
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			t.Fatalf("test/cluster: building the namespaces: %v", err)
		}
	}
	return w
}

// teardown removes what setupNetns made (the veths go with their
// namespaces).
func (w *netnsNet) teardown() {
	if w == nil {
		return
	}
	for _, id := range w.nodes {
		_ = ipCmd("netns", "del", w.ns(id))
	}
	_ = ipCmd("netns", "del", w.sw())
	h, _ := w.testVeth()
	_ = ipCmd("link", "del", h)
}

// Cut takes the node's link to the switch down: nothing reaches it and it
// reaches nothing (the test included), while its process runs on. Only
// for clusters started with Isolated.
func (n *Node) Cut() {
	n.c.t.Helper()
	n.setLink("down")
}

// Heal brings a Cut node's link back.
func (n *Node) Heal() {
	n.c.t.Helper()
	n.setLink("up")
}

func (n *Node) setLink(state string) {
	w := n.c.netns
	if w == nil {
		n.c.t.Fatal("test/cluster: Cut and Heal need a cluster started with Isolated()")
	}
	if err := ipCmd("-n", w.sw(), "link", "set", w.port(n.id), state); err != nil {
		n.c.t.Fatal(err)
	}
}
