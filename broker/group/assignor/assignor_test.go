package assignor

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func tid(b byte) TopicID { return TopicID{15: b} }

var (
	tA, tB, tC = tid(1), tid(2), tid(3)
	names      = map[TopicID]string{tA: "a", tB: "b", tC: "c"}
)

func topics(counts map[TopicID]int32) map[TopicID]Topic {
	out := map[TopicID]Topic{}
	for id, n := range counts {
		out[id] = Topic{ID: id, Name: names[id], Partitions: n}
	}
	return out
}

// show prints an assignment as "m1[a0,a1 b2] m2[...]" for table tests.
func show(as map[string]Assignment) string {
	ids := slices.Sorted(maps.Keys(as))
	var parts []string
	for _, id := range ids {
		var ps []string
		for _, t := range []TopicID{tA, tB, tC} {
			if len(as[id][t]) == 0 {
				continue
			}
			var s []string
			for _, p := range as[id][t] {
				s = append(s, fmt.Sprint(p))
			}
			ps = append(ps, names[t]+strings.Join(s, ","))
		}
		parts = append(parts, id+"["+strings.Join(ps, " ")+"]")
	}
	return strings.Join(parts, " ")
}

func member(id string, topics []TopicID, current Assignment) Member {
	return Member{ID: id, Topics: topics, Current: current}
}

func TestUniformTable(t *testing.T) {
	ab := []TopicID{tA, tB}
	for _, tc := range []struct {
		name    string
		members []Member
		counts  map[TopicID]int32
		want    string
	}{
		{"fresh, even", []Member{member("m1", ab, nil), member("m2", ab, nil)},
			map[TopicID]int32{tA: 2, tB: 2}, "m1[a0,1] m2[b0,1]"},
		{"fresh, odd: the first members get the extra", []Member{member("m1", ab, nil), member("m2", ab, nil), member("m3", ab, nil)},
			map[TopicID]int32{tA: 3, tB: 1}, "m1[a0,1] m2[a2] m3[b0]"},
		{"more members than partitions", []Member{member("m1", ab, nil), member("m2", ab, nil), member("m3", ab, nil)},
			map[TopicID]int32{tA: 1, tB: 1}, "m1[a0] m2[b0] m3[]"},
		{"sticky: a member joins and takes only the excess", []Member{
			member("m1", ab, Assignment{tA: {0, 1, 2}}), member("m2", ab, Assignment{tB: {0, 1, 2}}), member("m3", ab, nil)},
			map[TopicID]int32{tA: 3, tB: 3}, "m1[a0,1] m2[b0,1] m3[a2 b2]"},
		{"sticky: a member leaves, its partitions spread", []Member{
			member("m1", ab, Assignment{tA: {0, 1}}), member("m3", ab, Assignment{tA: {2}, tB: {2}})},
			map[TopicID]int32{tA: 3, tB: 3}, "m1[a0,1 b0] m3[a2 b1,2]"},
		{"the extra goes to who already holds it", []Member{
			member("m1", ab, Assignment{tA: {0}}), member("m2", ab, Assignment{tA: {1, 2}}), member("m3", ab, Assignment{tB: {0}})},
			map[TopicID]int32{tA: 3, tB: 1}, "m1[a0] m2[a1,2] m3[b0]"},
		{"new partitions go to the members with room", []Member{
			member("m1", ab, Assignment{tA: {0}}), member("m2", ab, Assignment{tA: {1}})},
			map[TopicID]int32{tA: 4, tB: 0}, "m1[a0,2] m2[a1,3]"},
		{"deleted partitions and unsubscribed topics are dropped", []Member{
			member("m1", []TopicID{tA}, Assignment{tA: {0, 5}, tB: {0}}), member("m2", []TopicID{tA}, Assignment{tA: {1}})},
			map[TopicID]int32{tA: 2, tB: 1}, "m1[a0] m2[a1]"},
		{"a partition claimed twice stays with the first member", []Member{
			member("m2", ab, Assignment{tA: {0}}), member("m1", ab, Assignment{tA: {0}})},
			map[TopicID]int32{tA: 2, tB: 0}, "m1[a0] m2[a1]"},
		{"heterogeneous: each topic over its subscribers", []Member{
			member("m1", []TopicID{tA}, nil), member("m2", ab, nil), member("m3", []TopicID{tB}, nil)},
			map[TopicID]int32{tA: 4, tB: 2}, "m1[a0,2] m2[a1,3] m3[b0,1]"},
		{"heterogeneous: a subscription change moves only what balance needs", []Member{
			member("m1", []TopicID{tA}, Assignment{tA: {0, 1}, tB: {0}}), member("m2", ab, Assignment{tA: {2, 3}, tB: {1}})},
			map[TopicID]int32{tA: 4, tB: 2}, "m1[a0,1,3] m2[a2 b0,1]"},
		{"heterogeneous: balance moves the newest partitions", []Member{
			member("m1", ab, Assignment{tA: {0, 1, 2, 3}}), member("m2", []TopicID{tA}, nil)},
			map[TopicID]int32{tA: 4, tB: 2}, "m1[a0 b0,1] m2[a1,2,3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Group{Members: tc.members, Topics: topics(tc.counts)}
			got, err := Uniform{}.Assign(g)
			if err != nil {
				t.Fatal(err)
			}
			if s := show(got); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
			checkInvariants(t, g, got)
		})
	}
}

