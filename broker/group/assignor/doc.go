// Package assignor holds the server-side partition assignors of the
// KIP-848 consumer group protocol, as pure functions: `uniform` (Kafka's
// default) and `range`, selected by name (group.consumer.assignors, or a
// member's ServerAssignor). An assignor gets the group's members (their
// subscriptions, already resolved to topic ids, racks and current target
// assignments) and the subscribed topics (partition counts, replica racks)
// and returns the next target assignment of every member. No I/O, no
// clock, no goroutines, no randomness: the same input gives the same
// output, whatever the order of members and partitions in it.
//
// uniform follows Kafka's UniformAssignor: when every member subscribes to
// the same topics (homogeneous) the homogeneous builder gives every member
// total/members partitions, the first total%members of them one more,
// keeping what each member already has up to its quota; otherwise the
// heterogeneous builder keeps every member's still-subscribed partitions,
// hands out the rest topic by topic to the least loaded subscriber and
// then moves partitions from the most to the least loaded subscriber of a
// topic while their counts differ by more than one. Two choices are
// raftka's own, both in Kafka's spirit: the extra partitions go first to
// members that already hold that many (fewer moves), and a partition
// being handed out prefers, among the members that may take it, one whose
// rack holds a replica (rack-aware input costs neither balance nor
// stickiness). Partitions kept are the lowest numbered, so a member that
// must give some up keeps a contiguous head.
//
// range follows Kafka 4.1's RangeAssignor (rewritten by KAFKA-16944): per
// topic, its subscribers in order (static members first by instance id,
// then the others by member id) get consecutive ranges of
// partitions/subscribers, the first partitions%subscribers one more, so
// co-partitioned topics (same partition count, same subscribers) give each
// member the same partition numbers, as joins need. It is not sticky
// beyond that order: a static member keeps its range while the set of
// members before it does not change. It ignores racks, which would break
// co-partitioning.
//
// Imports: the standard library only. Importers: the group coordinator.
//
//arch:imports std
//arch:importers broker/...
package assignor
