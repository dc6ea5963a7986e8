package broker

// Produce (key 0): advertised v0-v13, served v3-v13, as Kafka 4.
//
// Behaviour (Kafka's ReplicaManager.appendRecords, leader side):
//   - Each partition carries exactly one v2 record batch, validated and
//     stamped with offsets and the leader epoch by storage (see
//     replica.Partition.AppendAsLeader). Per-partition errors:
//     UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID at v13),
//     NOT_LEADER_OR_FOLLOWER (with CurrentLeader and the leader's endpoint in
//     NodeEndpoints at v10+, so the client need not refresh metadata),
//     NOT_ENOUGH_REPLICAS (acks=all with too small an ISR; nothing appended),
//     NOT_ENOUGH_REPLICAS_AFTER_APPEND, MESSAGE_TOO_LARGE (max.message.bytes,
//     or records decompressing past storage.DecompressLimit), CORRUPT_MESSAGE,
//     INVALID_RECORD, INVALID_TIMESTAMP, and REQUEST_TIMED_OUT when acks=all
//     is not satisfied within TimeoutMillis.
//   - Every batch's records are walked before append, compressed ones
//     decompressed (storage.Batch.ValidateProduce): records that do not
//     decompress or decode are CORRUPT_MESSAGE, a wrong record count or
//     offset deltas INVALID_RECORD, keyless records on a compacted topic
//     INVALID_RECORD with RecordErrors and Kafka's ErrorMessage (v8+).
//     Nothing of a refused batch is appended; the connection stays open
//     (acks 0 aside); each refusal is counted by reason and client id and
//     logged, rate-limited, naming the client (produce_refusals.go).
//   - acks 0: nothing is answered; if any partition failed the connection is
//     closed, as Kafka does, so the client notices. acks 1: answered after the
//     leader's append. acks -1 (all): appended, then the connection is released
//     (its next request may start) and the answer waits for the high watermark
//     to pass every batch (the delayed-produce purgatory). Other acks values
//     are INVALID_REQUIRED_ACKS.
//   - Internal topics (__consumer_offsets, __transaction_state) are
//     refused per partition with INVALID_TOPIC_EXCEPTION, as Kafka's
//     appendToLocalLog refuses them to clients: only the broker writes them.
//   - Transactional batches (KIP-98, verification of KIP-890): a batch with
//     the transactional bit needs the request's transactional id
//     (INVALID_TXN_STATE without one, or with no transaction coordinator
//     on this node), and the producer's open transaction at the
//     coordinator must include the partition, asked of the coordinator
//     unless the producer already has a transaction open in the partition
//     at that epoch (verifyTxnPartitions, txns.go; one call for all the
//     request's partitions): INVALID_TXN_STATE when it
//     does not, INVALID_PRODUCER_EPOCH for a fenced producer,
//     NOT_ENOUGH_REPLICAS (retriable) while the coordinator cannot answer.
//     Under transaction version 2 (produce v12+ while transaction.version 2
//     is finalized) the leader adds the partition to the transaction
//     instead of asking (KIP-890 part 2). Nothing of a refused batch is
//     appended.
//   - Idempotent producers: the partition log checks a batch with a
//     producer id against that producer's last five batches under its
//     writer lock (storage/producer_state.go): a retried batch is answered
//     with its original offsets and appended again never; a gap is
//     OUT_OF_ORDER_SEQUENCE_NUMBER and a stale epoch INVALID_PRODUCER_EPOCH.
//   - LogAppendTime topics: the broker time stamped into the batch is
//     answered; CreateTime topics answer -1.
//
// Version notes: v0-v2 (magic 0/1 message sets) are advertised only because
// librdkafka before 2.11 disables compression otherwise (ARCHITECTURE.md,
// "Protocol notes");
// they are answered UNSUPPORTED_VERSION per partition, as Kafka 4 does. v5+:
// LogStartOffset. v8+: ErrorMessage. v9: flexible. v10+: CurrentLeader and
// NodeEndpoints. v13: topics by id.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceKey is Produce's API key.
const produceKey = 0

func init() {
	register(apiEntry{
		key:           produceKey,
		advertisedMin: 0, min: 3, max: 13,
		// Appends must happen in request order on a connection; the handler
		// releases the connection before waiting for acks=all.
		concurrent: false,
		handle:     handleProduce,
		reject:     rejectProduce,
	})
}

// errNoTransactionalID refuses a transactional batch sent without the
// request's transactional id.
var errNoTransactionalID = fmt.Errorf("%w: a transactional batch needs the request's transactional id", kerr.InvalidTxnState)

