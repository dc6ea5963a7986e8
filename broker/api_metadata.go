package broker

// Metadata (key 3): v0-v13, as Kafka 4.2, answered from one metadata image.
//
// Behaviour (Kafka's KafkaApis.handleTopicMetadataRequest and
// KRaftMetadataCache, KRaft mode):
//   - Brokers: every unfenced broker with an endpoint on the listener the
//     request came in on (brokers in controlled shutdown included).
//   - ControllerID: KRaft clients cannot reach the Raft quorum, so like Kafka
//     we name a live broker, which forwards admin requests: ourselves when we
//     are live, else the lowest live broker id, else -1.
//   - Topics: all (null list, or an empty list at v0), or those asked for by
//     name or, v12+, by id. Duplicates are answered once. An unknown id is
//     UNKNOWN_TOPIC_ID. An unknown name that is not a valid topic name is
//     INVALID_TOPIC_EXCEPTION. A valid unknown name is UNKNOWN_TOPIC_OR_PARTITION
//     with no partitions, answered at once; when the request allows it
//     (always below v4) and auto.create.topics.enable is on, the topic is
//     also created in the background through the controller with the
//     cluster's default partitions and replication factor, and the client's
//     retry finds it. This is Kafka's KRaft AutoTopicCreationManager: it
//     sends CreateTopics to the controller without waiting and answers
//     UNKNOWN_TOPIC_OR_PARTITION (LEADER_NOT_AVAILABLE was the ZooKeeper-mode
//     answer; KAFKA-20089 kept the KRaft code), keeps one creation in flight
//     per name, and only logs the controller's answer. Not waiting matters:
//     a client that deletes a topic and reads its partitions through an old
//     Metadata version (which always allows creation) must see none.
//   - Partitions: leader, leader epoch, replicas, ISR, offline replicas. A
//     leader that is not a live broker with this listener answers
//     LEADER_NOT_AVAILABLE with leader -1 (LISTENER_NOT_FOUND from v6 when
//     the leader is live but lacks the listener).
//
// Version notes:
//   - v0: replicas and ISR list only live brokers, REPLICA_NOT_AVAILABLE
//     when some were left out; an empty topic list means all topics.
//   - v1: IsInternal, Rack, ControllerID; a null topic list means all.
//   - v2: ClusterID. v3: ThrottleMillis (0). v4: AllowAutoTopicCreation.
//   - v5: OfflineReplicas. v7: LeaderEpoch.
//   - v8-v10: IncludeClusterAuthorizedOperations; v8+:
//     IncludeTopicAuthorizedOperations. Without an authorizer every
//     operation is allowed, so a requested set is all operations that apply.
//   - v9: flexible. v10: topic ids in the answer. v12: topics by id in the
//     request (a null name or an id below v12 is INVALID_REQUEST for that
//     topic).

import (
	"context"
	"slices"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           3,
		advertisedMin: 0, min: 0, max: 13,
		// Reading an image has no ordered side effects; auto creation is
		// idempotent and may take a while, so it must not hold the
		// connection.
		concurrent: true,
		handle:     handleMetadata,
	})
}

// autoCreateTimeout bounds one background creation (Kafka sends it with
// request.timeout.ms, 30 s by default).
const autoCreateTimeout = 30 * time.Second

// internalTopics are Kafka's internal topics, flagged IsInternal.
var internalTopics = map[string]bool{"__consumer_offsets": true, "__transaction_state": true}

