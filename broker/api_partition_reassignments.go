package broker

// AlterPartitionReassignments (key 45, v0-v1) and ListPartitionReassignments
// (key 46, v0), as Kafka 4.1 serves them (KIP-455; v1 of 45 is KIP-860's
// AllowReplicationFactorChange), forwarded to the active controller like
// Kafka's broker does (kafka-reassign-partitions.sh, Admin.
// alterPartitionReassignments / listPartitionReassignments).
//
// Behaviour (Kafka's ReplicationControlManager, decided in metadata's
// PlanReassignment):
//   - A replica list starts (or replaces) a partition's reassignment: its
//     replicas become target ∪ current with adding / removing recorded; the
//     added replicas fetch and join the ISR; once every target replica is
//     in the ISR the controller sets the replicas to the target, moves
//     leadership off a removed leader and the removed replicas delete the
//     partition. A null list cancels: the original replicas come back.
//   - Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_
//     ASSIGNMENT (empty, duplicate, negative or unregistered broker; a
//     cancel that would need a forbidden unclean election),
//     NO_REASSIGNMENT_IN_PROGRESS (cancel of a partition not moving),
//     INVALID_REPLICATION_FACTOR (v1 with AllowReplicationFactorChange
//     false and a target of another size). v0 always allows the change.
//   - ListPartitionReassignments with null topics lists every ongoing
//     reassignment; with topics, those of the named partitions that are
//     moving (unknown ones are left out, as in Kafka).
//   - When the controller cannot be reached, the top-level error and every
//     named partition carry the code (NOT_CONTROLLER, REQUEST_TIMED_OUT).
//     Once a change is answered, this broker's image shows it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReassignmentAdmin forwards the reassignment APIs to the active
// controller with read-your-writes. Deps.Admin serves them when it
// implements this interface (*raftfsm.ControllerClient does), which keeps
// ControllerAdmin's fakes small.
type ReassignmentAdmin interface {
	AlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, error)
	ListPartitionReassignments(ctx context.Context, req *kmsg.ListPartitionReassignmentsRequest) (*kmsg.ListPartitionReassignmentsResponse, error)
}

func init() {
	register(apiEntry{
		key:           45,
		advertisedMin: 0, min: 0, max: 1,
		concurrent: false, // a Metadata or List after it must see the change
		handle:     handleAlterPartitionReassignments,
	})
	register(apiEntry{
		key:           46,
		advertisedMin: 0, min: 0, max: 0,
		concurrent: true, // a read of the controller's image
		handle:     handleListPartitionReassignments,
	})
}

func (s *Server) reassignmentAdmin() (ReassignmentAdmin, bool) {
	ra, ok := s.deps.Admin.(ReassignmentAdmin)
	return ra, ok
}

func handleAlterPartitionReassignments(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	fail := func(code int16, msg *string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if !rc.authorizeCluster(opAlter) {
		// ControllerApis: ALTER on the cluster.
		return fail(kerr.ClusterAuthorizationFailed.Code, nil)
	}
	ra, ok := rc.conn.srv.reassignmentAdmin()
	if !ok {
		return fail(adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker"))
	}
	fwd := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	fwd.TimeoutMillis, fwd.Topics = req.TimeoutMillis, req.Topics
	// The controller is asked at v1; a v0 request had no way to forbid a
	// replication factor change.
	fwd.AllowReplicationFactorChange = req.Version < 1 || req.AllowReplicationFactorChange
	cctx, cancel := forwardContext(ctx, req.TimeoutMillis)
	defer cancel()
	cresp, err := ra.AlterPartitionReassignments(cctx, fwd)
	if err != nil {
		return fail(forwardFailure(err))
	}
	clearTags(&cresp.UnknownTags)
	cresp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	return cresp, nil
}

func handleListPartitionReassignments(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !rc.authorizeCluster(opDescribe) {
		// ControllerApis: DESCRIBE on the cluster.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	ra, ok := rc.conn.srv.reassignmentAdmin()
	if !ok {
		resp.ErrorCode, resp.ErrorMessage = adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker")
		return resp, nil
	}
	fwd := kmsg.NewPtrListPartitionReassignmentsRequest()
	fwd.TimeoutMillis, fwd.Topics = req.TimeoutMillis, req.Topics
	cctx, cancel := forwardContext(ctx, req.TimeoutMillis)
	defer cancel()
	cresp, err := ra.ListPartitionReassignments(cctx, fwd)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = forwardFailure(err)
		return resp, nil
	}
	clearTags(&cresp.UnknownTags)
	return cresp, nil
}
