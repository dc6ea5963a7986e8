package assignor

import (
	"slices"
	"sort"
)

// Uniform is Kafka's default server-side assignor: as even a spread of
// partitions over members as their subscriptions allow, moving as few
// partitions as it can. See the package doc.
type Uniform struct{}

// Name is "uniform".
func (Uniform) Name() string { return UniformName }

// Assign computes the next target assignment.
func (Uniform) Assign(g Group) (map[string]Assignment, error) {
	p, err := prepare(g)
	if err != nil {
		return nil, err
	}
	if len(p.members) == 0 {
		return map[string]Assignment{}, nil
	}
	if p.homogeneous() {
		return p.result(p.uniformHomogeneous()), nil
	}
	return p.result(p.uniformHeterogeneous()), nil
}

// uniformHomogeneous is the builder for a group whose members all
// subscribe to the same topics: quotas of total/members, total%members of
// them one larger, given to the members that hold the most.
func (p *prepared) uniformHomogeneous() [][]tp {
	n := len(p.members)
	total := 0
	for _, t := range p.topicIx {
		total += int(p.topics[t].Partitions)
	}
	claimed := map[tp]bool{}
	held := make([][]tp, n)
	for i := range p.members {
		held[i] = p.valid(i, claimed)
	}
	minQuota, extra := total/n, total%n
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(held[order[a]]) > len(held[order[b]]) })
	quota := make([]int, n)
	for rank, i := range order {
		quota[i] = minQuota
		if rank < extra {
			quota[i]++
		}
	}
	owned := make([][]tp, n)
	kept := map[tp]bool{}
	for i := range p.members {
		keep := held[i][:min(len(held[i]), quota[i])]
		owned[i] = slices.Clone(keep)
		for _, k := range keep {
			kept[k] = true
		}
	}
	var unassigned []tp
	for _, t := range p.topicIx {
		for part := range p.topics[t].Partitions {
			if k := (tp{t, part}); !kept[k] {
				unassigned = append(unassigned, k)
			}
		}
	}
	remaining := make([]int, n)
	for i := range remaining {
		remaining[i] = quota[i] - len(owned[i])
	}
	// Racks first: a partition goes to the member with the most room left
	// among those in a rack with one of its replicas.
	var rest []tp
	for _, k := range unassigned {
		best := -1
		for i := range p.members {
			if remaining[i] > 0 && p.rackMatch(p.members[i].Rack, k) && (best < 0 || remaining[i] > remaining[best]) {
				best = i
			}
		}
		if best < 0 {
			rest = append(rest, k)
			continue
		}
		owned[best] = append(owned[best], k)
		remaining[best]--
	}
	// Then fill members in order, so each gets a run of partitions.
	next := 0
	for i := range p.members {
		for ; remaining[i] > 0 && next < len(rest); remaining[i]-- {
			owned[i] = append(owned[i], rest[next])
			next++
		}
	}
	return owned
}

// uniformHeterogeneous is the builder for members with different
// subscriptions. Every member keeps its still-valid partitions; the others
// go topic by topic (most partitions per subscriber first) to the least
// loaded subscriber; then, per topic, a partition moves from its most
// loaded owner to the least loaded subscriber while their loads differ by
// more than one. Each move lowers the sum of squared loads, so the loop
// ends; the bound only guards against a bug.
func (p *prepared) uniformHeterogeneous() [][]tp {
	n, nt := len(p.members), len(p.topicIx)
	tix := make(map[TopicID]int, nt)
	for i, t := range p.topicIx {
		tix[t] = i
	}
	// kept[i][t]: what member i keeps from its current assignment,
	// ascending; fresh[i][t]: what it was handed in this assignment.
	kept, fresh := make([][][]int32, n), make([][][]int32, n)
	load := make([]int, n)
	claimed := map[tp]bool{}
	for i := range p.members {
		kept[i], fresh[i] = make([][]int32, nt), make([][]int32, nt)
		for _, k := range p.valid(i, claimed) {
			kept[i][tix[k.topic]] = append(kept[i][tix[k.topic]], k.partition)
			load[i]++
		}
	}
	subscribers := make([][]int, nt)
	for i := range p.members {
		for ti, t := range p.topicIx {
			if p.subs[i][t] {
				subscribers[ti] = append(subscribers[ti], i)
			}
		}
	}
	order := make([]int, nt)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ta, tb := order[a], order[b]
		pa, pb := int(p.topics[p.topicIx[ta]].Partitions), int(p.topics[p.topicIx[tb]].Partitions)
		sa, sb := len(subscribers[ta]), len(subscribers[tb])
		if pa*sb != pb*sa { // partitions per subscriber, descending
			return pa*sb > pb*sa
		}
		return sa < sb // then fewer subscribers first; then by id (stable)
	})
	// leastLoaded picks among subs the smallest load, then a rack match for
	// k, then the lowest index.
	leastLoaded := func(subs []int, k tp) int {
		best := -1
		for _, i := range subs {
			switch {
			case best < 0 || load[i] < load[best]:
				best = i
			case load[i] == load[best] && !p.rackMatch(p.members[best].Rack, k) && p.rackMatch(p.members[i].Rack, k):
				best = i
			}
		}
		return best
	}
	for _, ti := range order {
		t := p.topicIx[ti]
		for part := range p.topics[t].Partitions {
			if claimed[tp{t, part}] {
				continue
			}
			i := leastLoaded(subscribers[ti], tp{t, part})
			fresh[i][ti] = append(fresh[i][ti], part)
			load[i]++
		}
	}
	for round := 0; round < 1_000_000; round++ {
		moved := false
		for _, ti := range order {
			subs := subscribers[ti]
			if len(subs) < 2 {
				continue
			}
			t := p.topicIx[ti]
			for {
				// The most loaded subscriber that owns a partition of t.
				from := -1
				for _, i := range subs {
					if (from < 0 || load[i] > load[from]) && len(kept[i][ti])+len(fresh[i][ti]) > 0 {
						from = i
					}
				}
				if from < 0 {
					break
				}
				// Give away what it was handed in this assignment first
				// (stickiness), the highest numbered; else its highest kept.
				fi, part := -1, int32(-1)
				for j, q := range fresh[from][ti] {
					if q > part {
						fi, part = j, q
					}
				}
				if fi < 0 {
					part = kept[from][ti][len(kept[from][ti])-1]
				}
				to := leastLoaded(subs, tp{t, part})
				if load[from]-load[to] <= 1 {
					break
				}
				if fi >= 0 {
					fresh[from][ti] = append(fresh[from][ti][:fi], fresh[from][ti][fi+1:]...)
				} else {
					kept[from][ti] = kept[from][ti][:len(kept[from][ti])-1]
				}
				fresh[to][ti] = append(fresh[to][ti], part)
				load[from]--
				load[to]++
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	owned := make([][]tp, n)
	for i := range p.members {
		for ti, t := range p.topicIx {
			for _, part := range kept[i][ti] {
				owned[i] = append(owned[i], tp{t, part})
			}
			for _, part := range fresh[i][ti] {
				owned[i] = append(owned[i], tp{t, part})
			}
		}
	}
	return owned
}
