package consumergroup

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/group/assignor"
	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"
)

var t0 = time.Unix(1_700_000_000, 0)

func tid(b byte) assignor.TopicID { return assignor.TopicID{15: b} }

// world is the metadata a test's heartbeats see; tests change it to
// create or grow topics.
type world map[string]assignor.Topic

func (w world) Topic(n string) (assignor.Topic, bool) { t, ok := w[n]; return t, ok }
func (w world) TopicNames() []string                  { return slices.Sorted(maps.Keys(w)) }

func newWorld() world {
	return world{"a": {ID: tid(1), Name: "a", Partitions: 4}, "b": {ID: tid(2), Name: "b", Partitions: 2}}
}

func newGroup(maxSize int) *Group {
	n := 0
	return New("g", Config{
		SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second, MaxSize: maxSize,
		Assignors:   []assignor.Assignor{assignor.Uniform{}, assignor.Range{}},
		NewMemberID: func() string { n++; return fmt.Sprintf("gen-%d", n) },
	})
}

func str(s string) *string { return &s }

func joinReq(id string, topics ...string) HeartbeatRequest {
	return HeartbeatRequest{MemberID: id, MemberEpoch: 0, RebalanceTimeoutMs: 30000, SubscribedTopicNames: topics, Owned: []TopicPartitions{}}
}

// hbReq is a steady-state heartbeat reporting owned.
func hbReq(id string, epoch int32, owned assignor.Assignment) HeartbeatRequest {
	return HeartbeatRequest{MemberID: id, MemberEpoch: epoch, RebalanceTimeoutMs: -1, Owned: tps(owned)}
}

func tps(a assignor.Assignment) []TopicPartitions {
	out := []TopicPartitions{}
	for _, t := range slices.SortedFunc(maps.Keys(a), func(x, y assignor.TopicID) int { return int(x[15]) - int(y[15]) }) {
		out = append(out, TopicPartitions{TopicID: t, Partitions: slices.Clone(a[t])})
	}
	return out
}

// fmtA prints an assignment as "a0,1 b1".
func fmtA(a assignor.Assignment) string {
	var parts []string
	for _, t := range slices.SortedFunc(maps.Keys(a), func(x, y assignor.TopicID) int { return int(x[15]) - int(y[15]) }) {
		if len(a[t]) == 0 {
			continue
		}
		var ps []string
		for _, p := range a[t] {
			ps = append(ps, fmt.Sprint(p))
		}
		parts = append(parts, string(rune('a'+t[15]-1))+strings.Join(ps, ","))
	}
	return strings.Join(parts, " ")
}

