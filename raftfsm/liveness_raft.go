package raftfsm

import (
	"context"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/raftka/raftka/metadata"
)

// Fast election after the active controller dies. hashicorp/raft's follower
// waits its heartbeat timeout (1 s, checked at random points up to twice
// that) without contact before it campaigns, and a peer that still counts
// the dead leader as its leader refuses the first candidate's pre-vote, so
// replacing a crashed controller took 1-3 s before its broker could even be
// fenced. A voter that sees its leader's process gone (the broker on the
// same node lost its fetch connection to the leader's broker, and a dial
// to the leader's controller listener is then refused: the same proof as
// the broker probe, liveness.go) lowers its heartbeat timeout to the leader
// lease timeout, the least Raft allows, until a new leader is known, and
// restores it then. Only timing changes: Raft's safety never rests on it,
// and a leader that is merely stopped answers the dial and keeps the
// normal timeout.

// fastElectionBound is how long the lowered timeout may stay without a
// new leader before it is restored anyway.
const fastElectionBound = 10 * time.Second

// SuspectPeer tells the node that the broker on node id lost its
// connection the way a dead process does. If id leads Raft here and its
// controller listener refuses a dial, this voter campaigns at the lowered
// timeout. It returns at once; the dial runs on a goroutine.
func (n *Node) SuspectPeer(id int32) {
	if !n.cfg.Voter || n.cfg.Prober == nil || n.raft == nil || n.ctx.Err() != nil {
		return
	}
	addr, leader := n.raft.LeaderWithID()
	if addr == "" || string(leader) != strconv.Itoa(int(id)) || n.raft.State() != raft.Follower {
		return
	}
	if !n.fastElection.CompareAndSwap(false, true) {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.fastElection.Store(false)
		n.campaignIfDead(addr, leader)
	}()
}

func (n *Node) campaignIfDead(addr raft.ServerAddress, leader raft.ServerID) {
	host, port := splitHostPort(string(addr))
	ctx, cancel := context.WithTimeout(n.ctx, probeTimeout)
	out := n.cfg.Prober(ctx, []metadata.Endpoint{{Host: host, Port: port}})
	cancel()
	if out != ProbeRefused {
		return
	}
	old := n.raft.ReloadableConfig()
	fast := old
	fast.HeartbeatTimeout = max(n.leaseTimeout, 5*time.Millisecond)
	if fast.HeartbeatTimeout >= old.HeartbeatTimeout {
		return
	}
	if err := n.raft.ReloadConfig(fast); err != nil {
		n.log.Warn().Err(err).Msg("lowering the raft heartbeat timeout after the leader's death")
		return
	}
	n.log.Warn().Str("leader", string(leader)).Dur("heartbeat_timeout", fast.HeartbeatTimeout).
		Msg("the raft leader's controller listener refuses connections: campaigning at the lowered heartbeat timeout")
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(fastElectionBound)
	for time.Now().Before(deadline) {
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
		}
		if a, id := n.raft.LeaderWithID(); a != "" && id != leader {
			break
		}
	}
	if err := n.raft.ReloadConfig(old); err != nil {
		n.log.Warn().Err(err).Msg("restoring the raft heartbeat timeout")
	}
}
