package group

import (
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
)

// Whatever a ConsumerGroup record holds, restoring a group from it either
// works, and then its state round-trips, or fails with an error: never a
// panic. Replay checks the record first, as a coordinator only loads what
// the image accepted.
func FuzzConsumerGroupRestore(f *testing.F) {
	seed := &metadata.ConsumerGroup{Group: "cg", Epoch: 3, AssignmentEpoch: 3, Members: []metadata.ConsumerGroupMember{
		{MemberID: "a", Epoch: 3, SubscribedTopicNames: []string{"orders"}, SubscribedTopicRegex: "o.*",
			Assigned: []metadata.ConsumerGroupPartitions{{TopicID: ordersID, Partitions: []int32{0, 1}}},
			Target:   []metadata.ConsumerGroupPartitions{{TopicID: ordersID, Partitions: []int32{0, 1}}}},
	}, Topics: []metadata.ConsumerGroupTopic{{Name: "orders", ID: ordersID, Partitions: 2}},
		Regexes: []metadata.ConsumerGroupRegex{{Regex: "o.*", Topics: []string{"orders"}, Version: 12, TimestampMs: 1700000000000}}}
	b, err := metadata.EncodeRecords([]metadata.Record{seed})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := metadata.DecodeRecords(data)
		if err != nil {
			return
		}
		img := metadata.NewImage()
		img, _ = img.Apply(recs)
		for _, r := range recs {
			cg, ok := r.(*metadata.ConsumerGroup)
			if !ok {
				continue
			}
			rec, ok := img.ConsumerGroup(cg.Group)
			if !ok {
				continue
			}
			c := &Coordinator{cfg: CoordinatorConfig{Now: time.Now}}
			cs, err := c.loadConsumer(img, cg.Group)
			if err != nil {
				continue
			}
			again := recordOf(rec.Group, rec.Slot, rec.CoordinatorEpoch, cs.g.Export())
			again.StateTimestampMs = rec.StateTimestampMs
			back := stateFromRecord(again)
			if back.Epoch != rec.Epoch || len(back.Members) != len(rec.Members) || len(back.Regexes) != len(rec.Regexes) {
				t.Fatalf("restored state differs: %+v vs %+v", back, rec)
			}
			for i, r := range again.Regexes {
				if r.Regex != rec.Regexes[i].Regex || r.Version != rec.Regexes[i].Version || len(r.Topics) != len(rec.Regexes[i].Topics) {
					t.Fatalf("restored regex %+v, recorded %+v", r, rec.Regexes[i])
				}
			}
		}
	})
}
