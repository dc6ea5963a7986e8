package broker

// ConsumerGroupHeartbeat (key 68): v0-v1, as Kafka 4.1.
//
// Behaviour: KIP-848's consumer protocol. The coordinator (broker/group)
// runs the group's state machine (broker/group/consumergroup): member and
// group epochs, the server-side assignors, incremental reconciliation,
// static membership, leave with epoch -1/-2, fencing. A heartbeat that
// changes the group is answered once the change is in the Raft image, so a
// coordinator that takes the slot over resumes without a rebalance; one
// that changes nothing writes nothing. An empty classic group becomes a
// consumer group; a classic group with members becomes one too (KIP-848's
// online upgrade, broker/group/upgrade.go) unless
// group.consumer.migration.policy forbids it (GROUP_ID_NOT_FOUND).
//
// Authorization: READ on the group; DESCRIBE on every subscribed topic
// name (TOPIC_AUTHORIZATION_FAILED otherwise), and a regex takes only the
// topics the member may DESCRIBE, as Kafka 4.1 (KAFKA-18813).
//
// Version notes: v1 member ids chosen by the client (KIP-1082) and
// SubscribedTopicRegex.

import (
	"context"

	"github.com/raftka/raftka/broker/group/consumergroup"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 68, advertisedMin: 0, min: 0, max: 1, handle: handleConsumerGroupHeartbeat})
}

// ConsumerGroups is what keys 68 and 69 and the consumer-protocol checks of
// OffsetCommit and OffsetFetch need of the group coordinator.
type ConsumerGroups interface {
	ConsumerHeartbeat(ctx context.Context, groupID string, r consumergroup.HeartbeatRequest) (consumergroup.HeartbeatResponse, error)
	ConsumerDescribe(ctx context.Context, groupID string, version int16) (kmsg.ConsumerGroupDescribeResponseGroup, error)
	ValidateFetch(ctx context.Context, groupID, memberID string, memberEpoch int32) error
}

func consumerGroupsOf(rc *request) ConsumerGroups {
	cg, _ := groupsOf(rc).(ConsumerGroups)
	return cg
}

func handleConsumerGroupHeartbeat(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	fail := func(err *kerr.Error, msg string) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode, resp.MemberEpoch = err.Code, -1
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp, nil
	}
	groups := consumerGroupsOf(rc)
	switch {
	case !rc.authorize(opRead, resGroup, req.Group):
		return fail(kerr.GroupAuthorizationFailed, "")
	case groups == nil:
		return fail(kerr.CoordinatorNotAvailable, "")
	case req.Group == "":
		// Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
		return fail(kerr.InvalidRequest, "GroupId can't be empty.")
	case isShareGroup(rc, req.Group):
		// A group id is one kind at a time; Kafka's consumerGroup lookup
		// answers GROUP_ID_NOT_FOUND for a share group's id.
		return fail(kerr.GroupIDNotFound, "Group "+req.Group+" is not a consumer group.")
	}
	// Kafka 4.1 (KAFKA-18813): every subscribed topic name must be
	// describable, and a regex takes only the topics the member may
	// describe (checked by the coordinator whenever it resolves it).
	for _, n := range req.SubscribedTopicNames {
		if !rc.authorize(opDescribe, resTopic, n) {
			return fail(kerr.TopicAuthorizationFailed, "")
		}
	}
	hr := consumergroup.FromKmsg(req, rc.clientID, clientHost(rc))
	hr.Version = req.Version
	hr.Describable = rc.topicDescribable()
	resp, err := groups.ConsumerHeartbeat(ctx, req.Group, hr)
	if err != nil {
		return fail(kerrOf(err), "")
	}
	return resp.Kmsg(req.Version), nil
}

// topicDescribable is the request principal's Topic:DESCRIBE check, for
// use after the request is answered (it holds the authorizer, principal
// and host, not the request); nil without an authorizer.
func (r *request) topicDescribable() func(topic string) bool {
	a := r.conn.srv.authorizer
	if a == nil {
		return nil
	}
	principal, host, srv := r.conn.principal, r.conn.host, r.conn.srv
	return func(topic string) bool {
		img := metadata.NewImage()
		if m := srv.deps.Metadata; m != nil {
			img, _ = m.Current()
		}
		return a.Authorize(img, principal, host, opDescribe, resTopic, topic)
	}
}

// kerrOf is err's Kafka error, COORDINATOR_NOT_AVAILABLE for one that
// names none.
func kerrOf(err error) *kerr.Error {
	if ke, ok := kerr.ErrorForCode(errorCode(err)).(*kerr.Error); ok {
		return ke
	}
	return kerr.CoordinatorNotAvailable
}
