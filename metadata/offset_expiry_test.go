package metadata

import (
	"reflect"
	"testing"
	"time"
)

func TestExpireOffsets(t *testing.T) {
	const (
		retention = 10 * time.Minute
		ret       = int64(10 * 60 * 1000)
		t0        = int64(1_700_000_000_000) // the fake clock's origin
	)
	commit := func(group string, ms int64, tps ...TopicPartition) Record {
		r := &CommitOffsets{Group: group}
		for _, tp := range tps {
			r.Offsets = append(r.Offsets, OffsetCommit{Topic: tp.Topic, Partition: tp.Partition, Offset: 5, LeaderEpoch: -1, CommitTimeMs: ms})
		}
		return r
	}
	gen := func(group string, n int32, ms int64, members ...string) Record {
		r := &GroupGeneration{Group: group, Generation: n, ProtocolType: "consumer", Protocol: "range", StateTimestampMs: ms}
		for _, m := range members {
			r.Members = append(r.Members, GroupMember{MemberID: m})
		}
		return r
	}
	subscribed := func(r Record, topics ...string) Record {
		r.(*GroupGeneration).SubscribedTopics = append([]string{}, topics...)
		return r
	}
	a0, a1, b0 := TopicPartition{"a", 0}, TopicPartition{"a", 1}, TopicPartition{"b", 0}
	cases := []struct {
		name string
		recs []Record
		now  int64
		want []Record
	}{
		{"empty for longer than retention: group deleted",
			[]Record{gen("g", 1, t0, "m1"), commit("g", t0+1, a0, a1), gen("g", 2, t0+2)},
			t0 + 2 + ret, []Record{&DeleteGroup{Group: "g"}}},
		{"empty for just under retention: kept",
			[]Record{gen("g", 1, t0, "m1"), commit("g", t0+1, a0), gen("g", 2, t0+2)},
			t0 + 2 + ret - 1, nil},
		{"empty recently, offsets committed long ago: kept (counted from emptiness)",
			[]Record{gen("g", 1, t0, "m1"), commit("g", t0, a0), gen("g", 2, t0+5*ret)},
			t0 + 5*ret + ret/2, nil},
		{"active group, offsets committed long ago: never",
			[]Record{gen("g", 1, t0, "m1", "m2"), commit("g", t0, a0, b0)},
			t0 + 1000*ret, nil},
		{"active member's subscribed partitions: kept",
			[]Record{commit("g", t0, a0, a1), subscribed(gen("g", 3, t0+ret, "m1", "m2"), "b", "a")},
			t0 + 100*ret, nil},
		{"active consumer group: an unsubscribed topic's offsets expire from their commit times",
			[]Record{commit("g", t0, a0, a1, b0), subscribed(gen("g", 1, t0, "m1"), "a")},
			t0 + ret, []Record{&DeleteOffsets{Group: "g", Partitions: []TopicPartition{b0}}}},
		{"active consumer group: an unsubscribed topic's recent offsets kept",
			[]Record{commit("g", t0, a0), commit("g", t0+ret, b0), subscribed(gen("g", 1, t0, "m1"), "a")},
			t0 + ret, nil},
		{"active consumer group subscribed to nothing committed: offsets go, the group stays",
			[]Record{commit("g", t0, a0, b0), subscribed(gen("g", 1, t0, "m1"), "c")},
			t0 + ret, []Record{&DeleteOffsets{Group: "g", Partitions: []TopicPartition{a0, b0}}}},
		{"active group of another protocol type: never",
			[]Record{commit("g", t0, a0), subscribed(&GroupGeneration{Group: "g", Generation: 1, ProtocolType: "connect", Members: []GroupMember{{MemberID: "w"}}}, "x")},
			t0 + 100*ret, nil},
		{"empty group: its last subscriptions do not keep offsets",
			[]Record{commit("g", t0, a0), subscribed(gen("g", 2, t0+1), "a")},
			t0 + 1 + ret, []Record{&DeleteGroup{Group: "g"}}},
		{"standalone consumer: each offset from its commit time",
			[]Record{commit("s", t0, a0), commit("s", t0+ret, a1)},
			t0 + ret, []Record{&DeleteOffsets{Group: "s", Partitions: []TopicPartition{a0}}}},
		{"standalone consumer, every offset old: group deleted",
			[]Record{commit("s", t0, a0), commit("s", t0+1, a1)},
			t0 + 1 + ret, []Record{&DeleteGroup{Group: "s"}}},
		{"empty generation from a version 0 record: commit times count",
			[]Record{commit("g", t0, a0), commit("g", t0+ret, a1), gen("g", 2, 0)},
			t0 + ret, []Record{&DeleteOffsets{Group: "g", Partitions: []TopicPartition{a0}}}},
		{"empty group with no offsets: deleted at once",
			[]Record{gen("g", 2, t0)},
			t0, []Record{&DeleteGroup{Group: "g"}}},
		{"several groups, sorted by name",
			[]Record{commit("z", t0, a0), gen("active", 1, t0, "m"), commit("active", t0, a0), commit("b", t0, b0, a0), commit("b", t0+ret, a1)},
			t0 + ret, []Record{
				&DeleteOffsets{Group: "b", Partitions: []TopicPartition{a0, b0}},
				&DeleteGroup{Group: "z"},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img, _ := mustApply(t, NewImage(), c.recs...)
			got := ExpireOffsets(img, c.now, retention)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %s, want %s", show(got), show(c.want))
			}
			// What was decided replays on every node: nothing the rule
			// removed is left, and asking again decides nothing.
			if len(got) > 0 {
				next, d := img.Apply(got)
				if len(d.Skipped) > 0 {
					t.Fatalf("skipped %+v", d.Skipped)
				}
				if again := ExpireOffsets(next, c.now, retention); len(again) > 0 {
					t.Fatalf("after applying, decided again: %s", show(again))
				}
			}
		})
	}
}

func show(recs []Record) string {
	s := "["
	for _, r := range recs {
		s += " " + reflect.TypeOf(r).Elem().Name()
		switch r := r.(type) {
		case *DeleteGroup:
			s += "(" + r.Group + ")"
		case *DeleteOffsets:
			s += "(" + r.Group + " " + fmtTPs(r.Partitions) + ")"
		}
	}
	return s + " ]"
}

func fmtTPs(tps []TopicPartition) string {
	s := ""
	for _, tp := range tps {
		s += tp.Topic + "-" + string(rune('0'+tp.Partition)) + " "
	}
	return s
}
