package sharegroup

import (
	"cmp"
	"fmt"
	"slices"
)

// TopicID is a topic's UUID, as the assignment and the wire carry it.
type TopicID = [16]byte

// Assignment is one member's partitions by topic id, each list sorted and
// without repeats. A nil or empty Assignment is no partitions.
type Assignment map[TopicID][]int32

// Count is the number of partitions in a.
func (a Assignment) Count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// Equal says whether a and b hold the same partitions.
func (a Assignment) Equal(b Assignment) bool {
	if a.Count() != b.Count() {
		return false
	}
	for t, ps := range a {
		if len(ps) == 0 {
			continue
		}
		if !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

// Clone copies a deeply.
func (a Assignment) Clone() Assignment {
	if a == nil {
		return nil
	}
	out := make(Assignment, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

// AssignMember is what the simple assignor reads of one member.
type AssignMember struct {
	ID      string
	Topics  []TopicID  // the subscribed topics that exist
	Current Assignment // its target assignment so far, for stickiness
}

// Simple is the `simple` assignor of Kafka 4.2's share groups
// (group.share.assignors' only value): every member may be given every
// partition of the topics it subscribes to, and a partition may be given to
// several members at once, since share-group members compete for records
// rather than own partitions.
//
// The partitions are cut into pools, one per set of members subscribing
// to the same topics (a single pool when every member subscribes alike,
// Kafka's homogeneous case). In a pool of m members and p partitions each
// partition goes to s = ceil(m/p) members and each member gets
// floor(s*p/m) of the pool's partitions or one more: with no more members
// than partitions every partition has exactly one member, and the counts
// differ by at most one; with more, every member has a partition and none
// is shared by more members than that takes. Within those bounds a member
// keeps what it already had (Current), so a join or a leave moves as
// little as it can.
//
// The result depends only on the input's content: members are taken in
// member-id order and partitions in order, never in map order. partitions
// gives each existing topic's partition count; a member's topic missing
// from it is skipped. Every member of members has an entry in the result.
func Simple(members []AssignMember, partitions map[TopicID]int32) map[string]Assignment {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b AssignMember) int { return cmp.Compare(a.ID, b.ID) })
	ms = slices.CompactFunc(ms, func(a, b AssignMember) bool { return a.ID == b.ID })

	subscribers := make(map[TopicID][]int) // topic -> indexes into ms
	for i, m := range ms {
		seen := make(map[TopicID]bool, len(m.Topics))
		for _, t := range m.Topics {
			if seen[t] || partitions[t] <= 0 {
				continue
			}
			seen[t] = true
			subscribers[t] = append(subscribers[t], i)
		}
	}
	// Topics with the same subscribers form one pool, balanced as a whole:
	// in a homogeneous group that is every topic, so the members' totals
	// differ by at most one, as Kafka's homogeneous builder gives.
	pools := make(map[string]*pool)
	for t, subs := range subscribers {
		key := fmt.Sprint(subs)
		pl := pools[key]
		if pl == nil {
			pl = &pool{subs: subs}
			pools[key] = pl
		}
		for q := int32(0); q < partitions[t]; q++ {
			pl.parts = append(pl.parts, part{t, q})
		}
	}
	ordered := make([]*pool, 0, len(pools))
	for _, pl := range pools {
		slices.SortFunc(pl.parts, comparePart)
		ordered = append(ordered, pl)
	}
	slices.SortFunc(ordered, func(a, b *pool) int { return comparePart(a.parts[0], b.parts[0]) })

	load := make([]int, len(ms)) // partitions given so far, over all pools
	out := make(map[string]Assignment, len(ms))
	for _, m := range ms {
		out[m.ID] = Assignment{}
	}
	for _, pl := range ordered {
		got := assignPool(ms, pl, load)
		for k, i := range pl.subs {
			for _, x := range got[k] {
				pt := pl.parts[x]
				out[ms[i].ID][pt.topic] = append(out[ms[i].ID][pt.topic], pt.partition)
			}
			load[i] += len(got[k])
		}
	}
	return out
}

type part struct {
	topic     TopicID
	partition int32
}

func comparePart(a, b part) int {
	if c := cmp.Compare(string(a.topic[:]), string(b.topic[:])); c != 0 {
		return c
	}
	return cmp.Compare(a.partition, b.partition)
}

// pool is the partitions of the topics one set of members subscribes to.
type pool struct {
	subs  []int  // indexes into the sorted members
	parts []part // sorted
}

// assignPool shares a pool's partitions among its members; it returns, per
// member in the order of pl.subs, sorted indexes into pl.parts.
func assignPool(ms []AssignMember, pl *pool, load []int) [][]int {
	m, p := len(pl.subs), len(pl.parts)
	share := (m + p - 1) / p // members per partition
	slots := share * p
	base, extra := slots/m, slots%m

	index := make(map[part]int, p)
	for x, pt := range pl.parts {
		index[pt] = x
	}
	held := make([][]int, m)
	for k, i := range pl.subs {
		for t, qs := range ms[i].Current {
			for _, q := range qs {
				if x, ok := index[part{t, q}]; ok {
					held[k] = append(held[k], x)
				}
			}
		}
		slices.Sort(held[k])
		held[k] = slices.Compact(held[k])
	}
	// Which members take one partition more than the others: those already
	// holding the most (stickiness), then the least loaded by other pools
	// (so a heterogeneous group stays as even as its subscriptions allow),
	// then by member id (the members are sorted, so by position).
	order := make([]int, m)
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(len(held[b]), len(held[a])); c != 0 {
			return c
		}
		return cmp.Compare(load[pl.subs[a]], load[pl.subs[b]])
	})
	quota := make([]int, m)
	for r, k := range order {
		quota[k] = base
		if r < extra {
			quota[k]++
		}
	}

	// Keep what each member held, within its quota and the partition's share.
	owners := make([]int, p)
	has := make([]map[int]bool, m)
	result := make([][]int, m)
	for k := range pl.subs {
		has[k] = make(map[int]bool)
		for _, x := range held[k] {
			if len(result[k]) < quota[k] && owners[x] < share {
				result[k] = append(result[k], x)
				has[k][x] = true
				owners[x]++
			}
		}
	}
	// Fill each partition up to its share from the members with the most
	// quota left (ties by member order).
	for x := 0; x < p; x++ {
		for owners[x] < share {
			best := -1
			for k := range pl.subs {
				if has[k][x] || len(result[k]) >= quota[k] {
					continue
				}
				if best < 0 || quota[k]-len(result[k]) > quota[best]-len(result[best]) {
					best = k
				}
			}
			if best < 0 {
				return layout(m, share, p)
			}
			result[best] = append(result[best], x)
			has[best][x] = true
			owners[x]++
		}
	}
	for k := range result {
		slices.Sort(result[k])
	}
	return result
}

// layout is the non-sticky answer, used when keeping old partitions has
// left the greedy fill stuck: the share*p slots in partition order, slot i
// to member i mod m. A partition's slots are consecutive and share <= m,
// so no member gets a partition twice, and the counts differ by at most one.
func layout(m, share, p int) [][]int {
	result := make([][]int, m)
	for i := 0; i < share*p; i++ {
		result[i%m] = append(result[i%m], i/share)
	}
	return result
}
