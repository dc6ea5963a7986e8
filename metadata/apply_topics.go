package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// topicApplier replays topics and their partitions: creation, added
// partitions, partition changes (leader, ISR, replicas) and removal. It
// also owns the copy-on-write of topic images for the config applier,
// since topic configs live in them.
type topicApplier struct {
	img     *Image
	topics  *shardBuilder[[16]byte, *TopicImage]
	names   *shardBuilder[string, [16]byte]
	owned   map[[16]byte]bool
	touched map[[16]byte]bool
}

func newTopicApplier(img *Image) topicApplier {
	return topicApplier{img: img, topics: newShardBuilder(&img.topics), names: newShardBuilder(&img.topicNames)}
}

// maxPartitions bounds a topic's partition count so partition numbers fit
// in int32 with room to spare.
const maxPartitions = 1 << 20

// checkPartition holds a registration to the invariants every image keeps,
// so a bad record is skipped rather than stored.
func checkPartition(p *PartitionRegistration) error {
	if len(p.Replicas) == 0 {
		return invalid("partition %d has no replicas", p.Partition)
	}
	for i, r := range p.Replicas {
		if r < 0 || slices.Contains(p.Replicas[:i], r) {
			return invalid("partition %d replicas %v", p.Partition, p.Replicas)
		}
	}
	for i, r := range p.ISR {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.ISR[:i], r) {
			return invalid("partition %d ISR %v not a set within replicas %v", p.Partition, p.ISR, p.Replicas)
		}
	}
	if err := checkReassignment(p); err != nil {
		return err
	}
	if p.Leader != NoLeader && !slices.Contains(p.Replicas, p.Leader) {
		return invalid("partition %d leader %d not in replicas %v", p.Partition, p.Leader, p.Replicas)
	}
	if p.LeaderEpoch < 0 || p.PartitionEpoch < 0 {
		return invalid("partition %d negative epoch", p.Partition)
	}
	return nil
}

