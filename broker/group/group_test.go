package group

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// harness drives one Group with a fake clock and records every reply.
type harness struct {
	t     *testing.T
	g     *Group
	now   time.Time
	ids   int
	joins map[string][]JoinResult // by the name the test gave the request
	syncs map[string][]SyncResult
}

var t0 = time.Unix(1_700_000_000, 0)

func newHarness(t *testing.T, mod func(*Config)) *harness {
	h := &harness{t: t, now: t0, joins: map[string][]JoinResult{}, syncs: map[string][]SyncResult{}}
	cfg := Config{
		MinSessionTimeout: 6 * time.Second, MaxSessionTimeout: 30 * time.Minute,
		InitialRebalanceDelay: 3 * time.Second,
		NewMemberID: func(prefix string) string {
			h.ids++
			return fmt.Sprintf("%s-%d", prefix, h.ids)
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	h.g = New("g", cfg, nil)
	return h
}

func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.g.Tick(h.now)
}

// settle ticks at the next deadline if it is due and persists what the
// group asks for, like the coordinator loop.
func (h *harness) persistOK() {
	h.t.Helper()
	rec := h.g.TakePersist()
	if rec == nil {
		h.t.Fatal("nothing to persist")
	}
	h.g.Persisted(h.now, rec.Generation, nil)
}

func consumerProtos(names ...string) []Protocol {
	var ps []Protocol
	for _, n := range names {
		ps = append(ps, Protocol{Name: n, Metadata: []byte("md-" + n)})
	}
	return ps
}

type joinOpt func(*JoinRequest)

func withInstance(id string) joinOpt { return func(r *JoinRequest) { r.InstanceID = id } }
func withProtos(ps ...string) joinOpt {
	return func(r *JoinRequest) { r.Protocols = consumerProtos(ps...) }
}
func kip394() joinOpt { return func(r *JoinRequest) { r.RequireKnownMemberID = true } }
func withSession(d time.Duration) joinOpt {
	return func(r *JoinRequest) { r.SessionTimeout = d }
}
func skipAssign() joinOpt { return func(r *JoinRequest) { r.SupportsSkipAssignment = true } }

func (h *harness) join(name, memberID string, opts ...joinOpt) {
	r := JoinRequest{
		MemberID: memberID, ClientID: "c", ClientHost: "/127.0.0.1", ProtocolType: "consumer",
		Protocols: consumerProtos("range"), SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second,
		Reply: func(res JoinResult) { h.joins[name] = append(h.joins[name], res) },
	}
	for _, o := range opts {
		o(&r)
	}
	h.g.Join(h.now, r)
}

func (h *harness) sync(name, memberID string, gen int32, assign map[string][]byte) {
	h.g.Sync(h.now, SyncRequest{MemberID: memberID, Generation: gen, Assignments: assign,
		Reply: func(res SyncResult) { h.syncs[name] = append(h.syncs[name], res) }})
}

// lastJoin returns the only reply to a join, failing if there is not
// exactly one.
func (h *harness) lastJoin(name string) JoinResult {
	h.t.Helper()
	rs := h.joins[name]
	if len(rs) != 1 {
		h.t.Fatalf("join %s: %d replies, want 1: %+v", name, len(rs), rs)
	}
	delete(h.joins, name)
	return rs[0]
}

func (h *harness) noJoinReply(name string) {
	h.t.Helper()
	if rs := h.joins[name]; len(rs) != 0 {
		h.t.Fatalf("join %s answered early: %+v", name, rs)
	}
}

func (h *harness) lastSync(name string) SyncResult {
	h.t.Helper()
	rs := h.syncs[name]
	if len(rs) != 1 {
		h.t.Fatalf("sync %s: %d replies, want 1: %+v", name, len(rs), rs)
	}
	delete(h.syncs, name)
	return rs[0]
}

func (h *harness) state(want State) {
	h.t.Helper()
	if h.g.State() != want {
		h.t.Fatalf("state %v, want %v", h.g.State(), want)
	}
}

func codeIs(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: code %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// stableTwo brings a group to Stable with members a (leader) and b through
// the initial delay, and returns their ids and the generation.
func stableTwo(t *testing.T, h *harness) (a, b string, gen int32) {
	t.Helper()
	h.join("a", "")
	h.join("b", "")
	h.state(PreparingRebalance)
	h.noJoinReply("a")
	h.advance(3 * time.Second) // b arrived during the initial delay: one more
	h.noJoinReply("a")
	h.advance(3 * time.Second)
	ja, jb := h.lastJoin("a"), h.lastJoin("b")
	codeIs(t, "join a", ja.ErrorCode, nil)
	if ja.Leader != ja.MemberID || len(ja.Members) != 2 || len(jb.Members) != 0 || ja.Generation != 1 || ja.Protocol != "range" {
		t.Fatalf("join answers: leader %+v follower %+v", ja, jb)
	}
	h.state(CompletingRebalance)
	a, b = ja.MemberID, jb.MemberID
	h.sync("b", b, 1, nil)
	h.sync("a", a, 1, map[string][]byte{a: []byte("A"), b: []byte("B")})
	if len(h.syncs["a"])+len(h.syncs["b"]) != 0 {
		t.Fatal("sync answered before the generation was persisted")
	}
	rec := h.g.TakePersist()
	if rec == nil || rec.Generation != 1 || rec.Leader != a || len(rec.Members) != 2 || rec.ProtocolType != "consumer" {
		t.Fatalf("persist record %+v", rec)
	}
	h.g.Persisted(h.now, 1, nil)
	if sa, sb := h.lastSync("a"), h.lastSync("b"); string(sa.Assignment) != "A" || string(sb.Assignment) != "B" || sa.Protocol != "range" {
		t.Fatalf("sync answers %+v %+v", sa, sb)
	}
	h.state(Stable)
	return a, b, 1
}

func TestJoinSyncHeartbeatLifecycle(t *testing.T) {
	h := newHarness(t, nil)
	a, b, gen := stableTwo(t, h)

	codeIs(t, "heartbeat", h.g.Heartbeat(h.now, a, "", gen), nil)
	codeIs(t, "stale generation", h.g.Heartbeat(h.now, a, "", gen-1), kerr.IllegalGeneration)
	codeIs(t, "unknown member", h.g.Heartbeat(h.now, "nobody", "", gen), kerr.UnknownMemberID)

	// A follower re-syncing in Stable gets its assignment at once.
	h.sync("b2", b, gen, nil)
	if s := h.lastSync("b2"); string(s.Assignment) != "B" {
		t.Fatalf("stable resync %+v", s)
	}

	// b leaves: rebalance; a's heartbeat says so; a rejoins alone.
	codeIs(t, "leave", h.g.Leave(h.now, b, ""), nil)
	h.state(PreparingRebalance)
	codeIs(t, "heartbeat during rebalance", h.g.Heartbeat(h.now, a, "", gen), kerr.RebalanceInProgress)
	h.join("a2", a)
	j := h.lastJoin("a2")
	if j.Generation != 2 || j.Leader != a || len(j.Members) != 1 {
		t.Fatalf("rejoin %+v", j)
	}
	codeIs(t, "leave unknown", h.g.Leave(h.now, b, ""), kerr.UnknownMemberID)

	// The last member leaves: Empty, next generation persisted.
	h.sync("a3", a, 2, map[string][]byte{a: []byte("all")})
	h.persistOK()
	h.lastSync("a3")
	codeIs(t, "leave last", h.g.Leave(h.now, a, ""), nil)
	h.g.Tick(h.now)
	h.state(Empty)
	rec := h.g.TakePersist()
	if rec == nil || rec.Generation != 3 || len(rec.Members) != 0 {
		t.Fatalf("empty persist %+v", rec)
	}
	h.g.Persisted(h.now, 3, nil)
	if !h.g.Idle() {
		t.Fatal("empty persisted group is not idle")
	}
}

func TestSessionTimeoutExpiresMember(t *testing.T) {
	h := newHarness(t, nil)
	a, b, gen := stableTwo(t, h)
	// a heartbeats, b does not.
	for range 2 {
		h.advance(4 * time.Second)
		codeIs(t, "heartbeat a", h.g.Heartbeat(h.now, a, "", gen), nil)
	}
	if d, ok := h.g.NextDeadline(); !ok || !d.Equal(t0.Add(16*time.Second)) {
		// b's session ends 10s after its sync at +6s.
		t.Fatalf("next deadline %v, want b's expiry", d.Sub(t0))
	}
	h.advance(2 * time.Second)
	h.state(PreparingRebalance)
	codeIs(t, "heartbeat a", h.g.Heartbeat(h.now, a, "", gen), kerr.RebalanceInProgress)
	codeIs(t, "expired b", h.g.Heartbeat(h.now, b, "", gen), kerr.UnknownMemberID)
	// a has not rejoined, so its session still runs (the rebalance
	// deadline, 20s away, is later).
	if d, ok := h.g.NextDeadline(); !ok || !d.Equal(h.now.Add(10*time.Second)) {
		t.Fatalf("next deadline %v, want a's session", d.Sub(h.now))
	}
	h.join("a2", a) // the only member rejoined: the join completes at once
	if j := h.lastJoin("a2"); j.Generation != 2 {
		t.Fatalf("rejoin %+v", j)
	}
	h.state(CompletingRebalance)
}

func TestRebalanceTimeoutDropsMembersThatDoNotRejoin(t *testing.T) {
	h := newHarness(t, nil)
	a, b, _ := stableTwo(t, h)
	// a's leader rejoin triggers a rebalance; b keeps heartbeating but never
	// rejoins; at the rebalance timeout b is dropped.
	h.join("a2", a)
	h.state(PreparingRebalance)
	for range 4 {
		h.advance(5 * time.Second)
		if h.g.State() == PreparingRebalance {
			codeIs(t, "b heartbeat", h.g.Heartbeat(h.now, b, "", 1), kerr.RebalanceInProgress)
		}
	}
	j := h.lastJoin("a2")
	if j.Generation != 2 || len(j.Members) != 1 || j.Members[0].MemberID != a {
		t.Fatalf("after rebalance timeout %+v", j)
	}
	codeIs(t, "b gone", h.g.Heartbeat(h.now, b, "", 2), kerr.UnknownMemberID)
}

func TestInitialDelayExtendsWhileMembersArrive(t *testing.T) {
	h := newHarness(t, nil)
	h.join("a", "")
	h.advance(2 * time.Second)
	h.join("b", "")
	h.advance(time.Second) // first delay over, but b arrived: wait again
	h.noJoinReply("a")
	h.state(PreparingRebalance)
	h.advance(3 * time.Second)
	if ja := h.lastJoin("a"); len(ja.Members) != 2 {
		t.Fatalf("join after extended delay %+v", ja)
	}
	h.lastJoin("b")

	// With no delay configured the first member is answered at the first tick.
	h2 := newHarness(t, func(c *Config) { c.InitialRebalanceDelay = 0 })
	h2.join("a", "")
	h2.g.Tick(h2.now)
	if j := h2.lastJoin("a"); j.Generation != 1 {
		t.Fatalf("no-delay join %+v", j)
	}
}

func TestJoinValidation(t *testing.T) {
	cases := []struct {
		name string
		opts []joinOpt
		want *kerr.Error
	}{
		{"session too short", []joinOpt{withSession(time.Second)}, kerr.InvalidSessionTimeout},
		{"session too long", []joinOpt{withSession(time.Hour)}, kerr.InvalidSessionTimeout},
		{"no protocols", []joinOpt{func(r *JoinRequest) { r.Protocols = nil }}, kerr.InconsistentGroupProtocol},
		{"no protocol type", []joinOpt{func(r *JoinRequest) { r.ProtocolType = "" }}, kerr.InconsistentGroupProtocol},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.join("x", "", c.opts...)
			codeIs(t, "join", h.lastJoin("x").ErrorCode, c.want)
			h.state(Empty)
		})
	}
	t.Run("protocol mismatch with members", func(t *testing.T) {
		h := newHarness(t, nil)
		stableTwo(t, h)
		h.join("x", "", withProtos("roundrobin"))
		codeIs(t, "join", h.lastJoin("x").ErrorCode, kerr.InconsistentGroupProtocol)
		h.join("y", "", func(r *JoinRequest) { r.ProtocolType = "connect" })
		codeIs(t, "join", h.lastJoin("y").ErrorCode, kerr.InconsistentGroupProtocol)
	})
	t.Run("max size", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.MaxSize = 2 })
		stableTwo(t, h)
		h.join("c", "")
		codeIs(t, "third member", h.lastJoin("c").ErrorCode, kerr.GroupMaxSizeReached)
	})
	t.Run("unknown member id", func(t *testing.T) {
		h := newHarness(t, nil)
		h.join("x", "made-up")
		codeIs(t, "join", h.lastJoin("x").ErrorCode, kerr.UnknownMemberID)
	})
}

