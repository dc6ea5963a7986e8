package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReplicaManager is what the partition APIs (Produce, Fetch, ListOffsets,
// OffsetForLeaderEpoch, DeleteRecords, DescribeLogDirs) need from the
// partition layer. *replica.Manager satisfies it; a nil Deps.Replicas
// (tests of other APIs, a node still starting) answers every partition
// NOT_LEADER_OR_FOLLOWER, which clients retry after a Metadata refresh.
type ReplicaManager interface {
	// Partition returns a partition hosted here, or a *kerr.Error
	// (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION).
	Partition(topic string, partition int32) (*replica.Partition, error)
	Partitions() []*replica.Partition
	// MoveLogDir starts moving a hosted partition's log to another log
	// dir of this broker (AlterReplicaLogDirs); storage's errors say why
	// not.
	MoveLogDir(topic string, partition int32, dir string) error
	// LogDirMoves are the moves in flight (DescribeLogDirs' future
	// replicas).
	LogDirMoves() []storage.MoveState
	// Fetch reads and long-polls (the delayed-fetch purgatory).
	Fetch(ctx context.Context, req replica.FetchRequest) []replica.ReadResult
	// ServeFetchRegions answers a follower's Fetch with the records left
	// in the segment files, one region list per response partition, so
	// they go to the socket with sendfile instead of through a buffer.
	ServeFetchRegions(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, [][]storage.Region)
}

// PartitionOptions configure the partition APIs of a Server.
type PartitionOptions struct {
	// LogDirs are log.dirs, which DescribeLogDirs lists even when they hold
	// no partition.
	LogDirs []string
	// OfflineDirs, when set, returns the log dirs that failed
	// (storage.Manager.OfflineDirs): DescribeLogDirs answers them with
	// KAFKA_STORAGE_ERROR.
	OfflineDirs func() []string
	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots
	// (Kafka's default 1000 when zero; negative disables sessions).
	FetchSessionCacheSlots int
	// FetchSessionEvictionMin is min.incremental.fetch.session.eviction.ms:
	// a session unused that long may be evicted for a new one (120s).
	FetchSessionEvictionMin time.Duration
}

// partitionState is the Server's state for the partition APIs: options and
// the fetch session cache (see fetch_session.go).
type partitionState struct {
	logDirs     []string
	offlineDirs func() []string
	sessions    *fetchSessionCache
}

func newPartitionState(o PartitionOptions) *partitionState {
	slots := o.FetchSessionCacheSlots
	if slots == 0 {
		slots = 1000
	}
	evict := o.FetchSessionEvictionMin
	if evict <= 0 {
		evict = 120 * time.Second
	}
	return &partitionState{logDirs: o.LogDirs, offlineDirs: o.OfflineDirs, sessions: newFetchSessionCache(max(slots, 0), evict, time.Now)}
}

// errNoReplicas answers for partitions when the node has no replica
// manager wired (yet).
var errNoReplicas = fmt.Errorf("%w: this node serves no partitions yet", kerr.NotLeaderForPartition)

// onPartition runs fn on a partition hosted here. An answer that may only be
// stale, from the lookup or from fn (a follower about to become leader), is
// retried once after catchUp; fn must change nothing when it returns such
// an error, as the partition methods do.
func (s *Server) onPartition(ctx context.Context, rc *request, topic string, p int32, fn func(*replica.Partition) error) error {
	if s.deps.Replicas == nil {
		return errNoReplicas
	}
	part, err := s.deps.Replicas.Partition(topic, p)
	if err == nil {
		err = fn(part)
	}
	if err != nil && staleAnswer(err) && s.catchUp(ctx, rc) {
		if part, err = s.deps.Replicas.Partition(topic, p); err == nil {
			err = fn(part)
		}
	}
	return err
}

// catchUpWait bounds how long one request waits in catchUp, over all its
// partitions.
const catchUpWait = time.Second

// catchUp waits (at most catchUpWait) until the node has applied, and
// serves, the metadata entries its Raft log already holds, and reports
// whether it had been behind (and counts it, CatchUpWaits).
//
// The node serves only images its replica manager has applied
// (raftfsm.Node.HoldServing), so this broker never names itself leader of a
// partition it does not lead yet. What is left is another broker's image:
// a follower appends a Raft entry before it learns that it is committed, so
// a client may be told by another node that this one leads a partition
// this node is about to learn of. Such a request would get
// NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION, on which clients
// back off a second or more; a handler that meets one waits here and asks
// again instead.
func (s *Server) catchUp(ctx context.Context, rc *request) bool {
	if s.deps.Replicas == nil || s.deps.Metadata == nil {
		return false
	}
	if rc.catchUpBy.IsZero() {
		rc.catchUpBy = time.Now().Add(catchUpWait)
	}
	if time.Now().After(rc.catchUpBy) {
		return false // this request has waited its share already
	}
	ctx, cancel := context.WithDeadline(ctx, rc.catchUpBy)
	defer cancel()
	if !s.deps.Metadata.CatchUp(ctx) {
		return false
	}
	if rc.fromReplica {
		s.replicaCatchUpWaits.Add(1)
	} else {
		s.catchUpWaits.Add(1)
	}
	s.log.Debug().Str("api", kmsg.NameForKey(rc.key)).Str("client", rc.clientID).Msg("waited for the metadata to catch up")
	return true
}

// CatchUpWaits counts the requests that met a partition this node's
// metadata was behind on and waited for it (catchUp): clients' (a produce,
// a consumer's fetch, ListOffsets, ...) that paid for a leadership another
// node named first, and followers' Fetch and OffsetForLeaderEpoch. A
// follower learns of its new leader from its own image, which may come
// before the leader's; clients learn of leaders only from images that
// CreateTopics and ElectLeaders made sure every replica serves
// (awaitReplicasServe), so theirs are left to a leader move the controller
// made by itself (a failover, a rebalance).
func (s *Server) CatchUpWaits() (clients, replicas uint64) {
	return s.catchUpWaits.Load(), s.replicaCatchUpWaits.Load()
}

// staleAnswer reports errors that a replica manager behind the metadata
// image gives for a partition it is about to lead.
func staleAnswer(err error) bool {
	return errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.UnknownTopicOrPartition) ||
		errors.Is(err, kerr.UnknownLeaderEpoch)
}

// image is the current metadata image, or an empty one.
func (s *Server) image() *metadata.Image {
	if s.deps.Metadata == nil {
		return metadata.NewImage()
	}
	img, _ := s.deps.Metadata.Current()
	if img == nil {
		return metadata.NewImage()
	}
	return img
}

// ReplicaTopicConfig is the replica.Config.TopicConfig function for a node
// with server.properties cfg: the log config from StorageConfig and
// min.insync.replicas by the same precedence (topic override, dynamic broker
// and cluster configs, server.properties, default).
func ReplicaTopicConfig(cfg *config.Config) func(img *metadata.Image, topic string) (replica.TopicConfig, error) {
	return func(img *metadata.Image, topic string) (replica.TopicConfig, error) {
		tc := replica.TopicConfig{Log: StorageConfig(img, cfg, topic), MinInsyncReplicas: 1, ELR: img.ELREnabled()}
		e, ok := metadata.EffectiveTopicConfig("min.insync.replicas", TopicConfigSources(img, cfg, topic))
		if !ok {
			return tc, nil
		}
		n, err := strconv.Atoi(e.Value)
		if err != nil || n < 1 {
			return tc, fmt.Errorf("broker: topic %s: min.insync.replicas %q is not a positive integer", topic, e.Value)
		}
		tc.MinInsyncReplicas = n
		return tc, nil
	}
}
