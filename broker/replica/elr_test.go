package replica

import (
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
)

// TestELRHoldsHWBelowMinISR is KIP-966's leader rule: with
// eligible.leader.replicas.version 1 the HW stops while the ISR is below
// min.insync.replicas (so the follower that left holds every acknowledged
// record and may be elected from the ELR), and moves again once the ISR
// is back; at version 0 a leader alone in the ISR moves it to its own log
// end, as Kafka's does.
func TestELRHoldsHWBelowMinISR(t *testing.T) {
	for _, elr := range []bool{true, false} {
		name := "elr"
		if !elr {
			name = "no elr"
		}
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, clusterOpts{n: 3, lag: 300 * time.Millisecond})
			if elr {
				c.ctrl.apply(t, &metadata.FeatureLevel{Name: metadata.ELRFeature, Level: 1})
			}
			c.createTopic("t", 2, 1, 2, 3)
			if _, err := produce(t, c, 1, "t", -1, "committed"); err != nil {
				t.Fatal(err)
			}
			leader := c.partition(1, "t")
			c.net.SetDown(3, true)
			if _, err := produce(t, c, 1, "t", 1, "3 lags"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "ISR {1,2}", func() bool { return len(leader.State().ISR) == 2 })
			if _, err := produce(t, c, 1, "t", -1, "at min ISR"); err != nil {
				t.Fatal(err)
			}
			acked := leader.Log().HighWatermark()
			c.net.SetDown(2, true)
			if _, err := produce(t, c, 1, "t", 1, "only on the leader"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "ISR {1}", func() bool {
				reg, _ := c.ctrl.image().Topic("t")
				return len(reg.Partitions[0].ISR) == 1 && len(leader.State().ISR) == 1
			})
			// The image's shrink reached the leader (makeLeader advanced
			// the HW if it could), and a later fetch-free moment too.
			leader.maybeAdvanceHW()
			hw, leo := leader.Log().HighWatermark(), leader.Log().LogEndOffset()
			if elr && hw != acked {
				t.Fatalf("ELR: HW %d moved past %d (log end %d) with the ISR below min.insync.replicas", hw, acked, leo)
			}
			if !elr && hw != leo {
				t.Fatalf("no ELR: HW %d, want the leader's log end %d", hw, leo)
			}
			if elr {
				reg, _ := c.ctrl.image().Topic("t")
				if p := reg.Partitions[0]; len(p.ELR) != 1 || p.ELR[0] != 2 {
					t.Fatalf("ELR %v, want [2]", p.ELR)
				}
			}
			c.net.SetDown(2, false)
			waitFor(t, "ISR back to min ISR and the HW at the log end", func() bool {
				return len(leader.State().ISR) == 2 && leader.Log().HighWatermark() == leader.Log().LogEndOffset()
			})
		})
	}
}
