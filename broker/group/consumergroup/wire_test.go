package consumergroup

import (
	"testing"

	"github.com/raftka/raftka/broker/group/assignor"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// roundTrip sends req through the wire encoding both ways, as a handler
// would see it.
func roundTrip(t *testing.T, g *Group, w world, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	dec := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	dec.Version = req.Version
	if err := dec.ReadFrom(req.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	resp := g.Heartbeat(t0, FromKmsg(dec, "client-1", "/127.0.0.1"), w).Kmsg(req.Version)
	out := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	out.Version = req.Version
	if err := out.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWire(t *testing.T) {
	w, g := newWorld(), newGroup(0)
	for _, v := range []int16{0, 1} {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.MemberEpoch = v, "g", "m-v"+string(rune('0'+v)), 0
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames, req.Topics = 30000, []string{"a"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		req.RackID = kmsg.StringPtr("r1") // a join: the group converges, so a tenth of the 5 s interval
		resp := roundTrip(t, g, w, req)
		if resp.ErrorCode != 0 || resp.MemberID == nil || *resp.MemberID != req.MemberID || resp.Assignment == nil || resp.HeartbeatIntervalMillis != 500 {
			t.Fatalf("v%d join: %+v", v, resp)
		}
	}
	m, _ := g.Member("m-v0")
	if m.ClientID != "client-1" || m.ClientHost != "/127.0.0.1" || m.RackID != "r1" {
		t.Fatalf("member %+v", m)
	}
	// A regex is a v1 field: at v0 the field is not on the wire.
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = 1, "m-re", 0, 1000
	req.SubscribedTopicRegex, req.Topics = kmsg.StringPtr("("), []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if resp := roundTrip(t, g, w, req); resp.ErrorCode != kerr.InvalidRegularExpression.Code || resp.ErrorMessage == nil {
		t.Fatalf("bad regex: %+v", resp)
	}
	// An error answer carries no member id or assignment.
	req = kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "ghost", 5, -1
	if resp := roundTrip(t, g, w, req); resp.ErrorCode != kerr.UnknownMemberID.Code || resp.Assignment != nil || resp.MemberID != nil {
		t.Fatalf("unknown member: %+v", resp)
	}

	d := g.Describe(1, func(id assignor.TopicID) (string, bool) {
		for n, t := range w {
			if t.ID == id {
				return n, true
			}
		}
		return "", false
	})
	if d.Group != "g" || d.AssignorName != "uniform" || d.Epoch != g.Epoch() || d.AssignmentEpoch != g.AssignmentEpoch() || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	if d.Members[0].MemberType != 1 || *d.Members[0].RackID != "r1" || len(d.Members[0].TargetAssignment.TopicPartitions) != 1 || d.Members[0].TargetAssignment.TopicPartitions[0].Topic != "a" {
		t.Fatalf("describe member: %+v", d.Members[0])
	}
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.Version = 1
	resp.Groups = append(resp.Groups, d)
	back := kmsg.NewPtrConsumerGroupDescribeResponse()
	back.Version = 1
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil || back.Groups[0].Members[1].MemberID != d.Members[1].MemberID {
		t.Fatalf("describe does not round-trip: %v", err)
	}
}

// FuzzHeartbeat feeds arbitrary request bytes to a group with members:
// whatever decodes must be answered without a panic, and no partition
// ever ends up held by two members.
func FuzzHeartbeat(f *testing.F) {
	seed := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	seed.Version, seed.MemberID, seed.RebalanceTimeoutMillis, seed.SubscribedTopicNames = 1, "m9", 1000, []string{"a", "b"}
	seed.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	f.Add(int16(1), seed.AppendTo(nil))
	seed.MemberEpoch, seed.Topics = 1, []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: tid(1), Partitions: []int32{0, 0, -1, 99}}}
	f.Add(int16(1), seed.AppendTo(nil))
	f.Add(int16(0), []byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, version int16, b []byte) {
		w, g := newWorld(), newGroup(0)
		r1 := g.Heartbeat(t0, joinReq("m1", "a", "b"), w)
		g.Heartbeat(t0, joinReq("m2", "a"), w)
		g.Heartbeat(t0, hbReq("m1", 1, r1.Assignment), w)
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = version & 1
		if req.ReadFrom(b) != nil {
			return
		}
		for range 3 {
			g.Heartbeat(t0, FromKmsg(req, "c", "h"), w).Kmsg(req.Version).AppendTo(nil)
			g.Tick(t0)
		}
		held := map[tp]string{}
		for _, id := range g.MemberIDs() {
			m, _ := g.Member(id)
			for _, a := range []assignor.Assignment{m.Assigned, m.PendingRevocation} {
				for top, ps := range a {
					for _, p := range ps {
						if o, dup := held[tp{top, p}]; dup {
							t.Fatalf("%x-%d held by %s and %s", top[:], p, o, id)
						}
						held[tp{top, p}] = id
					}
				}
			}
		}
	})
}
