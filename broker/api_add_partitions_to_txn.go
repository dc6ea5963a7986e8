package broker

// AddPartitionsToTxn (key 24): v0-v5, as Kafka 4.1.
//
// Behaviour (Kafka's KafkaApis.handleAddPartitionsToTxnRequest and
// TransactionCoordinator.handleAddPartitions):
//   - v0-v3 (clients): the partitions join the producer's transaction at
//     its coordinator (broker/txn AddPartitions), opening one if none is
//     open. Every partition gets the one answer: NOT_COORDINATOR,
//     INVALID_PRODUCER_ID_MAPPING (unknown id or another producer id),
//     PRODUCER_FENCED (an older epoch; INVALID_PRODUCER_EPOCH before v2),
//     CONCURRENT_TRANSACTIONS (the previous transaction is still ending),
//     or none. A partition of an unknown topic is
//     UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED,
//     with nothing added. Authorization first: WRITE on the transactional
//     id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition)
//     and on each topic (else TOPIC_AUTHORIZATION_FAILED, the others
//     OPERATION_NOT_ATTEMPTED).
//   - v4+ (brokers): a batch of transactions; VerifyOnly asks, per
//     partition, whether the producer's open transaction includes it
//     (KIP-890's produce verification: INVALID_TXN_STATE when not), with no
//     change; without VerifyOnly the partitions are added as for v0-v3.
//     The sender needs CLUSTER_ACTION (else the top-level
//     CLUSTER_AUTHORIZATION_FAILED) and WRITE on each topic.
//
// Version notes: v1 is v0; v2 answers PRODUCER_FENCED (KIP-588); v3 is
// flexible; v4 batches transactions and adds VerifyOnly (KIP-890); v5 may
// answer TRANSACTION_ABORTABLE, which belongs to transaction version 2
// and is not answered here.

import (
	"context"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 24, advertisedMin: 0, min: 0, max: 5, concurrent: true, handle: handleAddPartitionsToTxn})
}

// fencedCode answers PRODUCER_FENCED as INVALID_PRODUCER_EPOCH to a
// request version older than since, which predates the code (KIP-588).
func fencedCode(code int16, version, since int16) int16 {
	if code == kerr.ProducerFenced.Code && version < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

type txnTopic struct {
	topic      string
	partitions []int32
}

// addTxnPartitions adds (or verifies) one transaction's partitions and
// answers each with its code. A client's request (v0-v3) needs WRITE on the
// transactional id; every version needs WRITE on each topic, a partition of
// one without it TOPIC_AUTHORIZATION_FAILED and the others
// OPERATION_NOT_ATTEMPTED, as KafkaApis.handleAddPartitionsToTxnRequest.
func addTxnPartitions(ctx context.Context, rc *request, id string, pid int64, epoch int16, verify, client bool, topics []txnTopic) map[string][]int16 {
	out := make(map[string][]int16, len(topics))
	answer := func(code func(topic string, i int) int16) map[string][]int16 {
		for _, t := range topics {
			codes := make([]int16, len(t.partitions))
			for i := range codes {
				codes[i] = code(t.topic, i)
			}
			out[t.topic] = append(out[t.topic], codes...)
		}
		return out
	}
	if client && !rc.authorize(opWrite, resTxnID, id) {
		return answer(func(string, int) int16 { return kerr.TransactionalIDAuthorizationFailed.Code })
	}
	denied := map[string]bool{}
	for _, t := range topics {
		if !rc.authorize(opWrite, resTopic, t.topic) {
			denied[t.topic] = true
		}
	}
	if len(denied) > 0 {
		return answer(func(topic string, _ int) int16 {
			if denied[topic] {
				return kerr.TopicAuthorizationFailed.Code
			}
			return kerr.OperationNotAttempted.Code
		})
	}
	txns := txnsOf(rc)
	if txns == nil || rc.conn.srv.deps.Metadata == nil {
		return answer(func(string, int) int16 { return kerr.CoordinatorNotAvailable.Code })
	}
	img, _ := rc.conn.srv.deps.Metadata.Current()
	var parts []metadata.TopicPartition
	unknown := map[metadata.TopicPartition]bool{}
	for _, t := range topics {
		ti, ok := img.Topic(t.topic)
		for _, p := range t.partitions {
			tp := metadata.TopicPartition{Topic: t.topic, Partition: p}
			if _, pok := ti.Partition(p); !ok || !pok {
				unknown[tp] = true
			}
			parts = append(parts, tp)
		}
	}
	if len(unknown) > 0 && !verify {
		return answer(func(topic string, i int) int16 {
			for _, t := range topics {
				if t.topic == topic && unknown[metadata.TopicPartition{Topic: topic, Partition: t.partitions[i]}] {
					return kerr.UnknownTopicOrPartition.Code
				}
			}
			return kerr.OperationNotAttempted.Code
		})
	}
	if verify {
		codes, err := txns.Verify(ctx, id, pid, epoch, parts)
		if err != nil {
			code := errorCode(err)
			return answer(func(string, int) int16 { return code })
		}
		k := 0
		return answer(func(string, int) int16 { c := codes[k]; k++; return c })
	}
	code := errorCode(txns.AddPartitions(ctx, id, pid, epoch, parts))
	return answer(func(string, int) int16 { return code })
}

func handleAddPartitionsToTxn(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		topics := make([]txnTopic, len(req.Topics))
		for i, t := range req.Topics {
			topics[i] = txnTopic{t.Topic, t.Partitions}
		}
		codes := addTxnPartitions(ctx, rc, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, true, topics)
		for _, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition = p
				rp.ErrorCode = fencedCode(codes[t.Topic][0], req.Version, 2)
				codes[t.Topic] = codes[t.Topic][1:]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if !rc.authorizeCluster(opClusterAction) {
		// The v4+ form is a broker's (KIP-890 verification).
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	for _, tx := range req.Transactions {
		topics := make([]txnTopic, len(tx.Topics))
		for i, t := range tx.Topics {
			topics[i] = txnTopic{t.Topic, t.Partitions}
		}
		codes := addTxnPartitions(ctx, rc, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly, false, topics)
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for _, t := range tx.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codes[t.Topic][0]
				codes[t.Topic] = codes[t.Topic][1:]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return resp, nil
}
