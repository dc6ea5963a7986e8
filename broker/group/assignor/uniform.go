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
	n := len(p.members)
	claimed := map[tp]bool{}
	owned := make([][]tp, n)
	load := make([]int, n)
	owner := map[tp]int{}
	previous := map[tp]int{} // partitions kept from Current, by owner
	for i := range p.members {
		owned[i] = p.valid(i, claimed)
		load[i] = len(owned[i])
		for _, k := range owned[i] {
			owner[k] = i
			previous[k] = i
		}
	}
	subscribers := map[TopicID][]int{}
	for i := range p.members {
		for _, t := range p.topicIx {
			if p.subs[i][t] {
				subscribers[t] = append(subscribers[t], i)
			}
		}
	}
	topics := slices.Clone(p.topicIx)
	sort.SliceStable(topics, func(a, b int) bool {
		ta, tb := topics[a], topics[b]
		pa, pb := int(p.topics[ta].Partitions), int(p.topics[tb].Partitions)
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
	for _, t := range topics {
		for part := range p.topics[t].Partitions {
			k := tp{t, part}
			if _, ok := owner[k]; ok {
				continue
			}
			i := leastLoaded(subscribers[t], k)
			owner[k] = i
			owned[i] = append(owned[i], k)
			load[i]++
		}
	}
	for round := 0; round < 1_000_000; round++ {
		moved := false
		for _, t := range topics {
			subs := subscribers[t]
			if len(subs) < 2 {
				continue
			}
			for {
				// The most loaded subscriber that owns a partition of t.
				from := -1
				for _, i := range subs {
					if (from < 0 || load[i] > load[from]) && ownsTopic(owned[i], t) {
						from = i
					}
				}
				if from < 0 {
					break
				}
				pick := pickToMove(owned[from], t, from, previous)
				to := leastLoaded(subs, pick)
				if load[from]-load[to] <= 1 {
					break
				}
				owned[from] = slices.DeleteFunc(owned[from], func(k tp) bool { return k == pick })
				owned[to] = append(owned[to], pick)
				owner[pick] = to
				load[from]--
				load[to]++
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	return owned
}

func ownsTopic(owned []tp, t TopicID) bool {
	return slices.ContainsFunc(owned, func(k tp) bool { return k.topic == t })
}

// pickToMove chooses which of from's partitions of t to give away: one it
// did not hold before this assignment if it can (stickiness), else its
// highest numbered one.
func pickToMove(owned []tp, t TopicID, from int, previous map[tp]int) tp {
	var best tp
	found, bestNew := false, false
	for _, k := range owned {
		if k.topic != t {
			continue
		}
		prev, had := previous[k]
		isNew := !had || prev != from
		switch {
		case !found, isNew && !bestNew, isNew == bestNew && k.partition > best.partition:
			best, bestNew, found = k, isNew, true
		}
	}
	return best
}
