// Package storage owns the partition logs on disk: segments, offset and time
// indexes, recovery after an unclean stop, retention, checkpoint files and the
// leader-epoch cache, all in Kafka's on-disk format so an operator recognises
// the files.
//
// It knows nothing of the network or of Raft. It imports the standard library
// and small libraries only; it must never import metadata, raftfsm or broker,
// and it does not log: it returns errors and recovery reports, and callers log.
package storage
