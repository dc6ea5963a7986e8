// Package share is the partition side of share groups (KIP-932): the
// delivery state a partition leader keeps for each (share group, partition)
// pair, as a pure state machine with the time as an input.
//
// # What it owns
//
//   - types.go: record states (Available, Acquired, Acknowledged, Archived,
//     numbered as Kafka persists them), acknowledge types (gap, accept,
//     release, reject, renew), acquire modes (KIP-1206), Config, and the
//     durable form of a partition's state (Durable: the share-partition start
//     offset, the state epoch and the non-trivial offset ranges).
//   - partition.go: Partition, the machine. Acquire hands a member the
//     records of the log batches the caller read from NextFetchOffset, under
//     an acquisition lock of Config.LockDuration, counting deliveries;
//     Acknowledge applies a member's acknowledgements all or nothing
//     (INVALID_RECORD_STATE for an offset not acquired by that member or
//     whose lock has expired, the state unchanged); Expire returns records
//     whose lock ran out; ReleaseMember returns a departed member's records;
//     the start offset (SPSO) advances over finished records. Durable and
//     Restore carry the state over a leader failover: acquired records come
//     back Available with their delivery count, acknowledged ones stay done.
//   - reset.go: share.auto.offset.reset (latest, earliest,
//     by_duration:ISO-8601) parsed and resolved against the log's offsets.
//
// What it does not own: share sessions and the wire (the broker's ShareFetch
// and ShareAcknowledge handlers, api_share_fetch.go), group membership
// (broker/group/sharegroup), and writing Durable through the controller
// (the broker's share_writer.go, which coalesces many partitions into one
// Raft entry as record 50).
//
// # Goroutines and locks
//
// None. A Partition is not safe for concurrent use: its owner (one per
// share-partition on the leader) serializes calls, and every call that may
// depend on time takes now.
//
// # Imports
//
// The standard library and kerr (the errors it returns are Kafka's codes, so
// the handlers pass them through unchanged).
//
//arch:imports std github.com/twmb/franz-go/pkg/kerr
//arch:importers broker cmd/...
package share
