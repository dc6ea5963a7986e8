package consumergroup

import (
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/group/assignor"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// subscription encodes a consumer protocol Subscription at version v
// owning owned (topic name -> partitions).
func subscription(v int16, topics []string, owned map[string][]int32) []byte {
	s := kmsg.NewConsumerMemberMetadata()
	s.Version, s.Topics = v, topics
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range owned {
			if !yield(n) {
				return
			}
		}
	}) {
		o := kmsg.NewConsumerMemberMetadataOwnedPartition()
		o.Topic, o.Partitions = n, owned[n]
		s.OwnedPartitions = append(s.OwnedPartitions, o)
	}
	return s.AppendTo(nil)
}

func classicJoin(id string, owned map[string][]int32, topics ...string) ClassicJoinRequest {
	return ClassicJoinRequest{
		MemberID: id, ClientID: "sarama", ProtocolType: "consumer",
		Protocols:      []ClassicProtocol{{Name: "range", Metadata: subscription(1, topics, owned)}},
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second,
	}
}

// decodeAssignment reads a SyncGroup's consumer protocol Assignment as
// topic name -> partitions.
func decodeAssignment(t *testing.T, b []byte) map[string][]int32 {
	t.Helper()
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		t.Fatalf("assignment does not decode: %v", err)
	}
	out := map[string][]int32{}
	for _, tp := range a.Topics {
		out[tp.Topic] = append(out[tp.Topic], tp.Partitions...)
	}
	return out
}

