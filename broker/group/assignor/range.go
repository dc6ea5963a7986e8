package assignor

import "sort"

// Range is Kafka 4.1's server-side range assignor: consecutive ranges of
// each topic's partitions over its subscribers, static members first. See
// the package doc.
type Range struct{}

// Name is "range".
func (Range) Name() string { return RangeName }

// Assign computes the next target assignment. Current assignments do not
// matter: the ranges follow from the members and their order alone.
func (Range) Assign(g Group) (map[string]Assignment, error) {
	p, err := prepare(g)
	if err != nil {
		return nil, err
	}
	order := make([]int, len(p.members))
	for i := range order {
		order[i] = i
	}
	// Static members first, by instance id; then the others by member id
	// (p.members is sorted by member id already).
	sort.SliceStable(order, func(a, b int) bool {
		ia, ib := p.members[order[a]].InstanceID, p.members[order[b]].InstanceID
		switch {
		case ia != "" && ib != "":
			return ia < ib
		default:
			return ia != "" && ib == ""
		}
	})
	owned := make([][]tp, len(p.members))
	for _, t := range p.topicIx {
		var subs []int
		for _, i := range order {
			if p.subs[i][t] {
				subs = append(subs, i)
			}
		}
		n := p.topics[t].Partitions
		minQuota, extra := n/int32(len(subs)), n%int32(len(subs))
		next := int32(0)
		for _, i := range subs {
			quota := minQuota
			if extra > 0 {
				quota++
				extra--
			}
			for part := next; part < min(next+quota, n); part++ {
				owned[i] = append(owned[i], tp{t, part})
			}
			next = min(next+quota, n)
		}
	}
	return p.result(owned), nil
}
