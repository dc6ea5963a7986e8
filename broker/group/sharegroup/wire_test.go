package sharegroup

import (
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFillResponse(t *testing.T) {
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	FillResponse(resp, HeartbeatResult{MemberID: "m", MemberEpoch: 4, HeartbeatInterval: 5 * time.Second,
		SendAssignment: true, Assignment: Assignment{tB: {1}, tA: {0, 2}}})
	if resp.ErrorCode != 0 || *resp.MemberID != "m" || resp.MemberEpoch != 4 || resp.HeartbeatIntervalMillis != 5000 ||
		len(resp.Assignment.TopicPartitions) != 2 || resp.Assignment.TopicPartitions[0].TopicID != tA {
		t.Fatalf("answer %+v", resp)
	}
	// An empty assignment is sent as empty, not null: the member has none.
	resp = kmsg.NewPtrShareGroupHeartbeatResponse()
	FillResponse(resp, HeartbeatResult{MemberID: "m", MemberEpoch: 1, SendAssignment: true, Assignment: Assignment{}})
	if resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 0 {
		t.Fatalf("empty assignment %+v", resp.Assignment)
	}
	resp = kmsg.NewPtrShareGroupHeartbeatResponse()
	FillResponse(resp, HeartbeatResult{Err: kerr.FencedMemberEpoch, ErrMessage: "why"})
	if resp.ErrorCode != kerr.FencedMemberEpoch.Code || *resp.ErrorMessage != "why" || resp.MemberID != nil || resp.Assignment != nil {
		t.Fatalf("error answer %+v", resp)
	}
}

func TestDescribed(t *testing.T) {
	img, d := metadata.NewImage().Apply([]metadata.Record{&metadata.CreateTopic{Name: "orders", ID: tA,
		Partitions: metadata.NewPartitions(0, [][]int32{{1}, {1}}, func(int32) bool { return true })}})
	if len(d.Skipped) > 0 {
		t.Fatal(d.Skipped[0].Err)
	}
	s := Snapshot{Group: "sg", State: StateStable, Epoch: 3, AssignmentEpoch: 3, Members: []*Member{
		{ID: "a", Epoch: 3, RackID: "r1", ClientID: "c", ClientHost: "/h", SubscribedTopicNames: []string{"orders", "zzz"},
			Assigned: Assignment{tA: {0, 1}, tB: {0}}}, // tB: a topic deleted since
	}}
	g, topics := Described(s, img)
	if g.GroupID != "sg" || g.GroupState != "Stable" || g.Assignor != "simple" || g.GroupEpoch != 3 || len(g.Members) != 1 {
		t.Fatalf("group %+v", g)
	}
	m := g.Members[0]
	if *m.RackID != "r1" || m.ClientHost != "/h" || len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "orders" {
		t.Fatalf("member %+v", m)
	}
	if len(topics) != 2 || topics[0] != "orders" || topics[1] != "zzz" {
		t.Fatalf("topics to authorize %v", topics)
	}
}
