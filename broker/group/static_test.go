package group

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// stableStatic brings a group to Stable with static members ia (the leader,
// assigned "A") and ib (assigned "B"), both offering protos in that order,
// and returns their member ids. The generation is 1.
func stableStatic(t *testing.T, h *harness, protos ...string) (a, b string) {
	t.Helper()
	h.join("a", "", withInstance("ia"), withProtos(protos...))
	h.join("b", "", withInstance("ib"), withProtos(protos...))
	h.advance(6 * time.Second)
	ja, jb := h.lastJoin("a"), h.lastJoin("b")
	a, b = ja.MemberID, jb.MemberID
	if ja.Leader != a || ja.Generation != 1 || ja.Protocol != protos[0] {
		t.Fatalf("setup joins %+v %+v", ja, jb)
	}
	h.sync("b", b, 1, nil)
	h.sync("a", a, 1, map[string][]byte{a: []byte("A"), b: []byte("B")})
	h.persistOK()
	h.lastSync("a")
	h.lastSync("b")
	h.state(Stable)
	return a, b
}

// TestStaticRejoinStable is a restarted static member (same instance id, no
// member id) rejoining a Stable group, as Kafka's classic coordinator
// handles it: the group stays Stable unless the member's protocols change
// the protocol the group would select, whether or not it is the leader;
// JoinGroup v9 (KIP-814) only changes what a rejoining leader is told.
func TestStaticRejoinStable(t *testing.T) {
	const (
		leaderBefore = "leader before" // the leader's old member id
		rejoined     = "rejoined"      // the rejoining member's new id
		unchanged    = "unchanged"     // ia's member id, which stays
	)
	cases := []struct {
		name     string
		instance string // "ia" is the leader, "ib" a follower
		v9       bool
		protos   []Protocol

		rebalance bool
		// The answer when the group stays Stable.
		leader      string // leaderBefore, rejoined or unchanged
		withMembers bool
		skip        bool
	}{
		{name: "leader v5", instance: "ia", protos: consumerProtos("range", "roundrobin"),
			leader: leaderBefore},
		{name: "leader v9", instance: "ia", v9: true, protos: consumerProtos("range", "roundrobin"),
			leader: rejoined, withMembers: true, skip: true},
		{name: "follower v5", instance: "ib", protos: consumerProtos("range", "roundrobin"),
			leader: unchanged},
		{name: "follower v9", instance: "ib", v9: true, protos: consumerProtos("range", "roundrobin"),
			leader: unchanged},
		// Kafka compares the selected protocol, not the metadata: a
		// changed subscription alone does not rebalance a Stable group.
		{name: "follower v5 new subscription", instance: "ib",
			protos: []Protocol{{Name: "range", Metadata: []byte("md-range-2")}, {Name: "roundrobin", Metadata: []byte("md-roundrobin")}},
			leader: unchanged},
		{name: "leader v5 new subscription", instance: "ia",
			protos: []Protocol{{Name: "range", Metadata: []byte("md-range-2")}, {Name: "roundrobin", Metadata: []byte("md-roundrobin")}},
			leader: leaderBefore},
		// ib's vote for roundrobin ties with ia's for range, and ties go to
		// the first member's preference: the selection stays range.
		{name: "follower v5 new preference, same selection", instance: "ib", protos: consumerProtos("roundrobin", "range"),
			leader: unchanged},
		// ia is the first member: its switch to roundrobin wins the tie.
		{name: "leader v5 selection changes", instance: "ia", protos: consumerProtos("roundrobin", "range"),
			rebalance: true},
		{name: "leader v9 selection changes", instance: "ia", v9: true, protos: consumerProtos("roundrobin", "range"),
			rebalance: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, nil)
			a, b := stableStatic(t, h, "range", "roundrobin")
			oldID, otherID, oldAssign, otherAssign := a, b, "A", "B"
			if c.instance == "ib" {
				oldID, otherID, oldAssign, otherAssign = b, a, "B", "A"
			}
			h.advance(2 * time.Second) // the restart takes a while
			opts := []joinOpt{withInstance(c.instance), func(r *JoinRequest) { r.Protocols = c.protos }}
			if c.v9 {
				opts = append(opts, skipAssign())
			}
			h.join("rejoin", "", opts...)

			if c.rebalance {
				h.noJoinReply("rejoin")
				h.state(PreparingRebalance)
				codeIs(t, "other's heartbeat", h.g.Heartbeat(h.now, otherID, "", 1), kerr.RebalanceInProgress)
				h.join("other", otherID, withInstance(map[string]string{a: "ia", b: "ib"}[otherID]), withProtos("range", "roundrobin"))
				j := h.lastJoin("rejoin")
				if j.ErrorCode != 0 || j.Generation != 2 || j.Protocol != "roundrobin" || j.MemberID == oldID || j.Leader != j.MemberID || len(j.Members) != 2 {
					t.Fatalf("rejoin after rebalance %+v", j)
				}
				h.lastJoin("other")
				return
			}

			j := h.lastJoin("rejoin")
			newID := j.MemberID
			if j.ErrorCode != 0 || newID == "" || newID == oldID {
				t.Fatalf("rejoin answer %+v: want no error and a new member id", j)
			}
			if j.Generation != 1 || j.Protocol != "range" || j.ProtocolType != "consumer" {
				t.Fatalf("rejoin answer %+v: want generation 1, consumer/range", j)
			}
			wantLeader := map[string]string{leaderBefore: a, rejoined: newID, unchanged: a}[c.leader]
			if j.Leader != wantLeader {
				t.Fatalf("rejoin answer leader %q, want %q (%s)", j.Leader, wantLeader, c.leader)
			}
			if j.SkipAssignment != c.skip {
				t.Fatalf("rejoin answer SkipAssignment %v, want %v", j.SkipAssignment, c.skip)
			}
			if c.withMembers {
				var ids []string
				for _, m := range j.Members {
					ids = append(ids, m.MemberID)
				}
				if len(ids) != 2 || !slices.Contains(ids, newID) || !slices.Contains(ids, otherID) {
					t.Fatalf("rejoin answer members %+v, want %s and %s", j.Members, newID, otherID)
				}
			} else if len(j.Members) != 0 {
				t.Fatalf("rejoin answer members %+v, want none", j.Members)
			}

			// Nobody else notices.
			h.state(Stable)
			if rec := h.g.TakePersist(); rec != nil {
				t.Fatalf("a stable rejoin persists %+v", rec)
			}
			codeIs(t, "other's heartbeat", h.g.Heartbeat(h.now, otherID, "", 1), nil)
			codeIs(t, "other's commit", h.g.ValidateCommit(h.now, otherID, "", 1), nil)
			codeIs(t, "rejoined heartbeat", h.g.Heartbeat(h.now, newID, c.instance, 1), nil)
			codeIs(t, "old id heartbeat", h.g.Heartbeat(h.now, oldID, c.instance, 1), kerr.FencedInstanceID)
			// The restarted member syncs (as a follower unless told it
			// leads, which v9 clients skip) and gets what it had.
			h.sync("rejoined", newID, 1, nil)
			if s := h.lastSync("rejoined"); s.ErrorCode != 0 || string(s.Assignment) != oldAssign {
				t.Fatalf("rejoined sync %+v, want %q", s, oldAssign)
			}
			h.sync("other", otherID, 1, nil)
			if s := h.lastSync("other"); s.ErrorCode != 0 || string(s.Assignment) != otherAssign {
				t.Fatalf("other's sync %+v, want %q", s, otherAssign)
			}
			// Its subscription is the one it rejoined with.
			want := c.protos[slices.IndexFunc(c.protos, func(p Protocol) bool { return p.Name == "range" })].Metadata
			for _, m := range h.g.Describe().Members {
				if m.MemberID == newID && !bytes.Equal(m.Metadata, want) {
					t.Fatalf("described metadata %q, want the rejoin's %q", m.Metadata, want)
				}
			}

			// The group's leader is the leader's new id: the next rebalance
			// hands it the member list.
			h.join("c", "")
			h.state(PreparingRebalance)
			h.join("again", newID, withInstance(c.instance), func(r *JoinRequest) { r.Protocols = c.protos })
			h.join("other", otherID, withInstance(map[string]string{a: "ia", b: "ib"}[otherID]), withProtos("range", "roundrobin"))
			ja := h.lastJoin("again")
			h.lastJoin("other")
			h.lastJoin("c")
			wantNext := a
			if c.instance == "ia" {
				wantNext = newID
			}
			if ja.ErrorCode != 0 || ja.Generation != 2 || ja.Leader != wantNext {
				t.Fatalf("next rebalance %+v, want leader %s", ja, wantNext)
			}
		})
	}
}

