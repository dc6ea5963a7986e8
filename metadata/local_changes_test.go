package metadata

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// describeLocal renders one list of LocalChanges as "topic-partition" with
// a "*" for LeaderChanged and a "~" for an entry without a new
// registration, so a table states the whole expectation in one string.
func describeLocal(pds []PartitionDelta) []string {
	var out []string
	for _, pd := range pds {
		s := fmt.Sprintf("%s-%d", pd.Topic, pd.Partition)
		switch {
		case pd.New == nil:
			s += "~"
		case pd.LeaderChanged():
			s += "*"
		}
		out = append(out, s)
	}
	return out
}

func TestLocalChanges(t *testing.T) {
	idC := [16]byte{0xc3, 1}
	// Broker 1 leads orders-0, follows orders-1, and has no replica of
	// audit-0.
	base := threeBrokers(t)
	base, _ = mustApply(t, base, ordersTopic(), &CreateTopic{Name: "audit", ID: idB, Partitions: []PartitionRegistration{
		{Partition: 0, Replicas: []int32{2, 3}, ISR: []int32{2, 3}, Leader: 2},
	}})
	const self = 1
	tests := []struct {
		name                        string
		recs                        []Record
		leaders, followers, deletes []string
	}{
		{name: "new topic: a local leader, a local follower, a remote partition",
			recs: []Record{&CreateTopic{Name: "fresh", ID: idC, Partitions: []PartitionRegistration{
				{Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
				{Partition: 1, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2},
				{Partition: 2, Replicas: []int32{2, 3}, ISR: []int32{2, 3}, Leader: 2},
			}}},
			leaders: []string{"fresh-0*"}, followers: []string{"fresh-1*"}},
		{name: "added partition followed here",
			recs:      []Record{&AddPartitions{TopicID: idA, Partitions: []PartitionRegistration{{Partition: 2, Replicas: []int32{3, 1}, ISR: []int32{3, 1}, Leader: 3}}}},
			followers: []string{"orders-2*"}},
		{name: "leadership moves away: now a follower",
			recs:      []Record{&PartitionChange{TopicID: idA, Partition: 0, Leader: 2}},
			followers: []string{"orders-0*"}},
		{name: "leadership moves here",
			recs:    []Record{&PartitionChange{TopicID: idA, Partition: 1, Leader: 1}},
			leaders: []string{"orders-1*"}},
		{name: "leader epoch bump with the same leader",
			recs:    []Record{&PartitionChange{TopicID: idA, Partition: 0, Leader: 1}},
			leaders: []string{"orders-0*"}},
		{name: "ISR shrink under the same epoch matters to the leader",
			recs:    []Record{&PartitionChange{TopicID: idA, Partition: 0, Leader: NoLeaderChange, ISR: []int32{1, 2}}},
			leaders: []string{"orders-0"}},
		{name: "ISR change on a follower, this broker dropped from it",
			recs:      []Record{&PartitionChange{TopicID: idA, Partition: 1, Leader: NoLeaderChange, ISR: []int32{2, 3}}},
			followers: []string{"orders-1"}},
		{name: "leader lost: a replica without a leader follows nobody",
			recs:      []Record{&PartitionChange{TopicID: idA, Partition: 0, Leader: NoLeader, ISR: []int32{1}}},
			followers: []string{"orders-0*"}},
		{name: "reassigned away",
			recs:    []Record{&PartitionChange{TopicID: idA, Partition: 1, Leader: NoLeaderChange, Replicas: []int32{2, 3}, ISR: []int32{2, 3}}},
			deletes: []string{"orders-1"}},
		{name: "reassigned here",
			recs:      []Record{&PartitionChange{TopicID: idB, Partition: 0, Leader: NoLeaderChange, Replicas: []int32{2, 3, 1}}},
			followers: []string{"audit-0"}},
		{name: "topic removed: only its local partitions",
			recs:    []Record{&RemoveTopic{TopicID: idA}, &RemoveTopic{TopicID: idB}},
			deletes: []string{"orders-0~", "orders-1~"}},
		{name: "removed and re-created under the same name in one batch",
			recs: []Record{&RemoveTopic{TopicID: idA}, &CreateTopic{Name: "orders", ID: idC, Partitions: []PartitionRegistration{
				{Partition: 0, Replicas: []int32{3, 1}, ISR: []int32{3, 1}, Leader: 3},
			}}},
			followers: []string{"orders-0*"}, deletes: []string{"orders-0~", "orders-1~"}},
		{name: "changes that touch only other brokers",
			recs: []Record{&PartitionChange{TopicID: idB, Partition: 0, Leader: 3}, &FenceBroker{BrokerID: 2, BrokerEpoch: 11},
				&Config{ResourceType: ConfigResourceTopic, ResourceName: "orders", Key: "retention.ms", Value: "5"}}},
	}
	// A re-created topic's entries are told apart from the old one's by id.
	_, d := mustApply(t, base, &RemoveTopic{TopicID: idA}, &CreateTopic{Name: "orders", ID: idC, Partitions: []PartitionRegistration{
		{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
	}})
	if l := d.LocalChanges(self); len(l.Leaders) != 1 || l.Leaders[0].TopicID != idC || len(l.Deletes) != 2 || l.Deletes[0].TopicID != idA {
		t.Fatalf("re-created topic: %+v", l)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, d := mustApply(t, base, tc.recs...)
			l := d.LocalChanges(self)
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"leaders", describeLocal(l.Leaders), tc.leaders}, {"followers", describeLocal(l.Followers), tc.followers}, {"deletes", describeLocal(l.Deletes), tc.deletes}} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
			}
			if l.Empty() != (len(tc.leaders)+len(tc.followers)+len(tc.deletes) == 0) {
				t.Errorf("Empty() = %v", l.Empty())
			}
			for _, pd := range l.Deletes {
				if pd.Old == nil || !slices.Contains(pd.Old.Replicas, self) {
					t.Errorf("delete %s-%d without this broker in its old replicas", pd.Topic, pd.Partition)
				}
			}
			for _, pd := range slices.Concat(l.Leaders, l.Followers) {
				if pd.TopicID == ([16]byte{}) || pd.New == nil || !slices.Contains(pd.New.Replicas, self) {
					t.Errorf("%s-%d listed without this broker in its new replicas", pd.Topic, pd.Partition)
				}
			}
		})
	}
}

