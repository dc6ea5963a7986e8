// Package consumergroup is the KIP-848 consumer group state machine, as
// pure code: what the coordinator does with a ConsumerGroupHeartbeat, a
// leave, a session or rebalance timeout, following Kafka 4.1's
// GroupMetadataManager (consumerGroupHeartbeat, consumerGroupLeave) and
// CurrentAssignmentBuilder. The coordinator (broker/group/consumer.go)
// runs it on the group's loop and makes its Export durable before it
// answers a heartbeat.
//
// The model, as in Kafka:
//   - The group epoch rises whenever what the assignment depends on
//     changes: a member joins, leaves or is fenced, a subscription or the
//     server assignor changes, a subscribed topic is created, deleted or
//     gains partitions.
//   - When the group epoch is ahead of the target assignment epoch, the
//     next heartbeat computes a new target assignment with the group's
//     server assignor (broker/group/assignor) and stamps it with the group
//     epoch.
//   - Each member reconciles towards its target on its own heartbeats: it
//     keeps what stays, is asked to revoke what goes
//     (UNREVOKED_PARTITIONS, same epoch) and moves to the next epoch only
//     once its heartbeat no longer reports them; a partition is handed to
//     its new owner only once no member holds it any more
//     (UNRELEASED_PARTITIONS meanwhile). So no partition is ever owned by
//     two members at once.
//   - Fencing: an epoch ahead of the coordinator's, or behind it other than
//     the previous epoch with a subset of the current assignment (a lost
//     response), is FENCED_MEMBER_EPOCH; an unknown member UNKNOWN_MEMBER_ID;
//     a static member (group.instance.id) that joins while its instance is
//     held by a member that has not left with epoch -2 is
//     UNRELEASED_INSTANCE_ID, and a different member id with a known
//     instance FENCED_INSTANCE_ID.
//   - Leaving: epoch -1 removes the member (its partitions are free at
//     once); a static member's -2 keeps its assignment for its instance to
//     rejoin with a new member id until its session times out.
//   - Timers: a member whose heartbeats stop for the session timeout is
//     fenced; a member that does not revoke within its rebalance timeout
//     is fenced.
//
// Subscriptions are topic names, a regular expression (KIP-848's
// server-side regex: RE2 syntax, as Kafka's RE2/J, matched against whole
// topic names; one that does not compile is INVALID_REGULAR_EXPRESSION),
// or both. Kafka resolves regexes in the background, batched; here they
// are matched on every heartbeat against the names the caller passes, so
// a new matching topic bumps the group epoch on the next heartbeat. Each
// regex's resolution (RegexResolution: its topics, the metadata's
// version and the time, what Kafka's ConsumerGroupRegularExpression
// record keeps) changes only when its topics do, and goes with its last
// member.
//
// wire.go reads a kmsg ConsumerGroupHeartbeat request into a
// HeartbeatRequest, writes the answer back, and builds the group's
// ConsumerGroupDescribe entry, so the handlers only route.
//
// Failover: Export gives the durable state (group epoch, members with
// their subscriptions and current assignments, the target assignment and
// its epoch, the subscribed topics, the regexes' resolutions), Restore rebuilds a group from it with
// every session started afresh, as a coordinator that loads a group.
//
// Topic authorization: a member's regex takes only the topics its
// HeartbeatRequest.Describable allows (Kafka 4.1's KAFKA-18813).
//
// classic.go: classic members (JoinGroup/SyncGroup/Heartbeat/LeaveGroup)
// in a consumer group, KIP-848's online upgrade, and the conversions from
// and to a classic group's members (FromClassic, DowngradeMembers).
//
// The package has
// no goroutines, no clock (times are inputs; NextDeadline/Tick drive the
// timers) and no I/O; member ids come from Config.NewMemberID when a v0
// client sends none.
//
//arch:imports std broker/group/assignor github.com/twmb/franz-go/pkg/kerr github.com/twmb/franz-go/pkg/kmsg
//arch:importers broker/...
package consumergroup
