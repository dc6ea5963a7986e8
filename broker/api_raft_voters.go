package broker

// AddRaftVoter (key 80, v0, Kafka 4.1's) and RemoveRaftVoter (key 81, v0) on the
// client listener, forwarded to the active controller as Kafka's brokers
// forward them (KafkaApis: ADD_RAFT_VOTER, REMOVE_RAFT_VOTER;
// Admin.addRaftVoter / removeRaftVoter send them to any broker, and
// kafka-metadata-quorum.sh add-controller / remove-controller do with
// --bootstrap-server). UpdateRaftVoter (82) is a controller's own request
// to the quorum leader and is served on the controller listener only, as
// in Kafka.
//
// Behaviour (raftfsm/quorum.go, after Kafka's AddVoterHandler and
// RemoveVoterHandler):
//   - ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
//   - kraft.version 0 (static controller.quorum.voters): UNSUPPORTED_VERSION.
//   - Another change in flight: REQUEST_TIMED_OUT. An existing voter:
//     DUPLICATE_VOTER; a node that is not a voter: VOTER_NOT_FOUND;
//     listeners without the controller listener, removing the last voter,
//     or a removal that leaves no live majority: INVALID_REQUEST.
//   - AddRaftVoter answers once the new voter has caught up with the
//     metadata log and its promotion committed; REQUEST_TIMED_OUT if it
//     does not catch up within TimeoutMs.
//   - Removing the active controller hands leadership to another voter
//     first; the new leader removes it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RaftVoterChanger forwards AddRaftVoter and RemoveRaftVoter; Deps.Admin
// serves them when it implements it (*raftfsm.ControllerClient does).
type RaftVoterChanger interface {
	AddRaftVoter(ctx context.Context, req *kmsg.AddRaftVoterRequest) (*kmsg.AddRaftVoterResponse, error)
	RemoveRaftVoter(ctx context.Context, req *kmsg.RemoveRaftVoterRequest) (*kmsg.RemoveRaftVoterResponse, error)
}

func init() {
	register(apiEntry{
		key:           80,
		advertisedMin: 0, min: 0, max: 0,
		handle: handleAddRaftVoter,
	})
	register(apiEntry{
		key:           81,
		advertisedMin: 0, min: 0, max: 0,
		handle: handleRemoveRaftVoter,
	})
}

// voterChanger is the gate both voter changes pass before they are
// forwarded: ALTER on the cluster, as KafkaApis checks for either, and a
// Deps.Admin that can forward them. It returns the code and message to
// answer with when one is missing (a nil message for the authorization
// failure).
func voterChanger(rc *request) (ch RaftVoterChanger, code int16, msg *string) {
	if !rc.authorizeCluster(opAlter) {
		return nil, kerr.ClusterAuthorizationFailed.Code, nil
	}
	ch, ok := rc.conn.srv.deps.Admin.(RaftVoterChanger)
	if !ok {
		return nil, adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker")
	}
	return ch, 0, nil
}

func handleAddRaftVoter(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	ch, code, msg := voterChanger(rc)
	if code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp, nil
	}
	fwd := *req
	fwd.UnknownTags = kmsg.Tags{} // a client must not pass as a joining non-voter (raftfsm.NonvoterTag)
	if fwd.Version < 1 {
		fwd.AckWhenCommitted = true
	}
	cctx, cancel := forwardContext(ctx, req.TimeoutMillis)
	defer cancel()
	cresp, err := ch.AddRaftVoter(cctx, &fwd)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = forwardFailure(err)
		return resp, nil
	}
	clearTags(&cresp.UnknownTags)
	return cresp, nil
}

func handleRemoveRaftVoter(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	ch, code, msg := voterChanger(rc)
	if code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp, nil
	}
	cctx, cancel := forwardContext(ctx, 0)
	defer cancel()
	cresp, err := ch.RemoveRaftVoter(cctx, req)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = forwardFailure(err)
		return resp, nil
	}
	clearTags(&cresp.UnknownTags)
	return cresp, nil
}