// checkLocalChanges holds every broker's LocalChanges to the two images: a
// broker's replicas in the old image, less Deletes, with Leaders and
// Followers, are its replicas in the new one, each with the new
// registration and in the list its new role names.
//
// Not for a batch that removes a topic and creates one under the same id:
// the Delta shows that as a change of the partitions the new topic has and
// does not list the old topic's others anywhere. The controller never
// reuses an id (they are random), so the Delta's lists are left as they
// are; such batches are skipped here.
func checkLocalChanges(t *rapid.T, old, next *Image, d *Delta, batch []Record) {
	removed := map[[16]byte]bool{}
	for _, r := range batch {
		switch r := r.(type) {
		case *RemoveTopic:
			removed[r.TopicID] = true
		case *CreateTopic:
			if removed[r.ID] {
				return
			}
		}
	}
	type key struct {
		id [16]byte
		p  int32
	}
	replicas := func(img *Image, b int32) map[key]PartitionRegistration {
		m := map[key]PartitionRegistration{}
		for _, top := range img.Topics() {
			for _, p := range top.Partitions {
				if slices.Contains(p.Replicas, b) {
					m[key{top.ID, p.Partition}] = p
				}
			}
		}
		return m
	}
	for b := int32(0); b <= 4; b++ {
		l := d.LocalChanges(b)
		have, want := replicas(old, b), replicas(next, b)
		for _, pd := range l.Deletes {
			if _, ok := have[key{pd.TopicID, pd.Partition}]; !ok {
				t.Fatalf("broker %d: delete of %s-%d it had no replica of", b, pd.Topic, pd.Partition)
			}
			delete(have, key{pd.TopicID, pd.Partition})
		}
		for _, l := range []struct {
			pds    []PartitionDelta
			leader bool
		}{{l.Leaders, true}, {l.Followers, false}} {
			for _, pd := range l.pds {
				if (pd.New.Leader == b) != l.leader {
					t.Fatalf("broker %d: %s-%d in the wrong list (leader %d)", b, pd.Topic, pd.Partition, pd.New.Leader)
				}
				have[key{pd.TopicID, pd.Partition}] = *pd.New
			}
		}
		if len(have) != len(want) {
			t.Fatalf("broker %d: local changes give %d replicas, the image %d", b, len(have), len(want))
		}
		for k, p := range want {
			if h, ok := have[k]; !ok || !h.Equal(p) {
				t.Fatalf("broker %d: partition %x-%d is %+v after the local changes, %+v in the image", b, k.id, k.p, h, p)
			}
		}
	}
}