// keepELR is elr without duplicates, non-replicas and ISR members (nil
// stays nil).
func keepELR(elr []int32, p PartitionRegistration) []int32 {
	if len(elr) == 0 {
		return elr
	}
	out := make([]int32, 0, len(elr))
	for _, r := range elr {
		if slices.Contains(p.Replicas, r) && !slices.Contains(p.ISR, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func clonePartition(p PartitionRegistration) PartitionRegistration {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	p.ELR = slices.Clone(p.ELR)
	p.LastKnownELR = slices.Clone(p.LastKnownELR)
	p.AddingReplicas = slices.Clone(p.AddingReplicas)
	p.RemovingReplicas = slices.Clone(p.RemovingReplicas)
	return p
}

// newPartition is a partition as CreateTopic and AddPartitions store it:
// their encoding has no reassignment fields, so an in-memory record that
// set them must not make this node's image differ from a replica's.
func newPartition(p PartitionRegistration) PartitionRegistration {
	p = clonePartition(p)
	p.AddingReplicas, p.RemovingReplicas = nil, nil
	p.ELR, p.LastKnownELR = keepELR(p.ELR, p), keepELR(p.LastKnownELR, p)
	return p
}

func checkNewPartitions(ps []PartitionRegistration, first int) error {
	for i := range ps {
		if int(ps[i].Partition) != first+i {
			return invalid("partition %d where %d was expected", ps[i].Partition, first+i)
		}
		if err := checkPartition(&ps[i]); err != nil {
			return err
		}
	}
	return nil
}

func (a *topicApplier) create(r *CreateTopic) error {
	if err := ValidateTopicName(r.Name); err != nil {
		return err
	}
	if _, ok := a.names.get(r.Name, hashString(r.Name)); ok {
		return fmt.Errorf("%w: %q", ErrTopicExists, r.Name)
	}
	if r.ID == ([16]byte{}) {
		return invalid("topic %q has the zero id", r.Name)
	}
	if _, ok := a.topics.get(r.ID, hashID(r.ID)); ok {
		return fmt.Errorf("%w: topic id of %q already in use", ErrTopicExists, r.Name)
	}
	if len(r.Partitions) == 0 || len(r.Partitions) > maxPartitions {
		return fmt.Errorf("%w: topic %q with %d partitions", ErrInvalidPartitions, r.Name, len(r.Partitions))
	}
	if err := checkNewPartitions(r.Partitions, 0); err != nil {
		return err
	}
	t := &TopicImage{Name: r.Name, ID: r.ID, Partitions: make([]PartitionRegistration, len(r.Partitions))}
	if len(r.Configs) > 0 {
		t.Configs = maps.Clone(r.Configs)
	}
	for i, p := range r.Partitions {
		t.Partitions[i] = newPartition(p)
	}
	a.topics.set(r.ID, hashID(r.ID), t)
	a.names.set(r.Name, hashString(r.Name), r.ID)
	mark(&a.owned, r.ID)
	mark(&a.touched, r.ID)
	return nil
}

// idOf returns the id of a topic by name in the image being built.
func (a *topicApplier) idOf(name string) ([16]byte, bool) {
	return a.names.get(name, hashString(name))
}

// own returns a writable copy of a topic, copying it once per batch.
func (a *topicApplier) own(id [16]byte) (*TopicImage, error) {
	t, ok := a.topics.get(id, hashID(id))
	if !ok {
		return nil, fmt.Errorf("%w: id %x", ErrUnknownTopic, id)
	}
	if !a.owned[id] {
		c := *t
		c.Partitions = slices.Clone(t.Partitions)
		t = &c
		a.topics.set(id, hashID(id), t)
		mark(&a.owned, id)
	}
	mark(&a.touched, id)
	return t, nil
}

func (a *topicApplier) addPartitions(r *AddPartitions) error {
	t, ok := a.topics.get(r.TopicID, hashID(r.TopicID))
	if !ok {
		return fmt.Errorf("%w: id %x", ErrUnknownTopic, r.TopicID)
	}
	if len(r.Partitions) == 0 || len(t.Partitions)+len(r.Partitions) > maxPartitions {
		return fmt.Errorf("%w: adding %d to %d", ErrInvalidPartitions, len(r.Partitions), len(t.Partitions))
	}
	if err := checkNewPartitions(r.Partitions, len(t.Partitions)); err != nil {
		return err
	}
	t, _ = a.own(r.TopicID)
	for _, p := range r.Partitions {
		t.Partitions = append(t.Partitions, newPartition(p))
	}
	return nil
}

func (a *topicApplier) partitionChange(r *PartitionChange) error {
	t, ok := a.topics.get(r.TopicID, hashID(r.TopicID))
	if !ok {
		return fmt.Errorf("%w: id %x", ErrUnknownTopic, r.TopicID)
	}
	cur, ok := t.Partition(r.Partition)
	if !ok {
		return fmt.Errorf("%w: %s-%d", ErrUnknownPartition, t.Name, r.Partition)
	}
	next := cur
	if r.Replicas != nil {
		next.Replicas = slices.Clone(r.Replicas)
	}
	if r.ISR != nil {
		next.ISR = slices.Clone(r.ISR)
	}
	if r.ELR != nil {
		next.ELR = slices.Clone(r.ELR)
	}
	if r.LastKnownELR != nil {
		next.LastKnownELR = slices.Clone(r.LastKnownELR)
	}
	// A record that moved replicas or the ISR without restating the ELR
	// (written before ELR, or by a path that does not track it) must not
	// leave a replica both in the ISR and eligible, or a non-replica
	// eligible: every node drops them the same way.
	next.ELR = keepELR(next.ELR, next)
	next.LastKnownELR = keepELR(next.LastKnownELR, next)
	if r.Leader != NoLeaderChange {
		if r.Leader < NoLeader {
			return invalid("leader %d", r.Leader)
		}
		next.Leader = r.Leader
		next.LeaderEpoch++
	}
	next.PartitionEpoch++
	if next.LeaderEpoch < 0 || next.PartitionEpoch < 0 {
		return invalid("%s-%d epoch overflow", t.Name, r.Partition)
	}
	if err := checkPartition(&next); err != nil {
		return err
	}
	t, _ = a.own(r.TopicID)
	t.Partitions[r.Partition] = next
	return nil
}

func (a *topicApplier) remove(r *RemoveTopic) error {
	t, ok := a.topics.get(r.TopicID, hashID(r.TopicID))
	if !ok {
		return fmt.Errorf("%w: id %x", ErrUnknownTopic, r.TopicID)
	}
	a.topics.del(r.TopicID, hashID(r.TopicID))
	a.names.del(t.Name, hashString(t.Name))
	mark(&a.touched, r.TopicID)
	return nil
}

// seal stores the built topic maps in the image.
func (a *topicApplier) seal() {
	a.img.topics = a.topics.build()
	a.img.topicNames = a.names.build()
}

// diff fills the topic and partition lists of d from the touched topics.
func (a *topicApplier) diff(old, next *Image, d *Delta) {
	for id := range a.touched {
		ot, oldOK := old.topics.get(id, hashID(id))
		nt, newOK := next.topics.get(id, hashID(id))
		switch {
		case !oldOK && newOK:
			d.TopicsCreated = append(d.TopicsCreated, *nt)
			for i := range nt.Partitions {
				d.ChangedPartitions = append(d.ChangedPartitions, PartitionDelta{TopicID: id, Topic: nt.Name, Partition: int32(i), New: &nt.Partitions[i]})
			}
		case oldOK && !newOK:
			d.TopicsRemoved = append(d.TopicsRemoved, *ot)
		case oldOK && newOK:
			for i := range nt.Partitions {
				pd := PartitionDelta{TopicID: id, Topic: nt.Name, Partition: int32(i), New: &nt.Partitions[i]}
				if i < len(ot.Partitions) {
					if ot.Partitions[i].Equal(nt.Partitions[i]) {
						continue
					}
					pd.Old = &ot.Partitions[i]
				}
				d.ChangedPartitions = append(d.ChangedPartitions, pd)
			}
		}
	}
	byName := func(a, b TopicImage) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(d.TopicsCreated, byName)
	slices.SortFunc(d.TopicsRemoved, byName)
	slices.SortFunc(d.ChangedPartitions, func(a, b PartitionDelta) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}
