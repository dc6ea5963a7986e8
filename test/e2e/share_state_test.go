package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawShareSession drives one member's share session on one partition with
// raw ShareFetch requests, so a test sees the delivery counts the leader
// answers and decides exactly when the leader dies.
type rawShareSession struct {
	cl            *kgo.Client
	group, member string
	topicID       [16]byte
	partition     int32
	epoch         int32
}

// fetch sends one ShareFetch to node (acknowledging acks, if any) and
// returns the partition's answer.
func (s *rawShareSession) fetch(ctx context.Context, node int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (kmsg.ShareFetchResponseTopicPartition, error) {
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &s.group, &s.member, s.epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 2000, 1, 1<<20, 1000, 1000
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = s.topicID
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.Partition, rp.AcknowledgementBatches = s.partition, acks
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	kresp, err := s.cl.Broker(int(node)).Request(actx, req)
	if err != nil {
		return kmsg.ShareFetchResponseTopicPartition{}, err
	}
	resp := kresp.(*kmsg.ShareFetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return kmsg.ShareFetchResponseTopicPartition{}, err
	}
	s.epoch++
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if t.TopicID == s.topicID && p.Partition == s.partition {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return p, err
				}
				return p, kerr.ErrorForCode(p.AcknowledgeErrorCode)
			}
		}
	}
	return kmsg.ShareFetchResponseTopicPartition{}, nil
}

