package broker

import (
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// roundTrip sends req at version v on a raw connection and reads the
// answer, so a client library's routing (to the transaction coordinator)
// does not get in the way.
func (r *rawClient) roundTrip(req kmsg.Request, v int16) kmsg.Response {
	r.t.Helper()
	req.SetVersion(v)
	r.send(req, 1)
	resp := req.ResponseKind()
	resp.SetVersion(v)
	r.readResponse(resp)
	return resp
}

// rawAuthorizedServer is authorizedServer with a raw connection.
func rawAuthorizedServer(t *testing.T, acls ...metadata.Record) *rawClient {
	t.Helper()
	return dialRaw(t, authorizedAddr(t, acls...))
}

// The transaction APIs check what KafkaApis checks, before any
// coordinator work: WRITE on the transactional id, READ on the group and
// topics, CLUSTER_ACTION for the brokers' forms, DESCRIBE to describe.
// The principal here may WRITE transactional id "ok-tx" and nothing else.
func TestTransactionAPIsAuthorization(t *testing.T) {
	raw := rawAuthorizedServer(t,
		anonACL(1, metadata.ACLResourceTransactionalID, "ok-tx", metadata.ACLPatternLiteral, metadata.ACLOpWrite, metadata.ACLPermissionAllow))
	txnDenied, topicDenied := kerr.TransactionalIDAuthorizationFailed.Code, kerr.TopicAuthorizationFailed.Code

	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.ProducerID, ip.ProducerEpoch, ip.TransactionTimeoutMillis = kmsg.StringPtr("tx"), -1, -1, 60000
	if r := raw.roundTrip(ip, 5).(*kmsg.InitProducerIDResponse); r.ErrorCode != txnDenied {
		t.Errorf("InitProducerId: %d", r.ErrorCode)
	}

	for _, c := range []struct {
		id   string
		want int16
	}{{"tx", txnDenied}, {"ok-tx", topicDenied}} {
		ap := kmsg.NewPtrAddPartitionsToTxnRequest()
		ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = c.id, 1, 0
		at := kmsg.NewAddPartitionsToTxnRequestTopic()
		at.Topic, at.Partitions = "orders", []int32{0, 1}
		ap.Topics = append(ap.Topics, at)
		r := raw.roundTrip(ap, 3).(*kmsg.AddPartitionsToTxnResponse)
		for _, p := range r.Topics[0].Partitions {
			if p.ErrorCode != c.want {
				t.Errorf("AddPartitionsToTxn v3 %s partition %d: %d, want %d", c.id, p.Partition, p.ErrorCode, c.want)
			}
		}
	}
	ap4 := kmsg.NewPtrAddPartitionsToTxnRequest()
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.VerifyOnly = "ok-tx", true
	ap4.Transactions = append(ap4.Transactions, tx)
	if r := raw.roundTrip(ap4, 4).(*kmsg.AddPartitionsToTxnResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("AddPartitionsToTxn v4 without CLUSTER_ACTION: %d", r.ErrorCode)
	}

	for _, c := range []struct {
		id   string
		want int16
	}{{"tx", txnDenied}, {"ok-tx", kerr.GroupAuthorizationFailed.Code}} {
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.TransactionalID, ao.Group = c.id, "g"
		if r := raw.roundTrip(ao, 4).(*kmsg.AddOffsetsToTxnResponse); r.ErrorCode != c.want {
			t.Errorf("AddOffsetsToTxn %s: %d, want %d", c.id, r.ErrorCode, c.want)
		}
		oc := kmsg.NewPtrTxnOffsetCommitRequest()
		oc.TransactionalID, oc.Group, oc.Generation = c.id, "g", -1
		ot := kmsg.NewTxnOffsetCommitRequestTopic()
		ot.Topic = "orders"
		ot.Partitions = append(ot.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
		oc.Topics = append(oc.Topics, ot)
		if r := raw.roundTrip(oc, 5).(*kmsg.TxnOffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != c.want {
			t.Errorf("TxnOffsetCommit %s: %d, want %d", c.id, r.Topics[0].Partitions[0].ErrorCode, c.want)
		}
	}

	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID = "tx"
	if r := raw.roundTrip(et, 5).(*kmsg.EndTxnResponse); r.ErrorCode != txnDenied {
		t.Errorf("EndTxn: %d", r.ErrorCode)
	}

	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "orders", []int32{0}
	mk.Topics = append(mk.Topics, mt)
	wm.Markers = append(wm.Markers, mk)
	if r := raw.roundTrip(wm, 1).(*kmsg.WriteTxnMarkersResponse); r.Markers[0].Topics[0].Partitions[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("WriteTxnMarkers: %+v", r.Markers)
	}

	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"tx"}
	if r := raw.roundTrip(dt, 0).(*kmsg.DescribeTransactionsResponse); r.TransactionStates[0].ErrorCode != txnDenied {
		t.Errorf("DescribeTransactions: %d", r.TransactionStates[0].ErrorCode)
	}

	dp := kmsg.NewPtrDescribeProducersRequest()
	dpt := kmsg.NewDescribeProducersRequestTopic()
	dpt.Topic, dpt.Partitions = "orders", []int32{0}
	dp.Topics = append(dp.Topics, dpt)
	if r := raw.roundTrip(dp, 0).(*kmsg.DescribeProducersResponse); r.Topics[0].Partitions[0].ErrorCode != topicDenied {
		t.Errorf("DescribeProducers: %d", r.Topics[0].Partitions[0].ErrorCode)
	}
}

// Reassignment and UnregisterBroker need ALTER on the cluster, listing
// reassignments DESCRIBE (ControllerApis), checked before forwarding.
func TestReassignmentAPIsAuthorization(t *testing.T) {
	raw := rawAuthorizedServer(t)
	denied := kerr.ClusterAuthorizationFailed.Code

	ar := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	at.Topic = "orders"
	at.Partitions = append(at.Partitions, kmsg.NewAlterPartitionAssignmentsRequestTopicPartition())
	ar.Topics = append(ar.Topics, at)
	if r := raw.roundTrip(ar, 1).(*kmsg.AlterPartitionAssignmentsResponse); r.ErrorCode != denied || r.Topics[0].Partitions[0].ErrorCode != denied {
		t.Errorf("AlterPartitionReassignments: %+v", r)
	}
	if r := raw.roundTrip(kmsg.NewPtrListPartitionReassignmentsRequest(), 0).(*kmsg.ListPartitionReassignmentsResponse); r.ErrorCode != denied {
		t.Errorf("ListPartitionReassignments: %d", r.ErrorCode)
	}
	ub := kmsg.NewPtrUnregisterBrokerRequest()
	ub.BrokerID = 2
	if r := raw.roundTrip(ub, 0).(*kmsg.UnregisterBrokerResponse); r.ErrorCode != denied {
		t.Errorf("UnregisterBroker: %d", r.ErrorCode)
	}
}
