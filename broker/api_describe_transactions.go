package broker

// DescribeTransactions (key 65): v0, as Kafka 4.1.
//
// Behaviour (Kafka's TransactionCoordinator.handleDescribeTransactions):
// each id is answered from the image by the broker that coordinates it:
// NOT_COORDINATOR elsewhere, TRANSACTIONAL_ID_NOT_FOUND for an id the
// image does not hold, else its state (Kafka's names), timeout, start
// time (-1 when none is open), producer id and epoch and partitions by
// topic.
//
// ListTransactions (key 66): v0-v2, as Kafka 4.1. The transactional ids
// this broker coordinates, filtered by state name (a name Kafka does not
// know is listed in UnknownStateFilters and matches nothing), by producer
// id, by v1's DurationFilterMillis (only transactions open longer; < 0 is
// no filter) and v2's TransactionalIDPattern (a regular expression over
// the whole id; one that does not compile is INVALID_REGULAR_EXPRESSION).
// Both show the coordinator's latest write of a state, which this node's
// image may apply up to a Raft heartbeat later; an id created that
// recently may be listed a moment later.

import (
	"context"
	"regexp"
	"slices"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 65, advertisedMin: 0, min: 0, max: 0, concurrent: true, handle: handleDescribeTransactions})
	register(apiEntry{key: 66, advertisedMin: 0, min: 0, max: 2, concurrent: true, handle: handleListTransactions})
}

func handleDescribeTransactions(_ context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	txns, md := txnsOf(rc), rc.conn.srv.deps.Metadata
	var img *metadata.Image
	if md != nil {
		img, _ = md.Current()
	}
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		switch {
		case !rc.authorize(opDescribe, resTxnID, id):
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case txns == nil || img == nil:
			st.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case txns.Ownership(img, id) != nil:
			st.ErrorCode = kerr.NotCoordinator.Code
		default:
			t, ok := txns.Transaction(id)
			if !ok {
				st.ErrorCode = kerr.TransactionalIDNotFound.Code
				break
			}
			st.State, st.TimeoutMillis, st.ProducerID, st.ProducerEpoch = t.State.String(), t.TimeoutMs, t.ProducerID, t.ProducerEpoch
			if t.TxnStartMs >= 0 {
				st.StartTimestamp = t.TxnStartMs
			}
			for _, tp := range t.Partitions {
				if !rc.authorize(opDescribe, resTopic, tp.Topic) {
					continue // only the partitions the principal may describe (KafkaApis)
				}
				if n := len(st.Topics); n > 0 && st.Topics[n-1].Topic == tp.Topic {
					st.Topics[n-1].Partitions = append(st.Topics[n-1].Partitions, tp.Partition)
					continue
				}
				rt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
				st.Topics = append(st.Topics, rt)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}

func handleListTransactions(_ context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	txns, md := txnsOf(rc), rc.conn.srv.deps.Metadata
	if txns == nil || md == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	var states []metadata.TxnState
	for _, name := range req.StateFilters {
		if s, ok := metadata.TxnStateByName(name); ok {
			states = append(states, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	var pattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$")
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		pattern = re
	}
	img, _ := md.Current()
	nowMs := time.Now().UnixMilli()
	for _, t := range img.Transactions() {
		if latest, ok := txns.Transaction(t.TransactionalID); ok {
			t = latest
		}
		switch {
		case txns.Ownership(img, t.TransactionalID) != nil:
		case !rc.authorize(opDescribe, resTxnID, t.TransactionalID):
		case len(req.StateFilters) > 0 && !slices.Contains(states, t.State):
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, t.ProducerID):
		case req.Version >= 1 && req.DurationFilterMillis >= 0 && (t.TxnStartMs < 0 || nowMs-t.TxnStartMs <= req.DurationFilterMillis):
		case pattern != nil && !pattern.MatchString(t.TransactionalID):
		default:
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = t.TransactionalID, t.ProducerID, t.State.String()
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
	}
	return resp, nil
}
