package raftfsm

import (
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/raftka/raftka/metadata"
)

// Observer hears of the quorum's timed events, for metrics: raftfsm keeps
// no metrics library, cmd adapts this to Prometheus. Methods are called on
// raftfsm's goroutines (the FSM's, the controller loop's, the snapshot
// persister's) and must be quick.
type Observer interface {
	// Committed reports one metadata entry this node's active controller
	// committed: from raft.Apply to its future's answer, which covers the
	// leader's append, replication to a majority, the commit and this
	// node's FSM apply (Kafka's raft-metrics commit-latency).
	Committed(d time.Duration)
	// Applied reports one committed entry the FSM applied here: decode,
	// Image.Apply and publish (broker-metadata-metrics' apply time).
	Applied(d time.Duration)
	// SnapshotPersisted reports a metadata snapshot written: its size in
	// bytes and the time its Persist took (Kafka's SnapshotEmitter
	// latest-snapshot-generated-bytes and its generation time).
	SnapshotPersisted(bytes int64, d time.Duration)
	// LeaderElected reports a partition leader election the active
	// controller committed: a partition given a leader other than the one
	// it had. unclean is an election outside the previous ISR. d runs from
	// the controller deciding it to its commit (Kafka's ControllerStats
	// LeaderElectionRateAndTimeMs and UncleanLeaderElectionsPerSec).
	LeaderElected(unclean bool, d time.Duration)
}

type nopObserver struct{}

func (nopObserver) Committed(time.Duration)                {}
func (nopObserver) Applied(time.Duration)                  {}
func (nopObserver) SnapshotPersisted(int64, time.Duration) {}
func (nopObserver) LeaderElected(bool, time.Duration)      {}

// RaftStats is the Raft state a metrics scrape reads.
type RaftStats struct {
	// Term is the Raft term (KRaft's current-epoch).
	Term uint64
	// CommitIndex is the newest index this node knows committed (KRaft's
	// high-watermark); AppliedIndex the newest its FSM applied.
	CommitIndex, AppliedIndex uint64
	// PublishedIndex is the index of the newest metadata image published
	// to this node's subscribers (Node.Current).
	PublishedIndex uint64
	// LastLogIndex is the newest index in this node's log (log-end-offset).
	LastLogIndex uint64
	// LastSnapshotIndex is the index of the newest snapshot.
	LastSnapshotIndex uint64
	// LeaderID is the node id of the Raft leader, -1 when none is known
	// (current-leader).
	LeaderID int32
	// LeaderChanges counts the times this node saw a new leader.
	LeaderChanges uint64
}

// RaftStats reads the node's Raft state. hashicorp/raft builds its Stats
// map under its own locks, so this is for scrapes, not hot paths.
func (n *Node) RaftStats() RaftStats {
	_, published := n.Current()
	st := n.raft.Stats()
	num := func(k string) uint64 {
		v, _ := strconv.ParseUint(st[k], 10, 64)
		return v
	}
	return RaftStats{
		Term: num("term"), CommitIndex: num("commit_index"), AppliedIndex: num("applied_index"),
		LastLogIndex: num("last_log_index"), LastSnapshotIndex: num("last_snapshot_index"),
		LeaderID: n.LeaderID(), LeaderChanges: n.leaderChanges.Load(), PublishedIndex: published,
	}
}

// countLeaderChanges counts the leader observations that name a new
// leader, until the node closes.
func (n *Node) countLeaderChanges() {
	defer n.wg.Done()
	ch := make(chan raft.Observation, 16)
	o := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	n.raft.RegisterObserver(o)
	defer n.raft.DeregisterObserver(o)
	var last raft.ServerID
	if _, id := n.raft.LeaderWithID(); id != "" {
		last = id
		n.leaderChanges.Add(1)
	}
	for {
		select {
		case <-n.closing:
			return
		case ob := <-ch:
			lo := ob.Data.(raft.LeaderObservation)
			if lo.LeaderID != "" && lo.LeaderID != last {
				n.leaderChanges.Add(1)
			}
			if lo.LeaderID != "" {
				last = lo.LeaderID
			}
		}
	}
}

// countingWriter counts the bytes a snapshot writes.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// observeElections reports to obs the partition leader elections among
// recs, committed against before, each taking d.
func observeElections(obs Observer, before *metadata.Image, recs []metadata.Record, d time.Duration) {
	for _, r := range recs {
		pc, ok := r.(*metadata.PartitionChange)
		if !ok || pc.Leader == metadata.NoLeaderChange || pc.Leader == metadata.NoLeader {
			continue
		}
		old, ok := before.Partition(pc.TopicID, pc.Partition)
		if !ok || old.Leader == pc.Leader {
			continue
		}
		unclean := true
		for _, id := range old.ISR {
			if id == pc.Leader {
				unclean = false
				break
			}
		}
		obs.LeaderElected(unclean, d)
	}
}
