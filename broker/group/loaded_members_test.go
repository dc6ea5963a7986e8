package group

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A group loaded from a generation that lists members (its coordinator
// moved) waits up to MaxSessionTimeout for them; if none rejoins, it
// records a generation without members, so the image says it is empty
// (and its offsets' retention starts). One whose members come back, or one
// loaded without members, records nothing of the kind.
func TestLoadedMembersThatNeverReturn(t *testing.T) {
	loaded := &metadata.GroupGeneration{Group: "g", Generation: 7, ProtocolType: "consumer", Protocol: "range", Leader: "m-1",
		Members: []metadata.GroupMember{{MemberID: "m-1"}, {MemberID: "m-2"}}}

	t.Run("none returns", func(t *testing.T) {
		h := newHarness(t, nil)
		h.g = New("g", h.g.cfg, loaded)
		h.g.AwaitLoadedMembers(h.now)
		if h.g.Idle() {
			t.Fatal("idle while waiting for the loaded members")
		}
		if d, ok := h.g.NextDeadline(); !ok || !d.Equal(t0.Add(30*time.Minute)) {
			t.Fatalf("next deadline %v %v, want the max session timeout after loading", d, ok)
		}
		h.advance(30*time.Minute - time.Second)
		if rec := h.g.TakePersist(); rec != nil {
			t.Fatalf("persisted %+v before the members' time was up", rec)
		}
		h.advance(time.Second)
		rec := h.g.TakePersist()
		if rec == nil || rec.Generation != 8 || len(rec.Members) != 0 || rec.ProtocolType != "consumer" || rec.Protocol != "" || rec.Leader != "" {
			t.Fatalf("persisted %+v, want generation 8 of a consumer group without members", rec)
		}
		h.g.Persisted(h.now, rec.Generation, nil)
		h.state(Empty)
		if !h.g.Idle() {
			t.Fatal("not idle once the empty generation is persisted")
		}
		if _, ok := h.g.NextDeadline(); ok {
			t.Fatal("a deadline left after the empty generation")
		}
	})

	t.Run("a member rejoins", func(t *testing.T) {
		h := newHarness(t, nil)
		h.g = New("g", h.g.cfg, loaded)
		h.g.AwaitLoadedMembers(h.now)
		h.join("a", "")
		h.advance(3 * time.Second) // the initial rebalance delay
		res := h.lastJoin("a")
		h.sync("a", res.MemberID, res.Generation, map[string][]byte{res.MemberID: []byte("x")})
		rec := h.g.TakePersist()
		if rec == nil || rec.Generation != 8 || len(rec.Members) != 1 {
			t.Fatalf("persisted %+v, want generation 8 with the member that rejoined", rec)
		}
		h.g.Persisted(h.now, rec.Generation, nil)
		for range 30 * 60 / 5 { // past the loaded members' time, heartbeating
			h.advance(5 * time.Second)
			if code := h.g.Heartbeat(h.now, res.MemberID, "", res.Generation); code != 0 {
				t.Fatalf("heartbeat: code %d", code)
			}
		}
		h.state(Stable)
		if rec := h.g.TakePersist(); rec != nil {
			t.Fatalf("an active group recorded %+v", rec)
		}
	})

	t.Run("loaded without members", func(t *testing.T) {
		h := newHarness(t, nil)
		h.g = New("g", h.g.cfg, &metadata.GroupGeneration{Group: "g", Generation: 3, ProtocolType: "consumer"})
		h.g.AwaitLoadedMembers(h.now)
		if !h.g.Idle() {
			t.Fatal("a group loaded empty waits for nobody")
		}
	})
}

// A coordinator that leads a slot loads, without any request, the groups
// the image records with members, and records empty those whose members
// never come back.
func TestCoordinatorLoadsSilentGroups(t *testing.T) {
	md := slotsImage(t, 1)
	md.apply(t,
		&metadata.GroupGeneration{Group: "silent", Generation: 4, ProtocolType: "consumer", Protocol: "range", Leader: "m-1",
			Members: []metadata.GroupMember{{MemberID: "m-1"}}},
		&metadata.CommitOffsets{Group: "silent", Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 3, LeaderEpoch: -1}}},
	)
	c := NewCoordinator(CoordinatorConfig{
		NodeID: 1,
		Group:  Config{MinSessionTimeout: 10 * time.Millisecond, MaxSessionTimeout: 50 * time.Millisecond},
		Logger: zerolog.Nop(), LoadScanInterval: 10 * time.Millisecond,
	}, md, md.node.Client())
	t.Cleanup(c.Close)
	eventually(t, func() (bool, string) {
		gen, _ := md.image().GroupGeneration("silent")
		return gen.Generation == 5 && len(gen.Members) == 0, fmt.Sprintf("generation %+v, want 5 without members", gen)
	})
	if o, ok := md.image().Offset("silent", "t", 0); !ok || o.Offset != 3 {
		t.Fatalf("offsets lost: %+v %v", o, ok)
	}
}

// A consumer group's generation records the union of its members'
// subscribed topics, sorted, so the controller can expire its offsets of
// other topics; nil when a subscription does not decode.
func TestPersistedGenerationCarriesSubscriptions(t *testing.T) {
	sub := func(topics ...string) joinOpt {
		return func(r *JoinRequest) {
			m := kmsg.NewConsumerMemberMetadata()
			m.Topics = topics
			r.Protocols = []Protocol{{Name: "range", Metadata: m.AppendTo(nil)}}
		}
	}
	for _, tc := range []struct {
		name   string
		a, b   joinOpt
		topics []string
	}{
		{"union", sub("b", "a"), sub("a", "c"), []string{"a", "b", "c"}},
		{"undecodable", sub("a"), withProtos("range"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.join("a", "", tc.a)
			h.join("b", "", tc.b)
			h.advance(3 * time.Second) // the initial delay, extended once: b joined during it
			h.advance(3 * time.Second)
			ja, jb := h.lastJoin("a"), h.lastJoin("b")
			leader := ja
			if jb.Leader == jb.MemberID {
				leader = jb
			}
			h.sync("leader", leader.MemberID, leader.Generation, map[string][]byte{ja.MemberID: {1}, jb.MemberID: {2}})
			rec := h.g.TakePersist()
			if rec == nil || len(rec.Members) != 2 {
				t.Fatalf("persisted %+v", rec)
			}
			if !slices.Equal(rec.SubscribedTopics, tc.topics) || (rec.SubscribedTopics == nil) != (tc.topics == nil) {
				t.Fatalf("subscribed topics %q, want %q", rec.SubscribedTopics, tc.topics)
			}
		})
	}
}
