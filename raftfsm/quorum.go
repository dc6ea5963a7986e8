package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Dynamic controller quorum (KIP-853) on hashicorp/raft. Kafka's voter set
// is Raft's configuration here: AddRaftVoter adds the node as a non-voter,
// waits until it has caught up with the leader's log (read off the
// AppendEntries answers, replication_view.go), then promotes it with
// AddVoter, so a new voter never counts toward a commit it cannot yet
// acknowledge. RemoveRaftVoter demotes a voter that still answers (it stays
// an observer, as a removed Kafka controller keeps fetching) and removes
// one that does not; removing the active controller first hands leadership
// to the most caught-up voter, and the new leader does the removal. One
// change at a time: Raft's single-server changes are safe only one by one.

// memberState is one member of the Raft configuration as the leader sees
// it, for the pure checks below.
type memberState struct {
	ID    int32
	Voter bool
	// Live: the leader itself, or a member that answered an AppendEntries
	// within the live window.
	Live bool
}

// changeRefusal is a refused voter change: Kafka's error code and why.
type changeRefusal struct {
	code int16
	msg  string
}

func (r *changeRefusal) Error() string { return r.msg }

func refuse(e *kerr.Error, format string, args ...any) *changeRefusal {
	return &changeRefusal{code: e.Code, msg: fmt.Sprintf(format, args...)}
}

// checkAddVoter decides whether voter id may be added, as Kafka's
// AddVoterHandler: kraft.version 0 is UNSUPPORTED_VERSION, a change in
// flight REQUEST_TIMED_OUT, an existing voter DUPLICATE_VOTER, and
// listeners without the controller listener INVALID_REQUEST.
func checkAddVoter(kraftVersion int16, inFlight bool, members []memberState, id int32, hasListener bool) *changeRefusal {
	switch {
	case kraftVersion < 1:
		return refuse(kerr.UnsupportedVersion, "kraft.version is %d: the voters are the static controller.quorum.voters (upgrade kraft.version to 1 first)", kraftVersion)
	case inFlight:
		return refuse(kerr.RequestTimedOut, "another voter change is in progress")
	case id < 0:
		return refuse(kerr.InvalidRequest, "voter id %d is negative", id)
	case !hasListener:
		return refuse(kerr.InvalidRequest, "the voter's listeners do not include the controller listener")
	}
	for _, m := range members {
		if m.ID == id && m.Voter {
			return refuse(kerr.DuplicateVoter, "node %d is already a voter", id)
		}
	}
	return nil
}

// checkRemoveVoter decides whether voter id may be removed: not with
// kraft.version 0 or a change in flight, VOTER_NOT_FOUND for a member that
// is not a voter, and INVALID_REQUEST for the last voter or when the voters
// left would not have a live majority (the removal could then never
// commit, and the quorum would stop).
func checkRemoveVoter(kraftVersion int16, inFlight bool, members []memberState, id int32) *changeRefusal {
	switch {
	case kraftVersion < 1:
		return refuse(kerr.UnsupportedVersion, "kraft.version is %d: the voters are the static controller.quorum.voters (upgrade kraft.version to 1 first)", kraftVersion)
	case inFlight:
		return refuse(kerr.RequestTimedOut, "another voter change is in progress")
	}
	found := false
	var left, live int
	for _, m := range members {
		if !m.Voter {
			continue
		}
		if m.ID == id {
			found = true
			continue
		}
		left++
		if m.Live {
			live++
		}
	}
	switch {
	case !found:
		return refuse(kerr.VoterNotFound, "node %d is not a voter", id)
	case left == 0:
		return refuse(kerr.InvalidRequest, "node %d is the last voter", id)
	case live < left/2+1:
		return refuse(kerr.InvalidRequest, "removing node %d would leave %d voters of which only %d are live: no quorum", id, left, live)
	}
	return nil
}

// kraftVersion is the finalized kraft.version in the newest image.
func (n *Node) kraftVersion() int16 {
	img, _ := n.pub.Latest()
	v, _ := img.Feature(metadata.KRaftVersionFeature)
	return v
}

// KRaftVersion is the finalized kraft.version (1: dynamic quorum).
func (n *Node) KRaftVersion() int16 { return n.kraftVersion() }

// liveWindow is how recent a member's last AppendEntries answer must be for
// the leader to count it live: a few heartbeats (each HeartbeatTimeout/10)
// and at least a second.
func (n *Node) liveWindow() time.Duration {
	return max(time.Second, 3*n.raftHeartbeatTimeout())
}

