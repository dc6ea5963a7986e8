package raftfsm

import (
	"testing"

	"github.com/hashicorp/raft"
)

// While the gate is shut, vote and pre-vote requests are refused and
// leadership transfers fail; AppendEntries always pass. Open, all pass.
func TestVoteGate(t *testing.T) {
	shut := true
	o := newObservedTransport(nil)
	o.gate = func() bool { return shut }
	ask := func(cmd any) (raft.RPCResponse, bool) {
		ch := make(chan raft.RPCResponse, 1)
		if !o.refused(raft.RPC{Command: cmd, RespChan: ch}) {
			return raft.RPCResponse{}, false
		}
		return <-ch, true
	}
	if r, ok := ask(&raft.RequestVoteRequest{Term: 7}); !ok || r.Response.(*raft.RequestVoteResponse).Granted || r.Response.(*raft.RequestVoteResponse).Term != 7 {
		t.Fatalf("vote while shut: %+v %v", r, ok)
	}
	if r, ok := ask(&raft.RequestPreVoteRequest{Term: 7}); !ok || r.Response.(*raft.RequestPreVoteResponse).Granted {
		t.Fatalf("pre-vote while shut: %+v %v", r, ok)
	}
	if r, ok := ask(&raft.TimeoutNowRequest{}); !ok || r.Error == nil {
		t.Fatalf("leadership transfer while shut: %+v %v", r, ok)
	}
	if _, ok := ask(&raft.AppendEntriesRequest{}); ok {
		t.Fatal("AppendEntries refused")
	}
	if err := o.RequestVote("1", "x", &raft.RequestVoteRequest{}, &raft.RequestVoteResponse{}); err == nil {
		t.Fatal("a shut gate let this node ask for a vote")
	}
	if err := o.RequestPreVote("1", "x", &raft.RequestPreVoteRequest{}, &raft.RequestPreVoteResponse{}); err == nil {
		t.Fatal("a shut gate let this node ask for a pre-vote")
	}
	shut = false
	for _, cmd := range []any{&raft.RequestVoteRequest{}, &raft.RequestPreVoteRequest{}, &raft.TimeoutNowRequest{}} {
		if _, ok := ask(cmd); ok {
			t.Fatalf("%T refused with the gate open", cmd)
		}
	}
}
