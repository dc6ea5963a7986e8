package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// groupApplier replays consumer group state: committed offsets, offset and
// group deletions, and generations.
type groupApplier struct {
	img       *Image
	groups    *shardBuilder[string, *groupImage]
	owned     map[string]bool
	touched   map[string]bool
	committed map[GroupTopicPartition]bool
}

func newGroupApplier(img *Image) groupApplier {
	return groupApplier{img: img, groups: newShardBuilder(&img.groups)}
}

// own returns a writable copy of a group, copying it once per batch.
func (a *groupApplier) own(name string) *groupImage {
	h := hashString(name)
	g, ok := a.groups.get(name, h)
	if !a.owned[name] {
		c := &groupImage{}
		if ok {
			c.offsets = maps.Clone(g.offsets)
			c.generation = g.generation
			c.consumer = g.consumer
		}
		g = c
		a.groups.set(name, h, g)
		mark(&a.owned, name)
	}
	return g
}

// CheckOffsetCommit is what a committed offset needs to be stored: a topic
// name and a partition number. The controller checks it before it records
// a commit (and leaves the offset out, answering UNKNOWN_TOPIC_OR_PARTITION),
// and replay checks it again, skipping a whole record that breaks it, so
// the rule is written once for both sides of the Raft log. Whether the
// topic exists is the coordinator's check, against its own image.
func CheckOffsetCommit(o OffsetCommit) error {
	if o.Topic == "" || o.Partition < 0 {
		return invalid("offset commit for %q partition %d", o.Topic, o.Partition)
	}
	return nil
}

func (a *groupApplier) commitOffsets(r *CommitOffsets) error {
	if r.Group == "" {
		return invalid("offset commit without a group")
	}
	for _, o := range r.Offsets {
		if err := CheckOffsetCommit(o); err != nil {
			return err
		}
	}
	if len(r.Offsets) == 0 {
		return nil
	}
	g := a.own(r.Group)
	if g.offsets == nil {
		g.offsets = make(map[TopicPartition]OffsetAndMetadata, len(r.Offsets))
	}
	for _, o := range r.Offsets {
		g.offsets[TopicPartition{o.Topic, o.Partition}] = OffsetAndMetadata{
			Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimeMs: o.CommitTimeMs,
		}
		mark(&a.committed, GroupTopicPartition{r.Group, o.Topic, o.Partition})
	}
	mark(&a.touched, r.Group)
	return nil
}

func (a *groupApplier) deleteOffsets(r *DeleteOffsets) error {
	g, ok := a.groups.get(r.Group, hashString(r.Group))
	if !ok {
		return nil
	}
	found := false
	for _, tp := range r.Partitions {
		if _, ok := g.offsets[tp]; ok {
			found = true
		}
	}
	if !found {
		return nil
	}
	g = a.own(r.Group)
	for _, tp := range r.Partitions {
		delete(g.offsets, tp)
		delete(a.committed, GroupTopicPartition{r.Group, tp.Topic, tp.Partition})
	}
	mark(&a.touched, r.Group)
	return nil
}

func (a *groupApplier) deleteGroup(r *DeleteGroup) error {
	if _, ok := a.groups.get(r.Group, hashString(r.Group)); !ok {
		return nil
	}
	a.groups.del(r.Group, hashString(r.Group))
	delete(a.owned, r.Group)
	for k := range a.committed {
		if k.Group == r.Group {
			delete(a.committed, k)
		}
	}
	mark(&a.touched, r.Group)
	return nil
}

func (a *groupApplier) generation(r *GroupGeneration) error {
	if r.Group == "" || r.Generation < 0 {
		return invalid("group generation %q %d", r.Group, r.Generation)
	}
	if g, ok := a.groups.get(r.Group, hashString(r.Group)); ok && g.generation != nil && r.Generation <= g.generation.Generation {
		return fmt.Errorf("%w: group %q generation %d, current %d", ErrStaleRecord, r.Group, r.Generation, g.generation.Generation)
	}
	g := a.own(r.Group)
	gen := *r
	gen.Members = slices.Clone(r.Members)
	gen.SubscribedTopics = slices.Clone(r.SubscribedTopics)
	slices.Sort(gen.SubscribedTopics) // ExpireOffsets searches it
	g.generation = &gen
	mark(&a.touched, r.Group)
	return nil
}

// seal drops the groups the batch emptied, so equal states have equal
// images, and stores the built group map in the image.
func (a *groupApplier) seal() {
	for name := range a.owned {
		if g, ok := a.groups.get(name, hashString(name)); ok && len(g.offsets) == 0 && g.generation == nil && g.consumer == nil {
			a.groups.del(name, hashString(name))
		} else if ok && len(g.offsets) == 0 {
			g.offsets = nil
		}
	}
	a.img.groups = a.groups.build()
}

// diff fills d.OffsetsCommitted and d.GroupsChanged.
func (a *groupApplier) diff(old, next *Image, d *Delta) {
	for k := range a.committed {
		d.OffsetsCommitted = append(d.OffsetsCommitted, k)
	}
	slices.SortFunc(d.OffsetsCommitted, func(a, b GroupTopicPartition) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for g := range a.touched {
		og, oldOK := old.groups.get(g, hashString(g))
		ng, newOK := next.groups.get(g, hashString(g))
		var ogen, ngen *GroupGeneration
		if oldOK {
			ogen = og.generation
		}
		if newOK {
			ngen = ng.generation
		}
		genChanged := (ogen == nil) != (ngen == nil) || (ogen != nil && !ogen.equal(ngen))
		var ocg, ncg *ConsumerGroup
		if oldOK {
			ocg = og.consumer
		}
		if newOK {
			ncg = ng.consumer
		}
		genChanged = genChanged || !ocg.Equal(ncg)
		offsetsRemoved := oldOK && (!newOK || len(ng.offsets) < len(og.offsets))
		if genChanged || offsetsRemoved || oldOK != newOK {
			d.GroupsChanged = append(d.GroupsChanged, g)
		}
	}
	slices.Sort(d.GroupsChanged)
}
