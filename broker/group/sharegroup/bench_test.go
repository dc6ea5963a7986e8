package sharegroup

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkSimple is one target computation of a full group
// (group.share.max.size members) over 100 topics of 10 partitions, sticky
// from the previous target with one member gone.
func BenchmarkSimple(b *testing.B) {
	const members, topics, parts = 200, 100, 10
	ids := make([]TopicID, topics)
	sizes := map[TopicID]int32{}
	for i := range ids {
		ids[i] = TopicID{byte(i), 1}
		sizes[ids[i]] = parts
	}
	ms := make([]AssignMember, members)
	for i := range ms {
		ms[i] = AssignMember{ID: fmt.Sprintf("member-%03d", i), Topics: ids}
	}
	prev := Simple(ms, sizes)
	for i := range ms {
		ms[i].Current = prev[ms[i].ID]
	}
	ms = ms[1:]
	b.ResetTimer()
	for b.Loop() {
		Simple(ms, sizes)
	}
}

// BenchmarkHeartbeatSteady is a heartbeat that changes nothing, the common
// case: 200 members, nothing to persist.
func BenchmarkHeartbeatSteady(b *testing.B) {
	g := New("g")
	c := Config{SessionTimeout: time.Minute, HeartbeatInterval: time.Second, MaxSize: 200}
	for i := range 200 {
		g.Heartbeat(t0, c, tps, join(fmt.Sprintf("m-%03d", i), "orders"))
	}
	for i := range 200 {
		id := fmt.Sprintf("m-%03d", i)
		g.Heartbeat(t0, c, tps, beat(id, int32(i+1)))
	}
	epoch := g.AssignmentEpoch()
	now := t0
	b.ResetTimer()
	i := 0
	for b.Loop() {
		now = now.Add(time.Millisecond)
		if r := g.Heartbeat(now, c, tps, beat(fmt.Sprintf("m-%03d", i%200), epoch)); r.Err != nil {
			b.Fatal(r.Err)
		}
		i++
	}
}