func TestKIP394MemberIDRequired(t *testing.T) {
	h := newHarness(t, nil)
	h.join("a", "", kip394())
	j := h.lastJoin("a")
	codeIs(t, "first join", j.ErrorCode, kerr.MemberIDRequired)
	if j.MemberID == "" {
		t.Fatal("no member id handed out")
	}
	h.state(Empty)
	h.join("a", j.MemberID, kip394())
	h.advance(3 * time.Second)
	if j2 := h.lastJoin("a"); j2.ErrorCode != 0 || j2.MemberID != j.MemberID || j2.Leader != j.MemberID {
		t.Fatalf("second join %+v", j2)
	}

	// An id handed out and never used expires with its session timeout.
	h2 := newHarness(t, nil)
	h2.join("a", "", kip394())
	id := h2.lastJoin("a").MemberID
	if h2.g.Idle() {
		t.Fatal("group with a reserved member id is idle")
	}
	h2.advance(10 * time.Second)
	if !h2.g.Idle() {
		t.Fatal("reserved id did not expire")
	}
	h2.join("a", id)
	codeIs(t, "expired id", h2.lastJoin("a").ErrorCode, kerr.UnknownMemberID)
}

func TestPendingMemberHoldsRebalance(t *testing.T) {
	h := newHarness(t, nil)
	a, b, _ := stableTwo(t, h)
	// A newcomer gets MEMBER_ID_REQUIRED; a and b rejoin; the rebalance
	// waits for the newcomer until it joins with its id.
	h.join("c", "", kip394())
	c := h.lastJoin("c").MemberID
	h.join("a2", a)
	h.join("b2", b)
	h.noJoinReply("a2")
	h.join("c2", c)
	ja := h.lastJoin("a2")
	if len(ja.Members) != 3 || ja.Generation != 2 {
		t.Fatalf("rebalance with newcomer %+v", ja)
	}
	h.lastJoin("b2")
	h.lastJoin("c2")
}

