// Package group is the classic consumer group coordinator: which broker
// coordinates a group, the group state machine, and the event loops that
// drive it.
//
// # What it owns
//
//   - slot.go: placement. A group belongs to one of the partitions of the
//     internal topic __consumer_offsets (offsets.topic.num.partitions slots),
//     chosen as Kafka does (Java String.hashCode of the group id, sign bit
//     masked, modulo the slot count; the rule is broker/coordslot's, shared
//     with the transaction coordinator), and the partition's leader
//     coordinates it. Offsets and generations live in the Raft metadata image, so a
//     coordinator that moves (a broker fails or shuts down, leadership is
//     rebalanced) finds every committed offset already in its image; the
//     topic's records are only a view of it for tools.
//   - offsets_log.go: that view. Kafka's __consumer_offsets records (offset
//     commit key v1 / value v3, group metadata key v2 / value v3,
//     tombstones), encoded with kmsg, and OffsetsDiff, the pure comparison
//     of two images that says which records a slot needs; the broker's
//     OffsetsLog appends them.
//   - The group state machine, Group (Empty, PreparingRebalance,
//     CompletingRebalance, Stable, Dead). Inputs carry the time; replies go
//     to callbacks; timers are a NextDeadline/Tick pair; generation records
//     to persist are taken with TakePersist. No goroutines, no clock, no
//     I/O: table-tested with a fake clock. Its files, by concern:
//   - types.go: the states, Config, and the requests and results the
//     machine takes and gives; the member record.
//   - group.go: Group itself, persistence of generations (TakePersist,
//     Persisted), timers (NextDeadline, Tick) and Unload.
//   - classic.go: the classic protocol: JoinGroup and the rebalance it
//     drives (protocol choice, the join phase, the leader's answer),
//     SyncGroup, Heartbeat, LeaveGroup and the OffsetCommit member check.
//   - static.go: static membership (KIP-345): instance-id fencing, a known
//     instance rejoining with a new member id, leaving by instance id.
//   - describe.go: what DescribeGroups and OffsetDelete read of a group.
//   - member.go: member ids and the consumer protocol subscription decoder.
//   - stats.go: what a metrics scrape reads (Coordinator.Stats: the groups
//     coordinated here and their states, published by each loop after its
//     round, so a scrape queues nothing on a loop) and the Observer told of
//     each rebalance that reached Stable and how long it took.
//   - consumer.go: KIP-848 consumer groups on the same loops. A loop holds
//     either a classic Group or a consumergroup.Group (the pure state
//     machine of broker/group/consumergroup); which one the image says (a
//     metadata.ConsumerGroup record makes it a consumer group). Heartbeats
//     of one round run against the group, then the loop writes the group's
//     state through the controller if it changed (the whole group first,
//     then a ConsumerGroupDelta of the members that changed; one write per
//     round, none for steady heartbeats; the controller coalesces rounds
//     of many groups into one Raft entry) and only then answers them, so a
//     coordinator that takes the slot over (Restore from the image) resumes
//     from what every member was told: no full rebalance, and no partition
//     with two owners. The record carries the slot's leader epoch, which the
//     controller checks against its image, so a coordinator that lost the
//     slot cannot write. A failed write answers the round with the error
//     and drops the group, to be reloaded from the image. An empty classic
//     group becomes a consumer group when a consumer-protocol member joins;
//     an empty consumer group becomes classic when a classic member joins
//     (RemoveConsumerGroup). OffsetCommit and TxnOffsetCommit check the member epoch as
//     Kafka's ConsumerGroup.validateOffsetCommit, OffsetFetch v9 the member
//     epoch as validateOffsetFetch.
//   - upgrade.go: KIP-848's online upgrade on the loops: a classic
//     member's JoinGroup, SyncGroup, Heartbeat and LeaveGroup in a
//     consumer group with members run on the consumer group (answered
//     after the round's write); a classic group with members becomes a
//     consumer group on a consumer-protocol member's heartbeat, and a
//     consumer group left with classic members only becomes a classic
//     group in PreparingRebalance, as group.consumer.migration.policy
//     allows.
//   - coordinator.go: Coordinator, which owns one event loop per loaded group
//     and is what the broker's API handlers call; the loop writes offset
//     commits (Commit) and generations through the controller.
//
// # Goroutines and locks
//
// Coordinator methods may be called from any goroutine. Each loaded group is
// owned by one goroutine (its loop); every operation on the group is a
// closure queued to that loop, run in arrival order, so a group's state is
// never shared. A loop persists generations through the controller itself
// (a few milliseconds of Raft commit, during which the group's other
// requests wait, as they wait on Kafka's group lock), and writes commits
// the same way (below). A loop ends when its group is idle (Empty and fully
// persisted: the image holds all there is) or no longer coordinated here;
// the group is loaded again from the image on its next request. One more
// goroutine (scanLoaded) loads the groups of this broker's slots that the
// image records with members and no loop holds: members do not carry over
// to a new coordinator, and if none rejoins within group.max.session.timeout.ms
// the group records itself empty (Group.AwaitLoadedMembers), so its offsets
// can expire (offsets.retention.minutes) as in Kafka.
//
// Locks: Coordinator.mu (the loop map) then loop.mu (the loop's queue). No
// other lock is held while taking one, and neither is held while calling
// the controller or a reply callback.
//
// Committed offsets are not kept here: OffsetCommit checks the member and
// generation on the group's loop, and the loop writes the offsets through
// the controller before it runs anything else for the group (another
// request, a timer). So the check and the write are one step for the
// group, as under Kafka's group lock: a member fenced before its commit is
// checked gets Kafka's error and writes nothing, and a fence queued while
// a commit is being written waits for it. Commits queued together leave in
// one controller call, which the controller coalesces with other groups'
// into one Raft entry. OffsetFetch reads the image.
//
// # Imports
//
// It imports metadata, broker/coordslot, kmsg/kerr and zerolog. It must
// not import the root broker package, raftfsm or storage: the controller
// and the metadata view arrive as the small interfaces Controller and
// MetadataSource.
// Its tests run against the in-memory controller twin (raftfsm.StartInMemory).
//
//arch:imports std metadata broker/coordslot broker/group/assignor broker/group/consumergroup github.com/twmb/franz-go/pkg/kmsg github.com/twmb/franz-go/pkg/kerr
//arch:imports github.com/rs/zerolog
//arch:importers broker cmd/...
package group
