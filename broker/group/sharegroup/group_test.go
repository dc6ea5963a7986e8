package sharegroup

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

type fakeTopics map[string]Topic

func (f fakeTopics) Topic(name string) (Topic, bool) { t, ok := f[name]; return t, ok }

var (
	t0  = time.Unix(1_700_000_000, 0)
	cfg = Config{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second, MaxSize: 3}
	tps = fakeTopics{"orders": {ID: tA, Partitions: 6}, "audit": {ID: tB, Partitions: 1}}
)

func join(id string, topics ...string) HeartbeatRequest {
	return HeartbeatRequest{MemberID: id, MemberEpoch: JoinEpoch, Subscribed: topics}
}

func beat(id string, epoch int32) HeartbeatRequest {
	return HeartbeatRequest{MemberID: id, MemberEpoch: epoch}
}

func mustOK(t *testing.T, r HeartbeatResult) HeartbeatResult {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("heartbeat failed: %v: %s", r.Err, r.ErrMessage)
	}
	return r
}

func TestValidate(t *testing.T) {
	empty := ""
	for _, tc := range []struct {
		name  string
		group string
		req   HeartbeatRequest
		want  *kerr.Error
	}{
		{"ok join", "g", join("m", "orders"), nil},
		{"ok beat", "g", beat("m", 3), nil},
		{"ok leave", "g", beat("m", -1), nil},
		{"empty member id", "g", join("", "orders"), kerr.InvalidRequest},
		{"blank member id", "g", join("  ", "orders"), kerr.InvalidRequest},
		{"empty group", "", join("m", "orders"), kerr.InvalidRequest},
		{"empty rack", "g", HeartbeatRequest{MemberID: "m", MemberEpoch: 1, RackID: &empty}, kerr.InvalidRequest},
		{"join without topics", "g", join("m"), kerr.InvalidRequest},
		{"epoch below -1", "g", beat("m", -2), kerr.InvalidRequest},
	} {
		if got := Validate(tc.group, tc.req); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHeartbeatLifecycle(t *testing.T) {
	g := New("g")
	if g.State() != StateEmpty {
		t.Fatalf("new group is %s", g.State())
	}
	a := mustOK(t, g.Heartbeat(t0, cfg, tps, join("a", "orders")))
	if a.MemberEpoch != 1 || g.Epoch() != 1 || g.AssignmentEpoch() != 1 || !a.SendAssignment || a.Assignment.Count() != 6 {
		t.Fatalf("first join: %+v, group epoch %d", a, g.Epoch())
	}
	if a.HeartbeatInterval != cfg.HeartbeatInterval || g.State() != StateStable {
		t.Fatalf("interval %v state %s", a.HeartbeatInterval, g.State())
	}
	b := mustOK(t, g.Heartbeat(t0, cfg, tps, join("b", "orders")))
	if b.MemberEpoch != 2 || b.Assignment.Count() != 3 {
		t.Fatalf("second join: %+v", b)
	}
	// a's next heartbeat moves it to epoch 2 with half its partitions.
	a2 := mustOK(t, g.Heartbeat(t0.Add(time.Second), cfg, tps, beat("a", 1)))
	if a2.MemberEpoch != 2 || !a2.SendAssignment || a2.Assignment.Count() != 3 {
		t.Fatalf("a after b joined: %+v", a2)
	}
	// Nothing changed: no assignment in the answer, no durable change.
	v := g.Version()
	a3 := mustOK(t, g.Heartbeat(t0.Add(2*time.Second), cfg, tps, beat("a", 2)))
	if a3.SendAssignment || a3.MemberEpoch != 2 || g.Version() != v {
		t.Fatalf("idle heartbeat: %+v, version %d -> %d", a3, v, g.Version())
	}
	// A lost answer: a repeats its previous epoch and is accepted.
	mustOK(t, g.Heartbeat(t0.Add(2*time.Second), cfg, tps, beat("a", 1)))
	// Leave: epoch -1 removes it and bumps the group epoch.
	l := mustOK(t, g.Heartbeat(t0.Add(3*time.Second), cfg, tps, beat("a", LeaveEpoch)))
	if l.MemberEpoch != LeaveEpoch || g.Len() != 1 || g.Epoch() != 3 {
		t.Fatalf("leave: %+v, %d members, epoch %d", l, g.Len(), g.Epoch())
	}
	b2 := mustOK(t, g.Heartbeat(t0.Add(3*time.Second), cfg, tps, beat("b", 2)))
	if b2.MemberEpoch != 3 || b2.Assignment.Count() != 6 {
		t.Fatalf("b after a left: %+v", b2)
	}
}

func TestHeartbeatErrors(t *testing.T) {
	g := New("g")
	mustOK(t, g.Heartbeat(t0, cfg, tps, join("a", "orders")))
	mustOK(t, g.Heartbeat(t0, cfg, tps, join("b", "orders")))
	mustOK(t, g.Heartbeat(t0, cfg, tps, beat("a", 1))) // a: epoch 2, previous 1
	for _, tc := range []struct {
		name string
		req  HeartbeatRequest
		want *kerr.Error
	}{
		{"unknown member", beat("zz", 2), kerr.UnknownMemberID},
		{"unknown member leaving", beat("zz", LeaveEpoch), kerr.UnknownMemberID},
		{"epoch ahead", beat("a", 3), kerr.FencedMemberEpoch},
		{"a known member rejoining with its id", join("a", "orders"), nil},
	} {
		r := g.Heartbeat(t0, cfg, tps, tc.req)
		if r.Err != tc.want {
			t.Errorf("%s: got %v (%s), want %v", tc.name, r.Err, r.ErrMessage, tc.want)
		}
	}
	// a now at the current epoch; an old epoch that is not its previous one is fenced.
	cur := mustOK(t, g.Heartbeat(t0, cfg, tps, beat("a", g.AssignmentEpoch())))
	mustOK(t, g.Heartbeat(t0, cfg, tps, join("c", "orders")))
	mustOK(t, g.Heartbeat(t0, cfg, tps, beat("a", cur.MemberEpoch)))
	if r := g.Heartbeat(t0, cfg, tps, beat("a", cur.MemberEpoch-1)); r.Err != kerr.FencedMemberEpoch {
		t.Errorf("two epochs behind: %v", r.Err)
	}
	// The group is full at three members; a known member still heartbeats.
	if r := g.Heartbeat(t0, cfg, tps, join("d", "orders")); r.Err != kerr.GroupMaxSizeReached {
		t.Errorf("fourth member: %v", r.Err)
	}
	if g.Len() != 3 {
		t.Fatalf("%d members after a refused join", g.Len())
	}
}

func TestSessionTimeout(t *testing.T) {
	g := New("g")
	mustOK(t, g.Heartbeat(t0, cfg, tps, join("a", "orders")))
	mustOK(t, g.Heartbeat(t0.Add(10*time.Second), cfg, tps, join("b", "orders")))
	if d := g.NextDeadline(); !d.Equal(t0.Add(cfg.SessionTimeout)) {
		t.Fatalf("next deadline %v", d)
	}
	if gone := g.Tick(t0.Add(cfg.SessionTimeout - time.Millisecond)); len(gone) != 0 {
		t.Fatalf("expired early: %v", gone)
	}
	epoch := g.Epoch()
	gone := g.Tick(t0.Add(cfg.SessionTimeout))
	if len(gone) != 1 || gone[0] != "a" || g.Epoch() != epoch+1 {
		t.Fatalf("expired %v, epoch %d -> %d", gone, epoch, g.Epoch())
	}
	if r := g.Heartbeat(t0.Add(50*time.Second), cfg, tps, beat("a", 2)); r.Err != kerr.UnknownMemberID {
		t.Fatalf("expired member heartbeat: %v", r.Err)
	}
	r := mustOK(t, g.Heartbeat(t0.Add(50*time.Second), cfg, tps, beat("b", 2)))
	if r.Assignment.Count() != 6 {
		t.Fatalf("survivor got %v", r.Assignment)
	}
	g.Tick(t0.Add(time.Hour))
	if g.State() != StateEmpty || !g.NextDeadline().IsZero() {
		t.Fatalf("state %s deadline %v", g.State(), g.NextDeadline())
	}
}

func TestSubscriptionsAndTopicChanges(t *testing.T) {
	g := New("g")
	mustOK(t, g.Heartbeat(t0, cfg, tps, join("a", "orders", "missing")))
	// A subscription change bumps the epoch and moves the assignment.
	r := mustOK(t, g.Heartbeat(t0, cfg, tps, HeartbeatRequest{MemberID: "a", MemberEpoch: 1, Subscribed: []string{"audit"}}))
	if r.MemberEpoch != 2 || r.Assignment.Count() != 1 || len(r.Assignment[tB]) != 1 {
		t.Fatalf("after resubscribe: %+v", r)
	}
	// The topic grows: the next heartbeat sees it.
	grown := fakeTopics{"orders": tps["orders"], "audit": {ID: tB, Partitions: 3}}
	if !g.RefreshTopics(grown) {
		t.Fatal("growth not noticed")
	}
	r = mustOK(t, g.Heartbeat(t0, cfg, grown, beat("a", 2)))
	if r.MemberEpoch != 3 || r.Assignment.Count() != 3 {
		t.Fatalf("after growth: %+v", r)
	}
	if g.RefreshTopics(grown) {
		t.Fatal("no change reported as one")
	}
}