func TestUniformRackAware(t *testing.T) {
	tops := topics(map[TopicID]int32{tA: 4})
	tp := tops[tA]
	tp.Racks = [][]string{{"r2"}, {"r1"}, {"r2", "r3"}, {"r1"}}
	tops[tA] = tp
	ms := []Member{{ID: "m1", Rack: "r1", Topics: []TopicID{tA}}, {ID: "m2", Rack: "r2", Topics: []TopicID{tA}}}
	got, err := Uniform{}.Assign(Group{Members: ms, Topics: tops})
	if err != nil {
		t.Fatal(err)
	}
	if s := show(got); s != "m1[a1,3] m2[a0,2]" {
		t.Errorf("homogeneous: %s, want each partition on its replicas' rack", s)
	}
	// Racks never cost stickiness: m1 keeps what it has.
	ms[0].Current = Assignment{tA: {0, 2}}
	got, _ = Uniform{}.Assign(Group{Members: ms, Topics: tops})
	if s := show(got); s != "m1[a0,2] m2[a1,3]" {
		t.Errorf("sticky over racks: %s", s)
	}
	// Heterogeneous: the rack breaks ties between equally loaded members.
	ms = []Member{{ID: "m1", Rack: "r1", Topics: []TopicID{tA}}, {ID: "m2", Rack: "r2", Topics: []TopicID{tA, tB}}}
	tops[tB] = Topic{ID: tB, Partitions: 0}
	got, _ = Uniform{}.Assign(Group{Members: ms, Topics: tops})
	if s := show(got); s != "m1[a1,3] m2[a0,2]" {
		t.Errorf("heterogeneous: %s", s)
	}
}

func TestRangeTable(t *testing.T) {
	ab := []TopicID{tA, tB}
	for _, tc := range []struct {
		name    string
		members []Member
		counts  map[TopicID]int32
		want    string
	}{
		{"co-partitioned", []Member{member("m2", ab, nil), member("m1", ab, nil)},
			map[TopicID]int32{tA: 3, tB: 3}, "m1[a0,1 b0,1] m2[a2 b2]"},
		{"more members than partitions", []Member{member("m1", ab, nil), member("m2", ab, nil), member("m3", ab, nil)},
			map[TopicID]int32{tA: 2, tB: 1}, "m1[a0 b0] m2[a1] m3[]"},
		{"heterogeneous", []Member{member("m1", []TopicID{tA}, nil), member("m2", ab, nil), member("m3", []TopicID{tB}, nil)},
			map[TopicID]int32{tA: 3, tB: 4}, "m1[a0,1] m2[a2 b0,1] m3[b2,3]"},
		{"current assignments do not matter", []Member{member("m1", ab, Assignment{tA: {2}}), member("m2", ab, Assignment{tA: {0, 1}})},
			map[TopicID]int32{tA: 3, tB: 0}, "m1[a0,1] m2[a2]"},
		{"static members first, by instance id", []Member{
			{ID: "m1", Topics: ab}, {ID: "m2", InstanceID: "z", Topics: ab}, {ID: "m3", InstanceID: "y", Topics: ab}},
			map[TopicID]int32{tA: 3, tB: 0}, "m1[a2] m2[a1] m3[a0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Group{Members: tc.members, Topics: topics(tc.counts)}
			got, err := Range{}.Assign(g)
			if err != nil {
				t.Fatal(err)
			}
			if s := show(got); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
			checkInvariants(t, g, got)
		})
	}
}

