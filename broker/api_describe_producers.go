package broker

// DescribeProducers (key 61): v0, as Kafka 4.1.
//
// Behaviour (Kafka's ReplicaManager.activeProducerState): each partition is
// answered by its leader from the partition log's producer state: every
// producer's id, epoch, last sequence, last timestamp, coordinator epoch
// of its last marker and the first offset of its open transaction (-1
// when none). UNKNOWN_TOPIC_OR_PARTITION for a partition that does not
// exist, NOT_LEADER_OR_FOLLOWER on a broker that does not lead it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 61, advertisedMin: 0, min: 0, max: 0, concurrent: true, handle: handleDescribeProducers})
}

func handleDescribeProducers(_ context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	srv := rc.conn.srv
	img := srv.image()
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		ti, topicOK := img.Topic(t.Topic)
		readable := rc.authorize(opRead, resTopic, t.Topic) // KafkaApis: READ on the topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			if !readable {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if _, ok := ti.Partition(p); !topicOK || !ok {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if srv.deps.Replicas == nil {
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			part, err := srv.deps.Replicas.Partition(t.Topic, p)
			if err == nil {
				if leader, _ := part.Leader(); leader != srv.nodeID {
					err = kerr.NotLeaderForPartition
				}
			}
			if err != nil {
				rp.ErrorCode = errorCode(err)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			for _, ps := range part.Log().Producers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch, ap.LastSequence, ap.LastTimestamp = ps.ProducerID, int32(ps.Epoch), ps.LastSequence, ps.LastTimestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = ps.CoordinatorEpoch, ps.CurrentTxnFirstOffset
				rp.ActiveProducers = append(rp.ActiveProducers, ap)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