func TestStaticMembership(t *testing.T) {
	h := newHarness(t, nil)
	h.join("a", "", withInstance("ia"))
	h.join("b", "", withInstance("ib"))
	h.advance(6 * time.Second)
	ja, jb := h.lastJoin("a"), h.lastJoin("b")
	if ja.MemberID != "ia-1" || jb.MemberID != "ib-2" {
		t.Fatalf("static member ids %q %q", ja.MemberID, jb.MemberID)
	}
	h.sync("a", ja.MemberID, 1, map[string][]byte{ja.MemberID: []byte("A"), jb.MemberID: []byte("B")})
	h.persistOK()
	h.lastSync("a")
	h.state(Stable)

	// b restarts: same instance, no member id. Stable, same protocols: it
	// gets a new id and the current generation without a rebalance.
	h.join("b2", "", withInstance("ib"))
	j := h.lastJoin("b2")
	if j.ErrorCode != 0 || j.Generation != 1 || j.MemberID == jb.MemberID || len(j.Members) != 0 {
		t.Fatalf("static rejoin %+v", j)
	}
	h.state(Stable)
	h.sync("b2", j.MemberID, 1, nil)
	if s := h.lastSync("b2"); string(s.Assignment) != "B" {
		t.Fatalf("static member kept assignment %+v", s)
	}
	// The old id is fenced.
	codeIs(t, "old id heartbeat", h.g.Heartbeat(h.now, jb.MemberID, "ib", 1), kerr.FencedInstanceID)
	codeIs(t, "old id commit", h.g.ValidateCommit(h.now, jb.MemberID, "ib", 1), kerr.FencedInstanceID)
	codeIs(t, "unknown instance", h.g.Heartbeat(h.now, j.MemberID, "nope", 1), kerr.UnknownMemberID)

	// The static leader rejoining keeps the group stable: v9+ gets members
	// and SkipAssignment, older versions the previous leader id (see
	// TestStaticRejoinStable for the whole table).
	h.join("a2", "", withInstance("ia"), skipAssign())
	ja2 := h.lastJoin("a2")
	if !ja2.SkipAssignment || len(ja2.Members) != 2 || ja2.Leader != ja2.MemberID {
		t.Fatalf("static leader rejoin v9 %+v", ja2)
	}
	h.state(Stable)
	h.join("a3", "", withInstance("ia"))
	if ja3 := h.lastJoin("a3"); ja3.ErrorCode != 0 || ja3.Leader != ja2.MemberID || ja3.MemberID == ja2.MemberID || len(ja3.Members) != 0 {
		t.Fatalf("static leader rejoin v5 %+v", ja3)
	}
	h.state(Stable)

	// A static member leaves by instance id (batch leave).
	codeIs(t, "fenced leave", h.g.Leave(h.now, "wrong", "ib"), kerr.FencedInstanceID)
	codeIs(t, "leave by instance", h.g.Leave(h.now, "", "ib"), nil)
	codeIs(t, "unknown instance leave", h.g.Leave(h.now, "", "ib"), kerr.UnknownMemberID)
}

