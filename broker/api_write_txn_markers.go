package broker

// WriteTxnMarkers (key 27): v1, as Kafka 4.1 (v0 was removed in 4.0,
// KIP-896).
//
// Behaviour (Kafka's KafkaApis.handleWriteTxnMarkersRequest): sent by a
// transaction coordinator to a partition leader. Each marker is appended
// as a COMMIT or ABORT control batch to each listed partition this broker
// leads, with acks=all, and answered per partition: 0 once replicated;
// NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION; INVALID_PRODUCER_EPOCH
// for an epoch older than the partition's; TRANSACTION_COORDINATOR_FENCED
// for a coordinator epoch older than the producer's last marker;
// NOT_ENOUGH_REPLICAS or REQUEST_TIMED_OUT when it cannot be replicated.
// Nothing is written for a refused marker. The coordinator retries every
// partition not answered 0.
//
// Version notes: v1 is flexible; v2 (Kafka 4.2, TransactionVersion) is not
// Kafka 4.1's.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 27, advertisedMin: 1, min: 1, max: 1, concurrent: true, handle: handleWriteTxnMarkers})
}

func handleWriteTxnMarkers(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.WriteTxnMarkersRequest)
	if !rc.authorizeCluster(opClusterAction) {
		// Only brokers write markers (KafkaApis: CLUSTER_ACTION).
		return writeMarkersRefused(req, kerr.ClusterAuthorizationFailed.Code), nil
	}
	return writeMarkersLocal(ctx, rc.conn.srv.deps.Replicas, req), nil
}

// writeMarkersRefused answers every partition of every marker with code.
func writeMarkersRefused(req *kmsg.WriteTxnMarkersRequest, code int16) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, mk := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = mk.ProducerID
		for _, t := range mk.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}