// acquireUntil fetches from the partition's current leader until at least
// n records were acquired (or ctx ends), retrying what a client retries (a
// leader moving, a node just killed: a new session on the new leader).
// It returns the highest delivery count answered per offset.
func (s *rawShareSession) acquireUntil(ctx context.Context, t *testing.T, topic string, n int) map[int64]int16 {
	t.Helper()
	got := map[int64]int16{}
	leader := int32(-1)
	for len(got) < n {
		if ctx.Err() != nil {
			t.Fatalf("%s acquired %d of %d records: %v", s.member, len(got), n, ctx.Err())
		}
		if leader < 0 {
			md, err := kadm.NewClient(s.cl).Metadata(ctx, topic)
			if err != nil || md.Topics[topic].Partitions[s.partition].Leader < 0 {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			leader, s.epoch = md.Topics[topic].Partitions[s.partition].Leader, 0
		}
		p, err := s.fetch(ctx, leader)
		if err != nil {
			if isKafkaError(err) && !kerr.IsRetriable(err) && !errors.Is(err, kerr.NotLeaderForPartition) &&
				!errors.Is(err, kerr.ShareSessionNotFound) && !errors.Is(err, kerr.InvalidShareSessionEpoch) {
				t.Fatalf("%s: ShareFetch from %d: %v", s.member, leader, err)
			}
			leader = -1
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for _, r := range p.AcquiredRecords {
			for o := r.FirstOffset; o <= r.LastOffset; o++ {
				got[o] = max(got[o], r.DeliveryCount)
			}
		}
	}
	return got
}

func topicIDOf(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) ([16]byte, int32) {
	t.Helper()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return md.Topics[topic].ID, md.Topics[topic].Partitions[0].Leader
}

func produceValues(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestShareDeliveryCountSurvivesLeaderKill: records acquired and not
// acknowledged come back from a new leader with the delivery count the
// old leader answered, raised by one: the leader makes the count durable
// before it answers the ShareFetch, so a SIGKILL right after the answer
// loses no increment (a record could otherwise be delivered past
// share.delivery.count.limit).
func TestShareDeliveryCountSurvivesLeaderKill(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, group, total = "share-counts", "share-counts-workers", 200
	c := cluster.Start(t, cluster.Nodes(3))
	cl := spreadingProducer(t, c)
	ctx := ctxFor(t, 2*time.Minute)
	if err := createTopic(ctx, kadm.NewClient(cl), topic, 1, 3); err != nil {
		t.Fatal(err)
	}
	if err := setGroupConfig(ctx, cl, group, "share.auto.offset.reset", "earliest"); err != nil {
		t.Fatal(err)
	}
	produceValues(ctx, t, cl, topic, 0, total)
	m := &shareMember{id: "counts-a"}
	if err := m.heartbeat(ctx, cl, group, topic); err != nil {
		t.Fatal(err)
	}
	id, leader := topicIDOf(ctx, t, cl, topic)
	s := &rawShareSession{cl: cl, group: group, member: m.id, topicID: id}
	for round := 1; round <= 2; round++ {
		got := s.acquireUntil(ctx, t, topic, total)
		for o := range int64(total) {
			if got[o] != int16(round) {
				t.Fatalf("round %d: offset %d delivered with count %d, want %d", round, o, got[o], round)
			}
		}
		if round == 2 {
			break
		}
		// The answer is in: kill its leader at once, before a lazy write
		// could land. (One node down of three: the controller may be this
		// node, and a new one is elected.)
		c.Node(leader).Kill()
		t.Logf("round %d: %d records acquired with count %d; SIGKILLed the leader %d", round, len(got), round, leader)
	}
	t.Logf("after the kill a new leader delivered all %d records with count 2", total)
}

// TestShareGroupRecreated: a share group deleted and created again under
// the same id starts where share.auto.offset.reset says, not from the old
// group's state still held by the partition's leader (whose leader epoch
// did not change): the old group had acknowledged 0-49 and held 50-99
// acquired; the new one gets 0-99 with delivery count 1.
func TestShareGroupRecreated(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, group, total = "share-again", "share-again-workers", 100
	c := cluster.Start(t, cluster.Nodes(1))
	cl := spreadingProducer(t, c)
	ctx := ctxFor(t, 2*time.Minute)
	if err := createTopic(ctx, kadm.NewClient(cl), topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := setGroupConfig(ctx, cl, group, "share.auto.offset.reset", "earliest"); err != nil {
		t.Fatal(err)
	}
	produceValues(ctx, t, cl, topic, 0, total)
	id, leader := topicIDOf(ctx, t, cl, topic)

	old := &shareMember{id: "again-old"}
	if err := old.heartbeat(ctx, cl, group, topic); err != nil {
		t.Fatal(err)
	}
	s := &rawShareSession{cl: cl, group: group, member: old.id, topicID: id}
	if got := s.acquireUntil(ctx, t, topic, total); len(got) != total {
		t.Fatalf("old group acquired %d records", len(got))
	}
	ack := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	ack.FirstOffset, ack.LastOffset, ack.AcknowledgeTypes = 0, total/2-1, []int8{1}
	if _, err := s.fetch(ctx, leader, ack); err != nil {
		t.Fatalf("accepting 0-%d: %v", total/2-1, err)
	}
	// The old member leaves; its session stays open on its connection, so
	// 50-99 stay acquired in the leader's memory.
	old.epoch = -1
	if err := old.heartbeat(ctx, cl, group, topic); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		out, err := cluster.Run(t, "share-groups", "delete", "--bootstrap-server", c.Bootstrap(), "--group", group)
		return err == nil, fmt.Sprintf("share-groups delete: %v: %s", err, out)
	})
	if err := setGroupConfig(ctx, cl, group, "share.auto.offset.reset", "earliest"); err != nil {
		t.Fatal(err)
	}

	m := &shareMember{id: "again-new"}
	if err := m.heartbeat(ctx, cl, group, topic); err != nil {
		t.Fatal(err)
	}
	fresh := &rawShareSession{cl: cl, group: group, member: m.id, topicID: id}
	got := fresh.acquireUntil(ctx, t, topic, total)
	for o := range int64(total) {
		if got[o] != 1 {
			t.Fatalf("re-created group: offset %d delivered with count %d, want 1 (the old group's state)", o, got[o])
		}
	}
	t.Logf("re-created group got all %d records from offset 0 with delivery count 1", total)
}

// wantShareGroups waits until a new member's ShareGroupHeartbeat answers
// want (nil: it joins), as a feature level reaches every node's image.
func wantShareGroups(ctx context.Context, t *testing.T, cl *kgo.Client, want error) {
	t.Helper()
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		m := &shareMember{id: fmt.Sprintf("gate-%d", time.Now().UnixNano())}
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := m.heartbeat(hctx, cl, "share-version-gate", "share-version-gate-topic")
		cancel()
		return errors.Is(err, want), fmt.Sprintf("ShareGroupHeartbeat: %v, want %v", err, want)
	})
}

