package group

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/raftka/raftka/broker/group/consumergroup"
)

// BenchmarkConsumerHeartbeatSteady is the heartbeat path of one
// coordinator: members of a stable group heartbeating concurrently (no
// write: nothing changes), through the group's loop.
func BenchmarkConsumerHeartbeatSteady(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			md := consumerTwin(b)
			c, _ := consumerCoordinator(b, md, 1)
			ctx := context.Background()
			ids := make([]string, n)
			owned := map[string][]int32{}
			epochs := map[string]int32{}
			for i := range ids {
				ids[i] = fmt.Sprintf("m-%03d", i)
				r, err := c.ConsumerHeartbeat(ctx, "cg", withVersion(join(ids[i])))
				if err != nil || r.ErrorCode != 0 {
					b.Fatal(err, r)
				}
				epochs[ids[i]] = r.MemberEpoch
			}
			// Settle: every member heartbeats until its epoch stops moving.
			for range 10 {
				for _, id := range ids {
					r, _ := c.ConsumerHeartbeat(ctx, "cg", withVersion(beat(id, epochs[id], owned[id]...)))
					if r.ErrorCode == 0 {
						epochs[id] = r.MemberEpoch
						if r.HasAssignment {
							owned[id] = r.Assignment[ordersID]
						}
					}
				}
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N/n + 1
			for _, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						if r, err := c.ConsumerHeartbeat(ctx, "cg", withVersion(beat(id, epochs[id], owned[id]...))); err != nil || r.ErrorCode != 0 {
							b.Errorf("heartbeat %s: %v %+v", id, err, r)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(per*n)/b.Elapsed().Seconds(), "heartbeats/s")
		})
	}
}

func withVersion(r consumergroup.HeartbeatRequest) consumergroup.HeartbeatRequest {
	r.Version = 1
	return r
}