func handleMetadata(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	srv := rc.conn.srv
	if srv.deps.Metadata == nil {
		// No metadata yet (a node still starting): no brokers, and every
		// topic unknown, which clients retry.
		for _, t := range req.Topics {
			resp.Topics = append(resp.Topics, topicError(t.Topic, t.TopicID, kerr.UnknownTopicOrPartition.Code))
		}
		return resp, nil
	}
	img, _ := srv.deps.Metadata.Current()
	if namesUnknown(img, req.Topics) {
		// Another broker may have created it a moment ago (CreateTopics
		// answers once the controller commits); if this node's Raft log
		// already holds the entry, answer from it rather than send the
		// client into a retry backoff on UNKNOWN_TOPIC_OR_PARTITION.
		wctx, cancel := context.WithTimeout(ctx, catchUpWait)
		if srv.deps.Metadata.CatchUp(wctx) {
			img, _ = srv.deps.Metadata.Current()
		}
		cancel()
	}
	img = srv.awaitLostLeaders(ctx, img, req.Topics)
	listener := rc.conn.listener

	resp.ClusterID = kmsg.StringPtr(img.ClusterID())
	resp.ControllerID = -1
	live := make(map[int32]bool)
	for _, b := range img.Brokers() {
		if b.Fenced {
			continue
		}
		ep, ok := b.Endpoint(listener)
		if !ok {
			continue
		}
		live[b.ID] = true
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = b.ID, ep.Host, int32(ep.Port)
		if b.Rack != "" {
			mb.Rack = kmsg.StringPtr(b.Rack)
		}
		resp.Brokers = append(resp.Brokers, mb)
		if resp.ControllerID == -1 || b.ID < resp.ControllerID {
			resp.ControllerID = b.ID
		}
	}
	if live[srv.nodeID] {
		resp.ControllerID = srv.nodeID
	}
	slices.SortFunc(resp.Brokers, func(a, b kmsg.MetadataResponseBroker) int { return int(a.NodeID) - int(b.NodeID) })
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = 0
		if rc.authorizeCluster(opDescribe) {
			resp.AuthorizedOperations = rc.authorizedOps(resCluster, metadata.ClusterResourceName)
		}
	}

	pv := partitionView{img: img, listener: listener, live: live, version: req.Version}
	answer := func(t metadata.TopicImage) {
		mt := pv.topic(t, req.IncludeTopicAuthorizedOperations)
		if req.IncludeTopicAuthorizedOperations && req.Version >= 8 {
			mt.AuthorizedOperations = rc.authorizedOps(resTopic, t.Name)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	// A topic the principal may not DESCRIBE is left out of a listing of
	// all topics and answered TOPIC_AUTHORIZATION_FAILED when named, before
	// its existence is looked at, as KafkaApis does.
	describable := func(name string) bool { return rc.authorize(opDescribe, resTopic, name) }

	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, t := range img.Topics() {
			if describable(t.Name) {
				answer(t)
			}
		}
		slices.SortFunc(resp.Topics, func(a, b kmsg.MetadataResponseTopic) int {
			switch {
			case *a.Topic < *b.Topic:
				return -1
			case *a.Topic > *b.Topic:
				return 1
			}
			return 0
		})
		return resp, nil
	}

	allowCreate := srv.autoCreate && (req.Version < 4 || req.AllowAutoTopicCreation)
	var missing []string
	seenNames, seenIDs := make(map[string]bool), make(map[[16]byte]bool)
	for _, rt := range req.Topics {
		switch {
		case rt.TopicID != [16]byte{}:
			if req.Version < 12 {
				resp.Topics = append(resp.Topics, topicError(rt.Topic, rt.TopicID, kerr.InvalidRequest.Code))
				continue
			}
			if seenIDs[rt.TopicID] {
				continue
			}
			seenIDs[rt.TopicID] = true
			if t, ok := img.TopicByID(rt.TopicID); ok && !describable(t.Name) {
				// Topic ids are not secret (KafkaApis): the id comes back.
				resp.Topics = append(resp.Topics, topicError(nil, rt.TopicID, kerr.TopicAuthorizationFailed.Code))
			} else if ok {
				answer(t)
			} else {
				resp.Topics = append(resp.Topics, topicError(nil, rt.TopicID, kerr.UnknownTopicID.Code))
			}
		case rt.Topic == nil:
			resp.Topics = append(resp.Topics, topicError(nil, rt.TopicID, kerr.InvalidRequest.Code))
		default:
			name := *rt.Topic
			if seenNames[name] {
				continue
			}
			seenNames[name] = true
			if !describable(name) {
				resp.Topics = append(resp.Topics, topicError(rt.Topic, [16]byte{}, kerr.TopicAuthorizationFailed.Code))
				continue
			}
			if t, ok := img.Topic(name); ok {
				answer(t)
				continue
			}
			switch {
			case metadata.ValidateTopicName(name) != nil:
				resp.Topics = append(resp.Topics, topicError(rt.Topic, [16]byte{}, kerr.InvalidTopicException.Code))
			case allowCreate && !internalTopics[name] && !rc.authorizeCluster(opCreate) && !rc.authorize(opCreate, resTopic, name):
				// Auto-creation needs CREATE on the cluster or the topic.
				resp.Topics = append(resp.Topics, topicError(rt.Topic, [16]byte{}, kerr.TopicAuthorizationFailed.Code))
			default:
				resp.Topics = append(resp.Topics, topicError(rt.Topic, [16]byte{}, kerr.UnknownTopicOrPartition.Code))
				if allowCreate && !internalTopics[name] {
					missing = append(missing, name)
				}
			}
		}
	}
	if len(missing) > 0 {
		srv.autoCreateTopics(missing)
	}
	return resp, nil
}

