package compat

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quorumRows are AddRaftVoter (80) and RemoveRaftVoter (81) rows on the
// client listener, which forwards them to the active controller. The
// one-node cluster is formatted with static controller.quorum.voters
// (kraft.version 0), where Kafka refuses both; the changes themselves are
// tested on dynamic clusters (test/e2e's quorum tests, raftfsm's
// TestAddAndRemoveVoter). UpdateRaftVoter (82) is served on the controller
// listener only, as in Kafka.
func quorumRows() []row {
	add := func(v int16, e *env) kmsg.Request {
		r := kmsg.NewPtrAddRaftVoterRequest()
		r.Version, r.ClusterID, r.VoterID, r.TimeoutMillis = v, kmsg.StringPtr(e.clusterID), 2, 5000
		l := kmsg.NewAddRaftVoterRequestListener()
		l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", 1
		r.Listeners = append(r.Listeners, l)
		return r
	}
	remove := func(v int16, e *env) kmsg.Request {
		r := kmsg.NewPtrRemoveRaftVoterRequest()
		r.Version, r.ClusterID, r.VoterID = v, kmsg.StringPtr(e.clusterID), 1
		return r
	}
	addRefused := func(r kmsg.Response, _ *env) error {
		return want("AddRaftVoter", r.(*kmsg.AddRaftVoterResponse).ErrorCode, kerr.UnsupportedVersion.Code)
	}
	removeRefused := func(r kmsg.Response, _ *env) error {
		return want("RemoveRaftVoter", r.(*kmsg.RemoveRaftVoterResponse).ErrorCode, kerr.UnsupportedVersion.Code)
	}
	return []row{
		{80, lowest, "static quorum", "AddVoterHandler.handleAddVoterRequest: kraft.version 0 (static controller.quorum.voters) is UNSUPPORTED_VERSION", add, addRefused},
		{80, highest, "static quorum", "AddVoterHandler.handleAddVoterRequest, as at the lowest version", add, addRefused},
		{81, lowest, "static quorum", "RemoveVoterHandler.handleRemoveVoterRequest: kraft.version 0 is UNSUPPORTED_VERSION", remove, removeRefused},
		{81, highest, "static quorum", "RemoveVoterHandler.handleRemoveVoterRequest, as at the lowest version", remove, removeRefused},
	}
}