func TestSyncChecks(t *testing.T) {
	h := newHarness(t, nil)
	h.join("a", "")
	h.advance(3 * time.Second)
	a := h.lastJoin("a").MemberID
	h.sync("x", a, 7, nil)
	codeIs(t, "wrong generation", h.lastSync("x").ErrorCode, kerr.IllegalGeneration)
	h.sync("x", "nobody", 1, nil)
	codeIs(t, "unknown member", h.lastSync("x").ErrorCode, kerr.UnknownMemberID)
	h.g.Sync(h.now, SyncRequest{MemberID: a, Generation: 1, Protocol: "roundrobin", Reply: func(r SyncResult) { h.syncs["x"] = append(h.syncs["x"], r) }})
	codeIs(t, "wrong protocol", h.lastSync("x").ErrorCode, kerr.InconsistentGroupProtocol)

	// A member the leader left out gets an empty, non-nil assignment.
	h.join("b", "")
	h.state(PreparingRebalance)
	h.sync("x", a, 1, nil)
	codeIs(t, "sync during rebalance", h.lastSync("x").ErrorCode, kerr.RebalanceInProgress)
}

func TestLeaderAssignmentLeavesNoOneWithNil(t *testing.T) {
	h := newHarness(t, nil)
	h.join("a", "")
	h.join("b", "")
	h.advance(6 * time.Second)
	a, b := h.lastJoin("a").MemberID, h.lastJoin("b").MemberID
	h.sync("b", b, 1, nil)
	h.sync("a", a, 1, map[string][]byte{a: []byte("x")})
	h.persistOK()
	if s := h.lastSync("b"); s.Assignment == nil || len(s.Assignment) != 0 {
		t.Fatalf("left-out member assignment %#v", s.Assignment)
	}
	if s := h.lastSync("a"); !bytes.Equal(s.Assignment, []byte("x")) {
		t.Fatalf("leader assignment %q", s.Assignment)
	}
}