func (n *Node) raftHeartbeatTimeout() time.Duration {
	if n.cfg.RaftHeartbeatTimeout > 0 {
		return n.cfg.RaftHeartbeatTimeout
	}
	return time.Second
}

// members reads the Raft configuration with each member's liveness.
func (n *Node) members() ([]memberState, map[int32]raft.Server, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, nil, err
	}
	term := n.raft.CurrentTerm()
	now := time.Now()
	var out []memberState
	byID := map[int32]raft.Server{}
	for _, s := range f.Configuration().Servers {
		id64, err := strconv.ParseInt(string(s.ID), 10, 32)
		if err != nil {
			continue
		}
		id := int32(id64)
		byID[id] = s
		m := memberState{ID: id, Voter: s.Suffrage == raft.Voter}
		if id == n.cfg.NodeID {
			m.Live = true
		} else if n.obs != nil {
			if r, ok := n.obs.replication(id, term); ok && now.Sub(r.lastFetch) < n.liveWindow() {
				m.Live = true
			}
		}
		out = append(out, m)
	}
	return out, byID, nil
}

// awaitViews waits, at most a live window, until this leader has heard
// from every member in its term: a leader just elected (one that took over
// to remove its predecessor) knows nobody live yet.
func (n *Node) awaitViews(ctx context.Context) {
	deadline := time.Now().Add(n.liveWindow())
	for time.Now().Before(deadline) {
		ms, _, err := n.members()
		if err != nil {
			return
		}
		all := true
		for _, m := range ms {
			all = all && m.Live
		}
		if all {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// listenerAddr picks the controller listener from a voter's listeners.
func (n *Node) listenerAddr(names []string, hosts []string, ports []uint16) (string, bool) {
	for i, name := range names {
		if name == n.cfg.ControllerListenerName {
			return net.JoinHostPort(hosts[i], strconv.Itoa(int(ports[i]))), true
		}
	}
	return "", false
}

// changeTimeout is a change's deadline: the request's, else rpcTimeout.
func changeTimeout(ctx context.Context, timeoutMillis int32) (context.Context, context.CancelFunc) {
	if timeoutMillis > 0 {
		return context.WithTimeout(ctx, time.Duration(timeoutMillis)*time.Millisecond)
	}
	return context.WithCancel(ctx)
}

func raftErrorCode(err error) int16 {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return kerr.NotController.Code
	case errors.Is(err, raft.ErrRaftShutdown):
		return kerr.NotController.Code
	}
	return kerr.RequestTimedOut.Code
}

// addVoter answers AddRaftVoter on the active controller.
func (n *Node) addVoter(ctx context.Context, r *kmsg.AddRaftVoterRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AddRaftVoterResponse)
	fail := func(code int16, msg string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		return resp
	}
	if r.ClusterID != nil && *r.ClusterID != n.cfg.ClusterID {
		return fail(kerr.InconsistentClusterID.Code, "the request's cluster id is not this cluster's")
	}
	var names, hosts []string
	var ports []uint16
	for _, l := range r.Listeners {
		names, hosts, ports = append(names, l.Name), append(hosts, l.Host), append(ports, l.Port)
	}
	addr, hasListener := n.listenerAddr(names, hosts, ports)
	if !n.changeMu.TryLock() {
		return fail(kerr.RequestTimedOut.Code, "another voter change is in progress")
	}
	defer n.changeMu.Unlock()
	members, byID, err := n.members()
	if err != nil {
		return fail(kerr.NotController.Code, err.Error())
	}
	if ref := checkAddVoter(n.kraftVersion(), false, members, r.VoterID, hasListener); ref != nil {
		return fail(ref.code, ref.msg)
	}
	ctx, cancel := changeTimeout(ctx, r.TimeoutMillis)
	defer cancel()
	id := raft.ServerID(strconv.Itoa(int(r.VoterID)))
	start := time.Now()
	if s, ok := byID[r.VoterID]; !ok || string(s.Address) != addr {
		if err := n.raft.AddNonvoter(id, raft.ServerAddress(addr), 0, rpcTimeout).Error(); err != nil {
			return fail(raftErrorCode(err), "adding the observer: "+err.Error())
		}
	}
	if err := n.waitCaughtUp(ctx, r.VoterID); err != nil {
		return fail(kerr.RequestTimedOut.Code, fmt.Sprintf("node %d did not catch up with the metadata log: %v", r.VoterID, err))
	}
	caught := time.Since(start)
	// The directory id is committed before the promotion, so the new
	// voter has applied it (and opened its vote gate, vote_gate.go) by the
	// time any AppendEntries carrying its promotion reaches it: that entry
	// carries a commit index past the record. Recorded after, the record
	// could sit uncommitted on the new voter if the leader died at once,
	// and a gated voter would then keep the others from electing.
	if err := n.recordVoterDir(ctx, r.VoterID, r.VoterDirectoryID, false); err != nil {
		return fail(errCode(err), "recording the new voter's directory id: "+err.Error())
	}
	fut := n.raft.AddVoter(id, raft.ServerAddress(addr), 0, rpcTimeout)
	// v0 has no AckWhenCommitted and always waits for the commit.
	if r.Version >= 1 && !r.AckWhenCommitted {
		go func() {
			if err := fut.Error(); err != nil {
				n.log.Warn().Err(err).Int32("voter", r.VoterID).Msg("promoting a caught-up observer to voter")
			}
		}()
		n.log.Info().Int32("voter", r.VoterID).Str("addr", addr).Dur("caught_up_in", caught).Msg("promoting raft voter (not waiting for the commit)")
		return resp
	}
	if err := fut.Error(); err != nil {
		return fail(raftErrorCode(err), "promoting to voter: "+err.Error())
	}
	n.log.Info().Int32("voter", r.VoterID).Str("addr", addr).Dur("caught_up_in", caught).Dur("took", time.Since(start)).Msg("added raft voter")
	return resp
}

// waitCaughtUp waits until the leader has seen peer's log reach the
// leader's commit index as it was when the wait started, in an answer
// after the start.
func (n *Node) waitCaughtUp(ctx context.Context, peer int32) error {
	if n.obs == nil {
		return errors.New("no replication view on this transport")
	}
	target := int64(n.raft.CommitIndex())
	start := time.Now()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if r, ok := n.obs.replication(peer, n.raft.CurrentTerm()); ok && r.lastFetch.After(start) && r.logEnd >= target {
			return nil
		}
		if !n.IsLeader() {
			return raft.ErrNotLeader
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.closing:
			return raft.ErrRaftShutdown
		case <-t.C:
		}
	}
}

