package txn

import (
	"unicode/utf16"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// StateTopic is the internal topic whose partitions are the coordinator
// slots. As __consumer_offsets does for groups, it holds no records here
// (transaction state lives in the Raft image); its partition leaders say
// which broker coordinates which transactional ids, and its leader epochs
// are the coordinator epochs that fence a coordinator that lost its slot.
const StateTopic = "__transaction_state"

// javaStringHash is Java's String.hashCode over UTF-16 code units, as
// broker/group has it: Kafka places a transactional id with it.
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

// Slot is Kafka's TransactionStateManager.partitionFor:
// Utils.abs(hash) % n, the sign bit masked.
func Slot(transactionalID string, n int) int32 {
	if n <= 0 {
		return -1
	}
	return (javaStringHash(transactionalID) & 0x7fffffff) % int32(n)
}

// Placement is where a transactional id's slot lives in one image.
type Placement struct {
	Slot        int32
	Leader      int32
	LeaderEpoch int32
}

// Place finds a transactional id's slot and its leader in img; ok is false
// when the state topic does not exist yet.
func Place(img *metadata.Image, id string) (p Placement, ok bool) {
	t, ok := img.Topic(StateTopic)
	if !ok || len(t.Partitions) == 0 {
		return Placement{Slot: -1, Leader: metadata.NoLeader}, false
	}
	slot := Slot(id, len(t.Partitions))
	pr := t.Partitions[slot]
	return Placement{Slot: slot, Leader: pr.Leader, LeaderEpoch: pr.LeaderEpoch}, true
}

// ownership is 0 and the coordinator epoch when node coordinates id in
// img, else NOT_COORDINATOR.
func ownership(img *metadata.Image, node int32, id string) (code int16, epoch int32) {
	p, ok := Place(img, id)
	if !ok || p.Leader != node {
		return kerr.NotCoordinator.Code, -1
	}
	return 0, p.LeaderEpoch
}
