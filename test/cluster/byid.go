package cluster

// ByID views a Cluster through node ids, the shape test/invariants' Harness
// takes (Seeds, Nodes as ids, per-id operations). It is its own type rather
// than methods on Cluster because Cluster.Nodes already returns the nodes.
type ByID struct{ Cluster *Cluster }

// Seeds is every node's client address.
func (h ByID) Seeds() []string {
	var s []string
	for _, n := range h.Cluster.Nodes() {
		s = append(s, n.ClientAddr())
	}
	return s
}

// Nodes is every node's id.
func (h ByID) Nodes() []int32 {
	var ids []int32
	for _, n := range h.Cluster.Nodes() {
		ids = append(ids, n.ID())
	}
	return ids
}

func (h ByID) ClientAddr(id int32) string { return h.Cluster.Node(id).ClientAddr() }
func (h ByID) Kill(id int32)              { h.Cluster.Node(id).Kill() }
func (h ByID) Restart(id int32)           { h.Cluster.Node(id).Restart() }
func (h ByID) DataDir(id int32) string    { return h.Cluster.Node(id).DataDir() }
