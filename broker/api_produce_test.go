package broker

import (
	"bytes"
	"testing"
	"time"

	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceThenFetchByteIdentical produces batches at several versions
// and fetches them back at every Fetch version: the records bytes are the
// produced batches with their offsets and leader epoch stamped, and they
// went out through sendfile.
func TestProduceThenFetchByteIdentical(t *testing.T) {
	f := newPartFixture(t)
	id := f.topic("orders", nil, []int32{1}, []int32{1})
	var want []byte
	next := int64(0)
	for i, v := range []int16{3, 7, 9, 12, 13} {
		b := recordbatch.Build(time.Now().UnixMilli(), keyed(2*i), keyed(2*i+1))
		sent := bytes.Clone(b)
		got := f.produce(v, -1, "orders", id, map[int32][]byte{1: b})[1]
		if got.ErrorCode != 0 || got.BaseOffset != next {
			t.Fatalf("v%d: produce error %d base %d, want 0 and %d", v, got.ErrorCode, got.BaseOffset, next)
		}
		if v >= 5 && got.LogStartOffset != 0 {
			t.Fatalf("v%d: log start %d", v, got.LogStartOffset)
		}
		if got.LogAppendTime != -1 {
			t.Fatalf("CreateTime topic answered LogAppendTime %d", got.LogAppendTime)
		}
		storage.Batch(sent).SetBaseOffset(next)
		storage.Batch(sent).SetPartitionLeaderEpoch(0)
		want = append(want, sent...)
		next += 2
	}
	before := sendfileBytes.Load()
	for v := int16(4); v <= 18; v++ {
		p := onlyPartition(t, f.call(fetchReq(v, "orders", id, 1, 0)).(*kmsg.FetchResponse))
		if p.ErrorCode != 0 || p.HighWatermark != next {
			t.Fatalf("fetch v%d: error %d hw %d", v, p.ErrorCode, p.HighWatermark)
		}
		if p.LastStableOffset != next || (v >= 5 && p.LogStartOffset != 0) || p.PreferredReadReplica != -1 {
			t.Fatalf("fetch v%d: lso %d log start %d preferred %d", v, p.LastStableOffset, p.LogStartOffset, p.PreferredReadReplica)
		}
		if !bytes.Equal(p.RecordBatches, want) {
			t.Fatalf("fetch v%d: %d bytes differ from the %d produced", v, len(p.RecordBatches), len(want))
		}
		recs, err := recordbatch.Decode(p.RecordBatches[:len(p.RecordBatches)/5])
		if err != nil || string(recs.Records[1].Key) != "k1" {
			t.Fatalf("fetch v%d: first batch %v, %v", v, recs, err)
		}
	}
	if got := sendfileBytes.Load() - before; got < int64(15*len(want)) {
		t.Fatalf("sendfile sent %d bytes, want at least %d", got, 15*len(want))
	}
	// Fetching from the middle starts at the batch holding the offset.
	p := onlyPartition(t, f.call(fetchReq(13, "", id, 1, 5)).(*kmsg.FetchResponse))
	if b, _ := recordbatch.Decode(p.RecordBatches[:len(want)/5]); b.BaseOffset != 4 {
		t.Fatalf("fetch at 5 starts at base offset %d, want 4", b.BaseOffset)
	}
	// At the HW: nothing, answered after MaxWait (0 here).
	p = onlyPartition(t, f.call(fetchReq(13, "", id, 1, next)).(*kmsg.FetchResponse))
	if p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("fetch at the HW: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
}

func TestProduceErrors(t *testing.T) {
	f := newPartFixture(t)
	f.topic("t", nil, []int32{1}, []int32{2, 1})
	smallID := f.topic("small", map[string]string{"max.message.bytes": "200"}, []int32{1})
	f.topic("strict", map[string]string{"min.insync.replicas": "2"}, []int32{1})
	f.topic("old", map[string]string{"message.timestamp.before.max.ms": "60000"}, []int32{1})
	f.topic("slow", nil, []int32{1, 2})
	f.topic("__consumer_offsets", map[string]string{"cleanup.policy": "compact"}, []int32{1})
	now := time.Now().UnixMilli()
	good := func() []byte { return recordbatch.BuildValues(now, []byte("v")) }
	corrupt := good()
	corrupt[len(corrupt)-1] ^= 0xff
	txn := recordbatch.Batch{Transactional: true, ProducerID: 7, BaseTimestamp: now, Records: []recordbatch.Record{{Value: []byte("x")}}}.Encode()
	gap := recordbatch.Batch{BaseTimestamp: now, LastOffsetDelta: 5, Records: []recordbatch.Record{{Value: []byte("a")}, {OffsetDelta: 1, Value: []byte("b")}}}.Encode()

	cases := []struct {
		name    string
		version int16
		acks    int16
		topic   string
		id      [16]byte
		part    int32
		batch   []byte
		timeout int32
		txnID   *string
		want    int16
	}{
		{"unknown topic", 9, 1, "nope", [16]byte{}, 0, good(), 0, nil, kerr.UnknownTopicOrPartition.Code},
		{"unknown partition", 9, 1, "t", [16]byte{}, 9, good(), 0, nil, kerr.UnknownTopicOrPartition.Code},
		{"unknown topic id", 13, 1, "", [16]byte{9, 9}, 0, good(), 0, nil, kerr.UnknownTopicID.Code},
		{"not leader", 11, 1, "t", [16]byte{}, 1, good(), 0, nil, kerr.NotLeaderForPartition.Code},
		{"not enough replicas", 9, -1, "strict", [16]byte{}, 0, good(), 0, nil, kerr.NotEnoughReplicas.Code},
		{"acks=1 ignores min.insync", 9, 1, "strict", [16]byte{}, 0, good(), 0, nil, 0},
		{"too large", 13, 1, "", smallID, 0, recordbatch.BuildValues(now, bytes.Repeat([]byte("x"), 300)), 0, nil, kerr.MessageTooLarge.Code},
		{"corrupt", 9, 1, "t", [16]byte{}, 0, corrupt, 0, nil, kerr.CorruptMessage.Code},
		{"offset deltas", 9, 1, "t", [16]byte{}, 0, gap, 0, nil, kerr.InvalidRecord.Code},
		{"transactional batch", 9, 1, "t", [16]byte{}, 0, txn, 0, nil, kerr.InvalidTxnState.Code},
		// With no transaction coordinator to verify with.
		{"transactional id", 9, 1, "t", [16]byte{}, 0, txn, 0, kmsg.StringPtr("tx"), kerr.InvalidTxnState.Code},
		{"bad acks", 9, 2, "t", [16]byte{}, 0, good(), 0, nil, kerr.InvalidRequiredAcks.Code},
		{"old timestamp", 9, 1, "old", [16]byte{}, 0, recordbatch.BuildValues(now-3600000, []byte("v")), 0, nil, kerr.InvalidTimestamp.Code},
		{"acks=all times out", 9, -1, "slow", [16]byte{}, 0, good(), 50, nil, kerr.RequestTimedOut.Code},
		{"internal topic", 9, 1, "__consumer_offsets", [16]byte{}, 0, recordbatch.Build(now, recordbatch.Record{Key: []byte("k"), Value: []byte("v")}), 0, nil, kerr.InvalidTopicException.Code},
		{"v2 refused", 2, 1, "t", [16]byte{}, 0, good(), 0, nil, kerr.UnsupportedVersion.Code},
		{"v0 refused", 0, 1, "t", [16]byte{}, 0, good(), 0, nil, kerr.UnsupportedVersion.Code},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = c.version, c.acks, 5000, c.txnID
			if c.timeout > 0 {
				req.TimeoutMillis = c.timeout
			}
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic, rt.TopicID = c.topic, c.id
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = c.part, c.batch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := f.call(req).(*kmsg.ProduceResponse)
			got := resp.Topics[0].Partitions[0]
			if got.ErrorCode != c.want {
				t.Fatalf("error %v, want %v", kerr.ErrorForCode(got.ErrorCode), kerr.ErrorForCode(c.want))
			}
			if c.want != 0 && (got.BaseOffset != -1 || (c.version >= 8 && got.ErrorMessage == nil)) {
				t.Fatalf("failed partition answered base %d, message %v", got.BaseOffset, got.ErrorMessage)
			}
			if c.want == kerr.NotLeaderForPartition.Code {
				if got.CurrentLeader.LeaderID != 2 || got.CurrentLeader.LeaderEpoch != 0 {
					t.Fatalf("CurrentLeader %+v, want broker 2 epoch 0", got.CurrentLeader)
				}
				if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 2 || resp.Brokers[0].Rack == nil || *resp.Brokers[0].Rack != "r2" {
					t.Fatalf("NodeEndpoints %+v, want broker 2", resp.Brokers)
				}
			}
		})
	}
	// Nothing refused reached a log; only the one acks=1 success and the
	// timed-out acks=all append (which is in the leader's log) did.
	for topic, want := range map[string]int64{"t": 0, "small": 0, "strict": 1, "old": 0, "slow": 1, "__consumer_offsets": 0} {
		p, err := f.rm.Partition(topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		if leo := p.Log().LogEndOffset(); leo != want {
			t.Errorf("%s: log end offset %d, want %d", topic, leo, want)
		}
	}
}

// TestProduceManyPartitionsMixed answers each partition on its own.
func TestProduceManyPartitionsMixed(t *testing.T) {
	f := newPartFixture(t)
	id := f.topic("m", nil, []int32{1}, []int32{2}, []int32{1})
	now := time.Now().UnixMilli()
	got := f.produce(12, -1, "m", id, map[int32][]byte{
		0: recordbatch.BuildValues(now, []byte("a")),
		1: recordbatch.BuildValues(now, []byte("b")),
		2: recordbatch.BuildValues(now, []byte("c"), []byte("d")),
		7: recordbatch.BuildValues(now, []byte("e")),
	})
	if got[0].ErrorCode != 0 || got[2].ErrorCode != 0 || got[2].BaseOffset != 0 {
		t.Fatalf("led partitions: %+v %+v", got[0], got[2])
	}
	if got[1].ErrorCode != kerr.NotLeaderForPartition.Code || got[7].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("errors %d %d", got[1].ErrorCode, got[7].ErrorCode)
	}
}

