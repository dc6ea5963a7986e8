package broker

// FindCoordinator (key 10): v0-v6, as Kafka 4.2.
//
// Behaviour:
//   - Group keys (type 0) map to a coordinator slot, a partition of
//     __consumer_offsets, with Kafka's hash (see broker/group); the answer is
//     the slot leader's endpoint on the listener the request came in on. The
//     first request creates __consumer_offsets through the controller with
//     offsets.topic.num.partitions and offsets.topic.replication.factor, as
//     Kafka does; while that cannot happen (fewer registered brokers than
//     the replication factor) or the slot has no live leader, the answer is
//     COORDINATOR_NOT_AVAILABLE, which clients retry.
//   - Transaction keys (type 1) map the same way to a slot of
//     __transaction_state (broker/txn), created on first use with
//     transaction.state.log.num.partitions, .replication.factor and
//     .min.isr; COORDINATOR_NOT_AVAILABLE while it cannot be. An empty
//     transactional id is INVALID_REQUEST, as in Kafka.
//   - Other key types (2, share groups) answer INVALID_REQUEST.
//
// Version notes: v1 adds the key type and error message; v3 is flexible;
// v4+ batches keys (Coordinators) and drops the top-level fields; v5/v6
// only add error codes clients may see.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 10, advertisedMin: 0, min: 0, max: 6, concurrent: true, handle: handleFindCoordinator})
}

func handleFindCoordinator(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		resp.Coordinators = append(resp.Coordinators, findCoordinator(ctx, rc, req.CoordinatorType, key))
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
		if req.Version >= 1 {
			resp.ErrorMessage = c.ErrorMessage
		}
	}
	return resp, nil
}

func findCoordinator(ctx context.Context, rc *request, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID = key, -1
	fail := func(err error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode = errorCode(err)
		if msg != "" {
			c.ErrorMessage = kmsg.StringPtr(msg)
		}
		return c
	}
	srv := rc.conn.srv
	var locate func(context.Context, string) (int32, error)
	switch {
	case keyType == 0 && !rc.authorize(opDescribe, resGroup, key):
		return fail(kerr.GroupAuthorizationFailed, "")
	case keyType == 1 && !rc.authorize(opDescribe, resTxnID, key):
		return fail(kerr.TransactionalIDAuthorizationFailed, "")
	case keyType == 1 && key == "":
		return fail(kerr.InvalidRequest, "the transactional id must not be empty")
	case keyType == 1 && (srv.deps.Txns == nil || srv.deps.Metadata == nil):
		return fail(kerr.CoordinatorNotAvailable, "")
	case keyType == 1:
		locate = srv.deps.Txns.Locate
	case keyType != 0:
		return fail(kerr.InvalidRequest, "unsupported coordinator key type")
	case srv.deps.Groups == nil || srv.deps.Metadata == nil:
		return fail(kerr.CoordinatorNotAvailable, "")
	default:
		locate = srv.deps.Groups.Locate
	}
	node, err := locate(ctx, key)
	if err != nil {
		return fail(err, "")
	}
	img, _ := srv.deps.Metadata.Current()
	b, ok := img.Broker(node)
	if !ok || b.Fenced {
		return fail(kerr.CoordinatorNotAvailable, "")
	}
	ep, ok := b.Endpoint(rc.conn.listener)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, "the coordinator has no endpoint on this listener")
	}
	c.NodeID, c.Host, c.Port = node, ep.Host, int32(ep.Port)
	return c
}