func TestInvalidInput(t *testing.T) {
	for _, a := range []Assignor{Uniform{}, Range{}} {
		_, err := a.Assign(Group{Members: []Member{member("m1", []TopicID{tA}, nil)}, Topics: topics(map[TopicID]int32{tB: 1})})
		if !errors.Is(err, ErrUnknownTopic) {
			t.Errorf("%s: unknown topic: %v", a.Name(), err)
		}
		_, err = a.Assign(Group{Members: []Member{member("m1", nil, nil), member("m1", nil, nil)}})
		if err == nil {
			t.Errorf("%s: a member id twice accepted", a.Name())
		}
		got, err := a.Assign(Group{})
		if err != nil || len(got) != 0 {
			t.Errorf("%s: no members: %v %v", a.Name(), got, err)
		}
	}
	if a, ok := ByName("uniform"); !ok || a.Name() != UniformName {
		t.Error("ByName(uniform)")
	}
	if a, ok := ByName("range"); !ok || a.Name() != RangeName {
		t.Error("ByName(range)")
	}
	if _, ok := ByName("sticky"); ok {
		t.Error("ByName(sticky) found an assignor")
	}
}

// checkInvariants holds for every assignor and input: an entry per
// member, only subscribed existing partitions, no partition with two
// owners, every subscribed partition with one.
func checkInvariants(t interface {
	Helper()
	Fatalf(string, ...any)
}, g Group, got map[string]Assignment) {
	t.Helper()
	if len(got) != len(g.Members) {
		t.Fatalf("%d assignments for %d members", len(got), len(g.Members))
	}
	owners := map[tp]string{}
	subscribed := map[TopicID]bool{}
	for _, m := range g.Members {
		a, ok := got[m.ID]
		if !ok {
			t.Fatalf("no assignment for %s", m.ID)
		}
		for _, s := range m.Topics {
			subscribed[s] = true
		}
		for topic, ps := range a {
			if !slices.Contains(m.Topics, topic) {
				t.Fatalf("%s got topic %x it does not subscribe to", m.ID, topic[:])
			}
			if !slices.IsSorted(ps) || len(ps) == 0 {
				t.Fatalf("%s: partitions %v not ascending or empty", m.ID, ps)
			}
			for _, p := range ps {
				if p < 0 || p >= g.Topics[topic].Partitions {
					t.Fatalf("%s got partition %d of a %d-partition topic", m.ID, p, g.Topics[topic].Partitions)
				}
				if o, dup := owners[tp{topic, p}]; dup {
					t.Fatalf("partition %x-%d owned by %s and %s", topic[:], p, o, m.ID)
				}
				owners[tp{topic, p}] = m.ID
			}
		}
	}
	for topic := range subscribed {
		for p := range g.Topics[topic].Partitions {
			if _, ok := owners[tp{topic, p}]; !ok {
				t.Fatalf("partition %x-%d has no owner", topic[:], p)
			}
		}
	}
}