// TestShareVersionGate: a new cluster finalizes share.version 1 (as Kafka
// 4.2) and serves share groups; with share.version downgraded to 0 every
// share group API answers UNSUPPORTED_VERSION (the records stored stay),
// and `raftka features upgrade --feature share.version=1` brings them
// back.
func TestShareVersionGate(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, group = "share-gate", "share-gate-workers"
	c := cluster.Start(t, cluster.Nodes(1))
	cl := spreadingProducer(t, c)
	ctx := ctxFor(t, 2*time.Minute)
	if err := createTopic(ctx, kadm.NewClient(cl), topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	if out, err := cluster.Run(t, "features", "describe", "--bootstrap-server", c.Bootstrap()); err != nil ||
		!strings.Contains(out, "Feature: share.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1") {
		t.Fatalf("features describe: %v\n%s", err, out)
	}
	wantShareGroups(ctx, t, cl, nil)
	id, leader := topicIDOf(ctx, t, cl, topic)
	if out, err := cluster.Run(t, "features", "downgrade", "--bootstrap-server", c.Bootstrap(), "--feature", "share.version=0"); err != nil {
		t.Fatalf("downgrade share.version: %v\n%s", err, out)
	}
	wantShareGroups(ctx, t, cl, kerr.UnsupportedVersion)
	s := &rawShareSession{cl: cl, group: group, member: "gate-fetch", topicID: id}
	if _, err := s.fetch(ctx, leader); !errors.Is(err, kerr.UnsupportedVersion) {
		t.Fatalf("ShareFetch at share.version 0: %v, want UNSUPPORTED_VERSION", err)
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &s.group, &s.member, 1
	if resp, err := ack.RequestWith(ctx, cl); err != nil || resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("ShareAcknowledge at share.version 0: %v %+v, want UNSUPPORTED_VERSION", err, resp)
	}
	desc := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	desc.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
	if resp, err := desc.RequestWith(ctx, cl); err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("DescribeShareGroupOffsets at share.version 0: %v %+v, want UNSUPPORTED_VERSION", err, resp)
	}
	if out, err := cluster.Run(t, "features", "upgrade", "--bootstrap-server", c.Bootstrap(), "--feature", "share.version=1"); err != nil {
		t.Fatalf("upgrade share.version: %v\n%s", err, out)
	}
	wantShareGroups(ctx, t, cl, nil)
	s.epoch = 0
	if _, err := s.fetch(ctx, leader); err != nil {
		t.Fatalf("ShareFetch at share.version 1: %v", err)
	}
}