func TestProduceLogAppendTime(t *testing.T) {
	f := newPartFixture(t)
	id := f.topic("lat", map[string]string{"message.timestamp.type": "LogAppendTime"}, []int32{1})
	before := time.Now().UnixMilli()
	got := f.produce(9, 1, "lat", id, map[int32][]byte{0: recordbatch.BuildValues(1000, []byte("v"))})[0]
	if got.ErrorCode != 0 || got.LogAppendTime < before {
		t.Fatalf("error %d, LogAppendTime %d, want >= %d", got.ErrorCode, got.LogAppendTime, before)
	}
	p := onlyPartition(t, f.call(fetchReq(12, "lat", id, 0, 0)).(*kmsg.FetchResponse))
	b, err := recordbatch.Decode(p.RecordBatches)
	if err != nil || !b.LogAppendTime || b.MaxTimestamp != got.LogAppendTime {
		t.Fatalf("stored batch %+v, %v", b, err)
	}
}

// TestProduceAcksZero: no answer on success (the next request's answer comes
// first), a closed connection on failure.
func TestProduceAcksZero(t *testing.T) {
	f := newPartFixture(t)
	f.topic("z", nil, []int32{1})
	raw := dialRaw(t, f.addr)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 9, 0
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "z"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = recordbatch.BuildValues(time.Now().UnixMilli(), []byte("v"))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw.send(req, 1)
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 7
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "z"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	raw.send(lo, 2)
	resp := lo.ResponseKind().(*kmsg.ListOffsetsResponse)
	if corr := raw.readResponse(resp); corr != 2 {
		t.Fatalf("first answer has correlation %d, want 2 (acks=0 is not answered)", corr)
	}
	if off := resp.Topics[0].Partitions[0].Offset; off != 1 {
		t.Fatalf("latest offset %d after the acks=0 produce, want 1", off)
	}
	rt.Topic = "missing"
	req.Topics[0] = rt
	raw.send(req, 3)
	raw.expectClosed()
}

