// Package replica is the partition layer between the Kafka API handlers (the
// root broker package) and the partition logs (storage): it makes this broker
// the leader or a follower of the partitions the metadata image assigns to it,
// replicates by follower fetch with Kafka's LEO / high-watermark / ISR rules,
// and holds the purgatories in which acks=all produces and long-poll fetches
// wait.
//
// # What it owns
//
//   - manager.go: Manager, one per broker. Apply follows the published
//     metadata events (each delta through metadata.Delta.LocalChanges, this
//     broker's view of it): it opens or creates logs, makes partitions
//     leaders or followers at the image's leader epoch, moves them between
//     fetchers and deletes the logs of partitions no longer assigned here.
//     It sends the AlterPartition requests its partitions start, batched
//     (alter_batch.go).
//   - alter_batch.go: the broker's AlterPartition sender, as Kafka's
//     AlterPartitionManager: one request in flight, the ISR changes
//     partitions start meanwhile collected for the next, each partition's
//     result handed back to it.
//   - partition.go: Partition, the per-partition state (role, epochs,
//     replicas, ISR, HW) and the leader API handlers call: AppendAsLeader,
//     AppendMarker, Read, OffsetForLeaderEpoch, ListOffsets, DeleteRecords;
//     its role changes, its ISR expiry and its side of an AlterPartition. A
//     Partition holds no *Manager: what it needs from its host (clock, ISR
//     eligibility, the way to the controller) is the partitionHost
//     interface, and its settings are values given when it is opened.
//   - isr.go: the pure leader core (follower LEOs, last caught-up times, HW,
//     the followers' reported log start offsets and the low watermark,
//     shrink and expand decisions) and the AlterPartition exchange with the
//     controller (at most one in flight per partition; the image, not the
//     answer, applies a new ISR).
//   - health.go: Health, the hosted partitions' replication health, log
//     sizes and offsets and the ISR change counts, read when metrics are
//     scraped (nothing on the produce or fetch path maintains it).
//   - truncation.go: the pure KIP-101/279 truncation rule a follower applies
//     to the leader's OffsetForLeaderEpoch answer or a Fetch DivergingEpoch.
//   - fetcher.go: num.replica.fetchers goroutines (Config.NumFetchers) per
//     source broker, each batching the partitions it follows from it into
//     one Fetch request; a partition goes to fetcher
//     abs(31*topic.hashCode()+partition) % N, as in Kafka (manager.go);
//     fetcher_resize.go: SetNumFetchers, N changed on a running Manager (a
//     dynamic broker config), partitions moved to their new fetchers as
//     Kafka's resizeThreadPool.
//   - unreachable.go: a fetcher whose connection to its source broke the way
//     a dead process's does (closed, reset, a redial refused) marks the
//     source lost until a fetch from it succeeds, and tells
//     Config.SourceLost (the broker reports it to the controller, which
//     probes it); the broker's Metadata handler reads UnreachableSince.
//   - leader_endpoint.go: LeaderEndpoint, what a fetcher needs from a leader,
//     with a TCP implementation speaking Kafka frames (Fetch v12,
//     OffsetForLeaderEpoch v4) and InmemNetwork, its in-memory twin;
//     conn_dialer.go: the same over a connection the caller made (TLS and
//     SASL on a secured inter-broker listener, built by the root broker).
//   - serve.go: the server side of those two requests on a leader (ServeFetch,
//     ServeOffsetForLeaderEpoch), shared by the in-memory twin and usable by
//     the root broker's handlers.
//   - purgatory.go, delayed_produce.go, delayed_fetch.go,
//     delayed_delete_records.go: waiting without polling. A Partition keeps
//     three watcher lists, woken on high-watermark or role changes
//     (produce), on appends (fetch), and on followers' log start offsets,
//     replica or role changes (DeleteRecords, which waits for the low
//     watermark: the smallest log start offset over the replicas on live
//     brokers, as Kafka's DelayedDeleteRecords). While a deletion waits, a
//     follower fetch that reports an older log start is answered at once.
//
// # How the broker uses it
//
// Server wiring: NewManager(Config{BrokerID, Storage, TopicConfig,
// Controller: the raftfsm ControllerClient, Dial: TCPDialer(...),
// InterBrokerListener, Logger, timings from server.properties}); then, from
// the metadata subscription's goroutine, Apply(ev.Image, ev.Delta, ev.Reset)
// for every event in order; on shutdown Close (before closing storage).
//
// Handlers look a partition up with Manager.Partition (an error there is the
// partition's error code) and then:
//
//   - Produce: AppendAsLeader(batch, acks) per partition; for acks=-1 collect
//     the returned Acks and call WaitAcks(ctx, timeout_ms, acks) once for the
//     request. acks values other than -1, 0, 1 are the handler's
//     INVALID_REQUIRED_ACKS.
//   - Fetch: resolve the session into a FetchRequest and call Manager.Fetch
//     (it waits for MinBytes/MaxWait); each ReadResult carries the region to
//     send with sendfile, the HW, LSO, log start offset, DivergingEpoch and
//     the error, and for a read_committed consumer (Isolation ReadCommitted:
//     reads stop at the LSO) the aborted transactions in the region.
//     ServeFetch does the same from a kmsg request without sessions,
//     copying the bytes.
//   - WriteTxnMarkers: AppendMarker(marker, -1) per
//     partition, then WaitAcks as for a produce.
//   - OffsetForLeaderEpoch: Partition.OffsetForLeaderEpoch, or
//     ServeOffsetForLeaderEpoch for a whole request.
//   - ListOffsets: Partition.ListOffsets (latest is the LSO under
//     ReadCommitted).
//   - DeleteRecords: Partition.DeleteRecords per partition, then
//     WaitDeletions(ctx, timeout_ms, deletions) once for the request; each
//     Deletion's LowWatermark is the answer's.
//
// # Imports
//
// It imports storage, metadata, broker/kafkacode (one map from errors to
// Kafka codes), kmsg, kerr and zerolog. It must not import the root broker
// package or raftfsm: the controller (AlterPartitionClient) and the network
// (Dialer, LeaderEndpoint) arrive as small interfaces defined here.
// Its tests run against the in-memory controller twin (raftfsm.StartInMemory).
//
// # Errors
//
// Replication outcomes are returned as *kerr.Error values (possibly wrapped
// with %w), which the root broker's errors.go passes through as codes:
// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
// NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT, OFFSET_OUT_OF_RANGE,
// UNKNOWN_TOPIC_OR_PARTITION. Errors from storage (corrupt batch, too large,
// invalid timestamp, ...) are passed through unchanged for the broker to map.
//
// # Goroutines and locks
//
// Manager.Apply is called by one goroutine (the metadata subscriber), in
// order; every other Manager and Partition method may be called from any
// goroutine. Goroutines started here: one ISR-expiry loop per Manager, up to
// NumFetchers fetchers per source broker, and the AlterPartition sender
// while it has changes to send (one at most); Close stops and waits for all
// of them.
//
// Lock order (never take an earlier lock while holding a later one):
//
//	Manager.applyMu -> fetcher.mu -> Manager.mu -> Partition.roleMu ->
//	Partition.mu -> storage's locks; watchers.mu, Manager.lostMu and
//	alterBatcher.mu are leaves (a partition's answer is handed to it with
//	no batcher lock held).
//
// Partition.roleMu (a RWMutex) guards the role and epochs: appends and reads
// hold it shared so that a role change never interleaves with an append at
// the old epoch. Partition.mu guards the leader core (follower states, HW,
// pending ISR change).
//
//arch:imports std storage metadata broker/kafkacode github.com/twmb/franz-go/pkg/kmsg
//arch:imports github.com/twmb/franz-go/pkg/kerr github.com/rs/zerolog
//arch:importers broker cmd/...
package replica