// TestShareGroupReadCommitted: with share.isolation.level=read_committed,
// three franz-go share members on a 3-partition RF=3 topic receive every
// record of the committed transactions, once, and none of the aborted
// ones; records of a transaction still open are not delivered (reads stop
// at the last stable offset) until it commits.
func TestShareGroupReadCommitted(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, group, txns, perTxn, openN = "share-rc", "share-rc-workers", 8, 60, 30
	c := cluster.Start(t, cluster.Nodes(3))
	cl := spreadingProducer(t, c)
	ctx := ctxFor(t, 3*time.Minute)
	if err := createTopic(ctx, kadm.NewClient(cl), topic, 3, 3); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed"} {
		if err := setGroupConfig(ctx, cl, group, k, v); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := kgo.NewClient(kgo.SeedBrokers(seedAddrs(c)...), kgo.TransactionalID("share-rc-producer"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	// Transaction i holds the values i*1000 .. i*1000+perTxn-1; even ones
	// commit, odd ones abort.
	runTxn := func(i, n int, end bool, commit kgo.TransactionEndTry) {
		t.Helper()
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		recs := make([]*kgo.Record, n)
		for j := range recs {
			recs[j] = &kgo.Record{Value: []byte(strconv.Itoa(i*1000 + j))}
		}
		if err := tx.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if end {
			if err := tx.EndTransaction(ctx, commit); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[int]bool{}
	for i := range txns {
		runTxn(i, perTxn, true, i%2 == 0)
		for j := range perTxn {
			if i%2 == 0 {
				want[i*1000+j] = true
			}
		}
	}
	// One more transaction left open: its records are past the LSO.
	runTxn(txns, openN, false, false)

	var mu sync.Mutex
	got := map[int]int{}
	mctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for m := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mcl, err := kgo.NewClient(kgo.SeedBrokers(seedAddrs(c)...), kgo.ClientID(fmt.Sprintf("rc-%d", m)), kgo.ShareGroup(group),
				kgo.ConsumeTopics(topic), kgo.FetchMaxWait(time.Second))
			if err != nil {
				t.Error(err)
				return
			}
			defer mcl.Close()
			for mctx.Err() == nil {
				mcl.PollFetches(mctx).EachRecord(func(r *kgo.Record) {
					if v, err := strconv.Atoi(string(r.Value)); err == nil {
						mu.Lock()
						got[v]++
						mu.Unlock()
					}
					r.Ack(kgo.AckAccept)
				})
			}
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = mcl.FlushAcks(fctx)
		}()
	}
	defer func() { stop(); wg.Wait() }()
	check := func(wantOpen bool) (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		missing, open := 0, 0
		for v := range want {
			if got[v] == 0 {
				missing++
			}
		}
		for v, n := range got {
			switch {
			case v/1000 == txns:
				open++
			case !want[v]:
				t.Fatalf("value %d of aborted transaction %d delivered", v, v/1000)
			}
			if n > 1 {
				t.Fatalf("value %d delivered %d times", v, n)
			}
		}
		if open > 0 && !wantOpen {
			t.Fatalf("%d records of the open transaction delivered before it committed", open)
		}
		return missing == 0 && (!wantOpen || open == openN), fmt.Sprintf("%d of %d committed records missing, %d of %d of the last transaction", missing, len(want), open, openN)
	}
	cluster.WaitFor(t, time.Minute, func() (bool, string) { return check(false) })
	// The members keep fetching for a while: still nothing past the LSO.
	time.Sleep(2 * time.Second)
	check(false)
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, time.Minute, func() (bool, string) { return check(true) })
	t.Logf("%d committed records delivered once each, none of the %d aborted; the open transaction's %d after its commit",
		len(want), txns/2*perTxn, openN)
}

// TestShareRenewAck: a ShareFetch v2 with IsRenewAck (KIP-1222) renews
// the locks it names and acquires nothing, though records are available;
// one that also asks for records, or names a partition without
// acknowledgements, is INVALID_REQUEST.
func TestShareRenewAck(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, group = "share-renew", "share-renew-workers"
	c := cluster.Start(t, cluster.Nodes(1))
	cl := spreadingProducer(t, c)
	ctx := ctxFor(t, time.Minute)
	if err := createTopic(ctx, kadm.NewClient(cl), topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := setGroupConfig(ctx, cl, group, "share.auto.offset.reset", "earliest"); err != nil {
		t.Fatal(err)
	}
	produceValues(ctx, t, cl, topic, 0, 10)
	id, leader := topicIDOf(ctx, t, cl, topic)
	s := &rawShareSession{cl: cl, group: group, member: "renew-a", topicID: id}
	if got := s.acquireUntil(ctx, t, topic, 10); len(got) != 10 {
		t.Fatalf("acquired %d", len(got))
	}
	// Offsets 10-19 are available while 0-9 are renewed.
	produceValues(ctx, t, cl, topic, 10, 20)
	renew := func(maxRecords int32, acks bool) (*kmsg.ShareFetchResponse, error) {
		req := kmsg.NewPtrShareFetchRequest()
		req.Version = 2
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &s.group, &s.member, s.epoch
		// (kmsg's defaults fill MaxBytes: a renewal sends zeros.)
		req.IsRenewAck, req.MaxRecords, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = true, maxRecords, 0, 0, 0
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewShareFetchRequestTopicPartition()
		if acks {
			b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 0, 9, []int8{4}
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := cl.Broker(int(leader)).Request(ctx, req)
		if err != nil {
			return nil, err
		}
		return kresp.(*kmsg.ShareFetchResponse), nil
	}
	for _, bad := range []struct {
		name       string
		maxRecords int32
		acks       bool
	}{{"asks for records", 100, true}, {"a partition without acknowledgements", 0, false}} {
		resp, err := renew(bad.maxRecords, bad.acks)
		if err != nil || resp.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("renew that %s: %v %+v, want INVALID_REQUEST", bad.name, err, resp)
		}
	}
	resp, err := renew(0, true)
	if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("renew: %v %+v", err, resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 || len(p.AcquiredRecords) != 0 || len(p.Records) != 0 {
		t.Fatalf("renew answered %v / %v with %d acquired ranges: want the renewal only", kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(p.AcknowledgeErrorCode), len(p.AcquiredRecords))
	}
	s.epoch++
	// The renewed records are still this member's: accepting them works,
	// and the next fetch gets 10-19.
	ack := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	ack.FirstOffset, ack.LastOffset, ack.AcknowledgeTypes = 0, 9, []int8{1}
	next, err := s.fetch(ctx, leader, ack)
	if err != nil {
		t.Fatalf("accepting the renewed records: %v", err)
	}
	if len(next.AcquiredRecords) == 0 || next.AcquiredRecords[0].FirstOffset != 10 {
		t.Fatalf("after the renewal: %+v, want 10-19 acquired", next.AcquiredRecords)
	}
}
