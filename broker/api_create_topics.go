package broker

// CreateTopics (key 19): v2-v7, as Kafka 4.2 (v0 and v1 were removed in
// Kafka 4.0), forwarded to the active controller.
//
// Behaviour (Kafka's ControllerApis.createTopics and ReplicationControlManager):
//   - A name given more than once is answered once, INVALID_REQUEST
//     "Duplicate topic name.", and none of its entries is created;
//     __cluster_metadata is refused with INVALID_REQUEST.
//   - The rest go to the controller in one call: name rules and the '.'/'_'
//     collision check, config validation, replica assignments (then
//     NumPartitions and ReplicationFactor must be -1), and -1 for either
//     meaning num.partitions / default.replication.factor. Per-topic errors
//     come back with messages. ValidateOnly decides everything and commits
//     nothing.
//   - The call is bounded by TimeoutMillis; once it returns, this broker's
//     image has the new topics, so the client's next Metadata here sees
//     them. A call that fails as a whole answers every forwarded topic with
//     its code (REQUEST_TIMED_OUT for a deadline).
//   - TimeoutMillis 0 or less, with any topic to forward: nothing is
//     created and every entry of the request is REQUEST_TIMED_OUT with no
//     message, as Kafka's KRaft controller answers a request whose deadline
//     (now + TimeoutMillis) has passed (createTopicsTimedOut).
//
// Version notes:
//   - v1+: ErrorMessage.
//   - v5: flexible; NumPartitions, ReplicationFactor and the topic's full
//     effective config (every topic config with its value, source and
//     sensitivity, sorted by name, as Kafka's controller lists them) for
//     each created or validated topic; -1/-1 and no configs on error.
//   - v7: TopicID (zero for validate-only, as nothing was created).

import (
	"context"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           19,
		advertisedMin: 2, min: 2, max: 7,
		// A client that creates a topic and then produces to it on the same
		// connection must find it created.
		concurrent: false,
		handle:     handleCreateTopics,
	})
}

