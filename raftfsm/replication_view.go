package raftfsm

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// hashicorp/raft keeps each follower's match index and last contact in
// unexported replication state and exposes neither (Stats and the observer
// only report this node's own indexes and failed or resumed heartbeats). What
// DescribeQuorum needs from the leader's side of replication is therefore
// read off the AppendEntries RPCs the leader sends: observedTransport wraps
// the transport and, for each answered AppendEntries, records the follower's
// log end and the time, the way Kafka's leader learns them from Fetch
// requests (LeaderState.updateReplicaState).
//
// Which RPCs it sees: hashicorp/raft sends heartbeats and non-pipelined
// replication through Transport.AppendEntries, pipelined replication through
// AppendEntriesPipeline, which passes through unobserved. Heartbeats go to
// every follower and observer every HeartbeatTimeout/10 whatever the
// pipeline does, and their answer carries the follower's last log index, so
// a follower's reported log end is at most a heartbeat interval old.

// peerReplication is what the leader last learned of one follower in one
// term. Times are zero and logEnd -1 until it answers.
type peerReplication struct {
	term         uint64
	logEnd       int64
	lastFetch    time.Time
	lastCaughtUp time.Time
	// leaderEndAtFetch is the leader's last index at lastFetch, for the
	// caught-up rule below.
	leaderEndAtFetch uint64
}

// fullTransport is what both transports raftfsm runs on (the network one
// and, in memory, raft.InmemTransport) offer: Raft looks for pre-vote and
// Close support by type assertion, so the wrapper must keep them.
type fullTransport interface {
	raft.Transport
	raft.WithPreVote
	raft.WithClose
}

type observedTransport struct {
	fullTransport
	raft atomic.Pointer[raft.Raft] // set once NewRaft returns; nil before

	mu    sync.Mutex
	peers map[int32]*peerReplication

	// gate, when set, reports whether vote requests are to be refused
	// (vote_gate.go); set before Raft starts.
	gate func() bool
	gc   gateConsumer
}

func newObservedTransport(t fullTransport) *observedTransport {
	return &observedTransport{fullTransport: t, peers: make(map[int32]*peerReplication), gc: gateConsumer{stop: make(chan struct{})}}
}

// AppendEntries sends through the wrapped transport and records the answer.
func (t *observedTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := t.fullTransport.AppendEntries(id, target, args, resp)
	if err != nil || resp.Term > args.Term {
		return err // no answer, or one from a member that is past this term
	}
	r := t.raft.Load()
	if r == nil {
		return nil
	}
	peer, perr := strconv.ParseInt(string(id), 10, 32)
	if perr != nil {
		return nil
	}
	end := int64(resp.LastLog)
	if resp.Success && len(args.Entries) > 0 {
		end = int64(args.Entries[len(args.Entries)-1].Index)
	}
	t.observe(int32(peer), args.Term, end, r.LastIndex(), time.Now())
	return nil
}

// observe applies one answer: the follower's log end, the leader's last
// index when the answer came, and the time. A follower is caught up at now
// if it has everything the leader has; otherwise, if it now has everything
// the leader had at its previous answer, it was caught up then. This is
// Kafka's ReplicaState rule for LastCaughtUpTimestamp.
func (t *observedTransport) observe(peer int32, term uint64, logEnd int64, leaderEnd uint64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peers[peer]
	if p == nil || p.term != term {
		// A new term is a new leadership: nothing learned before counts.
		p = &peerReplication{term: term, logEnd: -1}
		t.peers[peer] = p
	}
	switch {
	case logEnd >= int64(leaderEnd):
		p.lastCaughtUp = now
	case p.leaderEndAtFetch > 0 && logEnd >= int64(p.leaderEndAtFetch) && p.lastFetch.After(p.lastCaughtUp):
		p.lastCaughtUp = p.lastFetch
	}
	p.logEnd = logEnd
	p.lastFetch = now
	p.leaderEndAtFetch = leaderEnd
}

// replication returns what the leader learned of peer in term.
func (t *observedTransport) replication(peer int32, term uint64) (peerReplication, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peers[peer]
	if p == nil || p.term != term || p.lastFetch.IsZero() {
		return peerReplication{}, false
	}
	return *p, true
}
