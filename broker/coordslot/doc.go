// Package coordslot is how Kafka places a coordinator key on the
// partitions of an internal topic: a group id on __consumer_offsets
// (broker/group) and a transactional id on __transaction_state
// (broker/txn). Both coordinators place their keys with the same hash, so
// the rule lives once here and a client or operator tool that computes a
// key's slot agrees with both.
//
// # What it owns
//
//   - slot.go: Java's String.hashCode over UTF-16 code units, Slot (Kafka's
//     partitionFor), Place (a key's slot and its leader in one image) and
//     Ownership (whether a node coordinates a key, as the coordinators
//     answer it).
//   - locate.go: Locate, FindCoordinator's answer: the slot's leader, the
//     topic created through the coordinator's callback on first use.
//
// What it does not own: the topics' names, how each is created (its
// partitions, configs and what a failure logs) and what the coordinators
// keep for each slot; those stay with broker/group and broker/txn.
//
// # Goroutines and locks
//
// None; every function is pure over the image it is given.
//
// # Imports
//
// The standard library, metadata (the image the slots are read from) and
// kerr (Ownership answers NOT_COORDINATOR). It must not import the root
// broker package or either coordinator, which import it.
//
//arch:imports std metadata github.com/twmb/franz-go/pkg/kerr
//arch:importers broker broker/group broker/txn cmd/...
package coordslot
