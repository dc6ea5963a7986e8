package compat

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// noTxn is a transactional id no producer initialised; setup finds its
// coordinator first (creating __transaction_state), as clients do.
const noTxn = "conformance-absent-txn"

func addPartitionsToTxn(v int16) *kmsg.AddPartitionsToTxnRequest {
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.Version = v
	if v < 4 {
		r.TransactionalID, r.ProducerID, r.ProducerEpoch = noTxn, 1, 0
		t := kmsg.NewAddPartitionsToTxnRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0}
		r.Topics = append(r.Topics, t)
		return r
	}
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = noTxn, 1, 0, true
	t := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	t.Topic, t.Partitions = topic, []int32{0}
	tx.Topics = append(tx.Topics, t)
	r.Transactions = append(r.Transactions, tx)
	return r
}

func addPartitionsCode(r *kmsg.AddPartitionsToTxnResponse) (int16, error) {
	if len(r.Transactions) == 1 && len(r.Transactions[0].Topics) == 1 && len(r.Transactions[0].Topics[0].Partitions) == 1 {
		return r.Transactions[0].Topics[0].Partitions[0].ErrorCode, nil
	}
	if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
		return r.Topics[0].Partitions[0].ErrorCode, nil
	}
	return 0, fmt.Errorf("answer shape %+v", r)
}

