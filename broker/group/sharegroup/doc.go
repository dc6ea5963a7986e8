// Package sharegroup is the share group (KIP-932) membership side of the
// group coordinator: the group state machine and the `simple` assignor as
// pure code, and the Coordinator that serves ShareGroupHeartbeat and
// ShareGroupDescribe with them. The delivery side (ShareFetch,
// ShareAcknowledge, share-partition state) is elsewhere; it asks this
// package only whether a group has members (ShareGroupHasMembers).
//
// The model, as Kafka 4.2's GroupMetadataManager:
//   - A share group has a group epoch, members with member epochs, and a
//     target assignment stamped with the epoch it was computed at. The
//     group epoch rises when a member joins, leaves (epoch -1) or is
//     expired (group.share.session.timeout.ms), when a subscription
//     changes, and when a subscribed topic is created, deleted or grows.
//   - The next heartbeat after a rise computes a new target with Simple.
//     There is no revocation: records, not partitions, are what members
//     own, so a member takes its target (and the target epoch) on its next
//     heartbeat, and the answer carries the assignment on a join and
//     whenever the member's partitions changed.
//   - Fencing: an unknown member with an epoch other than 0 is
//     UNKNOWN_MEMBER_ID; an epoch ahead of the member's, or behind it other
//     than its previous epoch (a lost answer), FENCED_MEMBER_EPOCH. Epoch 0
//     with a known member id rejoins it (KIP-1082 clients keep their id
//     and send 0 after losing the membership). A new member past
//     group.share.max.size is GROUP_MAX_SIZE_REACHED.
//   - A group id is one kind: a heartbeat for a classic group's id is
//     GROUP_ID_NOT_FOUND, as is one with an epoch other than 0 for a group
//     that does not exist.
//
// Files: simple.go (the assignor), group.go (Group: heartbeats, leaves,
// timers with the time as input), state.go (the durable state: Export,
// Restore, Diff into metadata records 55-59), coordinator.go (Coordinator:
// one mutex over the groups this node coordinates, one goroutine that
// expires sessions, persistence through a Persister only when a group
// changed), wire.go (kmsg in and out).
//
// Goroutines and locks: Coordinator.mu guards every group; it is held
// while a change is persisted, so an answer goes out only after what it
// says is durable and two changes of a group never race to the controller.
// The tick goroutine (NewCoordinator .. Close) takes the same mutex.
//
//arch:imports std metadata github.com/twmb/franz-go/pkg/kmsg github.com/twmb/franz-go/pkg/kerr
//arch:imports github.com/rs/zerolog
//arch:importers broker cmd/... broker/...
package sharegroup
