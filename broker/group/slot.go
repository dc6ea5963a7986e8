package group

import (
	"github.com/raftka/raftka/broker/coordslot"
	"github.com/raftka/raftka/metadata"
)

// OffsetsTopic is the internal topic whose partitions are the coordinator
// slots. Its partition leaders say which broker coordinates which groups,
// and move like any partition leader when a broker fails or shuts down.
// Its records are a view of the Raft image (offsets_log.go), written for
// the tools that read them; the coordinator never reads them back.
const OffsetsTopic = "__consumer_offsets"

// Slot returns the coordinator slot of a group among n slots, as Kafka's
// GroupCoordinator.partitionFor (broker/coordslot, shared with the
// transaction coordinator).
func Slot(groupID string, n int) int32 { return coordslot.Slot(groupID, n) }

// Placement is where a group's coordinator slot lives in one image.
type Placement = coordslot.Placement

// Place finds a group's slot and its leader in img. ok is false when the
// offsets topic does not exist yet.
func Place(img *metadata.Image, groupID string) (p Placement, ok bool) {
	return coordslot.Place(img, OffsetsTopic, groupID)
}

// ownership says whether node coordinates groupID in img: 0 and the slot's
// leader epoch when it does, NOT_COORDINATOR when another broker (or no
// broker) leads the slot or the slots do not exist yet (the client asks
// FindCoordinator again, which creates them).
func ownership(img *metadata.Image, node int32, groupID string) (code int16, epoch int32) {
	return coordslot.Ownership(img, OffsetsTopic, node, groupID)
}
