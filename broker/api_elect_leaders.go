package broker

// ElectLeaders (key 43): v0-v2, as Kafka 4.2, forwarded to the active
// controller (kafka-leader-election.sh, and the preferred-leader step of a
// rolling restart).
//
// Behaviour (Kafka's ControllerApis.electLeaders and
// ReplicationControlManager.electLeaders):
//   - PREFERRED (0) moves each partition's leadership to its first replica
//     when that replica is live and in the ISR; ELECTION_NOT_NEEDED when it
//     already leads, PREFERRED_LEADER_NOT_AVAILABLE when it cannot.
//   - UNCLEAN (1) elects a leader only for a partition without a live one,
//     from the ISR if possible, else from any live replica (the operator
//     asked for it, whatever the topic's unclean.leader.election.enable).
//   - A null topic list means every partition; then, as in Kafka, the
//     answer leaves out partitions that needed no election.
//   - An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION for that
//     partition. The call is bounded by TimeoutMillis; once it returns this
//     broker's image has the new leaders. A failed call answers every named
//     partition (or, at v1+, the request) with its code.
//
// Version notes: v0 has no ElectionType (always PREFERRED) and no
// top-level error; v1 adds both; v2 is flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           43,
		advertisedMin: 0, min: 0, max: 2,
		concurrent: false, // a Metadata after it must see the new leaders
		handle:     handleElectLeaders,
	})
}

func handleElectLeaders(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	srv := rc.conn.srv

	electionType := req.ElectionType
	if req.Version == 0 {
		electionType = 0
	}
	fail := func(code int16, msg *string) (kmsg.Response, error) {
		if req.Version >= 1 {
			resp.ErrorCode = code
		}
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if !rc.authorizeCluster(opAlter) {
		return fail(kerr.ClusterAuthorizationFailed.Code, nil)
	}
	if srv.deps.Admin == nil {
		return fail(adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker"))
	}
	fwd := kmsg.NewPtrElectLeadersRequest()
	fwd.ElectionType, fwd.Topics, fwd.TimeoutMillis = electionType, req.Topics, req.TimeoutMillis
	cctx, cancel := forwardContext(ctx, req.TimeoutMillis)
	defer cancel()
	cresp, err := srv.deps.Admin.ElectLeaders(cctx, fwd)
	if err != nil {
		return fail(forwardFailure(err))
	}
	clearTags(&cresp.UnknownTags)
	var moved []string
	for _, rt := range cresp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode == 0 {
				moved = append(moved, rt.Topic)
				break
			}
		}
	}
	// The new leaders lead before the client hears of them.
	srv.awaitReplicasServe(ctx, moved)
	if req.Version == 0 {
		cresp.ErrorCode = 0
	}
	return cresp, nil
}
