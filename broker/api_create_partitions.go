package broker

// CreatePartitions (key 37): v0-v3, as Kafka 4.2, forwarded to the active
// controller.
//
// Behaviour (Kafka's ControllerApis.createPartitions and
// ReplicationControlManager.createPartitions):
//   - A topic named more than once is answered once, INVALID_REQUEST
//     "Duplicate topic name.", and not changed.
//   - The rest go to the controller in one call, bounded by TimeoutMillis:
//     Count is the new total and must exceed the current one
//     (INVALID_PARTITIONS otherwise); an Assignment, when given, lists the
//     replicas of each new partition and must match the topic's
//     replication factor and name registered brokers
//     (INVALID_REPLICA_ASSIGNMENT); an unknown topic is
//     UNKNOWN_TOPIC_OR_PARTITION. ValidateOnly decides and commits nothing.
//   - Once the call returns this broker's image has the new partitions.
//
// Version notes: v1 is v0 (throttle behaviour only); v2 is flexible; v3 is
// v2 (KIP-951 leader discovery does not apply here).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           37,
		advertisedMin: 0, min: 0, max: 3,
		concurrent: false, // a produce to a new partition must find it
		handle:     handleCreatePartitions,
	})
}

func handleCreatePartitions(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	srv := rc.conn.srv

	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	results := map[string]kmsg.CreatePartitionsResponseTopic{}
	img := rc.authImage()
	mq := rc.mutationQuota() // controller_mutation_rate (quota.go)
	charged := map[string]int{}
	fwd := kmsg.NewPtrCreatePartitionsRequest()
	fwd.TimeoutMillis, fwd.ValidateOnly = req.TimeoutMillis, req.ValidateOnly
	for _, t := range req.Topics {
		if count[t.Topic] > 1 {
			results[t.Topic] = createPartitionsError(t.Topic, kerr.InvalidRequest.Code, kmsg.StringPtr("Duplicate topic name."))
			continue
		}
		if !rc.authorize(opAlter, resTopic, t.Topic) {
			results[t.Topic] = createPartitionsError(t.Topic, kerr.TopicAuthorizationFailed.Code, nil)
			continue
		}
		added := 0
		if ti, ok := img.Topic(t.Topic); ok && !req.ValidateOnly {
			added = max(int(t.Count)-len(ti.Partitions), 0)
		}
		if !mq.admit(added, req.Version >= 3) {
			results[t.Topic] = createPartitionsError(t.Topic, kerr.ThrottlingQuotaExceeded.Code, kmsg.StringPtr(kerr.ThrottlingQuotaExceeded.Description))
			continue
		}
		charged[t.Topic] = added
		fwd.Topics = append(fwd.Topics, t)
	}

	if len(fwd.Topics) > 0 {
		switch {
		case srv.deps.Admin == nil:
			for _, t := range fwd.Topics {
				results[t.Topic] = createPartitionsError(t.Topic, adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker"))
			}
		default:
			cctx, cancel := forwardContext(ctx, req.TimeoutMillis)
			cresp, err := srv.deps.Admin.CreatePartitions(cctx, fwd)
			cancel()
			if err != nil {
				code, msg := forwardFailure(err)
				for _, t := range fwd.Topics {
					results[t.Topic] = createPartitionsError(t.Topic, code, msg)
				}
				break
			}
			for _, rt := range cresp.Topics {
				clearTags(&rt.UnknownTags)
				results[rt.Topic] = rt
			}
		}
	}

	for name, n := range charged {
		if results[name].ErrorCode != 0 {
			mq.refund(n)
		}
	}
	answered := map[string]bool{}
	for _, t := range req.Topics {
		if answered[t.Topic] {
			continue
		}
		answered[t.Topic] = true
		rt, ok := results[t.Topic]
		if !ok {
			rt = createPartitionsError(t.Topic, kerr.UnknownServerError.Code, kmsg.StringPtr("the controller did not answer for this topic"))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	rc.throttleFor(ctx, mq.throttle(), resp)
	return resp, nil
}

func createPartitionsError(name string, code int16, msg *string) kmsg.CreatePartitionsResponseTopic {
	rt := kmsg.NewCreatePartitionsResponseTopic()
	rt.Topic, rt.ErrorCode, rt.ErrorMessage = name, code, msg
	return rt
}