// removeVoter answers RemoveRaftVoter on the active controller.
func (n *Node) removeVoter(ctx context.Context, hdr requestHeader, r *kmsg.RemoveRaftVoterRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	fail := func(code int16, msg string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		return resp
	}
	if r.ClusterID != nil && *r.ClusterID != n.cfg.ClusterID {
		return fail(kerr.InconsistentClusterID.Code, "the request's cluster id is not this cluster's")
	}
	if !n.changeMu.TryLock() {
		return fail(kerr.RequestTimedOut.Code, "another voter change is in progress")
	}
	locked := true
	defer func() {
		if locked {
			n.changeMu.Unlock()
		}
	}()
	n.awaitViews(ctx)
	members, _, err := n.members()
	if err != nil {
		return fail(kerr.NotController.Code, err.Error())
	}
	if ref := checkRemoveVoter(n.kraftVersion(), false, members, r.VoterID); ref != nil {
		return fail(ref.code, ref.msg)
	}
	img, _ := n.pub.Latest()
	if d, ok := img.VoterDirectory(r.VoterID); ok && r.VoterDirectoryID != ([16]byte{}) && d != r.VoterDirectoryID {
		// Kafka names a voter by id and directory id: this is another
		// incarnation of the node.
		return fail(kerr.VoterNotFound.Code, fmt.Sprintf("node %d is a voter with another directory id", r.VoterID))
	}
	if r.VoterID == n.cfg.NodeID {
		// The leader cannot remove itself and keep leading the commit of
		// its own removal safely in hashicorp/raft's single-server changes:
		// hand over first, then the new leader removes this node.
		if hdr.clientID == forwardClientID {
			return fail(kerr.NotController.Code, "leadership is moving")
		}
		n.stopController()
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			return fail(raftErrorCode(err), "handing leadership over before removing the active controller: "+err.Error())
		}
		n.changeMu.Unlock()
		locked = false
		return n.forwardToNewLeader(ctx, r)
	}
	id := raft.ServerID(strconv.Itoa(int(r.VoterID)))
	live := false
	for _, m := range members {
		if m.ID == r.VoterID {
			live = m.Live
		}
	}
	var f raft.IndexFuture
	if live {
		// It keeps the metadata log as an observer (a combined node's
		// broker still needs it).
		f = n.raft.DemoteVoter(id, 0, rpcTimeout)
	} else {
		f = n.raft.RemoveServer(id, 0, rpcTimeout)
	}
	if err := f.Error(); err != nil {
		return fail(raftErrorCode(err), "removing the voter: "+err.Error())
	}
	if _, ok := img.VoterDirectory(r.VoterID); ok {
		if err := n.recordVoterDir(ctx, r.VoterID, [16]byte{}, true); err != nil {
			return fail(errCode(err), "the voter was removed, but its directory id is still recorded: "+err.Error())
		}
	}
	n.log.Info().Int32("voter", r.VoterID).Bool("kept_as_observer", live).Msg("removed raft voter")
	return resp
}