func txnOffsetCommit(v int16) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version, r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = v, noTxn, noGroup, 1, 0
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = noTopic
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = 0, 1
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func txnRows() []row {
	return []row{
		// AddPartitionsToTxn (24).
		{24, lowest, "unknown transactional id", "TransactionCoordinator.handleAddPartitions: no metadata for the id is INVALID_PRODUCER_ID_MAPPING",
			func(v int16, e *env) kmsg.Request { return addPartitionsToTxn(v) },
			func(r kmsg.Response, _ *env) error {
				code, err := addPartitionsCode(r.(*kmsg.AddPartitionsToTxnResponse))
				if err != nil {
					return err
				}
				return want("partition", code, kerr.InvalidProducerIDMapping.Code)
			}},
		{24, highest, "verify-only for an unknown id", "TransactionCoordinator.handleVerifyPartitionsInTransaction (KIP-890): no metadata for the id is INVALID_PRODUCER_ID_MAPPING per partition",
			func(v int16, e *env) kmsg.Request { return addPartitionsToTxn(v) },
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.AddPartitionsToTxnResponse)
				if err := want("top level", resp.ErrorCode, 0); err != nil {
					return err
				}
				code, err := addPartitionsCode(resp)
				if err != nil {
					return err
				}
				return want("partition", code, kerr.InvalidProducerIDMapping.Code)
			}},
		// AddOffsetsToTxn (25).
		{25, lowest, "unknown transactional id", "TransactionCoordinator.handleAddPartitions (the group's offsets partition): INVALID_PRODUCER_ID_MAPPING",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrAddOffsetsToTxnRequest()
				r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = v, noTxn, 1, 0, noGroup
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("error", r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode, kerr.InvalidProducerIDMapping.Code)
			}},
		{25, highest, "empty group id", "KafkaApis.handleAddOffsetsToTxnRequest: the group's coordinator partition needs a group id; an empty one is INVALID_GROUP_ID",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrAddOffsetsToTxnRequest()
				r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch = v, noTxn, 1, 0
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("error", r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode, kerr.InvalidGroupID.Code)
			}},
		// EndTxn (26).
		{26, lowest, "unknown transactional id", "TransactionCoordinator.handleEndTransaction: no metadata for the id is INVALID_PRODUCER_ID_MAPPING",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrEndTxnRequest()
				r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = v, noTxn, 1, 0, true
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("error", r.(*kmsg.EndTxnResponse).ErrorCode, kerr.InvalidProducerIDMapping.Code)
			}},
		{26, highest, "unknown transactional id", "TransactionCoordinator.handleEndTransaction, as at the lowest version",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrEndTxnRequest()
				r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch = v, noTxn, 1, 0
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("error", r.(*kmsg.EndTxnResponse).ErrorCode, kerr.InvalidProducerIDMapping.Code)
			}},
		// WriteTxnMarkers (27): v1 only.
		{27, lowest, "marker for an unknown partition", "KafkaApis.handleWriteTxnMarkersRequest: a partition this broker does not host is UNKNOWN_TOPIC_OR_PARTITION, nothing written",
			func(v int16, e *env) kmsg.Request { return writeTxnMarkers(v, noTopic) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{27, highest, "abort marker for a producer the partition never saw", "KafkaApis.handleWriteTxnMarkersRequest: a marker is appended even with no open transaction (UnifiedLog.appendAsLeader of a control batch)",
			func(v int16, e *env) kmsg.Request { return writeTxnMarkers(v, topic) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode, 0)
			}},
		// TxnOffsetCommit (28).
		{28, lowest, "unknown topic", "KafkaApis.handleTxnOffsetCommitRequest: a partition the metadata cache lacks is UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request { return txnOffsetCommit(v) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{28, highest, "unknown topic", "KafkaApis.handleTxnOffsetCommitRequest, as at the lowest version",
			func(v int16, e *env) kmsg.Request { return txnOffsetCommit(v) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		// DescribeProducers (61): v0 only.
		{61, lowest, "unknown partition", "ReplicaManager.activeProducerState via getPartitionOrError: UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request { return describeProducers(v, 5) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{61, highest, "the leader's producers", "ReplicaManager.activeProducerState: the leader answers its producer state, no error",
			func(v int16, e *env) kmsg.Request { return describeProducers(v, 0) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode, 0)
			}},
		// DescribeTransactions (65): v0 only.
		{65, lowest, "unknown transactional id", "TransactionCoordinator.handleDescribeTransactions: TRANSACTIONAL_ID_NOT_FOUND",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrDescribeTransactionsRequest()
				r.Version, r.TransactionalIDs = v, []string{noTxn}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("transaction", r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode, kerr.TransactionalIDNotFound.Code)
			}},
		{65, highest, "unknown transactional id", "TransactionCoordinator.handleDescribeTransactions, as at the lowest version",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrDescribeTransactionsRequest()
				r.Version, r.TransactionalIDs = v, []string{noTxn}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("transaction", r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode, kerr.TransactionalIDNotFound.Code)
			}},
		// ListTransactions (66).
		{66, lowest, "unknown state filter", "TransactionStateManager.listTransactionStates: a state name it does not know is listed in UnknownStateFilters, no error",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrListTransactionsRequest()
				r.Version, r.StateFilters = v, []string{"NoSuchState"}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.ListTransactionsResponse)
				if len(resp.UnknownStateFilters) != 1 || resp.UnknownStateFilters[0] != "NoSuchState" {
					return fmt.Errorf("UnknownStateFilters %v", resp.UnknownStateFilters)
				}
				return want("error", resp.ErrorCode, 0)
			}},
		{66, highest, "invalid id pattern", "TransactionStateManager.listTransactionStates (KIP-1152): a TransactionalIdPattern that does not compile is INVALID_REGULAR_EXPRESSION",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrListTransactionsRequest()
				r.Version, r.TransactionalIDPattern = v, kmsg.StringPtr("(")
				return r
			},
			func(r kmsg.Response, _ *env) error {
				return want("error", r.(*kmsg.ListTransactionsResponse).ErrorCode, kerr.InvalidRegularExpression.Code)
			}},
	}
}

func writeTxnMarkers(v int16, name string) *kmsg.WriteTxnMarkersRequest {
	r := kmsg.NewPtrWriteTxnMarkersRequest()
	r.Version = v
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 424242, 0, false, 0
	t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	t.Topic, t.Partitions = name, []int32{0}
	m.Topics = append(m.Topics, t)
	r.Markers = append(r.Markers, m)
	return r
}

func describeProducers(v int16, partition int32) *kmsg.DescribeProducersRequest {
	r := kmsg.NewPtrDescribeProducersRequest()
	r.Version = v
	t := kmsg.NewDescribeProducersRequestTopic()
	t.Topic, t.Partitions = topic, []int32{partition}
	r.Topics = append(r.Topics, t)
	return r
}
