// Package raftfsm runs the hashicorp/raft node that replicates the metadata
// log: the FSM that applies committed record batches to metadata.Image and
// publishes each new image, snapshots, the boltdb stores, the transport on the
// controller listener, quorum membership, and the active controller's RPC
// service (validate, then records, then raft.Apply).
//
// It may import metadata, hashicorp/raft, raft-boltdb, kmsg and zerolog. It
// must never import storage or broker.
package raftfsm