// TestProducePipelinedFramesByteIdentical pipelines produce requests large
// enough to be read into pooled frame buffers, each different, and checks
// the log holds exactly what was sent: a frame buffer is reused only after
// its batches are in the log (regression guard for the frame pool).
func TestProducePipelinedFramesByteIdentical(t *testing.T) {
	f := newPartFixture(t)
	id := f.topic("pipe", nil, []int32{1})
	raw := dialRaw(t, f.addr)
	var want []byte
	const requests = 24
	next := int64(0)
	for i := range requests {
		// Sizes across several frame classes, values unique per request.
		val := bytes.Repeat([]byte{byte('a' + i%26)}, 1<<(10+i%6))
		b := recordbatch.BuildValues(time.Now().UnixMilli(), val, val, val)
		sent := bytes.Clone(b)
		storage.Batch(sent).SetBaseOffset(next)
		storage.Batch(sent).SetPartitionLeaderEpoch(0)
		want = append(want, sent...)
		next += 3
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, int16(1-2*(i%2)), 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "pipe"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = b
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		raw.send(req, int32(i))
	}
	for i := range requests {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		if corr := raw.readResponse(resp); corr != int32(i) {
			t.Fatalf("response %d has correlation %d", i, corr)
		}
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != int64(3*i) {
			t.Fatalf("request %d: error %d base %d", i, p.ErrorCode, p.BaseOffset)
		}
	}
	req := fetchReq(13, "", id, 0, 0)
	req.MaxBytes, req.Topics[0].Partitions[0].PartitionMaxBytes = 8<<20, 8<<20
	p := onlyPartition(t, f.call(req).(*kmsg.FetchResponse))
	if !bytes.Equal(p.RecordBatches, want) {
		t.Fatalf("log holds %d bytes that differ from the %d produced", len(p.RecordBatches), len(want))
	}
}