// recordVoterDir commits a VoterDirectory record through the active
// controller: a voter's directory id once it votes, or its removal. A zero
// id is not recorded (a client that sends none).
func (n *Node) recordVoterDir(ctx context.Context, id int32, dir [16]byte, remove bool) error {
	if !remove && dir == ([16]byte{}) {
		return nil
	}
	c := n.activeController()
	if c == nil {
		return ErrNotController
	}
	rec := &metadata.VoterDirectory{NodeID: id, DirectoryID: dir, Remove: remove}
	res := c.submit(ctx, func(*controller, *metadata.Image, time.Time) decision {
		return decision{recs: []metadata.Record{rec}}
	})
	if res.err == nil {
		n.log.Info().Int32("voter", id).Bool("removed", remove).Str("directory_id", fmt.Sprintf("%x", dir)).Msg("recorded the voter's directory id")
	}
	return res.err
}

// forwardToNewLeader sends req to the leader that took over from this
// node, once one is known.
func (n *Node) forwardToNewLeader(ctx context.Context, req kmsg.Request) kmsg.Response {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if a := n.leaderAddr(); a != "" && a != n.addr {
			resp, err := n.pool.roundTrip(ctx, a, forwardClientID, req)
			if err == nil {
				return resp
			}
			n.log.Debug().Err(err).Str("leader", a).Msg("forwarding a voter removal to the new leader")
		}
		select {
		case <-ctx.Done():
			return errorResponse(req, kerr.RequestTimedOut.Code)
		case <-t.C:
		}
	}
}

// updateVoter answers UpdateRaftVoter: a voter's new controller listener.
func (n *Node) updateVoter(r *kmsg.UpdateRaftVoterRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
	resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = n.cfg.NodeID, int32(n.raft.CurrentTerm())
	host, port := splitHostPort(n.addr)
	resp.CurrentLeader.Host, resp.CurrentLeader.Port = host, int32(port)
	img, _ := n.pub.Latest()
	switch {
	case r.ClusterID != nil && *r.ClusterID != n.cfg.ClusterID:
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp
	case r.CurrentLeaderEpoch >= 0 && r.CurrentLeaderEpoch < int32(n.raft.CurrentTerm()):
		resp.ErrorCode = kerr.FencedLeaderEpoch.Code
		return resp
	case r.CurrentLeaderEpoch > int32(n.raft.CurrentTerm()):
		resp.ErrorCode = kerr.UnknownLeaderEpoch.Code
		return resp
	case n.kraftVersion() < 1:
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp
	}
	var names, hosts []string
	var ports []uint16
	for _, l := range r.Listeners {
		names, hosts, ports = append(names, l.Name), append(hosts, l.Host), append(ports, l.Port)
	}
	addr, ok := n.listenerAddr(names, hosts, ports)
	if !ok {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if !n.changeMu.TryLock() {
		resp.ErrorCode = kerr.RequestTimedOut.Code
		return resp
	}
	defer n.changeMu.Unlock()
	_, byID, err := n.members()
	if err != nil {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	s, found := byID[r.VoterID]
	if !found || s.Suffrage != raft.Voter {
		resp.ErrorCode = kerr.VoterNotFound.Code
		return resp
	}
	if d, ok := img.VoterDirectory(r.VoterID); ok && r.VoterDirectoryID != ([16]byte{}) && d != r.VoterDirectoryID {
		resp.ErrorCode = kerr.VoterNotFound.Code // another incarnation of the node id
		return resp
	}
	if string(s.Address) == addr {
		return resp
	}
	// AddVoter of a voter that is already one updates its address.
	if err := n.raft.AddVoter(s.ID, raft.ServerAddress(addr), 0, rpcTimeout).Error(); err != nil {
		resp.ErrorCode = raftErrorCode(err)
		return resp
	}
	n.log.Info().Int32("voter", r.VoterID).Str("addr", addr).Msg("updated raft voter's controller listener")
	return resp
}