func joinOK(t *testing.T, r ClassicJoinResponse) ClassicJoinResponse {
	t.Helper()
	if r.ErrorCode != 0 {
		t.Fatalf("JoinGroup failed: %v: %s", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	return r
}

func syncOK(t *testing.T, g *Group, now time.Time, id string, gen int32) map[string][]int32 {
	t.Helper()
	r := g.ClassicSync(now, id, "", gen, nil, nil)
	if r.ErrorCode != 0 {
		t.Fatalf("SyncGroup of %s at %d failed: %v: %s", id, gen, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	return decodeAssignment(t, r.Assignment)
}

func codeIs(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	w := int16(0)
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// A classic member (JoinGroup/SyncGroup/Heartbeat) in a consumer group
// with a consumer-protocol member: its assignment comes from the
// server-side assignor through SyncGroup, a rebalance is signalled with
// REBALANCE_IN_PROGRESS, and a partition moves only once its owner gave
// it up.
func TestClassicMemberInConsumerGroup(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	c := ok(t, g.Heartbeat(now, joinReq("c", "a"), w))
	if fmtA(c.Assignment) != "a0,1,2,3" {
		t.Fatalf("c alone: %s", fmtA(c.Assignment))
	}

	// The classic member joins at once (no join phase), at the new epoch,
	// with nothing yet: c holds every partition.
	j := joinOK(t, g.ClassicJoin(now, classicJoin("", nil, "a"), w))
	if j.MemberID != "gen-1" || j.Generation != 2 || j.Protocol != "range" || j.ProtocolType != "consumer" {
		t.Fatalf("classic join: %+v", j)
	}
	if a := syncOK(t, g, now, j.MemberID, j.Generation); len(a["a"]) != 0 {
		t.Fatalf("classic member given %v while c holds it", a)
	}
	codeIs(t, "sync with another generation", g.ClassicSync(now, j.MemberID, "", 1, nil, nil).ErrorCode, kerr.IllegalGeneration)
	codeIs(t, "sync with another protocol", g.ClassicSync(now, j.MemberID, "", 2, nil, str("roundrobin")).ErrorCode, kerr.InconsistentGroupProtocol)
	codeIs(t, "heartbeat, nothing free yet", first(g.ClassicHeartbeat(now, j.MemberID, "", 2)), nil)

	// c revokes half; the classic member is told to rejoin and then gets
	// the freed partitions.
	rc := ok(t, g.Heartbeat(now, hbReq("c", 1, c.Assignment), w))
	if len(rc.Assignment[tid(1)]) != 2 {
		t.Fatalf("c asked to revoke: %s", fmtA(rc.Assignment))
	}
	ok(t, g.Heartbeat(now, hbReq("c", 1, rc.Assignment), w))
	codeIs(t, "heartbeat once partitions are free", first(g.ClassicHeartbeat(now, j.MemberID, "", 2)), kerr.RebalanceInProgress)
	j2 := joinOK(t, g.ClassicJoin(now, classicJoin(j.MemberID, nil, "a"), w))
	got := syncOK(t, g, now, j2.MemberID, j2.Generation)
	if len(got["a"]) != 2 {
		t.Fatalf("classic member after rejoin: %v", got)
	}
	for _, p := range got["a"] {
		if slices.Contains(rc.Assignment[tid(1)], p) {
			t.Fatalf("partition %d owned by both", p)
		}
	}
	codeIs(t, "steady heartbeat", first(g.ClassicHeartbeat(now, j.MemberID, "", j2.Generation)), nil)
	if g.State() != "Stable" {
		t.Fatalf("group %s", g.State())
	}
	d := g.Describe(1, func(id assignor.TopicID) (string, bool) { return "a", id == tid(1) })
	for _, m := range d.Members {
		want := int8(1)
		if m.MemberID == j.MemberID {
			want = 0
		}
		if m.MemberType != want {
			t.Errorf("member %s type %d, want %d", m.MemberID, m.MemberType, want)
		}
	}

	// A classic member that owns partitions revokes by rejoining without
	// them (what an eager client does); one that still reports them is
	// kept waiting at its epoch.
	ok(t, g.Heartbeat(now, HeartbeatRequest{MemberID: "c", MemberEpoch: consumerEpoch(t, g, "c"), RebalanceTimeoutMs: -1, SubscribedTopicNames: []string{"a", "b"}, Owned: tps(rc.Assignment)}, w))
	codeIs(t, "heartbeat after the subscription change", first(g.ClassicHeartbeat(now, j.MemberID, "", j2.Generation)), kerr.RebalanceInProgress)
	codeIs(t, "sync after the bump", g.ClassicSync(now, j.MemberID, "", j2.Generation, nil, nil).ErrorCode, kerr.RebalanceInProgress)
	keep := joinOK(t, g.ClassicJoin(now, classicJoin(j.MemberID, got, "a"), w))
	m := member(t, g, j.MemberID)
	if m.State == UnrevokedPartitions {
		if keep.Generation != j2.Generation {
			t.Fatalf("revoking member moved to %d", keep.Generation)
		}
		left := syncOK(t, g, now, j.MemberID, keep.Generation)
		for _, p := range left["a"] {
			if slices.Contains(m.PendingRevocation[tid(1)], p) {
				t.Fatalf("partition %d to revoke still in the SyncGroup answer", p)
			}
		}
		codeIs(t, "heartbeat while revoking", first(g.ClassicHeartbeat(now, j.MemberID, "", keep.Generation)), kerr.RebalanceInProgress)
		j3 := joinOK(t, g.ClassicJoin(now, classicJoin(j.MemberID, nil, "a"), w))
		if j3.Generation <= keep.Generation {
			t.Fatalf("after revoking: generation %d", j3.Generation)
		}
	}

	// Leave: the member is gone and the epoch rises; an unknown member
	// and a consumer-protocol member cannot leave through LeaveGroup.
	epoch := g.Epoch()
	codes := g.ClassicLeave([]ClassicLeaver{{MemberID: j.MemberID}, {MemberID: "nobody"}, {MemberID: "c"}})
	codeIs(t, "classic leave", codes[0], nil)
	codeIs(t, "unknown leave", codes[1], kerr.UnknownMemberID)
	codeIs(t, "consumer member through LeaveGroup", codes[2], kerr.UnknownMemberID)
	if _, in := g.Member(j.MemberID); in || g.Epoch() != epoch+1 {
		t.Fatalf("after leave: epoch %d (was %d)", g.Epoch(), epoch)
	}
	codeIs(t, "heartbeat after leaving", first(g.ClassicHeartbeat(now, j.MemberID, "", 3)), kerr.UnknownMemberID)
}

func first(code int16, _ string) int16 { return code }

func consumerEpoch(t *testing.T, g *Group, id string) int32 {
	t.Helper()
	return member(t, g, id).Epoch
}

// JoinGroup's checks, as Kafka's classicGroupJoinToConsumerGroup.
func TestClassicJoinChecks(t *testing.T) {
	w, g, now := newWorld(), newGroup(2), t0
	ok(t, g.Heartbeat(now, joinReq("c", "a"), w))
	j := joinOK(t, g.ClassicJoin(now, classicJoin("", nil, "a"), w))

	r := classicJoin("", nil, "a")
	r.ProtocolType = "connect"
	codeIs(t, "another protocol type", g.ClassicJoin(now, r, w).ErrorCode, kerr.GroupMaxSizeReached)

	g2 := newGroup(0)
	ok(t, g2.Heartbeat(now, joinReq("c", "a"), w))
	joinOK(t, g2.ClassicJoin(now, classicJoin("", nil, "a"), w))
	codeIs(t, "another protocol type", g2.ClassicJoin(now, r, w).ErrorCode, kerr.InconsistentGroupProtocol)
	r = classicJoin("", nil, "a")
	r.Protocols[0].Name = "roundrobin"
	codeIs(t, "a protocol the classic members do not share", g2.ClassicJoin(now, r, w).ErrorCode, kerr.InconsistentGroupProtocol)
	r = classicJoin("", nil, "a")
	r.RequireKnownMemberID = true
	got := g2.ClassicJoin(now, r, w)
	if got.ErrorCode != kerr.MemberIDRequired.Code || got.MemberID == "" {
		t.Fatalf("v4 join without a member id: %+v", got)
	}
	r = classicJoin("", nil, "a")
	r.Protocols[0].Metadata = []byte{0, 1, 0xff}
	codeIs(t, "a subscription that does not decode", g2.ClassicJoin(now, r, w).ErrorCode, kerr.InconsistentGroupProtocol)

	// Static members: a known instance rejoining without its member id
	// replaces the old member; with another id it is fenced.
	s := classicJoin("", nil, "a")
	s.InstanceID = "i1"
	s1 := joinOK(t, g2.ClassicJoin(now, s, w))
	s.MemberID = "someone-else"
	codeIs(t, "static with another member id", g2.ClassicJoin(now, s, w).ErrorCode, kerr.FencedInstanceID)
	s.MemberID = ""
	s2 := joinOK(t, g2.ClassicJoin(now, s, w))
	if s2.MemberID == s1.MemberID {
		t.Fatalf("replacement kept the member id %s", s1.MemberID)
	}
	if _, in := g2.Member(s1.MemberID); in {
		t.Fatalf("replaced member %s still in the group", s1.MemberID)
	}
	codeIs(t, "heartbeat of the replaced member", first(g2.ClassicHeartbeat(now, s1.MemberID, "i1", s1.Generation)), kerr.FencedInstanceID)
	codes := g2.ClassicLeave([]ClassicLeaver{{InstanceID: "i1"}})
	codeIs(t, "leave by instance id", codes[0], nil)
	_ = j
}

// The classic member's timers: its own session timeout, and the rebalance
// timeout to sync after a join and to rejoin after REBALANCE_IN_PROGRESS.
func TestClassicMemberTimers(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	ok(t, g.Heartbeat(now, joinReq("c", "a"), w))
	j := joinOK(t, g.ClassicJoin(now, classicJoin("", nil, "a"), w))
	// No SyncGroup within the rebalance timeout (20 s): fenced, though
	// its heartbeats keep its session (10 s) alive.
	for _, s := range []time.Duration{5, 10, 15, 19} {
		at := now.Add(s * time.Second)
		if code, _ := g.ClassicHeartbeat(at, j.MemberID, "", j.Generation); code != 0 && code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat before sync: %v", kerr.ErrorForCode(code))
		}
		ok(t, g.Heartbeat(at, hbReq("c", consumerEpoch(t, g, "c"), member(t, g, "c").Assigned), w))
		if fenced := g.Tick(at); len(fenced) != 0 {
			t.Fatalf("fenced early: %v", fenced)
		}
	}
	ok(t, g.Heartbeat(now.Add(20*time.Second), hbReq("c", consumerEpoch(t, g, "c"), member(t, g, "c").Assigned), w))
	if fenced := g.Tick(now.Add(20 * time.Second)); !slices.Equal(fenced, []string{j.MemberID}) {
		t.Fatalf("no sync: fenced %v", fenced)
	}

	now = now.Add(21 * time.Second)
	ok(t, g.Heartbeat(now, hbReq("c", consumerEpoch(t, g, "c"), member(t, g, "c").Assigned), w))
	j = joinOK(t, g.ClassicJoin(now, classicJoin("", nil, "a"), w))
	syncOK(t, g, now, j.MemberID, j.Generation)
	// Synced: only its session (10 s) runs.
	now = now.Add(9 * time.Second)
	codeIs(t, "heartbeat", first(g.ClassicHeartbeat(now, j.MemberID, "", j.Generation)), nil)
	ok(t, g.Heartbeat(now, hbReq("c", consumerEpoch(t, g, "c"), member(t, g, "c").Assigned), w))
	if fenced := g.Tick(now.Add(9 * time.Second)); len(fenced) != 0 {
		t.Fatalf("fenced within its session: %v", fenced)
	}
	// Told to rejoin, it does not: fenced after its rebalance timeout
	// even though it keeps heartbeating.
	ok(t, g.Heartbeat(now, HeartbeatRequest{MemberID: "c", MemberEpoch: consumerEpoch(t, g, "c"), RebalanceTimeoutMs: -1, SubscribedTopicNames: []string{"a", "b"}, Owned: tps(member(t, g, "c").Assigned)}, w))
	codeIs(t, "told to rejoin", first(g.ClassicHeartbeat(now, j.MemberID, "", j.Generation)), kerr.RebalanceInProgress)
	for i := 1; i <= 3; i++ {
		at := now.Add(time.Duration(i) * 5 * time.Second)
		g.ClassicHeartbeat(at, j.MemberID, "", j.Generation)
		ok(t, g.Heartbeat(at, hbReq("c", consumerEpoch(t, g, "c"), member(t, g, "c").Assigned), w))
		if fenced := g.Tick(at); len(fenced) != 0 {
			t.Fatalf("fenced at %d s: %v", i*5, fenced)
		}
	}
	at := now.Add(20 * time.Second)
	g.ClassicHeartbeat(at, j.MemberID, "", j.Generation)
	if fenced := g.Tick(at); !slices.Equal(fenced, []string{j.MemberID}) {
		t.Fatalf("no rejoin: fenced %v", fenced)
	}
}

// The online upgrade: a classic group's members carry over at their
// generation with their assignments, then a consumer-protocol member
// joins and the classic members are told to rejoin; when the last
// consumer-protocol member leaves only classic members are left.
func TestFromClassicAndBack(t *testing.T) {
	w, now := newWorld(), t0
	assign := func(ps ...int32) []byte {
		a := kmsg.NewConsumerMemberAssignment()
		t := kmsg.NewConsumerMemberAssignmentTopic()
		t.Topic, t.Partitions = "a", ps
		a.Topics = append(a.Topics, t)
		return a.AppendTo(nil)
	}
	proto := []ClassicProtocol{{Name: "range", Metadata: subscription(1, []string{"a"}, nil)}}
	members := []UpgradeMember{
		{ID: "s1", ClientID: "sarama", SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second, Protocols: proto, Assignment: assign(0, 1)},
		{ID: "s2", ClientID: "sarama", SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second, Protocols: proto, Assignment: assign(2, 3)},
	}
	g, err := FromClassic("g", newGroup(0).cfg, 5, "range", members, w, now)
	if err != nil {
		t.Fatal(err)
	}
	if g.Epoch() != 5 || g.AssignmentEpoch() != 5 || g.State() != "Stable" || !g.AllClassic() {
		t.Fatalf("converted: epoch %d/%d %s", g.Epoch(), g.AssignmentEpoch(), g.State())
	}
	if m := member(t, g, "s1"); m.Epoch != 5 || fmtA(m.Assigned) != "a0,1" || m.Classic == nil || m.Classic.SessionTimeout != 10*time.Second {
		t.Fatalf("s1 converted: %+v", m)
	}
	codeIs(t, "a converted member's heartbeat", first(g.ClassicHeartbeat(now, "s1", "", 5)), nil)

	c := ok(t, g.Heartbeat(now, joinReq("c", "a"), w))
	if c.MemberEpoch != 6 || len(c.Assignment[tid(1)]) != 0 {
		t.Fatalf("consumer member joins: %+v", c)
	}
	if g.AllClassic() {
		t.Fatal("AllClassic with a consumer member")
	}
	codeIs(t, "s1 told to rejoin", first(g.ClassicHeartbeat(now, "s1", "", 5)), kerr.RebalanceInProgress)
	// Eager: the rejoin owns nothing, so the member moves on at once.
	for _, id := range []string{"s1", "s2"} {
		r := joinOK(t, g.ClassicJoin(now, classicJoin(id, nil, "a"), w))
		if r.Generation != 6 {
			t.Fatalf("%s rejoined at %d", id, r.Generation)
		}
		syncOK(t, g, now, id, 6)
	}
	c = ok(t, g.Heartbeat(now, hbReq("c", 6, nil), w))
	total := len(c.Assignment[tid(1)]) + len(member(t, g, "s1").Assigned[tid(1)]) + len(member(t, g, "s2").Assigned[tid(1)])
	if len(c.Assignment[tid(1)]) == 0 || total != 4 {
		t.Fatalf("after the rebalance: c %s s1 %s s2 %s", fmtA(c.Assignment), fmtA(member(t, g, "s1").Assigned), fmtA(member(t, g, "s2").Assigned))
	}

	// The consumer member leaves: only classic members are left, and
	// their shares of the target encode for a classic group.
	ok(t, g.Heartbeat(now, HeartbeatRequest{MemberID: "c", MemberEpoch: LeaveEpoch, RebalanceTimeoutMs: -1}, w))
	if !g.AllClassic() {
		t.Fatal("not AllClassic after the consumer member left")
	}
	back := g.DowngradeMembers()
	if len(back) != 2 || back[0].ID != "s1" || back[0].SessionTimeout != 10*time.Second || back[0].Protocols[0].Name != "range" {
		t.Fatalf("downgrade members: %+v", back)
	}
	decodeAssignment(t, back[0].Assignment)

	// A conversion refuses a partition assigned twice, and bad bytes.
	members[1].Assignment = assign(1, 2)
	if _, err := FromClassic("g", newGroup(0).cfg, 5, "range", members, w, now); err == nil {
		t.Fatal("a partition assigned twice converted")
	}
	members[1].Assignment = []byte{0xff}
	if _, err := FromClassic("g", newGroup(0).cfg, 5, "range", members, w, now); err == nil {
		t.Fatal("an assignment that does not decode converted")
	}
}

// A converted group survives a failover: Export/Restore keep the classic
// members' protocol data.
func TestClassicMemberExportRestore(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	ok(t, g.Heartbeat(now, joinReq("c", "a"), w))
	j := joinOK(t, g.ClassicJoin(now, classicJoin("", nil, "a"), w))
	r, err := Restore("g", g.cfg, g.Export(), now)
	if err != nil {
		t.Fatal(err)
	}
	m := member(t, r, j.MemberID)
	if m.Classic == nil || m.Classic.SessionTimeout != 10*time.Second || len(m.Classic.Protocols) != 1 {
		t.Fatalf("restored classic member: %+v", m)
	}
	codeIs(t, "restored member's heartbeat", first(r.ClassicHeartbeat(now, j.MemberID, "", j.Generation)), nil)
}

// A regex subscription takes only the topics the member may DESCRIBE
// (Kafka 4.1, KAFKA-18813): others are neither subscribed nor assigned to
// it; a grant shows on its next heartbeat. After a failover the restored
// members keep to the topics the group had resolved until they heartbeat.
func TestRegexSubscriptionAuthorization(t *testing.T) {
	w, g, now := newWorld(), newGroup(0), t0
	onlyA := func(topic string) bool { return topic == "a" }
	r := joinReq("m1")
	r.SubscribedTopicNames, r.SubscribedTopicRegex, r.Describable = nil, str("a|b"), onlyA
	m1 := ok(t, g.Heartbeat(now, r, w))
	if fmtA(m1.Assignment) != "a0,1,2,3" {
		t.Fatalf("m1 may describe a only: %s", fmtA(m1.Assignment))
	}
	if _, ok := g.Export().Topics["b"]; ok {
		t.Fatal("b subscribed though no member may describe it")
	}
	// A member that may describe everything gets b, and m1 never does.
	r2 := joinReq("m2")
	r2.SubscribedTopicNames, r2.SubscribedTopicRegex = nil, str("a|b")
	ok(t, g.Heartbeat(now, r2, w))
	for range 4 {
		hb := hbReq("m1", member(t, g, "m1").Epoch, member(t, g, "m1").Assigned)
		hb.Describable = onlyA
		ok(t, g.Heartbeat(now, hb, w))
		ok(t, g.Heartbeat(now, hbReq("m2", member(t, g, "m2").Epoch, member(t, g, "m2").Assigned), w))
	}
	if got := g.Target("m1"); len(got[tid(2)]) != 0 {
		t.Fatalf("m1's target has topic b: %s", fmtA(got))
	}
	if got := g.Target("m2"); len(got[tid(2)]) != 2 {
		t.Fatalf("m2's target lacks topic b: %s", fmtA(got))
	}

	// Failover: a steady heartbeat of m2 does not drop or add m1's topics.
	rg, err := Restore("g", g.cfg, g.Export(), now)
	if err != nil {
		t.Fatal(err)
	}
	epoch := rg.Epoch()
	ok(t, rg.Heartbeat(now, hbReq("m2", member(t, rg, "m2").Epoch, member(t, rg, "m2").Assigned), w))
	if rg.Epoch() != epoch {
		t.Fatalf("restored group moved to epoch %d from %d on a steady heartbeat", rg.Epoch(), epoch)
	}
	if got := rg.Target("m1"); len(got[tid(2)]) != 0 {
		t.Fatalf("restored m1's target has topic b: %s", fmtA(got))
	}

	hb := hbReq("m1", member(t, rg, "m1").Epoch, member(t, rg, "m1").Assigned)
	hb.Describable = onlyA
	ok(t, rg.Heartbeat(now, hb, w))
	if rg.Epoch() != epoch {
		t.Fatalf("m1's first heartbeat at the new coordinator moved the epoch to %d", rg.Epoch())
	}
	// m1 is granted b: its next heartbeat bumps the epoch and b can be
	// assigned to it.
	hb.Describable = nil
	ok(t, rg.Heartbeat(now, hb, w))
	if rg.Epoch() != epoch+1 {
		t.Fatalf("a grant did not bump the epoch: %d", rg.Epoch())
	}
}