func TestPersistFailureRebalances(t *testing.T) {
	h := newHarness(t, nil)
	h.join("a", "")
	h.advance(3 * time.Second)
	a := h.lastJoin("a").MemberID
	h.sync("a", a, 1, map[string][]byte{a: []byte("x")})
	rec := h.g.TakePersist()
	h.g.Persisted(h.now, rec.Generation, errors.New("no quorum"))
	codeIs(t, "sync after failed persist", h.lastSync("a").ErrorCode, kerr.CoordinatorNotAvailable)
	h.state(PreparingRebalance)
	h.join("a2", a)
	if j := h.lastJoin("a2"); j.Generation != 2 {
		t.Fatalf("rejoin after failed persist %+v", j)
	}
}

func TestMemberLeavingDuringCompletingRebalance(t *testing.T) {
	h := newHarness(t, nil)
	h.join("a", "")
	h.join("b", "")
	h.advance(6 * time.Second)
	a, b := h.lastJoin("a").MemberID, h.lastJoin("b").MemberID
	h.sync("b", b, 1, nil)
	codeIs(t, "commit while awaiting assignment", h.g.ValidateCommit(h.now, b, "", 1), kerr.RebalanceInProgress)
	codeIs(t, "leader leaves", h.g.Leave(h.now, a, ""), nil)
	codeIs(t, "waiting sync", h.lastSync("b").ErrorCode, kerr.RebalanceInProgress)
	h.state(PreparingRebalance)
	h.join("b2", b)
	if j := h.lastJoin("b2"); j.Leader != b || j.Generation != 2 {
		t.Fatalf("new leader %+v", j)
	}
}

