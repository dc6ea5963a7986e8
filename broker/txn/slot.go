package txn

import (
	"github.com/raftka/raftka/broker/coordslot"
	"github.com/raftka/raftka/metadata"
)

// StateTopic is the internal topic whose partitions are the coordinator
// slots. As __consumer_offsets does for groups, it holds no records here
// (transaction state lives in the Raft image); its partition leaders say
// which broker coordinates which transactional ids, and its leader epochs
// are the coordinator epochs that fence a coordinator that lost its slot.
const StateTopic = "__transaction_state"

// Slot is Kafka's TransactionStateManager.partitionFor (broker/coordslot,
// the same rule as the group coordinator's).
func Slot(transactionalID string, n int) int32 { return coordslot.Slot(transactionalID, n) }

// Placement is where a transactional id's slot lives in one image.
type Placement = coordslot.Placement

// Place finds a transactional id's slot and its leader in img; ok is false
// when the state topic does not exist yet.
func Place(img *metadata.Image, id string) (p Placement, ok bool) {
	return coordslot.Place(img, StateTopic, id)
}

// ownership is 0 and the coordinator epoch when node coordinates id in
// img, else NOT_COORDINATOR.
func ownership(img *metadata.Image, node int32, id string) (code int16, epoch int32) {
	return coordslot.Ownership(img, StateTopic, node, id)
}
