package broker

// ConsumerGroupDescribe (key 69): v0-v1, as Kafka 4.1.
//
// Behaviour: each group's epoch, assignment epoch, state (Empty,
// Assigning, Reconciling, Stable), preferred server assignor and members
// with their subscriptions, current and target assignments, from the
// coordinator's live state. A classic group, or one nobody knows, is
// GROUP_ID_NOT_FOUND. DESCRIBE on the group, as KafkaApis; a group whose
// members' current or target assignments name a topic the client may not
// DESCRIBE is TOPIC_AUTHORIZATION_FAILED with no members (Kafka 4.1,
// KAFKA-18813).
//
// Version notes: v1 MemberType (1: consumer protocol, 0: a classic member
// in the consumer group, KIP-848's upgrade path).

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 69, advertisedMin: 0, min: 0, max: 1, concurrent: true, handle: handleConsumerGroupDescribe})
}

func handleConsumerGroupDescribe(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	resp.Groups = make([]kmsg.ConsumerGroupDescribeResponseGroup, len(req.Groups))
	var wg sync.WaitGroup
	for i, id := range req.Groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp.Groups[i] = describeConsumerGroup(ctx, rc, req, id)
		}()
	}
	wg.Wait()
	return resp, nil
}

func describeConsumerGroup(ctx context.Context, rc *request, req *kmsg.ConsumerGroupDescribeRequest, id string) kmsg.ConsumerGroupDescribeResponseGroup {
	fail := func(err *kerr.Error) kmsg.ConsumerGroupDescribeResponseGroup {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group, g.ErrorCode, g.AuthorizedOperations = id, err.Code, authorizedOpsUnset
		return g
	}
	groups := consumerGroupsOf(rc)
	switch {
	case !rc.authorize(opDescribe, resGroup, id):
		return fail(kerr.GroupAuthorizationFailed)
	case groups == nil:
		return fail(kerr.CoordinatorNotAvailable)
	case id == "":
		return fail(kerr.InvalidGroupID)
	}
	d, err := groups.ConsumerDescribe(ctx, id, req.Version)
	if err != nil {
		return fail(kerrOf(err))
	}
	d.AuthorizedOperations = authorizedOpsUnset
	if d.ErrorCode == 0 && !assignmentsDescribable(rc, &d) {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group, g.ErrorCode, g.AuthorizedOperations = id, kerr.TopicAuthorizationFailed.Code, authorizedOpsUnset
		g.ErrorMessage = kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
		g.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
		return g
	}
	if req.IncludeAuthorizedOperations && d.ErrorCode == 0 {
		d.AuthorizedOperations = rc.authorizedOps(resGroup, id)
	}
	return d
}

// assignmentsDescribable reports whether the client may DESCRIBE every
// topic of the group's members' current and target assignments.
func assignmentsDescribable(rc *request, d *kmsg.ConsumerGroupDescribeResponseGroup) bool {
	if rc.conn.srv.authorizer == nil {
		return true
	}
	seen := map[string]bool{}
	for _, m := range d.Members {
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				ok, done := seen[tp.Topic]
				if !done {
					ok = rc.authorize(opDescribe, resTopic, tp.Topic)
					seen[tp.Topic] = ok
				}
				if !ok {
					return false
				}
			}
		}
	}
	return true
}
