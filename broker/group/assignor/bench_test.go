package assignor

import (
	"fmt"
	"testing"
)

// benchGroup is members over topics of partitions each; every other
// member skips the last topic when heterogeneous.
func benchGroup(members, topics int, partitions int32, heterogeneous bool) Group {
	g := Group{Topics: map[TopicID]Topic{}}
	var ids []TopicID
	for i := range topics {
		id := tid(byte(i + 1))
		g.Topics[id] = Topic{ID: id, Partitions: partitions}
		ids = append(ids, id)
	}
	for i := range members {
		m := Member{ID: fmt.Sprintf("m%04d", i), Topics: ids}
		if heterogeneous && i%2 == 1 {
			m.Topics = ids[:len(ids)-1]
		}
		g.Members = append(g.Members, m)
	}
	return g
}

// BenchmarkUniform is a fresh assignment, then one member joining a
// group that holds the previous one (the rebalance case).
func BenchmarkUniform(b *testing.B) {
	for _, het := range []bool{false, true} {
		for _, n := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("heterogeneous=%v/members=%d/partitions=%d", het, n, 10*n), func(b *testing.B) {
				g := benchGroup(n, 10, int32(n), het)
				prev, err := Uniform{}.Assign(g)
				if err != nil {
					b.Fatal(err)
				}
				for i := range g.Members {
					g.Members[i].Current = prev[g.Members[i].ID]
				}
				g.Members = append(g.Members, Member{ID: "joiner", Topics: g.Members[0].Topics})
				for b.Loop() {
					if _, err := (Uniform{}).Assign(g); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkUniformSkewed is the heterogeneous builder's worst case: one
// member held every partition, and the others just joined.
func BenchmarkUniformSkewed(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("members=%d/partitions=%d", n, 10*n), func(b *testing.B) {
			g := benchGroup(n, 10, int32(n), true)
			all := Assignment{}
			for id, t := range g.Topics {
				for p := range t.Partitions {
					all[id] = append(all[id], p)
				}
			}
			g.Members[0].Current = all
			for b.Loop() {
				if _, err := (Uniform{}).Assign(g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
