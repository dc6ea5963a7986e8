// Package txn is the transaction coordinator (KIP-98, KIP-447): which
// broker coordinates a transactional id, the state machine of each id, and
// the marker writing that ends a transaction on its partitions.
//
// # What it owns
//
//   - slot.go: placement. An id belongs to one partition of the internal
//     topic __transaction_state (transaction.state.log.num.partitions
//     slots, Kafka's hash of the id, by broker/coordslot as for groups),
//     and that partition's leader coordinates it. The topic holds no
//     records: the state of every id is in the Raft metadata image
//     (metadata.Transaction), so a coordinator that takes a slot over finds
//     every transaction where the last one left it. The slot's leader epoch
//     is the coordinator epoch: it is written into each state and each
//     marker, and a coordinator that lost the slot is refused by both.
//   - machine.go: the state machine (Empty, Ongoing, PrepareCommit,
//     PrepareAbort, CompleteCommit, CompleteAbort, PrepareEpochFence,
//     Dead) as pure functions of the recorded state, the request and the
//     time: Init, AddPartitions, Verify, End (and EndV2, transaction
//     version 2's: the epoch bumped at every EndTxn), Complete, Expire.
//     Each returns the next state to record and Kafka's error code. No
//     I/O, no clock: table-tested.
//   - coordinator.go: Coordinator, what the broker's handlers call. Each
//     operation on an id runs under that id's lock: it reads the recorded
//     state from the image, decides with machine.go, records the next
//     state through the controller (metadata.CheckTxnTransition checks it
//     there and on replay), and answers. A recorded PrepareCommit or
//     PrepareAbort starts the id's marker writer: WriteTxnMarkers to each
//     partition's leader (MarkerWriter: the local replicas or the
//     inter-broker listener), retried until every partition has its
//     marker, then the Complete* state. Offsets committed in a
//     transaction (TxnOffsetCommit) are pending in the image and become
//     the group's when the CompleteCommit state applies, so the group
//     slot needs no marker.
//
// # Goroutines and locks
//
// Operations run on the caller's goroutine, serialized per id by its lock,
// so different ids' writes reach the controller together and share Raft
// entries. One goroutine per transaction being completed writes its
// markers (at most one per id), with one more per partition leader during
// each round of marker requests (the round waits for them all). An
// operation that finds the id's previous transaction still completing
// waits for its writer (bounded) before it is decided again. One scanner goroutine, every
// ResumeInterval, starts the marker writer of each Prepare* state in this
// broker's slots that has none (a coordinator took the slot over, or one
// failed mid-commit); every AbortTimedOutInterval it aborts the open
// transactions past transaction.timeout.ms with the producer epoch bumped
// (the producer is fenced); every RemoveExpiredInterval it removes the ids
// idle past transactional.id.expiration.ms. Close stops them all.
//
// Locks: Coordinator.mu (the lock and writer maps), then an id's lock is
// taken only after Coordinator.mu is released; no lock is held while
// calling the controller except the id's own.
//
// # Imports
//
// It imports metadata, broker/coordslot, kmsg/kerr and zerolog. It must
// not import the root broker package, raftfsm or storage: the controller,
// the metadata view and the marker path arrive as the interfaces
// Controller, MetadataSource and MarkerWriter. Its tests run against the in-memory controller twin.
//
//arch:imports std metadata broker/coordslot github.com/twmb/franz-go/pkg/kmsg github.com/twmb/franz-go/pkg/kerr
//arch:imports github.com/rs/zerolog
//arch:importers broker cmd/...
package txn