// TestStaticRejoinWhileRebalancing is a restarted static member arriving
// mid-rebalance. While the leader assigns (CompletingRebalance) its plan may
// name the old member id, so the group starts over, as Kafka does; while
// members join (PreparingRebalance) the new id takes the old one's place.
func TestStaticRejoinWhileRebalancing(t *testing.T) {
	t.Run("CompletingRebalance", func(t *testing.T) {
		h := newHarness(t, nil)
		a, b := stableStatic(t, h, "range")
		h.join("c", "") // a third member: generation 2 to assign
		h.join("a2", a, withInstance("ia"))
		h.join("b2", b, withInstance("ib"))
		c := h.lastJoin("c").MemberID
		h.lastJoin("a2")
		h.lastJoin("b2")
		h.state(CompletingRebalance)
		h.sync("b2", b, 2, nil)
		h.join("b3", "", withInstance("ib"))
		codeIs(t, "old id's waiting sync", h.lastSync("b2").ErrorCode, kerr.FencedInstanceID)
		h.state(PreparingRebalance)
		h.noJoinReply("b3")
		h.join("a3", a, withInstance("ia"))
		h.join("c3", c)
		j := h.lastJoin("b3")
		if j.ErrorCode != 0 || j.Generation != 3 || j.MemberID == b || j.Leader != a {
			t.Fatalf("restarted member's join %+v", j)
		}
		if ja := h.lastJoin("a3"); len(ja.Members) != 3 || !slices.ContainsFunc(ja.Members, func(m JoinedMember) bool { return m.MemberID == j.MemberID }) {
			t.Fatalf("leader's member list %+v, want the new id %s", ja.Members, j.MemberID)
		}
		h.lastJoin("c3")
	})
	t.Run("PreparingRebalance", func(t *testing.T) {
		h := newHarness(t, nil)
		a, b := stableStatic(t, h, "range")
		h.join("c", "")
		h.state(PreparingRebalance)
		h.join("a2", a, withInstance("ia"))
		h.join("b2", "", withInstance("ib")) // b restarted: no member id
		j := h.lastJoin("b2")
		if j.ErrorCode != 0 || j.Generation != 2 || j.MemberID == b || j.Leader != a {
			t.Fatalf("restarted member's join %+v", j)
		}
		ja := h.lastJoin("a2")
		if len(ja.Members) != 3 || slices.ContainsFunc(ja.Members, func(m JoinedMember) bool { return m.MemberID == b }) {
			t.Fatalf("leader's member list %+v still has the old id %s", ja.Members, b)
		}
		h.lastJoin("c")
		codeIs(t, "old id heartbeat", h.g.Heartbeat(h.now, b, "ib", 2), kerr.FencedInstanceID)
	})
}