func handleCreateTopics(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	srv := rc.conn.srv

	count := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	results := make(map[string]kmsg.CreateTopicsResponseTopic, len(count))
	fwd := kmsg.NewPtrCreateTopicsRequest()
	fwd.TimeoutMillis, fwd.ValidateOnly = req.TimeoutMillis, req.ValidateOnly
	clusterCreate := rc.authorizeCluster(opCreate)
	mq := rc.mutationQuota() // controller_mutation_rate (quota.go)
	charged := map[string]int{}
	for _, t := range req.Topics {
		switch {
		case count[t.Topic] > 1:
			results[t.Topic] = createTopicError(t.Topic, kerr.InvalidRequest.Code, "Duplicate topic name.")
		case t.Topic == metadataTopic:
			results[t.Topic] = createTopicError(t.Topic, kerr.InvalidRequest.Code, "Creation of internal topic "+metadataTopic+" is prohibited.")
		case !clusterCreate && !rc.authorize(opCreate, resTopic, t.Topic):
			// CREATE on the cluster or on the topic (KafkaApis).
			results[t.Topic] = createTopicError(t.Topic, kerr.TopicAuthorizationFailed.Code, "Authorization failed.")
		case !mq.admit(createdPartitions(srv, t, req.ValidateOnly), req.Version >= 6):
			results[t.Topic] = createTopicError(t.Topic, kerr.ThrottlingQuotaExceeded.Code, kerr.ThrottlingQuotaExceeded.Description)
		default:
			charged[t.Topic] = createdPartitions(srv, t, req.ValidateOnly)
			fwd.Topics = append(fwd.Topics, t)
		}
	}

	if len(fwd.Topics) > 0 && req.TimeoutMillis <= 0 {
		for _, n := range charged {
			mq.refund(n) // nothing is created
		}
		return createTopicsTimedOut(req), nil
	}
	if len(fwd.Topics) > 0 {
		forwardCreateTopics(ctx, srv, fwd, results, rc.release)
		if !req.ValidateOnly {
			var created []string
			for _, t := range fwd.Topics {
				if results[t.Topic].ErrorCode == 0 {
					created = append(created, t.Topic)
				}
			}
			// So a produce sent as soon as this answer arrives finds
			// every new leader leading (replicas_serve.go).
			srv.awaitReplicasServe(ctx, created)
		}
	}
	for name, n := range charged {
		if results[name].ErrorCode != 0 {
			mq.refund(n) // not created: not a mutation
		}
	}

	var img *metadata.Image
	if srv.deps.Metadata != nil {
		img, _ = srv.deps.Metadata.Current()
	}
	requested := make(map[string]kmsg.CreateTopicsRequestTopic, len(req.Topics))
	for _, t := range req.Topics {
		requested[t.Topic] = t
	}
	answered := make(map[string]bool, len(count))
	for _, t := range req.Topics {
		if answered[t.Topic] {
			continue
		}
		answered[t.Topic] = true
		rt := results[t.Topic]
		if rt.ErrorCode == 0 && req.Version >= 5 && img != nil {
			// The configs are shown only with DESCRIBE_CONFIGS on the topic.
			if rc.authorize(opDescribeConfigs, resTopic, t.Topic) {
				rt.Configs = createdTopicConfigs(srv, img, requested[t.Topic])
			} else {
				rt.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	rc.throttleFor(ctx, mq.throttle(), resp)
	return resp, nil
}

// createTopicsTimedOut is Kafka's answer to a CreateTopics whose deadline
// has passed before the controller runs it: ControllerApis gives the
// controller a deadline of now + TimeoutMillis
// (ControllerRequestContext.requestTimeoutMsToDeadlineNs), so with 0 or
// less the QuorumController's event queue fails the createTopics event with
// a TimeoutException before it runs, nothing is created (validate-only or
// not), and ControllerApis answers with CreateTopicsRequest.getErrorResponse:
// every entry of the request, repeated names and __cluster_metadata
// included, REQUEST_TIMED_OUT with a null message. A request with nothing
// to forward never reaches the queue (QuorumController.createTopics
// completes an empty one at once), so its local answers stand.
func createTopicsTimedOut(req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, kerr.RequestTimedOut.Code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createdPartitions is what a topic costs the controller mutation quota:
// its partitions (the broker's num.partitions when the request leaves it
// to the default), nothing for validate_only.
func createdPartitions(srv *Server, t kmsg.CreateTopicsRequestTopic, validateOnly bool) int {
	switch {
	case validateOnly:
		return 0
	case t.NumPartitions > 0:
		return int(t.NumPartitions)
	case len(t.ReplicaAssignment) > 0:
		return len(t.ReplicaAssignment)
	case srv.config != nil:
		return int(srv.config.NumPartitions)
	}
	return 1
}

// committedCreator is a ControllerClient that can answer a CreateTopics
// once the controller has committed it, before this node serves the
// result; WaitServed then waits for that. *raftfsm.ControllerClient
// satisfies it.
type committedCreator interface {
	CreateTopicsCommitted(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, uint64, error)
	WaitServed(ctx context.Context, index uint64) error
}

// forwardCreateTopics sends the topics that passed the local checks to the
// controller and records its answer for each. It returns once this node
// serves the result; release is called as soon as the controller has
// committed it.
func forwardCreateTopics(ctx context.Context, srv *Server, fwd *kmsg.CreateTopicsRequest, results map[string]kmsg.CreateTopicsResponseTopic, release func()) {
	if srv.deps.Controller == nil {
		for _, t := range fwd.Topics {
			results[t.Topic] = createTopicError(t.Topic, adminUnreachable.Code, "no controller reachable from this broker")
		}
		return
	}
	cctx, cancel := forwardContext(ctx, fwd.TimeoutMillis)
	defer cancel()
	var cresp *kmsg.CreateTopicsResponse
	var err error
	if cc, ok := srv.deps.Controller.(committedCreator); ok {
		var index uint64
		cresp, index, err = cc.CreateTopicsCommitted(cctx, fwd)
		if err == nil {
			// The controller has committed: every side effect a later
			// request on this connection could be ordered against is
			// done, as when Kafka's controller answers. Let that request
			// start while this one waits for this node's replica manager
			// to open the new logs (and then for the other replicas):
			// kadm pipelines concurrent creations on one connection, and
			// they would otherwise open their logs one topic at a time.
			release()
			err = cc.WaitServed(cctx, index)
		}
	} else {
		cresp, err = srv.deps.Controller.CreateTopics(cctx, fwd)
	}
	if err != nil {
		code, msg := forwardFailure(err)
		for _, t := range fwd.Topics {
			rt := createTopicError(t.Topic, code, "")
			rt.ErrorMessage = msg
			results[t.Topic] = rt
		}
		return
	}
	for _, rt := range cresp.Topics {
		clearTags(&rt.UnknownTags)
		if rt.ErrorCode != 0 {
			rt.NumPartitions, rt.ReplicationFactor, rt.Configs = -1, -1, nil
		}
		results[rt.Topic] = rt
	}
	for _, t := range fwd.Topics {
		if _, ok := results[t.Topic]; !ok {
			// A controller that skips a topic is a bug there; the client
			// still gets an answer for every topic it asked for.
			results[t.Topic] = createTopicError(t.Topic, kerr.UnknownServerError.Code, "the controller did not answer for this topic")
		}
	}
}

// createdTopicConfigs is the v5+ config list of a created (or validated)
// topic: every topic config's effective value, the topic's own settings
// taken from the request, which for a created topic equal its image.
func createdTopicConfigs(srv *Server, img *metadata.Image, t kmsg.CreateTopicsRequestTopic) []kmsg.CreateTopicsResponseTopicConfig {
	src := srv.topicConfigSources(img, t.Topic)
	src.Topic = make(map[string]string, len(t.Configs))
	for _, c := range t.Configs {
		if c.Value != nil {
			src.Topic[c.Name] = *c.Value
		}
	}
	entries := metadata.EffectiveTopicConfigs(src)
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(entries))
	for _, e := range entries {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.Source = e.Name, kmsg.StringPtr(e.Value), int8(e.Source)
		out = append(out, c)
	}
	return out
}

func createTopicError(name string, code int16, msg string) kmsg.CreateTopicsResponseTopic {
	rt := kmsg.NewCreateTopicsResponseTopic()
	rt.Topic, rt.ErrorCode = name, code
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	if msg != "" {
		rt.ErrorMessage = kmsg.StringPtr(msg)
	}
	return rt
}
