package group

import (
	"unicode/utf16"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// OffsetsTopic is the internal topic whose partitions are the coordinator
// slots. Its partition leaders say which broker coordinates which groups,
// and move like any partition leader when a broker fails or shuts down.
// Its records are a view of the Raft image (offsets_log.go), written for
// the tools that read them; the coordinator never reads them back.
const OffsetsTopic = "__consumer_offsets"

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16
// code units, with int32 overflow. Kafka places a group with it, so a
// client or operator tool that computes a group's slot agrees with us. Bytes
// that are not UTF-8 count as U+FFFD, as Kafka's decoder of the wire string
// makes them.
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

// Slot returns the coordinator slot of a group among n slots, as Kafka's
// GroupCoordinator.partitionFor: Utils.abs(hash) % n, where Utils.abs maps
// MinInt32 to 0 by masking the sign bit.
func Slot(groupID string, n int) int32 {
	if n <= 0 {
		return -1
	}
	return (javaStringHash(groupID) & 0x7fffffff) % int32(n)
}

// Placement is where a group's coordinator slot lives in one image.
type Placement struct {
	Slot        int32
	Leader      int32 // metadata.NoLeader when the slot is offline
	LeaderEpoch int32
}

// Place finds a group's slot and its leader in img. ok is false when the
// offsets topic does not exist yet.
func Place(img *metadata.Image, groupID string) (p Placement, ok bool) {
	t, ok := img.Topic(OffsetsTopic)
	if !ok || len(t.Partitions) == 0 {
		return Placement{Slot: -1, Leader: metadata.NoLeader}, false
	}
	slot := Slot(groupID, len(t.Partitions))
	for _, pr := range t.Partitions {
		if pr.Partition == slot {
			return Placement{Slot: slot, Leader: pr.Leader, LeaderEpoch: pr.LeaderEpoch}, true
		}
	}
	return Placement{Slot: slot, Leader: metadata.NoLeader}, true
}

// ownership says whether node coordinates groupID in img: 0 and the slot's
// leader epoch when it does, NOT_COORDINATOR when another broker (or no
// broker) leads the slot or the slots do not exist yet (the client asks
// FindCoordinator again, which creates them).
func ownership(img *metadata.Image, node int32, groupID string) (code int16, epoch int32) {
	p, ok := Place(img, groupID)
	if !ok || p.Leader != node {
		return kerr.NotCoordinator.Code, -1
	}
	return 0, p.LeaderEpoch
}
