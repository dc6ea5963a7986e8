package broker

// UnregisterBroker (key 64, v0) on the client listener, forwarded to the
// active controller as Kafka's broker forwards it (KafkaApis:
// UNREGISTER_BROKER, Admin.unregisterBroker, kafka-cluster.sh unregister):
// the operator's way to drop a broker that is gone for good.
//
// Behaviour (Kafka's QuorumController.unregisterBroker and
// ReplicationControlManager.handleBrokerUnregistered, which raftfsm's
// decideUnregister follows):
//   - An id that is not registered is BROKER_ID_NOT_REGISTERED.
//   - Otherwise the broker is fenced, taken out of every ISR it is not the
//     last member of and out of every leadership (new leaders elected from
//     the ISR), and its registration removed. Kafka does not refuse a
//     broker that still holds replicas: they stay in the replica lists
//     (offline) until a reassignment moves them; `raftka reassign drain`
//     is the step before this one.
//   - When the controller cannot be reached: NOT_CONTROLLER or
//     REQUEST_TIMED_OUT. Once answered, this broker's image shows the
//     change (read-your-writes).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BrokerUnregisterer forwards UnregisterBroker to the active controller;
// Deps.Admin serves it when it implements this interface
// (*raftfsm.ControllerClient does).
type BrokerUnregisterer interface {
	UnregisterBroker(ctx context.Context, brokerID int32) (*kmsg.UnregisterBrokerResponse, error)
}

func init() {
	register(apiEntry{
		key:           64,
		advertisedMin: 0, min: 0, max: 0,
		concurrent: false, // a Metadata after it must not list the broker
		handle:     handleUnregisterBroker,
	})
}

func handleUnregisterBroker(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if !rc.authorizeCluster(opAlter) {
		// ControllerApis: ALTER on the cluster.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	u, ok := rc.conn.srv.deps.Admin.(BrokerUnregisterer)
	if !ok {
		resp.ErrorCode, resp.ErrorMessage = adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker")
		return resp, nil
	}
	cctx, cancel := forwardContext(ctx, 0)
	defer cancel()
	cresp, err := u.UnregisterBroker(cctx, req.BrokerID)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = forwardFailure(err)
		return resp, nil
	}
	clearTags(&cresp.UnknownTags)
	return cresp, nil
}