// rejectProduce answers Produce v0-v2 with UNSUPPORTED_VERSION for every
// partition.
func rejectProduce(kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.UnsupportedVersion.Code
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// pendingAck is one acks=all partition waiting for replication.
type pendingAck struct {
	rp  *kmsg.ProduceResponseTopicPartition
	ack *replica.Ack
}

func handleProduce(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	srv := rc.conn.srv
	img := srv.image()

	var txnErr error
	if req.TransactionID != nil && !rc.authorize(opWrite, resTxnID, *req.TransactionID) {
		// Kafka checks WRITE on the transactional id before anything else
		// and fails every partition with it.
		txnErr = kerr.TransactionalIDAuthorizationFailed
	}
	var acksErr error
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		acksErr = fmt.Errorf("%w: acks %d", kerr.InvalidRequiredAcks, req.Acks)
	}

	var pending []pendingAck
	failed := false
	hints := map[int32]bool{} // leaders named in CurrentLeader, for NodeEndpoints
	// First every partition's checks, then the transactional ones'
	// verification (one coordinator call for the request), then the
	// appends in request order.
	var items []produceItem
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name := t.Topic
		var topicErr error
		if req.Version >= 13 {
			if ti, ok := img.TopicByID(t.TopicID); ok {
				name = ti.Name
			} else {
				topicErr = fmt.Errorf("%w: %x", kerr.UnknownTopicID, t.TopicID)
			}
		}
		// WRITE on the topic, checked before the topic's existence so an
		// unauthorized client cannot probe for names (KafkaApis order).
		if topicErr == nil && !rc.authorize(opWrite, resTopic, name) {
			topicErr = kerr.TopicAuthorizationFailed
		}
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
		for i, p := range t.Partitions {
			rp := &resp.Topics[len(resp.Topics)-1].Partitions[i]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			items = append(items, produceItem{rp: rp, topic: name, partition: p.Partition, records: p.Records,
				err: firstErr(txnErr, topicErr, acksErr, internalTopicErr(topicErr, name))})
		}
	}
	srv.verifyProduceTxn(ctx, rc, req, items)
	for i := range items {
		it := &items[i]
		rp, err := it.rp, it.err
		var res storage.AppendResult
		var ack *replica.Ack
		if err == nil {
			res, ack, err = srv.appendBatch(ctx, rc, it.topic, it.partition, it.records, req.Acks, it.guard)
		}
		if err != nil {
			failed = true
			setProduceError(rp, req.Version, err)
			srv.batchRefused(rc, it.topic, it.partition, rp.ErrorCode, err)
			if req.Version >= 10 && wantsLeaderHint(rp.ErrorCode) {
				if h, ok := leaderOf(img, it.topic, it.partition, rc.conn.listener); ok {
					rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = h.leader, h.epoch
					hints[h.leader] = true
				}
			}
			continue
		}
		rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = res.BaseOffset, res.LogAppendTime, res.LogStartOffset
		if !res.Duplicate {
			srv.metrics.TopicProduced(it.topic, int64(len(it.records)), res.RecordCount)
		}
		if ack != nil {
			pending = append(pending, pendingAck{rp: rp, ack: ack})
		}
	}
	// Everything whose order matters on this connection is done.
	rc.release()

	if req.Acks == 0 {
		if failed {
			// Kafka closes the connection of an acks=0 producer whose
			// request failed: it is the only way to tell it.
			return nil, errors.New("acks=0 produce failed for some partitions; closing so the producer notices")
		}
		return nil, nil
	}
	if len(pending) > 0 {
		acks := make([]*replica.Ack, len(pending))
		for i, p := range pending {
			acks[i] = p.ack
		}
		timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
		// A wait in the delayed-produce purgatory ends the local time.
		wctx := replica.WithDelayHook(ctx, rc.localComplete)
		for i, err := range replica.WaitAcks(wctx, timeout, acks) {
			if err != nil {
				rp := pending[i].rp
				setProduceError(rp, req.Version, err)
				// The batch is in the leader's log; only its replication is
				// in doubt, so keep nothing that suggests an offset.
				rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			}
		}
	}
	if req.Version >= 10 {
		resp.Brokers = produceEndpoints(img, hints, rc.conn.listener)
	}
	// producer_byte_rate: the request's record bytes, the answer held back
	// by the throttle time (quota.go).
	produced := 0
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			produced += len(p.Records)
		}
	}
	resp.ThrottleMillis = rc.throttle(ctx, metadata.QuotaProducerByteRate, produced, req.Version >= 6)
	return resp, nil
}

// produceItem is one partition of a produce request on its way to the log.
type produceItem struct {
	rp        *kmsg.ProduceResponseTopicPartition
	topic     string
	partition int32
	records   []byte
	err       error // the partition's answer when it is not appended
	guard     txnGuard
}