// genGroup draws a group: 1-4 topics of 1-16 partitions with replica
// racks, 1-9 members with racks, homogeneous or not, and current
// assignments that are partly stale (deleted partitions, unsubscribed
// topics, partitions claimed twice), as after subscription changes.
func genGroup(t *rapid.T, homogeneous bool) Group {
	nt := rapid.IntRange(1, 4).Draw(t, "topics")
	racks := []string{"", "r1", "r2", "r3"}
	g := Group{Topics: map[TopicID]Topic{}}
	var ids []TopicID
	for i := range nt {
		id := tid(byte(i + 1))
		n := rapid.Int32Range(1, 16).Draw(t, "partitions")
		top := Topic{ID: id, Partitions: n}
		for range n {
			top.Racks = append(top.Racks, []string{racks[rapid.IntRange(1, 3).Draw(t, "replica rack")]})
		}
		g.Topics[id] = top
		ids = append(ids, id)
	}
	nm := rapid.IntRange(1, 9).Draw(t, "members")
	for i := range nm {
		m := Member{ID: fmt.Sprintf("m%d", i), Rack: racks[rapid.IntRange(0, 3).Draw(t, "rack")]}
		if rapid.Bool().Draw(t, "static") {
			m.InstanceID = fmt.Sprintf("i%d", rapid.IntRange(0, 20).Draw(t, "instance"))
		}
		if homogeneous {
			m.Topics = ids
		} else {
			for _, id := range ids {
				if rapid.Bool().Draw(t, "subscribes") {
					m.Topics = append(m.Topics, id)
				}
			}
		}
		m.Current = Assignment{}
		for _, id := range ids {
			for p := range g.Topics[id].Partitions + 2 {
				if rapid.IntRange(0, nm).Draw(t, "holds") == 0 {
					m.Current[id] = append(m.Current[id], p)
				}
			}
		}
		g.Members = append(g.Members, m)
	}
	return g
}

func loads(as map[string]Assignment) map[string]int {
	out := map[string]int{}
	for id, a := range as {
		out[id] = a.Count()
	}
	return out
}

func withCurrent(g Group, as map[string]Assignment) Group {
	out := Group{Topics: g.Topics}
	for _, m := range g.Members {
		m.Current = as[m.ID]
		out.Members = append(out.Members, m)
	}
	return out
}

func shuffled(t *rapid.T, g Group) Group {
	out := Group{Topics: g.Topics, Members: slices.Clone(g.Members)}
	perm := rapid.Permutation(out.Members).Draw(t, "member order")
	out.Members = perm
	for i := range out.Members {
		cur := Assignment{}
		for id, ps := range out.Members[i].Current {
			cur[id] = rapid.Permutation(ps).Draw(t, "partition order")
		}
		out.Members[i].Current = cur
		out.Members[i].Topics = rapid.Permutation(out.Members[i].Topics).Draw(t, "topic order")
	}
	return out
}

func same(a, b map[string]Assignment) bool { return show2(a) == show2(b) }

// show2 is a canonical text of any assignment (any topic ids).
func show2(as map[string]Assignment) string {
	var sb strings.Builder
	for _, id := range slices.Sorted(maps.Keys(as)) {
		ts := slices.Collect(maps.Keys(as[id]))
		sort.Slice(ts, func(i, j int) bool { return ts[i].less(ts[j]) })
		fmt.Fprintf(&sb, "%s:", id)
		for _, t := range ts {
			fmt.Fprintf(&sb, "%x%v", t[15], as[id][t])
		}
		sb.WriteString(";")
	}
	return sb.String()
}

func TestUniformProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		homogeneous := rapid.Bool().Draw(t, "homogeneous")
		g := genGroup(t, homogeneous)
		got, err := Uniform{}.Assign(g)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, g, got)
		load := loads(got)
		if homogeneous {
			lo, hi := 1<<30, -1
			for _, n := range load {
				lo, hi = min(lo, n), max(hi, n)
			}
			if hi-lo > 1 {
				t.Fatalf("loads %v differ by more than one", load)
			}
		} else {
			// No partition could move to another subscriber of its topic
			// and make the two closer.
			for _, a := range g.Members {
				for topic := range got[a.ID] {
					for _, b := range g.Members {
						if slices.Contains(b.Topics, topic) && load[a.ID]-load[b.ID] > 1 {
							t.Fatalf("%s (%d) owns %x but subscriber %s has %d", a.ID, load[a.ID], topic[:], b.ID, load[b.ID])
						}
					}
				}
			}
		}
		if again, _ := (Uniform{}).Assign(shuffled(t, g)); !same(got, again) {
			t.Fatalf("not deterministic:\n%s\n%s", show2(got), show2(again))
		}
		// Stable: run on its own output, nothing moves.
		next := withCurrent(g, got)
		if again, _ := (Uniform{}).Assign(next); !same(got, again) {
			t.Fatalf("moves without a change:\n%s\n%s", show2(got), show2(again))
		}
		if !homogeneous {
			return
		}
		// A member leaves: the others keep everything they had.
		if len(g.Members) > 1 {
			gone := rapid.IntRange(0, len(g.Members)-1).Draw(t, "leaver")
			left := Group{Topics: g.Topics}
			for i, m := range next.Members {
				if i != gone {
					left.Members = append(left.Members, m)
				}
			}
			after, err := Uniform{}.Assign(left)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, left, after)
			for _, m := range left.Members {
				if !contains(after[m.ID], m.Current) {
					t.Fatalf("after a leave %s lost partitions: had %v, has %v", m.ID, m.Current, after[m.ID])
				}
			}
		}
		// A member joins: the others only give up, never take.
		joined := Group{Topics: g.Topics, Members: append(slices.Clone(next.Members), Member{ID: "new", Topics: g.Members[0].Topics})}
		after, err := Uniform{}.Assign(joined)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, joined, after)
		for _, m := range next.Members {
			if !contains(m.Current, after[m.ID]) {
				t.Fatalf("after a join %s took partitions: had %v, has %v", m.ID, m.Current, after[m.ID])
			}
		}
		// New partitions: everybody keeps what they had.
		grown := Group{Topics: maps.Clone(g.Topics), Members: next.Members}
		for id, top := range grown.Topics {
			top.Partitions += rapid.Int32Range(0, 5).Draw(t, "added")
			grown.Topics[id] = top
		}
		after, err = Uniform{}.Assign(grown)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, grown, after)
		for _, m := range next.Members {
			if !contains(after[m.ID], m.Current) {
				t.Fatalf("after new partitions %s lost partitions: had %v, has %v", m.ID, m.Current, after[m.ID])
			}
		}
	})
}

// contains reports whether a holds every partition of b.
func contains(a, b Assignment) bool {
	for t, ps := range b {
		for _, p := range ps {
			if !slices.Contains(a[t], p) {
				return false
			}
		}
	}
	return true
}

func TestRangeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		homogeneous := rapid.Bool().Draw(t, "homogeneous")
		g := genGroup(t, homogeneous)
		// Instance ids must be unique within a group.
		seen := map[string]bool{}
		for i := range g.Members {
			if seen[g.Members[i].InstanceID] {
				g.Members[i].InstanceID = ""
			}
			seen[g.Members[i].InstanceID] = g.Members[i].InstanceID != ""
		}
		got, err := Range{}.Assign(g)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, g, got)
		// Per topic, its subscribers' shares differ by at most one, and
		// each share is one run of consecutive partitions.
		for id := range g.Topics {
			lo, hi := 1<<30, -1
			for _, m := range g.Members {
				if !slices.Contains(m.Topics, id) {
					continue
				}
				ps := got[m.ID][id]
				lo, hi = min(lo, len(ps)), max(hi, len(ps))
				if len(ps) > 0 && int(ps[len(ps)-1]-ps[0]) != len(ps)-1 {
					t.Fatalf("%s's share of %x is not a range: %v", m.ID, id[:], ps)
				}
			}
			if hi-lo > 1 {
				t.Fatalf("topic %x shares differ by %d", id[:], hi-lo)
			}
		}
		// Co-partitioning: same subscribers and partition counts give every
		// member the same partition numbers of each topic.
		if homogeneous {
			for _, m := range g.Members {
				var first []int32
				var firstN int32 = -1
				for _, id := range g.Members[0].Topics {
					if firstN < 0 {
						first, firstN = got[m.ID][id], g.Topics[id].Partitions
					} else if g.Topics[id].Partitions == firstN && !slices.Equal(first, got[m.ID][id]) {
						t.Fatalf("%s: not co-partitioned: %v and %v", m.ID, first, got[m.ID][id])
					}
				}
			}
		}
		if again, _ := (Range{}).Assign(shuffled(t, g)); !same(got, again) {
			t.Fatalf("not deterministic:\n%s\n%s", show2(got), show2(again))
		}
	})
}