func ok(t *testing.T, r HeartbeatResponse) HeartbeatResponse {
	t.Helper()
	if r.ErrorCode != 0 {
		t.Fatalf("heartbeat failed: %v: %s", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	return r
}

func wantErr(t *testing.T, r HeartbeatResponse, e *kerr.Error) {
	t.Helper()
	if r.ErrorCode != e.Code {
		t.Fatalf("error %v (%s), want %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, e)
	}
}

func member(t *testing.T, g *Group, id string) Member {
	t.Helper()
	m, found := g.Member(id)
	if !found {
		t.Fatalf("no member %s", id)
	}
	return m
}

// TestHeartbeatIntervalWhileConverging: a tenth of the interval (at least
// 100 ms, at most the interval) for one interval after the target
// changes and for a member not yet reconciled; the interval itself once
// the group is steady.
func TestHeartbeatIntervalWhileConverging(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	r := ok(t, g.Heartbeat(now, joinReq("m1", "a", "b"), w))
	if r.HeartbeatIntervalMs != 500 {
		t.Fatalf("first join: interval %d, want 500", r.HeartbeatIntervalMs)
	}
	m1 := r.Assignment
	now = now.Add(5 * time.Second)
	if r = ok(t, g.Heartbeat(now, hbReq("m1", 1, m1), w)); r.HeartbeatIntervalMs != 5000 {
		t.Fatalf("steady member 5 s after the change: interval %d, want 5000", r.HeartbeatIntervalMs)
	}
	// m2 joins: a new target; m1 hears of it at its next (slow) heartbeat,
	// and from then on both are fast until they are reconciled.
	now = now.Add(time.Second)
	if r2 := ok(t, g.Heartbeat(now, joinReq("m2", "a", "b"), w)); r2.HeartbeatIntervalMs != 500 {
		t.Fatalf("m2 joining: interval %d, want 500", r2.HeartbeatIntervalMs)
	}
	now = now.Add(6 * time.Second) // past the window: m2 waits for m1's release
	if r2 := ok(t, g.Heartbeat(now, hbReq("m2", 2, nil), w)); r2.HeartbeatIntervalMs != 500 || member(t, g, "m2").State != UnreleasedPartitions {
		t.Fatalf("m2 unreleased after the window: interval %d, state %v, want 500", r2.HeartbeatIntervalMs, member(t, g, "m2").State)
	}
	if r = ok(t, g.Heartbeat(now, hbReq("m1", 1, m1), w)); r.HeartbeatIntervalMs != 500 || member(t, g, "m1").State != UnrevokedPartitions {
		t.Fatalf("m1 told to revoke: interval %d, state %v, want 500", r.HeartbeatIntervalMs, member(t, g, "m1").State)
	}
	if r = ok(t, g.Heartbeat(now, hbReq("m1", 1, r.Assignment), w)); r.HeartbeatIntervalMs != 5000 || member(t, g, "m1").State != Stable {
		t.Fatalf("m1 reconciled: interval %d, state %v, want 5000", r.HeartbeatIntervalMs, member(t, g, "m1").State)
	}

	// The floor and the ceiling.
	for _, c := range []struct{ interval, want time.Duration }{
		{5 * time.Second, 500 * time.Millisecond},
		{500 * time.Millisecond, 100 * time.Millisecond},
		{50 * time.Millisecond, 50 * time.Millisecond},
	} {
		g := newGroup(0)
		g.cfg.HeartbeatInterval = c.interval
		if got := g.heartbeatInterval(t0, &Member{Epoch: 1}); got != c.want {
			t.Errorf("interval %v converging: %v, want %v", c.interval, got, c.want)
		}
	}
}

func TestJoinAndIncrementalRebalance(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	r := ok(t, g.Heartbeat(now, joinReq("m1", "a", "b"), w))
	if r.MemberEpoch != 1 || g.Epoch() != 1 || g.AssignmentEpoch() != 1 || !r.HasAssignment || fmtA(r.Assignment) != "a0,1,2,3 b0,1" || g.State() != "Stable" {
		t.Fatalf("first join: %+v, group epoch %d/%d %s", r, g.Epoch(), g.AssignmentEpoch(), g.State())
	}
	if r.HeartbeatIntervalMs != 500 {
		t.Errorf("interval %d, want 500 (a tenth of 5 s while the group converges)", r.HeartbeatIntervalMs)
	}
	m1 := r.Assignment

	// m2 joins: epoch 2, a new target, but m1 still holds everything, so
	// m2 is at epoch 2 with nothing yet (unreleased).
	r2 := ok(t, g.Heartbeat(now, joinReq("m2", "a", "b"), w))
	if r2.MemberEpoch != 2 || !r2.HasAssignment || fmtA(r2.Assignment) != "" || member(t, g, "m2").State != UnreleasedPartitions {
		t.Fatalf("second join: %+v %v", r2, member(t, g, "m2").State)
	}
	if g.State() != "Reconciling" || fmtA(g.Target("m1")) != "a0,1,2" || fmtA(g.Target("m2")) != "a3 b0,1" {
		t.Fatalf("target m1 %s m2 %s, state %s", fmtA(g.Target("m1")), fmtA(g.Target("m2")), g.State())
	}
	// m1 heartbeats: it must revoke a3 and b first, at epoch 1.
	r = ok(t, g.Heartbeat(now, hbReq("m1", 1, m1), w))
	if r.MemberEpoch != 1 || !r.HasAssignment || fmtA(r.Assignment) != "a0,1,2" || member(t, g, "m1").State != UnrevokedPartitions {
		t.Fatalf("m1 asked to revoke: %+v", r)
	}
	// m2 still gets nothing: m1 has not said it revoked.
	r2 = ok(t, g.Heartbeat(now, hbReq("m2", 2, nil), w))
	if r2.HasAssignment || member(t, g, "m2").State != UnreleasedPartitions {
		t.Fatalf("m2 before the revocation: %+v", r2)
	}
	// A heartbeat that still reports the revoked partitions changes nothing.
	r = ok(t, g.Heartbeat(now, hbReq("m1", 1, m1), w))
	if r.MemberEpoch != 1 || r.HasAssignment {
		t.Fatalf("m1 still owning: %+v", r)
	}
	m1 = assignor.Assignment{tid(1): {0, 1, 2}}
	r = ok(t, g.Heartbeat(now, hbReq("m1", 1, m1), w))
	if r.MemberEpoch != 2 || r.HasAssignment || member(t, g, "m1").State != Stable {
		t.Fatalf("m1 after revoking: %+v", r)
	}
	r2 = ok(t, g.Heartbeat(now, hbReq("m2", 2, assignor.Assignment{}), w))
	if r2.MemberEpoch != 2 || !r2.HasAssignment || fmtA(r2.Assignment) != "a3 b0,1" || g.State() != "Stable" {
		t.Fatalf("m2 after the release: %+v, %s", r2, g.State())
	}
}

func TestEpochFencing(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	r := ok(t, g.Heartbeat(now, joinReq("m1", "a"), w))
	all := r.Assignment
	// The join's answer was lost: the client joins again with epoch 0 and
	// the same id, owning nothing (a subset): accepted, at epoch 1.
	if r := ok(t, g.Heartbeat(now, joinReq("m1", "a"), w)); r.MemberEpoch != 1 {
		t.Fatalf("repeated join: %+v", r)
	}
	wantErr(t, g.Heartbeat(now, hbReq("m1", 2, all), w), kerr.FencedMemberEpoch)
	// m2 joins; m1 revokes and moves to epoch 2 (previous 1).
	ok(t, g.Heartbeat(now, joinReq("m2", "a"), w))
	r = ok(t, g.Heartbeat(now, hbReq("m1", 1, all), w))
	r = ok(t, g.Heartbeat(now, hbReq("m1", 1, r.Assignment), w))
	if m := member(t, g, "m1"); m.Epoch != 2 || m.PreviousEpoch != 1 || fmtA(m.Assigned) != "a0,1" {
		t.Fatalf("m1 %+v", m)
	}
	for _, tc := range []struct {
		name  string
		epoch int32
		owned assignor.Assignment
		want  *kerr.Error
	}{
		{"ahead", 3, nil, kerr.FencedMemberEpoch},
		{"current", 2, assignor.Assignment{tid(1): {0, 1}}, nil},
		{"previous epoch, a subset (the bump was lost)", 1, assignor.Assignment{tid(1): {0}}, nil},
		{"previous epoch, more than the assignment", 1, assignor.Assignment{tid(1): {0, 3}}, kerr.FencedMemberEpoch},
		{"previous epoch, owned not sent", 1, nil, kerr.FencedMemberEpoch},
		{"older epoch", 0, nil, kerr.FencedMemberEpoch},
	} {
		req := hbReq("m1", tc.epoch, tc.owned)
		if tc.owned == nil {
			req.Owned = nil
		}
		if tc.epoch == 0 {
			req = joinReq("m1", "a")
		}
		r := g.Heartbeat(now, req, w)
		if tc.want == nil && r.ErrorCode != 0 || tc.want != nil && r.ErrorCode != tc.want.Code {
			t.Errorf("%s: %v (%s)", tc.name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
	}
	wantErr(t, g.Heartbeat(now, hbReq("nobody", 1, nil), w), kerr.UnknownMemberID)
	wantErr(t, g.Heartbeat(now, HeartbeatRequest{MemberID: "nobody", MemberEpoch: LeaveEpoch}, w), kerr.UnknownMemberID)
	// Fencing answers change nothing: m1 is still there at epoch 2.
	if m := member(t, g, "m1"); m.Epoch != 2 {
		t.Fatalf("m1 after refusals: %+v", m)
	}
}

func TestValidation(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	for _, tc := range []struct {
		name string
		req  HeartbeatRequest
		want *kerr.Error
	}{
		{"empty instance id", func() HeartbeatRequest { r := joinReq("m", "a"); r.InstanceID = str(""); return r }(), kerr.InvalidRequest},
		{"empty rack", func() HeartbeatRequest { r := joinReq("m", "a"); r.RackID = str(""); return r }(), kerr.InvalidRequest},
		{"join without a rebalance timeout", func() HeartbeatRequest { r := joinReq("m", "a"); r.RebalanceTimeoutMs = -1; return r }(), kerr.InvalidRequest},
		{"join owning partitions", func() HeartbeatRequest {
			r := joinReq("m", "a")
			r.Owned = []TopicPartitions{{TopicID: tid(1), Partitions: []int32{0}}}
			return r
		}(), kerr.InvalidRequest},
		{"join with owned null", func() HeartbeatRequest { r := joinReq("m", "a"); r.Owned = nil; return r }(), kerr.InvalidRequest},
		{"join without topics", joinReq("m"), kerr.InvalidRequest},
		{"v1 join without a member id", func() HeartbeatRequest { r := joinReq("", "a"); r.Version = 1; return r }(), kerr.InvalidRequest},
		{"static leave v1 without a member id", HeartbeatRequest{Version: 1, MemberEpoch: StaticLeaveEpoch, InstanceID: str("i")}, kerr.InvalidRequest},
		{"regex that does not compile", func() HeartbeatRequest { r := joinReq("m"); r.SubscribedTopicRegex = str("a(b"); return r }(), kerr.InvalidRegularExpression},
		{"epoch -3", HeartbeatRequest{MemberID: "m", MemberEpoch: -3}, kerr.InvalidRequest},
		{"heartbeat without member id", hbReq("", 3, nil), kerr.InvalidRequest},
		{"static leave without instance", HeartbeatRequest{MemberID: "m", MemberEpoch: StaticLeaveEpoch}, kerr.InvalidRequest},
		{"unknown assignor", func() HeartbeatRequest { r := joinReq("m", "a"); r.ServerAssignor = str("sticky"); return r }(), kerr.UnsupportedAssignor},
	} {
		r := g.Heartbeat(now, tc.req, w)
		if r.ErrorCode != tc.want.Code {
			t.Errorf("%s: %v (%s), want %v", tc.name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, tc.want)
		}
	}
	if len(g.MemberIDs()) != 0 || g.Epoch() != 0 {
		t.Fatalf("refused requests changed the group: members %v epoch %d", g.MemberIDs(), g.Epoch())
	}
	// A v0 client sends no member id: the coordinator names it.
	r := ok(t, g.Heartbeat(now, joinReq("", "a"), w))
	if r.MemberID != "gen-1" {
		t.Errorf("generated member id %q", r.MemberID)
	}
	// An empty subscription (names or regex) is a member with nothing.
	for i, req := range []HeartbeatRequest{joinReq("empty-names"), joinReq("empty-regex")} {
		if i == 0 {
			req.SubscribedTopicNames = []string{}
		} else {
			req.SubscribedTopicRegex = str("")
		}
		if r := ok(t, g.Heartbeat(now, req, w)); !r.HasAssignment || len(r.Assignment) != 0 {
			t.Errorf("%s: %+v", req.MemberID, r)
		}
	}
}

func TestMaxSize(t *testing.T) {
	w, g, now := newWorld(), newGroup(1), t0
	ok(t, g.Heartbeat(now, joinReq("m1", "a"), w))
	wantErr(t, g.Heartbeat(now, joinReq("m2", "a"), w), kerr.GroupMaxSizeReached)
	ok(t, g.Heartbeat(now, hbReq("m1", 1, assignor.Assignment{tid(1): {0, 1, 2, 3}}), w))
}

func TestStaticMembership(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	join := func(id, inst string) HeartbeatRequest { r := joinReq(id, "a"); r.InstanceID = str(inst); return r }
	r := ok(t, g.Heartbeat(now, join("s1", "i1"), w))
	owned := r.Assignment
	// The instance is held: another member id cannot take it.
	wantErr(t, g.Heartbeat(now, join("s2", "i1"), w), kerr.UnreleasedInstanceID)
	// A heartbeat with the instance under another member id is fenced.
	req := hbReq("s2", 1, owned)
	req.InstanceID = str("i1")
	wantErr(t, g.Heartbeat(now, req, w), kerr.FencedInstanceID)
	req.MemberID, req.InstanceID = "s3", str("i9")
	wantErr(t, g.Heartbeat(now, req, w), kerr.UnknownMemberID)

	// A temporary leave (-2) keeps the assignment for the instance.
	leave := HeartbeatRequest{MemberID: "s1", MemberEpoch: StaticLeaveEpoch, InstanceID: str("i1")}
	if r := ok(t, g.Heartbeat(now, leave, w)); r.MemberEpoch != StaticLeaveEpoch {
		t.Fatalf("static leave answered epoch %d", r.MemberEpoch)
	}
	epoch := g.Epoch()
	r = ok(t, g.Heartbeat(now, join("s2", "i1"), w))
	if r.MemberID != "s2" || fmtA(r.Assignment) != fmtA(owned) || g.Epoch() != epoch || r.MemberEpoch != epoch {
		t.Fatalf("rejoin under a new id: %+v, group epoch %d (was %d)", r, g.Epoch(), epoch)
	}
	if _, found := g.Member("s1"); found || !slices.Equal(g.MemberIDs(), []string{"s2"}) {
		t.Fatalf("members %v after the replacement", g.MemberIDs())
	}
	// A leave for good (-1) by instance frees everything and bumps the epoch.
	ok(t, g.Heartbeat(now, HeartbeatRequest{MemberID: "s2", MemberEpoch: LeaveEpoch, InstanceID: str("i1")}, w))
	if len(g.MemberIDs()) != 0 || g.Epoch() != epoch+1 || g.State() != "Empty" {
		t.Fatalf("after leave: members %v epoch %d state %s", g.MemberIDs(), g.Epoch(), g.State())
	}
}

func TestLeaveFreesPartitions(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	r1 := ok(t, g.Heartbeat(now, joinReq("m1", "a"), w))
	ok(t, g.Heartbeat(now, joinReq("m2", "a"), w))
	r1 = ok(t, g.Heartbeat(now, hbReq("m1", 1, r1.Assignment), w)) // asked to revoke
	r1 = ok(t, g.Heartbeat(now, hbReq("m1", 1, r1.Assignment), w)) // revoked
	r2 := ok(t, g.Heartbeat(now, hbReq("m2", 2, nil), w))
	if fmtA(r1.Assignment) != "" && r1.HasAssignment || fmtA(r2.Assignment) != "a2,3" {
		t.Fatalf("before leave: m1 %+v m2 %+v", r1, r2)
	}
	before := g.Epoch()
	r := ok(t, g.Heartbeat(now, HeartbeatRequest{MemberID: "m2", MemberEpoch: LeaveEpoch}, w))
	if r.MemberEpoch != LeaveEpoch || g.Epoch() != before+1 {
		t.Fatalf("leave: %+v epoch %d", r, g.Epoch())
	}
	// m2's partitions are free at once: m1 gets them on its next heartbeat.
	r1 = ok(t, g.Heartbeat(now, hbReq("m1", 2, assignor.Assignment{tid(1): {0, 1}}), w))
	if r1.MemberEpoch != before+1 || fmtA(r1.Assignment) != "a0,1,2,3" || g.State() != "Stable" {
		t.Fatalf("after leave: %+v %s", r1, g.State())
	}
}

func TestSessionAndRebalanceTimeouts(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	r1 := ok(t, g.Heartbeat(now, joinReq("m1", "a"), w))
	now = now.Add(10 * time.Second)
	ok(t, g.Heartbeat(now, joinReq("m2", "a"), w))
	if d := g.NextDeadline(); !d.Equal(t0.Add(45 * time.Second)) {
		t.Fatalf("next deadline %v", d)
	}
	// m1 is asked to revoke (rebalance timeout 30 s from now) ...
	now = now.Add(time.Second)
	ok(t, g.Heartbeat(now, hbReq("m1", 1, r1.Assignment), w))
	if d := g.NextDeadline(); !d.Equal(now.Add(30 * time.Second)) {
		t.Fatalf("next deadline %v, want the rebalance timeout", d)
	}
	// ... keeps heartbeating without revoking, and is fenced when it passes.
	for i := range 5 {
		now = now.Add(5 * time.Second)
		ok(t, g.Heartbeat(now, hbReq("m1", 1, r1.Assignment), w))
		ok(t, g.Heartbeat(now, hbReq("m2", 2, nil), w))
		if fenced := g.Tick(now); len(fenced) != 0 {
			t.Fatalf("fenced %v after %d heartbeats", fenced, i+1)
		}
	}
	now = now.Add(5 * time.Second)
	if fenced := g.Tick(now); !slices.Equal(fenced, []string{"m1"}) {
		t.Fatalf("fenced %v, want m1 (rebalance timeout)", fenced)
	}
	wantErr(t, g.Heartbeat(now, hbReq("m1", 1, r1.Assignment), w), kerr.UnknownMemberID)
	r2 := ok(t, g.Heartbeat(now, hbReq("m2", 2, nil), w))
	if fmtA(r2.Assignment) != "a0,1,2,3" {
		t.Fatalf("m2 after m1's fencing: %+v", r2)
	}
	// m2 stops heartbeating: its session expires.
	if fenced := g.Tick(now.Add(44 * time.Second)); len(fenced) != 0 {
		t.Fatalf("fenced %v before the session timeout", fenced)
	}
	if fenced := g.Tick(now.Add(45 * time.Second)); !slices.Equal(fenced, []string{"m2"}) || g.State() != "Empty" {
		t.Fatalf("fenced %v, state %s", fenced, g.State())
	}
	if !g.NextDeadline().IsZero() {
		t.Fatalf("deadline %v in an empty group", g.NextDeadline())
	}
}

func TestMetadataAndSubscriptionChanges(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	r := ok(t, g.Heartbeat(now, joinReq("m1", "a", "missing"), w))
	if fmtA(r.Assignment) != "a0,1,2,3" || g.Epoch() != 1 {
		t.Fatalf("join: %+v", r)
	}
	own := r.Assignment
	// Nothing changed: no new epoch.
	ok(t, g.Heartbeat(now, hbReq("m1", 1, own), w))
	if g.Epoch() != 1 {
		t.Fatalf("epoch %d without a change", g.Epoch())
	}
	// The subscribed topic appears and a grows: a new epoch, more partitions.
	w["missing"] = assignor.Topic{ID: tid(3), Partitions: 1}
	a := w["a"]
	a.Partitions = 5
	w["a"] = a
	r = ok(t, g.Heartbeat(now, hbReq("m1", 1, own), w))
	if g.Epoch() != 2 || r.MemberEpoch != 2 || fmtA(r.Assignment) != "a0,1,2,3,4 c0" {
		t.Fatalf("after metadata change: epoch %d %+v", g.Epoch(), r)
	}
	own = r.Assignment
	// The member drops topic "missing" from its subscription: revoke c0.
	req := hbReq("m1", 2, own)
	req.SubscribedTopicNames = []string{"a"}
	r = ok(t, g.Heartbeat(now, req, w))
	if g.Epoch() != 3 || r.MemberEpoch != 2 || fmtA(r.Assignment) != "a0,1,2,3,4" || member(t, g, "m1").State != UnrevokedPartitions {
		t.Fatalf("after unsubscribing: epoch %d %+v", g.Epoch(), r)
	}
	r = ok(t, g.Heartbeat(now, hbReq("m1", 2, r.Assignment), w))
	if r.MemberEpoch != 3 || g.State() != "Stable" {
		t.Fatalf("after revoking: %+v %s", r, g.State())
	}
}

func TestServerAssignorChoice(t *testing.T) {
	w, g, now := world{"a": {ID: tid(1), Partitions: 2}, "b": {ID: tid(2), Partitions: 2}}, newGroup(0), t0
	join := func(id string) HeartbeatRequest {
		r := joinReq(id, "a", "b")
		r.ServerAssignor = str("range")
		return r
	}
	ok(t, g.Heartbeat(now, join("m1"), w))
	ok(t, g.Heartbeat(now, join("m2"), w))
	// range co-partitions: each member gets the same partition of a and b;
	// uniform would give m1 a0,1 and m2 b0,1.
	if fmtA(g.Target("m1")) != "a0 b0" || fmtA(g.Target("m2")) != "a1 b1" {
		t.Fatalf("targets m1 %s m2 %s, want range's", fmtA(g.Target("m1")), fmtA(g.Target("m2")))
	}
}

// sim is a simulated client. It owns what its last answer assigned,
// plus, when it revokes slowly, the partitions it was told to give up
// and has not finished revoking (it keeps reporting them meanwhile, as a
// consumer committing before it lets go does).
type sim struct {
	id       string
	instance string   // group.instance.id; "" for a dynamic member
	topics   []string // its subscription
	resub    bool     // the subscription changed since the last heartbeat
	epoch    int32
	owned    assignor.Assignment
	revoking assignor.Assignment
	alive    bool
}

func (c *sim) drop() { c.owned, c.revoking, c.epoch = assignor.Assignment{}, assignor.Assignment{}, 0 }

// heartbeat sends one heartbeat; finish ends a slow revocation first,
// slow makes the revocations this answer asks for slow.
func (c *sim) heartbeat(g *Group, now time.Time, w world, topics []string, finish, slow bool) HeartbeatResponse {
	if finish && len(c.revoking) > 0 {
		for t, ps := range c.revoking {
			c.owned[t] = slices.DeleteFunc(c.owned[t], func(p int32) bool { return slices.Contains(ps, p) })
			if len(c.owned[t]) == 0 {
				delete(c.owned, t)
			}
		}
		c.revoking = assignor.Assignment{}
	}
	if c.topics != nil {
		topics = c.topics
	}
	req := hbReq(c.id, c.epoch, c.owned)
	if c.resub {
		req.SubscribedTopicNames, c.resub = topics, false
	}
	if c.epoch == 0 {
		req = joinReq(c.id, topics...)
	}
	if c.instance != "" {
		req.InstanceID = str(c.instance)
	}
	r := g.Heartbeat(now, req, w)
	switch {
	case r.ErrorCode == kerr.FencedMemberEpoch.Code || r.ErrorCode == kerr.UnknownMemberID.Code ||
		r.ErrorCode == kerr.FencedInstanceID.Code || r.ErrorCode == kerr.UnreleasedInstanceID.Code:
		c.drop()
	case r.ErrorCode != 0:
	default:
		c.epoch = r.MemberEpoch
		if !r.HasAssignment {
			break
		}
		next := cloneAssignment(r.Assignment)
		for t, ps := range c.owned {
			for _, p := range ps {
				if !slices.Contains(next[t], p) && (slow || slices.Contains(c.revoking[t], p)) {
					next[t] = append(next[t], p)
					if !slices.Contains(c.revoking[t], p) {
						c.revoking[t] = append(c.revoking[t], p)
					}
				}
			}
		}
		c.owned = next
	}
	return r
}

// TestNoPartitionHasTwoOwners drives random joins, heartbeats, leaves,
// kills, clock moves and topic growth, and checks after every step that
// no partition is owned by two clients (nor held by two members in the
// coordinator), that what a client owns the coordinator knows it holds,
// and at the end that the group converges: Stable, every partition owned
// once.
func TestNoPartitionHasTwoOwners(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w, g, now := newWorld(), newGroup(0), t0
		topics := []string{"a", "b"}
		var clients []*sim
		alive := func() []*sim {
			var out []*sim
			for _, c := range clients {
				if c.alive {
					out = append(out, c)
				}
			}
			return out
		}
		check := func(step string) {
			seen := map[tp]string{}
			for _, c := range alive() {
				for t, ps := range c.owned {
					for _, p := range ps {
						if o, dup := seen[tp{t, p}]; dup {
							rt.Fatalf("%s: partition %x-%d owned by %s and %s", step, t[15], p, o, c.id)
						}
						seen[tp{t, p}] = c.id
					}
				}
				if m, found := g.Member(c.id); found {
					for t, ps := range c.owned {
						for _, p := range ps {
							if !slices.Contains(m.Assigned[t], p) && !slices.Contains(m.PendingRevocation[t], p) {
								rt.Fatalf("%s: %s owns %x-%d the coordinator does not know of", step, c.id, t[15], p)
							}
						}
					}
				}
			}
			held := map[tp]string{}
			for _, id := range g.MemberIDs() {
				m, _ := g.Member(id)
				for _, a := range []assignor.Assignment{m.Assigned, m.PendingRevocation} {
					for t, ps := range a {
						for _, p := range ps {
							if o, dup := held[tp{t, p}]; dup {
								rt.Fatalf("%s: coordinator has %x-%d with %s and %s", step, t[15], p, o, id)
							}
							held[tp{t, p}] = id
						}
					}
				}
			}
		}
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for i := range steps {
			live := alive()
			switch op := rapid.IntRange(0, 12).Draw(rt, "op"); {
			case op == 0 || len(live) == 0:
				c := &sim{id: fmt.Sprintf("c%d", len(clients)), owned: assignor.Assignment{}, revoking: assignor.Assignment{}, alive: true}
				if rapid.Bool().Draw(rt, "static") {
					c.instance = fmt.Sprintf("i%d", len(clients))
				}
				clients = append(clients, c)
				c.heartbeat(g, now, w, topics, false, false)
			case op == 11:
				// A static member restarts: leave with -2, come back under
				// a new member id with the same instance id.
				c := live[rapid.IntRange(0, len(live)-1).Draw(rt, "restarter")]
				if c.instance == "" || c.epoch <= 0 {
					break
				}
				g.Heartbeat(now, HeartbeatRequest{MemberID: c.id, MemberEpoch: StaticLeaveEpoch, InstanceID: str(c.instance)}, w)
				c.alive = false
				check(fmt.Sprintf("step %d, static leave", i))
				n := &sim{id: fmt.Sprintf("c%d", len(clients)), instance: c.instance, topics: c.topics, owned: assignor.Assignment{}, revoking: assignor.Assignment{}, alive: true}
				clients = append(clients, n)
				n.heartbeat(g, now, w, topics, false, false)
			case op == 12:
				// A member changes its subscription.
				c := live[rapid.IntRange(0, len(live)-1).Draw(rt, "resubscriber")]
				if len(c.topics) == 1 {
					c.topics = []string{"a", "b"}
				} else {
					c.topics = []string{"a"}
				}
				c.resub = true
			case op <= 5:
				c := live[rapid.IntRange(0, len(live)-1).Draw(rt, "who")]
				c.heartbeat(g, now, w, topics, rapid.Bool().Draw(rt, "finish revoking"), rapid.Bool().Draw(rt, "revoke slowly"))
			case op == 6:
				c := live[rapid.IntRange(0, len(live)-1).Draw(rt, "leaver")]
				c.alive = false
				g.Heartbeat(now, HeartbeatRequest{MemberID: c.id, MemberEpoch: LeaveEpoch}, w)
			case op == 7:
				// SIGKILL: the process is gone, the coordinator finds out by
				// the session timeout.
				live[rapid.IntRange(0, len(live)-1).Draw(rt, "victim")].alive = false
			case op == 8:
				now = now.Add(time.Duration(rapid.IntRange(1, 20).Draw(rt, "seconds")) * time.Second)
				for _, id := range g.Tick(now) {
					// A fenced member's client is told on its next heartbeat;
					// it stops processing when its session is gone.
					for _, c := range clients {
						if c.id == id {
							c.drop()
						}
					}
				}
			case op == 10:
				// The coordinator fails over: the next one loads the state.
				var err error
				if g, err = Restore("g", g.cfg, g.Export(), now); err != nil {
					rt.Fatalf("restore: %v", err)
				}
			case op == 9:
				top := w["a"]
				top.Partitions += int32(rapid.IntRange(1, 3).Draw(rt, "grow"))
				w["a"] = top
			}
			check(fmt.Sprintf("step %d", i))
		}
		// Let every live client heartbeat until the group settles.
		live := alive()
		if len(live) == 0 {
			return
		}
		for round := range 20 {
			for _, c := range live {
				c.heartbeat(g, now, w, topics, true, false)
				check(fmt.Sprintf("settling round %d", round))
			}
		}
		now = now.Add(time.Minute)
		g.Tick(now) // the killed members' sessions expire
		for round := range 20 {
			for _, c := range live {
				now = now.Add(time.Second)
				c.heartbeat(g, now, w, topics, true, false)
				check(fmt.Sprintf("settling after expiry, round %d", round))
			}
		}
		if g.State() != "Stable" {
			rt.Fatalf("group %s after settling (epoch %d, target %d)", g.State(), g.Epoch(), g.AssignmentEpoch())
		}
		total, want := 0, int(w["a"].Partitions)
		subscribedB := false
		for _, c := range live {
			total += c.owned.Count()
			subscribedB = subscribedB || len(c.topics) != 1
		}
		if subscribedB {
			want += int(w["b"].Partitions)
		}
		if total != want {
			rt.Fatalf("clients own %d partitions, want %d", total, want)
		}
	})
}

func TestStaticMemberAwayKeepsItsPartitions(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	sj := joinReq("s1", "a")
	sj.InstanceID = str("i1")
	rs := ok(t, g.Heartbeat(now, sj, w))
	ok(t, g.Heartbeat(now, joinReq("m2", "a"), w))
	rs = ok(t, g.Heartbeat(now, hbReq("s1", 1, rs.Assignment), w)) // revoke a2,3
	req := hbReq("s1", 1, rs.Assignment)
	req.InstanceID = str("i1")
	rs = ok(t, g.Heartbeat(now, req, w))
	ok(t, g.Heartbeat(now, hbReq("m2", 2, nil), w))
	if fmtA(member(t, g, "s1").Assigned) != "a0,1" || fmtA(member(t, g, "m2").Assigned) != "a2,3" {
		t.Fatalf("s1 %s m2 %s", fmtA(member(t, g, "s1").Assigned), fmtA(member(t, g, "m2").Assigned))
	}
	// s1 goes away for a restart (-2); a third member joins meanwhile. The
	// away member still counts: its partitions are not handed out.
	ok(t, g.Heartbeat(now, HeartbeatRequest{MemberID: "s1", MemberEpoch: StaticLeaveEpoch, InstanceID: str("i1")}, w))
	now = now.Add(10 * time.Second)
	r3 := ok(t, g.Heartbeat(now, joinReq("m3", "a"), w))
	for range 3 {
		ok(t, g.Heartbeat(now, hbReq("m2", member(t, g, "m2").Epoch, member(t, g, "m2").Assigned), w))
		r3 = ok(t, g.Heartbeat(now, hbReq("m3", member(t, g, "m3").Epoch, member(t, g, "m3").Assigned), w))
	}
	if got := fmtA(r3.Assignment) + "|" + fmtA(member(t, g, "m2").Assigned); strings.Contains(got, "0") || strings.Contains(got, "a1") {
		t.Fatalf("the away member's partitions were handed out: m3 %s m2 %s", fmtA(r3.Assignment), fmtA(member(t, g, "m2").Assigned))
	}
	// The instance comes back under a new id before its session ends and
	// gets its partitions back.
	sj = joinReq("s1-new", "a")
	sj.InstanceID = str("i1")
	rs = ok(t, g.Heartbeat(now, sj, w))
	if !strings.Contains(fmtA(rs.Assignment), "a0") {
		t.Fatalf("rejoined instance got %s (target %s)", fmtA(rs.Assignment), fmtA(g.Target("s1-new")))
	}
	// Had it not come back, its session would have fenced it.
	if fenced := g.Tick(t0.Add(45 * time.Second)); slices.Contains(fenced, "s1") || slices.Contains(fenced, "s1-new") {
		t.Fatalf("fenced %v", fenced)
	}
	g2 := newGroup(0)
	sj = joinReq("s1", "a")
	sj.InstanceID = str("i1")
	ok(t, g2.Heartbeat(t0, sj, w))
	ok(t, g2.Heartbeat(t0, HeartbeatRequest{MemberID: "s1", MemberEpoch: StaticLeaveEpoch, InstanceID: str("i1")}, w))
	if fenced := g2.Tick(t0.Add(45 * time.Second)); !slices.Equal(fenced, []string{"s1"}) || g2.State() != "Empty" {
		t.Fatalf("away static member not fenced at its session timeout: %v %s", fenced, g2.State())
	}
}

func TestRegexSubscription(t *testing.T) {
	w := world{"orders-eu": {ID: tid(1), Partitions: 2}, "orders-us": {ID: tid(2), Partitions: 1}, "audit": {ID: tid(3), Partitions: 1}}
	g, now := newGroup(0), t0
	req := joinReq("m1")
	req.SubscribedTopicRegex = str("orders-.*")
	r := ok(t, g.Heartbeat(now, req, w))
	if fmtA(r.Assignment) != "a0,1 b0" {
		t.Fatalf("regex join: %s", fmtA(r.Assignment))
	}
	// The regex matches whole names: "x-orders-eu" is not an orders- topic.
	w["x-orders-eu"] = assignor.Topic{ID: tid(4), Partitions: 1}
	r = ok(t, g.Heartbeat(now, hbReq("m1", 1, r.Assignment), w))
	if g.Epoch() != 1 {
		t.Fatalf("a non-matching topic bumped the epoch to %d", g.Epoch())
	}
	// A new matching topic bumps the epoch and is assigned.
	w["orders-ap"] = assignor.Topic{ID: tid(3), Partitions: 1}
	delete(w, "audit")
	r = ok(t, g.Heartbeat(now, hbReq("m1", 1, assignor.Assignment{tid(1): {0, 1}, tid(2): {0}}), w))
	if g.Epoch() != 2 || fmtA(r.Assignment) != "a0,1 b0 c0" {
		t.Fatalf("new matching topic: epoch %d, %s", g.Epoch(), fmtA(r.Assignment))
	}
	// Names and a regex together: the union.
	req = joinReq("m2", "x-orders-eu")
	req.SubscribedTopicRegex = str("orders-(eu|us)")
	ok(t, g.Heartbeat(now, req, w))
	if got := fmtA(g.Target("m2")); !strings.Contains(got, "d0") || strings.Contains(got, "c") {
		t.Fatalf("m2's target %s: want x-orders-eu and only eu/us orders", got)
	}
	// Changing the regex bumps the epoch.
	before := g.Epoch()
	req = hbReq("m2", member(t, g, "m2").Epoch, member(t, g, "m2").Assigned)
	req.SubscribedTopicRegex = str("orders-us")
	ok(t, g.Heartbeat(now, req, w))
	if g.Epoch() != before+1 {
		t.Fatalf("regex change: epoch %d, was %d", g.Epoch(), before)
	}
}

// versioned is a world that knows its version (the Raft index of the
// image, to the coordinator).
type versioned struct {
	world
	v int64
}

func (w versioned) Version() int64 { return w.v }

// A regex's resolution, as Kafka's ConsumerGroupRegularExpression record
// keeps it: the topics it takes for its members, the metadata version and
// the time it was resolved at. It changes only when its topics do; it is
// dropped when no member subscribes with it any more.
func TestRegexResolutions(t *testing.T) {
	w := versioned{world{"orders-eu": {ID: tid(1), Partitions: 2}, "orders-us": {ID: tid(2), Partitions: 1}, "audit": {ID: tid(3), Partitions: 1}}, 10}
	g, now := newGroup(0), t0
	regexes := func() string {
		var out []string
		for _, re := range slices.Sorted(maps.Keys(g.Export().Regexes)) {
			r := g.Export().Regexes[re]
			out = append(out, fmt.Sprintf("%s=%v@%d,%d", re, r.Topics, r.Version, r.TimestampMs-t0.UnixMilli()))
		}
		return strings.Join(out, " ")
	}
	want := func(what, s string) {
		t.Helper()
		if got := regexes(); got != s {
			t.Fatalf("%s: regexes %q, want %q", what, got, s)
		}
	}
	beat := func(id string, describable func(string) bool) {
		t.Helper()
		m := member(t, g, id)
		hb := hbReq(id, m.Epoch, m.Assigned)
		hb.Describable = describable
		ok(t, g.Heartbeat(now, hb, w))
	}
	want("no member", "")
	req := joinReq("m1")
	req.SubscribedTopicRegex = str("orders-.*")
	ok(t, g.Heartbeat(now, req, w))
	want("a regex member joins", "orders-.*=[orders-eu orders-us]@10,0")

	// Steady heartbeats at later versions leave it as resolved.
	w.v, now = 11, now.Add(time.Second)
	beat("m1", nil)
	want("steady", "orders-.*=[orders-eu orders-us]@10,0")

	// A new matching topic: resolved again, at this version and time.
	w.world["orders-ap"] = assignor.Topic{ID: tid(4), Partitions: 1}
	w.v, now = 12, now.Add(time.Second)
	beat("m1", nil)
	want("a new matching topic", "orders-.*=[orders-ap orders-eu orders-us]@12,2000")

	// A second regex, one that matches nothing (resolved too, to no
	// topics), and a member of the first regex that may describe only
	// orders-eu: the first's topics are still what it takes for m1.
	w.v, now = 13, now.Add(time.Second)
	req = joinReq("m2", "audit")
	req.SubscribedTopicRegex = str("nothing-.*")
	ok(t, g.Heartbeat(now, req, w))
	onlyEU := func(n string) bool { return n == "orders-eu" }
	req = joinReq("m3")
	req.SubscribedTopicRegex, req.Describable = str("orders-.*"), onlyEU
	ok(t, g.Heartbeat(now, req, w))
	want("three members", "nothing-.*=[]@13,3000 orders-.*=[orders-ap orders-eu orders-us]@12,2000")

	// The state survives a failover as it was.
	rg, err := Restore("g", g.cfg, g.Export(), now)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rg.Export().Regexes) != fmt.Sprint(g.Export().Regexes) {
		t.Fatalf("restored regexes %v, want %v", rg.Export().Regexes, g.Export().Regexes)
	}

	// m1 leaves: its regex is m3's still and stays as resolved until a
	// heartbeat resolves it again, for m3 alone.
	w.v, now = 14, now.Add(time.Second)
	ok(t, g.Heartbeat(now, HeartbeatRequest{MemberID: "m1", MemberEpoch: LeaveEpoch}, w))
	want("m1 left", "nothing-.*=[]@13,3000 orders-.*=[orders-ap orders-eu orders-us]@12,2000")
	w.v, now = 15, now.Add(time.Second)
	beat("m3", onlyEU)
	want("m3 heartbeats", "nothing-.*=[]@13,3000 orders-.*=[orders-eu]@15,5000")

	// m2 subscribes by name only: its regex is gone; m3 leaves: so is its.
	m2 := member(t, g, "m2")
	hb := hbReq("m2", m2.Epoch, m2.Assigned)
	hb.SubscribedTopicRegex = str("")
	ok(t, g.Heartbeat(now, hb, w))
	want("m2 drops its regex", "orders-.*=[orders-eu]@15,5000")
	ok(t, g.Heartbeat(now, HeartbeatRequest{MemberID: "m3", MemberEpoch: LeaveEpoch}, w))
	want("m3 left", "")

	// Without a version the metadata's is not known: -1.
	g2 := newGroup(0)
	req = joinReq("x")
	req.SubscribedTopicRegex = str("audit")
	ok(t, g2.Heartbeat(t0, req, w.world))
	if r := g2.Export().Regexes["audit"]; r.Version != -1 || !slices.Equal(r.Topics, []string{"audit"}) {
		t.Fatalf("unversioned metadata: %+v", r)
	}
	// A member fenced at its session timeout takes its regex along.
	g2.Tick(t0.Add(time.Hour))
	if len(g2.Export().Regexes) != 0 {
		t.Fatalf("regexes after the last member was fenced: %v", g2.Export().Regexes)
	}
}

func TestExportRestore(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	r1 := ok(t, g.Heartbeat(now, joinReq("m1", "a", "b"), w))
	sj := joinReq("s2")
	sj.InstanceID, sj.SubscribedTopicRegex = str("i2"), str("a|b")
	ok(t, g.Heartbeat(now, sj, w))
	ok(t, g.Heartbeat(now, hbReq("m1", 1, r1.Assignment), w)) // m1 revoking
	before := g.Export()
	later := now.Add(time.Minute)
	g2, err := Restore("g", g.cfg, before, later)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(g2.Export()) != fmt.Sprint(before) {
		t.Fatalf("restore changed the state:\n%v\n%v", g2.Export(), before)
	}
	if g2.State() != g.State() || g2.Epoch() != g.Epoch() || fmtA(g2.Target("s2")) != fmtA(g.Target("s2")) {
		t.Fatalf("restored %s epoch %d", g2.State(), g2.Epoch())
	}
	// Timers start afresh: the revoking member has its rebalance timeout
	// from the load, everyone a session from the load.
	if d := g2.NextDeadline(); !d.Equal(later.Add(30 * time.Second)) {
		t.Fatalf("next deadline %v", d)
	}
	// The group goes on where it was: m1 finishes revoking, s2 (by its
	// regex) then gets what m1 gave up.
	m1 := member(t, g2, "m1")
	r := ok(t, g2.Heartbeat(later, hbReq("m1", 1, m1.Assigned), w))
	if r.MemberEpoch != 2 {
		t.Fatalf("m1 after failover: %+v", r)
	}
	req := hbReq("s2", 2, nil)
	req.InstanceID = str("i2")
	r = ok(t, g2.Heartbeat(later, req, w))
	if fmtA(r.Assignment) != fmtA(g.Target("s2")) || g2.State() != "Stable" {
		t.Fatalf("s2 after failover: %s, target %s, %s", fmtA(r.Assignment), fmtA(g.Target("s2")), g2.State())
	}
	// A corrupt state is refused, not half loaded.
	bad := g2.Export()
	bad.Members[1].Assigned = cloneAssignment(bad.Members[0].Assigned)
	if _, err := Restore("g", g.cfg, bad, later); err == nil {
		t.Fatal("a partition held twice was restored")
	}
}