// verifyProduceTxn checks the transactional batches of a request before
// any is appended: a batch with the transactional bit needs the request's
// transactional id, and its partition must be in the producer's open
// transaction (verifyTxnPartitions: asked of the coordinator, or under
// transaction version 2 — produce v12+ while it is finalized — added to
// it by the leader, KIP-890 part 2). The partitions of one producer id and
// epoch (a request has one) go to the coordinator in one call.
func (s *Server) verifyProduceTxn(ctx context.Context, rc *request, req *kmsg.ProduceRequest, items []produceItem) {
	type producer struct {
		pid   int64
		epoch int16
	}
	var groups map[producer][]int
	for i := range items {
		it := &items[i]
		if it.err != nil || len(it.records) < storage.BatchHeaderSize || !storage.Batch(it.records).Transactional() {
			continue
		}
		if req.TransactionID == nil || *req.TransactionID == "" {
			it.err = errNoTransactionalID
			continue
		}
		b := storage.Batch(it.records)
		if groups == nil {
			groups = map[producer][]int{}
		}
		k := producer{b.ProducerID(), b.ProducerEpoch()}
		groups[k] = append(groups[k], i)
	}
	if len(groups) == 0 {
		return
	}
	add := req.Version >= 12 && txnV2(rc)
	for k, at := range groups {
		parts := make([]metadata.TopicPartition, len(at))
		for j, i := range at {
			parts[j] = metadata.TopicPartition{Topic: items[i].topic, Partition: items[i].partition}
		}
		errs, guards := s.verifyTxnPartitions(ctx, *req.TransactionID, add, k.pid, k.epoch, parts)
		for j, err := range errs {
			items[at[j]].err, items[at[j]].guard = err, guards[j]
		}
	}
}

// appendBatch appends one partition's records as leader: the one path a
// produced batch takes into a log (its transactional checks are
// verifyProduceTxn's, made for the whole request first).
//
// Sequence checks for idempotent producers happen inside the log's append
// (storage.AppendResult.Duplicate marks a retry answered from the producer
// state), so every path into a log gets them.
func (s *Server) appendBatch(ctx context.Context, rc *request, topic string, partition int32, records []byte, acks int16, guard txnGuard) (storage.AppendResult, *replica.Ack, error) {
	// Server.onPartition's retry, written out: a closure here would cost an
	// allocation per partition on the produce path.
	res, ack, err := s.appendOnce(topic, partition, records, acks, guard)
	if err != nil && staleAnswer(err) && s.catchUp(ctx, rc) {
		res, ack, err = s.appendOnce(topic, partition, records, acks, guard)
	}
	return res, ack, err
}

func (s *Server) appendOnce(topic string, partition int32, records []byte, acks int16, guard txnGuard) (storage.AppendResult, *replica.Ack, error) {
	if s.deps.Replicas == nil {
		return storage.AppendResult{}, nil, errNoReplicas
	}
	p, err := s.deps.Replicas.Partition(topic, partition)
	if err != nil {
		return storage.AppendResult{}, nil, err
	}
	if guard.set {
		return p.AppendAsLeaderGuarded(records, acks, guard.value)
	}
	return p.AppendAsLeader(records, acks)
}

// internalTopicErr refuses a client's write to an internal topic as
// Kafka's ReplicaManager.appendToLocalLog does (INVALID_TOPIC_EXCEPTION,
// "Cannot append to internal topic"): __consumer_offsets is written only by
// its slot leader from the Raft image (OffsetsLog), and a client record
// there would be read by Burrow and the like as a group's commit.
func internalTopicErr(topicErr error, name string) error {
	if topicErr != nil || !internalTopics[name] {
		return nil
	}
	return fmt.Errorf("%w: Cannot append to internal topic %s", kerr.InvalidTopicException, name)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// setProduceError answers a partition's error. At v8+ a batch refused for
// some of its records lists them in RecordErrors with Kafka's message, as
// LogValidator's RecordValidationException does.
func setProduceError(rp *kmsg.ProduceResponseTopicPartition, version int16, err error) {
	rp.ErrorCode = errorCode(err)
	if version < 8 {
		return
	}
	msg := err.Error()
	var re *storage.RecordErrors
	if errors.As(err, &re) {
		msg = re.Error()
		rp.ErrorRecords = make([]kmsg.ProduceResponseTopicPartitionErrorRecord, len(re.Errors))
		for i, e := range re.Errors {
			rp.ErrorRecords[i] = kmsg.NewProduceResponseTopicPartitionErrorRecord()
			rp.ErrorRecords[i].RelativeOffset, rp.ErrorRecords[i].ErrorMessage = e.BatchIndex, kmsg.StringPtr(e.Message)
		}
	}
	rp.ErrorMessage = &msg
}
