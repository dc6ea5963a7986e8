package consumergroup

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/group/assignor"
)

// BenchmarkSteadyHeartbeat is the heartbeat path of a Stable group of 100
// members over 10 topics of 100 partitions: what one coordinator spends per
// heartbeat before any I/O (the issue asks for >= 5,000 heartbeats/s).
func BenchmarkSteadyHeartbeat(b *testing.B) {
	w := world{}
	var names []string
	for i := range 10 {
		n := fmt.Sprintf("t%d", i)
		w[n] = assignor.Topic{ID: tid(byte(i + 1)), Partitions: 100}
		names = append(names, n)
	}
	g, now := newGroup(0), t0
	const members = 100
	owned := make([]assignor.Assignment, members)
	for i := range members {
		r := g.Heartbeat(now, joinReq(fmt.Sprintf("m%03d", i), names...), w)
		owned[i] = r.Assignment
	}
	for round := 0; g.State() != "Stable" && round < 50; round++ {
		for i := range members {
			id := fmt.Sprintf("m%03d", i)
			m, _ := g.Member(id)
			r := g.Heartbeat(now, hbReq(id, m.Epoch, owned[i]), w)
			if r.HasAssignment {
				owned[i] = r.Assignment
			}
		}
	}
	if g.State() != "Stable" {
		b.Fatalf("group %s", g.State())
	}
	reqs := make([]HeartbeatRequest, members)
	for i := range members {
		id := fmt.Sprintf("m%03d", i)
		m, _ := g.Member(id)
		reqs[i] = hbReq(id, m.Epoch, owned[i])
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		now = now.Add(time.Millisecond)
		if r := g.Heartbeat(now, reqs[i%members], w); r.ErrorCode != 0 {
			b.Fatal(r.ErrorMessage)
		}
	}
}
