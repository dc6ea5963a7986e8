package raftfsm

import (
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

// The vote gate keeps a controller that started with an empty disk from
// voting as the voter its node id used to be. hashicorp/raft names members
// by id alone, so a wiped node formatted again (--no-initial-controllers)
// and started while the old incarnation is still in the Raft configuration
// would be counted as that voter: its empty log would grant any candidate
// its vote, and entries committed on the old disk could be lost. KIP-853
// tells incarnations apart by directory id; here the node refuses votes
// (and leadership transfers) until the metadata image records its own
// directory id for its node id, which AddRaftVoter commits once it has
// been promoted. Its AppendEntries answers still count: they acknowledge
// entries it really holds.

// Nor does it stand for election while gated: Kafka's observer with
// another directory id is never a candidate, and here its vote requests
// fail as if the network had, so it gathers no votes (with pre-vote, its
// term does not climb either).

// gateConsumer answers vote requests itself while the gate is shut.
type gateConsumer struct {
	once     sync.Once
	out      chan raft.RPC
	stop     chan struct{}
	stopOnce sync.Once
}

var errNotVoterYet = errors.New("raftfsm: this node's directory id is not a voter's yet (AddRaftVoter)")

// Consumer is the wrapped transport's, filtered through the gate when one
// is set.
func (t *observedTransport) Consumer() <-chan raft.RPC {
	if t.gate == nil {
		return t.fullTransport.Consumer()
	}
	t.gc.once.Do(func() {
		t.gc.out = make(chan raft.RPC)
		in := t.fullTransport.Consumer()
		go func() {
			for {
				select {
				case <-t.gc.stop:
					return
				case rpc := <-in:
					if t.refused(rpc) {
						continue
					}
					select {
					case t.gc.out <- rpc:
					case <-t.gc.stop:
						rpc.Respond(nil, raft.ErrRaftShutdown)
						return
					}
				}
			}
		}()
	})
	return t.gc.out
}

// refused answers rpc if it asks for a vote while the gate is shut.
func (t *observedTransport) refused(rpc raft.RPC) bool {
	switch cmd := rpc.Command.(type) {
	case *raft.RequestVoteRequest:
		if t.gate() {
			rpc.Respond(&raft.RequestVoteResponse{RPCHeader: cmd.RPCHeader, Term: cmd.Term, Granted: false}, nil)
			return true
		}
	case *raft.RequestPreVoteRequest:
		if t.gate() {
			rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: cmd.RPCHeader, Term: cmd.Term, Granted: false}, nil)
			return true
		}
	case *raft.TimeoutNowRequest:
		if t.gate() {
			rpc.Respond(nil, errNotVoterYet)
			return true
		}
	}
	return false
}

// RequestVote sends a vote request unless the gate is shut.
func (t *observedTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if t.gate != nil && t.gate() {
		return errNotVoterYet
	}
	return t.fullTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote sends a pre-vote request unless the gate is shut.
func (t *observedTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if t.gate != nil && t.gate() {
		return errNotVoterYet
	}
	return t.fullTransport.RequestPreVote(id, target, args, resp)
}

// stopGate ends the gate's goroutine (at shutdown).
func (t *observedTransport) stopGate() {
	t.gc.stopOnce.Do(func() { close(t.gc.stop) })
}
