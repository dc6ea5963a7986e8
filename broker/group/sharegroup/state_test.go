package sharegroup

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"pgregory.net/rapid"
)

// Under any sequence of joins, heartbeats, leaves, resubscriptions and
// expiries, the records Diff gives take the image from the last persisted
// state to exactly the group's state, and Restore of that state is the
// same group: a coordinator that takes over resumes where this one was.
func TestDiffReplaysToExport(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := New("sg")
		img := metadata.NewImage()
		var persisted *State
		now := t0
		ids := []string{"a", "b", "c", "d"}
		topics := []string{"orders", "audit", "missing"}
		for i := range rapid.IntRange(1, 40).Draw(t, "steps") {
			id := rapid.SampledFrom(ids).Draw(t, "member")
			now = now.Add(time.Duration(rapid.IntRange(0, 30).Draw(t, "secs")) * time.Second)
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0:
				g.Heartbeat(now, cfg, tps, join(id, rapid.SliceOfNDistinct(rapid.SampledFrom(topics), 1, 3, func(s string) string { return s }).Draw(t, "subs")...))
			case 1, 2:
				epoch := int32(0)
				for _, m := range g.Members() {
					if m.ID == id {
						epoch = m.Epoch
					}
				}
				g.Heartbeat(now, cfg, tps, beat(id, epoch))
			case 3:
				g.Heartbeat(now, cfg, tps, beat(id, LeaveEpoch))
			case 4:
				g.Tick(now)
			}
			checkGroupInvariants(t, g)
			next := g.Export()
			recs := Diff("sg", persisted, next)
			var d *metadata.Delta
			img, d = img.Apply(recs)
			if len(d.Skipped) > 0 {
				t.Fatalf("step %d: %v", i, d.Skipped[0].Err)
			}
			persisted = next
			st, ok := StateFromImage(img, "sg")
			if !ok || !equalState(st, next) {
				t.Fatalf("step %d: image %+v, group %+v", i, st, next)
			}
			back := Restore("sg", st, now).Export()
			if !equalState(back, next) {
				t.Fatalf("step %d: restored %+v, want %+v", i, back, next)
			}
		}
	})
}

// checkGroupInvariants: epochs never run ahead of the group's, a member at
// the target epoch holds exactly its target, and a current target covers
// every partition of every subscribed topic that exists.
func checkGroupInvariants(t *rapid.T, g *Group) {
	if g.AssignmentEpoch() > g.Epoch() {
		t.Fatalf("assignment epoch %d ahead of group epoch %d", g.AssignmentEpoch(), g.Epoch())
	}
	covered := map[TopicID]map[int32]bool{}
	subscribed := map[string]bool{}
	for _, m := range g.Members() {
		if m.Epoch > g.AssignmentEpoch() || m.PreviousEpoch > m.Epoch {
			t.Fatalf("member %s at epoch %d (previous %d), target epoch %d", m.ID, m.Epoch, m.PreviousEpoch, g.AssignmentEpoch())
		}
		if m.Epoch == g.AssignmentEpoch() && !m.Assigned.Equal(g.Target(m.ID)) {
			t.Fatalf("member %s at the target epoch holds %v, target %v", m.ID, m.Assigned, g.Target(m.ID))
		}
		for tp, ps := range g.Target(m.ID) {
			for _, p := range ps {
				if covered[tp] == nil {
					covered[tp] = map[int32]bool{}
				}
				covered[tp][p] = true
			}
		}
		for _, name := range m.SubscribedTopicNames {
			subscribed[name] = true
		}
	}
	if g.AssignmentEpoch() != g.Epoch() || g.Len() == 0 {
		return
	}
	for name := range subscribed {
		tp, ok := tps.Topic(name)
		if !ok {
			continue
		}
		for p := range tp.Partitions {
			if !covered[tp.ID][p] {
				t.Fatalf("partition %s/%d of a subscribed topic is in no target", name, p)
			}
		}
	}
}

func equalState(a, b *State) bool { return fmt.Sprintf("%+v", *a) == fmt.Sprintf("%+v", *b) }
