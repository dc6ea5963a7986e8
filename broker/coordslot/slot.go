package coordslot

import (
	"unicode/utf16"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16
// code units, with int32 overflow. Kafka places a key with it, so a client
// or operator tool that computes a key's slot agrees with us. Bytes that are
// not UTF-8 count as U+FFFD, as Kafka's decoder of the wire string makes
// them.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			a, b := utf16.EncodeRune(r)
			h = 31*h + a
			h = 31*h + b
			continue
		}
		h = 31*h + r
	}
	return h
}

// Slot returns the slot of key among n slots, as Kafka's
// GroupCoordinator.partitionFor and TransactionStateManager.partitionFor:
// Utils.abs(hash) % n, where Utils.abs maps MinInt32 to 0 by masking the
// sign bit. It is -1 when there are no slots.
func Slot(key string, n int) int32 {
	if n <= 0 {
		return -1
	}
	return (javaStringHash(key) & 0x7fffffff) % int32(n)
}

// Placement is where a key's slot lives in one image.
type Placement struct {
	Slot        int32
	Leader      int32 // metadata.NoLeader when the slot is offline
	LeaderEpoch int32
}

// Place finds key's slot among topic's partitions and its leader in img.
// ok is false when the topic does not exist yet. The slot indexes the
// partitions directly: the image keeps partition i at index i.
func Place(img *metadata.Image, topic, key string) (p Placement, ok bool) {
	t, ok := img.Topic(topic)
	if !ok || len(t.Partitions) == 0 {
		return Placement{Slot: -1, Leader: metadata.NoLeader}, false
	}
	slot := Slot(key, len(t.Partitions))
	pr := t.Partitions[slot]
	return Placement{Slot: slot, Leader: pr.Leader, LeaderEpoch: pr.LeaderEpoch}, true
}

// Ownership says whether node coordinates key in img: 0 and the slot's
// leader epoch (the coordinator epoch) when it does, NOT_COORDINATOR and -1
// when another broker (or no broker) leads the slot or the topic does not
// exist yet (the client asks FindCoordinator again, which creates it).
func Ownership(img *metadata.Image, topic string, node int32, key string) (code int16, epoch int32) {
	p, ok := Place(img, topic, key)
	if !ok || p.Leader != node {
		return kerr.NotCoordinator.Code, -1
	}
	return 0, p.LeaderEpoch
}