// namesUnknown reports whether topics names a topic (by name or id) that img
// does not hold.
func namesUnknown(img *metadata.Image, topics []kmsg.MetadataRequestTopic) bool {
	for _, t := range topics {
		var ok bool
		switch {
		case t.TopicID != [16]byte{}:
			_, ok = img.TopicByID(t.TopicID)
		case t.Topic != nil:
			_, ok = img.Topic(*t.Topic)
		default:
			ok = true
		}
		if !ok {
			return true
		}
	}
	return false
}

// autoCreateTopics asks the controller, in the background, for the topics
// not already being created here, with the cluster defaults. The answer is
// only logged: clients learn of the topic from their next Metadata request.
func (s *Server) autoCreateTopics(names []string) {
	if s.deps.Controller == nil {
		return
	}
	s.autoMu.Lock()
	if s.autoInflight == nil {
		s.autoInflight = make(map[string]bool)
	}
	todo := names[:0:0]
	for _, n := range names {
		if !s.autoInflight[n] {
			s.autoInflight[n] = true
			todo = append(todo, n)
		}
	}
	s.autoMu.Unlock()
	if len(todo) == 0 {
		return
	}
	done := func() {
		s.autoMu.Lock()
		for _, n := range todo {
			delete(s.autoInflight, n)
		}
		s.autoMu.Unlock()
	}
	if !s.track() {
		done()
		return
	}
	go func() {
		defer s.wg.Done()
		defer done()
		s.createInBackground(todo)
	}()
}

func (s *Server) createInBackground(names []string) {
	ctx, cancel := context.WithTimeout(s.ctx, autoCreateTimeout)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(autoCreateTimeout / time.Millisecond)
	for _, n := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = n
		t.NumPartitions, t.ReplicationFactor = -1, -1 // the controller's defaults
		req.Topics = append(req.Topics, t)
	}
	resp, err := s.deps.Controller.CreateTopics(ctx, req)
	if err != nil {
		s.log.Debug().Err(err).Strs("topics", names).Msg("auto topic creation did not finish")
		return
	}
	for _, t := range resp.Topics {
		switch t.ErrorCode {
		case 0, kerr.TopicAlreadyExists.Code:
		default:
			s.log.Warn().Str("topic", t.Topic).Int16("error", t.ErrorCode).Msg("auto topic creation failed")
		}
	}
}

func topicError(name *string, id [16]byte, code int16) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic, t.TopicID, t.ErrorCode = name, id, code
	if name != nil {
		t.IsInternal = internalTopics[*name]
	}
	return t
}

// partitionView answers topics from one image for one listener.
type partitionView struct {
	img      *metadata.Image
	listener string
	live     map[int32]bool // unfenced brokers with an endpoint on listener
	version  int16
}

func (v partitionView) topic(t metadata.TopicImage, includeOps bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.Name)
	mt.TopicID = t.ID
	mt.IsInternal = internalTopics[t.Name]
	if includeOps && v.version >= 8 {
		mt.AuthorizedOperations = topicOps
	}
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, len(t.Partitions))
	for _, p := range t.Partitions {
		mt.Partitions = append(mt.Partitions, v.partition(p))
	}
	return mt
}

func (v partitionView) partition(p metadata.PartitionRegistration) kmsg.MetadataResponseTopicPartition {
	mp := kmsg.NewMetadataResponseTopicPartition()
	mp.Partition = p.Partition
	mp.LeaderEpoch = p.LeaderEpoch
	mp.Replicas, mp.ISR = p.Replicas, p.ISR
	if v.version == 0 {
		mp.Replicas, mp.ISR = v.liveOnly(p.Replicas), v.liveOnly(p.ISR)
		if len(mp.Replicas) < len(p.Replicas) || len(mp.ISR) < len(p.ISR) {
			mp.ErrorCode = kerr.ReplicaNotAvailable.Code
		}
	}
	for _, r := range p.Replicas {
		if !v.live[r] {
			mp.OfflineReplicas = append(mp.OfflineReplicas, r)
		}
	}
	mp.Leader = p.Leader
	if !v.live[p.Leader] {
		mp.Leader = -1
		mp.ErrorCode = kerr.LeaderNotAvailable.Code
		if b, ok := v.img.Broker(p.Leader); ok && !b.Fenced && v.version >= 6 {
			if _, has := b.Endpoint(v.listener); !has {
				mp.ErrorCode = kerr.ListenerNotFound.Code
			}
		}
	}
	// Slices from the image are shared and must not be modified; kmsg only
	// reads them while encoding.
	if mp.Replicas == nil {
		mp.Replicas = []int32{}
	}
	if mp.ISR == nil {
		mp.ISR = []int32{}
	}
	return mp
}

func (v partitionView) liveOnly(ids []int32) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		if v.live[id] {
			out = append(out, id)
		}
	}
	return out
}
