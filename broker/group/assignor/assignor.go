package assignor

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// TopicID is a topic's UUID: KIP-848 assignments name topics by id.
type TopicID [16]byte

func (a TopicID) less(b TopicID) bool { return bytes.Compare(a[:], b[:]) < 0 }

// Topic is what an assignor knows of a subscribed topic.
type Topic struct {
	ID         TopicID
	Name       string
	Partitions int32
	// Racks[p] lists the racks of partition p's replicas; missing or empty
	// when unknown.
	Racks [][]string
}

// Assignment is a member's partitions by topic, each list ascending.
type Assignment map[TopicID][]int32

// Count is the number of partitions in a.
func (a Assignment) Count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// Member is one member of the group as the assignor sees it.
type Member struct {
	ID         string
	InstanceID string // static membership (KIP-345); "" for a dynamic member
	Rack       string // client.rack; "" when not set
	Topics     []TopicID
	// Current is the member's target assignment so far. Partitions of
	// topics it no longer subscribes to, of partitions that no longer
	// exist, or also claimed by an earlier member (by id) are ignored.
	Current Assignment
}

// Group is an assignor's input.
type Group struct {
	Members []Member
	Topics  map[TopicID]Topic
}

// Assignor computes a group's next target assignment.
type Assignor interface {
	Name() string
	// Assign returns an assignment for every member (empty for a member
	// with nothing). It fails only on invalid input: two members with one
	// id, or a subscribed topic missing from Group.Topics (Kafka's
	// PartitionAssignorException).
	Assign(g Group) (map[string]Assignment, error)
}

// The names Kafka gives its assignors (group.consumer.assignors,
// ConsumerGroupHeartbeat's ServerAssignor).
const (
	UniformName = "uniform"
	RangeName   = "range"
)

// ErrUnknownTopic is a subscription to a topic the input does not describe.
var ErrUnknownTopic = errors.New("member is subscribed to a topic that does not exist in the topic metadata")

// ByName returns the assignor Kafka calls name.
func ByName(name string) (Assignor, bool) {
	switch name {
	case UniformName:
		return Uniform{}, true
	case RangeName:
		return Range{}, true
	}
	return nil, false
}

// tp is one partition.
type tp struct {
	topic     TopicID
	partition int32
}

func (a tp) less(b tp) bool {
	if a.topic != b.topic {
		return a.topic.less(b.topic)
	}
	return a.partition < b.partition
}

// prepared is the validated input: members sorted by id, each
// subscription deduplicated and sorted, topics sorted by id.
type prepared struct {
	members []Member
	subs    []map[TopicID]bool
	topics  map[TopicID]Topic
	topicIx []TopicID // every subscribed topic, sorted
}

func prepare(g Group) (*prepared, error) {
	p := &prepared{members: slices.Clone(g.Members), topics: g.Topics}
	sort.Slice(p.members, func(i, j int) bool { return p.members[i].ID < p.members[j].ID })
	seen := map[TopicID]bool{}
	for i, m := range p.members {
		if i > 0 && p.members[i-1].ID == m.ID {
			return nil, fmt.Errorf("member %q appears twice", m.ID)
		}
		sub := map[TopicID]bool{}
		for _, t := range m.Topics {
			if _, ok := g.Topics[t]; !ok {
				return nil, fmt.Errorf("%w: member %q, topic %x", ErrUnknownTopic, m.ID, t[:])
			}
			sub[t] = true
			if !seen[t] {
				seen[t] = true
				p.topicIx = append(p.topicIx, t)
			}
		}
		p.subs = append(p.subs, sub)
	}
	sort.Slice(p.topicIx, func(i, j int) bool { return p.topicIx[i].less(p.topicIx[j]) })
	return p, nil
}

// homogeneous reports whether every member subscribes to the same topics.
func (p *prepared) homogeneous() bool {
	for _, s := range p.subs[1:] {
		if len(s) != len(p.subs[0]) {
			return false
		}
		for t := range s {
			if !p.subs[0][t] {
				return false
			}
		}
	}
	return true
}

// valid lists member i's current partitions that still count: subscribed,
// existing, and not claimed by an earlier member; it claims them.
func (p *prepared) valid(i int, claimed map[tp]bool) []tp {
	var out []tp
	for t, ps := range p.members[i].Current {
		if !p.subs[i][t] {
			continue
		}
		n := p.topics[t].Partitions
		for _, part := range ps {
			k := tp{t, part}
			if part < 0 || part >= n || claimed[k] {
				continue
			}
			claimed[k] = true
			out = append(out, k)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].less(out[b]) })
	return out
}

// rackMatch reports whether rack holds a replica of the partition.
func (p *prepared) rackMatch(rack string, k tp) bool {
	if rack == "" {
		return false
	}
	racks := p.topics[k.topic].Racks
	if int(k.partition) >= len(racks) {
		return false
	}
	return slices.Contains(racks[k.partition], rack)
}

// result turns per-member partition lists into the assignors' answer.
func (p *prepared) result(owned [][]tp) map[string]Assignment {
	out := make(map[string]Assignment, len(p.members))
	for i, m := range p.members {
		a := Assignment{}
		for _, k := range owned[i] {
			a[k.topic] = append(a[k.topic], k.partition)
		}
		for _, ps := range a {
			slices.Sort(ps)
		}
		out[m.ID] = a
	}
	return out
}
