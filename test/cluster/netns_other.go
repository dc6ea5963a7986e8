//go:build unix && !linux

package cluster

import (
	"os"
	"testing"
)

type netnsNet struct{ owned bool }

func (*netnsNet) teardown() {}

func (*netnsNet) ns(int32) string   { return "" }
func (*netnsNet) host(int32) string { return "" }

func setupNetns(t testing.TB, _ []int32) *netnsNet {
	t.Helper()
	msg := "test/cluster: network namespaces need Linux"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return nil
}

// Cut needs Linux network namespaces.
func (n *Node) Cut() { n.c.t.Fatal("test/cluster: Cut needs Linux network namespaces") }

// Heal needs Linux network namespaces.
func (n *Node) Heal() { n.c.t.Fatal("test/cluster: Heal needs Linux network namespaces") }
