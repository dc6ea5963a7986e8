package sharegroup

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

var (
	tA = TopicID{1}
	tB = TopicID{2}
	tC = TopicID{3}
)

func members(ids ...string) []AssignMember {
	out := make([]AssignMember, len(ids))
	for i, id := range ids {
		out[i] = AssignMember{ID: id, Topics: []TopicID{tA}}
	}
	return out
}

func TestSimpleTable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []AssignMember
		parts   map[TopicID]int32
		want    map[string]Assignment
	}{
		{"one member takes all", members("a"), map[TopicID]int32{tA: 3},
			map[string]Assignment{"a": {tA: {0, 1, 2}}}},
		{"three members, six partitions", members("a", "b", "c"), map[TopicID]int32{tA: 6},
			map[string]Assignment{"a": {tA: {0, 3}}, "b": {tA: {1, 4}}, "c": {tA: {2, 5}}}},
		{"more members than partitions share them", members("a", "b", "c"), map[TopicID]int32{tA: 2},
			map[string]Assignment{"a": {tA: {0, 1}}, "b": {tA: {0}}, "c": {tA: {1}}}},
		{"one partition goes to everyone", members("a", "b"), map[TopicID]int32{tA: 1},
			map[string]Assignment{"a": {tA: {0}}, "b": {tA: {0}}}},
		{"unknown topic assigns nothing", []AssignMember{{ID: "a", Topics: []TopicID{tB}}}, map[TopicID]int32{tA: 2},
			map[string]Assignment{"a": {}}},
		{"sticky: a keeps its partitions when b joins",
			[]AssignMember{{ID: "a", Topics: []TopicID{tA}, Current: Assignment{tA: {0, 1, 2, 3}}}, {ID: "b", Topics: []TopicID{tA}}},
			map[TopicID]int32{tA: 4},
			map[string]Assignment{"a": {tA: {0, 1}}, "b": {tA: {2, 3}}}},
		{"heterogeneous: each topic to its subscribers",
			[]AssignMember{{ID: "a", Topics: []TopicID{tA}}, {ID: "b", Topics: []TopicID{tA, tB}}},
			map[TopicID]int32{tA: 2, tB: 2},
			map[string]Assignment{"a": {tA: {0}}, "b": {tA: {1}, tB: {0, 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Simple(tc.members, tc.parts)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for id, w := range tc.want {
				if !got[id].Equal(w) {
					t.Errorf("member %s: got %v, want %v (all: %v)", id, got[id], w, got)
				}
			}
		})
	}
}

// genInput draws a group: up to 12 members over up to 3 topics of up to 8
// partitions, some with a current assignment (possibly stale: partitions
// past the count, topics not subscribed).
func genInput(t *rapid.T, homogeneous bool) ([]AssignMember, map[TopicID]int32) {
	topics := []TopicID{tA, tB, tC}[:rapid.IntRange(1, 3).Draw(t, "topics")]
	parts := map[TopicID]int32{}
	for _, tp := range topics {
		parts[tp] = int32(rapid.IntRange(1, 8).Draw(t, "partitions"))
	}
	ids := rapid.SliceOfNDistinct(rapid.IntRange(0, 40), 1, 12, func(x int) int { return x }).Draw(t, "ids")
	ms := make([]AssignMember, len(ids))
	for i := range ms {
		ms[i].ID = fmt.Sprintf("m%02d", ids[i])
		if homogeneous {
			ms[i].Topics = topics
		} else {
			ms[i].Topics = rapid.SliceOfNDistinct(rapid.SampledFrom(topics), 1, len(topics), func(x TopicID) TopicID { return x }).Draw(t, "subs")
		}
		if rapid.Bool().Draw(t, "hasCurrent") {
			ms[i].Current = Assignment{}
			for _, tp := range topics {
				ms[i].Current[tp] = rapid.SliceOfDistinct(rapid.Int32Range(0, 9), func(x int32) int32 { return x }).Draw(t, "cur")
				slices.Sort(ms[i].Current[tp])
			}
		}
	}
	return ms, parts
}

func checkAssignment(t *rapid.T, ms []AssignMember, parts map[TopicID]int32, got map[string]Assignment, homogeneous bool) {
	subs := map[string]map[TopicID]bool{}
	for _, m := range ms {
		subs[m.ID] = map[TopicID]bool{}
		for _, tp := range m.Topics {
			subs[m.ID][tp] = true
		}
	}
	if len(got) != len(subs) {
		t.Fatalf("%d members in the result, want %d", len(got), len(subs))
	}
	holders := map[TopicID]map[int32]int{}
	for id, a := range got {
		for tp, ps := range a {
			if !subs[id][tp] && len(ps) > 0 {
				t.Fatalf("member %s got topic %v it does not subscribe to", id, tp)
			}
			if !slices.IsSorted(ps) || len(slices.Compact(slices.Clone(ps))) != len(ps) {
				t.Fatalf("member %s: partitions %v not sorted and unique", id, ps)
			}
			for _, p := range ps {
				if p < 0 || p >= parts[tp] {
					t.Fatalf("member %s got partition %d of a %d-partition topic", id, p, parts[tp])
				}
				if holders[tp] == nil {
					holders[tp] = map[int32]int{}
				}
				holders[tp][p]++
			}
		}
	}
	for tp, n := range parts {
		subscribed := false
		for _, s := range subs {
			subscribed = subscribed || s[tp]
		}
		if !subscribed {
			continue
		}
		for p := range n {
			if holders[tp][p] == 0 {
				t.Fatalf("partition %v/%d is subscribed but assigned to no member: %v", tp, p, got)
			}
		}
	}
	if homogeneous {
		total := 0
		for _, n := range parts {
			total += int(n)
		}
		m := len(subs)
		share := (m + total - 1) / total
		lo, hi := int(^uint(0)>>1), 0
		for _, a := range got {
			lo, hi = min(lo, a.Count()), max(hi, a.Count())
		}
		if hi-lo > 1 {
			t.Fatalf("counts range %d..%d, want within one: %v", lo, hi, got)
		}
		for tp := range parts {
			for p, c := range holders[tp] {
				if c != share {
					t.Fatalf("partition %v/%d has %d members, want ceil(%d/%d) = %d", tp, p, c, m, total, share)
				}
			}
		}
	}
}

func TestSimpleProperties(t *testing.T) {
	for _, homogeneous := range []bool{true, false} {
		t.Run(fmt.Sprintf("homogeneous=%v", homogeneous), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				ms, parts := genInput(t, homogeneous)
				got := Simple(ms, parts)
				checkAssignment(t, ms, parts, got, homogeneous)

				// Deterministic: the same input in another order, the same answer.
				shuffled := slices.Clone(ms)
				perm := rapid.Permutation(shuffled).Draw(t, "perm")
				again := Simple(perm, maps.Clone(parts))
				for id := range got {
					if !got[id].Equal(again[id]) {
						t.Fatalf("member %s: %v, then %v for the members reordered", id, got[id], again[id])
					}
				}
				// Stable: feeding the answer back as the current assignment
				// changes nothing.
				var next []AssignMember
				for _, m := range ms {
					next = append(next, AssignMember{ID: m.ID, Topics: m.Topics, Current: got[m.ID]})
				}
				fixed := Simple(next, parts)
				for id := range got {
					if !got[id].Equal(fixed[id]) {
						t.Fatalf("member %s: %v, then %v when it already had it", id, got[id], fixed[id])
					}
				}
			})
		})
	}
}