func TestCommitValidation(t *testing.T) {
	h := newHarness(t, nil)
	codeIs(t, "simple commit to empty group", h.g.ValidateCommit(h.now, "", "", -1), nil)
	codeIs(t, "member commit to empty group", h.g.ValidateCommit(h.now, "m", "", 3), kerr.UnknownMemberID)
	a, _, gen := stableTwo(t, h)
	codeIs(t, "member commit", h.g.ValidateCommit(h.now, a, "", gen), nil)
	codeIs(t, "stale generation", h.g.ValidateCommit(h.now, a, "", gen+1), kerr.IllegalGeneration)
	codeIs(t, "simple commit to live group", h.g.ValidateCommit(h.now, "", "", -1), kerr.UnknownMemberID)
	h.join("a2", a) // leader rejoin: PreparingRebalance still takes commits
	codeIs(t, "commit during rebalance", h.g.ValidateCommit(h.now, a, "", gen), nil)
}

func TestProtocolSelectionByVotes(t *testing.T) {
	h := newHarness(t, nil)
	h.join("a", "", withProtos("range", "cooperative-sticky"))
	h.join("b", "", withProtos("cooperative-sticky", "range"))
	h.join("c", "", withProtos("cooperative-sticky", "range", "roundrobin"))
	h.advance(6 * time.Second)
	j := h.lastJoin("a")
	if j.Protocol != "cooperative-sticky" {
		t.Fatalf("protocol %q", j.Protocol)
	}
	for _, m := range j.Members {
		if !bytes.Equal(m.Metadata, []byte("md-cooperative-sticky")) {
			t.Fatalf("leader got metadata %q for %s", m.Metadata, m.MemberID)
		}
	}
}

func TestUnloadAnswersWaiters(t *testing.T) {
	h := newHarness(t, nil)
	h.join("a", "")
	h.g.Unload(kerr.NotCoordinator.Code)
	codeIs(t, "waiting join", h.lastJoin("a").ErrorCode, kerr.NotCoordinator)
	h.state(Dead)
	h.join("b", "")
	codeIs(t, "join dead group", h.lastJoin("b").ErrorCode, kerr.CoordinatorNotAvailable)
	if !h.g.Idle() {
		t.Fatal("dead group not idle")
	}
}

func TestDescribe(t *testing.T) {
	h := newHarness(t, nil)
	a, b, _ := stableTwo(t, h)
	d := h.g.Describe()
	if d.State != Stable || d.Protocol != "range" || len(d.Members) != 2 || d.Members[0].MemberID != a ||
		string(d.Members[1].Assignment) != "B" || d.Members[1].MemberID != b || d.Members[0].ClientHost != "/127.0.0.1" {
		t.Fatalf("describe %+v", d)
	}
	h.join("a2", a)
	if d := h.g.Describe(); d.Protocol != "" || d.Members[0].Assignment != nil {
		t.Fatalf("describe while rebalancing shows protocol data: %+v", d)
	}
}

func TestParseState(t *testing.T) {
	for _, s := range []State{Empty, PreparingRebalance, CompletingRebalance, Stable, Dead} {
		if got, ok := ParseState(s.String()); !ok || got != s {
			t.Errorf("ParseState(%q) = %v %v", s, got, ok)
		}
	}
	if got, ok := ParseState("stable"); !ok || got != Stable {
		t.Error("states filter is case-insensitive in Kafka")
	}
	if _, ok := ParseState("Assigning"); ok {
		t.Error("unknown state parsed")
	}
}
