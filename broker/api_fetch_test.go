package broker

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFetchErrors(t *testing.T) {
	f := newPartFixture(t)
	id := f.topic("e", nil, []int32{1}, []int32{2, 1})
	now := time.Now().UnixMilli()
	for range 2 {
		f.produce(9, 1, "e", id, map[int32][]byte{0: recordbatch.BuildValues(now, []byte("a"), []byte("b"))})
	}
	// A new leader epoch (1) for partition 0, then one more batch in it.
	f.apply(&metadata.PartitionChange{TopicID: id, Partition: 0, Leader: 1})
	f.produce(9, 1, "e", id, map[int32][]byte{0: recordbatch.BuildValues(now, []byte("c"))})

	cases := []struct {
		name                   string
		version                int16
		topic                  string
		id                     [16]byte
		part                   int32
		offset                 int64
		current, lastFetched   int32
		want                   int16
		wantDiverging          bool
		wantLeader, wantHWSeen bool
	}{
		{"out of range", 12, "e", id, 0, 99, -1, -1, kerr.OffsetOutOfRange.Code, false, false, true},
		{"unknown topic", 12, "zz", id, 0, 0, -1, -1, kerr.UnknownTopicOrPartition.Code, false, false, false},
		{"unknown topic id", 13, "", [16]byte{7}, 0, 0, -1, -1, kerr.UnknownTopicID.Code, false, false, false},
		{"not leader", 12, "e", id, 1, 0, -1, -1, kerr.NotLeaderForPartition.Code, false, true, false},
		{"not leader v16 by id", 16, "", id, 1, 0, -1, -1, kerr.NotLeaderForPartition.Code, false, true, false},
		{"fenced epoch", 12, "e", id, 0, 0, 0, -1, kerr.FencedLeaderEpoch.Code, false, true, false},
		{"unknown epoch", 12, "e", id, 0, 0, 5, -1, kerr.UnknownLeaderEpoch.Code, false, false, false},
		{"current epoch", 12, "e", id, 0, 0, 1, -1, 0, false, false, true},
		{"diverging", 12, "e", id, 0, 5, 1, 0, 0, true, false, true},
		{"epoch ignored before v9", 8, "e", id, 0, 0, 0, -1, 0, false, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := fetchReq(c.version, c.topic, c.id, c.part, c.offset)
			req.Topics[0].Partitions[0].CurrentLeaderEpoch = c.current
			req.Topics[0].Partitions[0].LastFetchedEpoch = c.lastFetched
			resp := f.call(req).(*kmsg.FetchResponse)
			p := onlyPartition(t, resp)
			if p.ErrorCode != c.want {
				t.Fatalf("error %v, want %v", kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(c.want))
			}
			if c.wantDiverging != (p.DivergingEpoch.Epoch != -1) {
				t.Fatalf("DivergingEpoch %+v", p.DivergingEpoch)
			}
			if c.wantDiverging && (p.DivergingEpoch.Epoch != 0 || p.DivergingEpoch.EndOffset != 4 || len(p.RecordBatches) != 0) {
				t.Fatalf("DivergingEpoch %+v with %d bytes, want epoch 0 ending at 4 and no records", p.DivergingEpoch, len(p.RecordBatches))
			}
			if c.wantLeader {
				wantLeader := int32(2)
				if c.part == 0 {
					wantLeader = 1
				}
				if p.CurrentLeader.LeaderID != wantLeader {
					t.Fatalf("CurrentLeader %+v, want %d", p.CurrentLeader, wantLeader)
				}
				if c.version >= 16 && (len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != wantLeader) {
					t.Fatalf("NodeEndpoints %+v", resp.Brokers)
				}
			}
			if c.wantHWSeen && (p.HighWatermark != 5 || p.LogStartOffset != 0) {
				t.Fatalf("hw %d log start %d, want 5 and 0", p.HighWatermark, p.LogStartOffset)
			}
		})
	}
}

// TestFetchLongPollWakesOnAppend: a fetch at the HW with a long MaxWait is
// answered with the batch appended while it waits.
func TestFetchLongPollWakesOnAppend(t *testing.T) {
	f := newPartFixture(t)
	id := f.topic("lp", nil, []int32{1})
	consumer := dialRaw(t, f.addr)
	req := fetchReq(13, "", id, 0, 0)
	req.MaxWaitMillis, req.MinBytes = int32(testDeadline/time.Millisecond), 1
	consumer.send(req, 1)
	waitUntil(t, "the fetch to arrive", func() bool { return f.srv.Counters().RequestsFor(1, 13) == 1 })
	start := time.Now()
	f.produce(9, 1, "lp", id, map[int32][]byte{0: recordbatch.BuildValues(time.Now().UnixMilli(), []byte("wake"))})
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	consumer.readResponse(resp)
	p := onlyPartition(t, resp)
	b, err := recordbatch.Decode(p.RecordBatches)
	if err != nil || string(b.Records[0].Value) != "wake" {
		t.Fatalf("long poll answered %d bytes (%v) after %v", len(p.RecordBatches), err, time.Since(start))
	}
}

// TestFetchMaxBytes: the first batch is whole even above MaxBytes and
// PartitionMaxBytes; later partitions get nothing once the answer is full.
func TestFetchMaxBytes(t *testing.T) {
	f := newPartFixture(t)
	id := f.topic("mb", nil, []int32{1}, []int32{1})
	big := bytes.Repeat([]byte("x"), 4000)
	now := time.Now().UnixMilli()
	for range 3 {
		f.produce(9, 1, "mb", id, map[int32][]byte{0: recordbatch.BuildValues(now, big), 1: recordbatch.BuildValues(now, big)})
	}
	req := fetchReq(13, "", id, 0, 0)
	req.MaxBytes = 100
	req.Topics[0].Partitions[0].PartitionMaxBytes = 100
	p1 := req.Topics[0].Partitions[0]
	p1.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
	resp := f.call(req).(*kmsg.FetchResponse)
	ps := resp.Topics[0].Partitions
	if len(ps) != 2 {
		t.Fatalf("%d partitions answered", len(ps))
	}
	if b, err := recordbatch.Decode(ps[0].RecordBatches); err != nil || b.BaseOffset != 0 {
		t.Fatalf("first partition: want exactly its first batch whole, got %d bytes (%v)", len(ps[0].RecordBatches), err)
	}
	if len(ps[1].RecordBatches) != 0 || ps[1].HighWatermark != 3 {
		t.Fatalf("second partition: %d bytes, hw %d; want none and hw 3", len(ps[1].RecordBatches), ps[1].HighWatermark)
	}
}

func sessionFetch(v int16, id int32, epoch int32, parts map[int32]int64, forget []int32, topicID [16]byte) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.SessionID, req.SessionEpoch = v, -1, 1<<20, id, epoch
	if len(parts) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "s", topicID
		for p := int32(0); p < 8; p++ {
			if off, ok := parts[p]; ok {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = "s", topicID, forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

func answered(resp *kmsg.FetchResponse) map[int32]kmsg.FetchResponseTopicPartition {
	out := map[int32]kmsg.FetchResponseTopicPartition{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p
		}
	}
	return out
}

func TestFetchSessions(t *testing.T) {
	for _, v := range []int16{12, 13} {
		t.Run("v"+string(rune('0'+v/10))+string(rune('0'+v%10)), func(t *testing.T) {
			f := newPartFixture(t)
			id := f.topic("s", nil, []int32{1}, []int32{1}, []int32{1})
			now := time.Now().UnixMilli()
			produce := func(p int32) {
				f.produce(9, 1, "s", id, map[int32][]byte{p: recordbatch.BuildValues(now, []byte("v"))})
			}
			call := func(req *kmsg.FetchRequest) *kmsg.FetchResponse { return f.call(req).(*kmsg.FetchResponse) }
			produce(0)

			full := call(sessionFetch(v, 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0}, nil, id))
			sid := full.SessionID
			if full.ErrorCode != 0 || sid == 0 || len(answered(full)) != 3 {
				t.Fatalf("full fetch: error %d session %d, %d partitions", full.ErrorCode, sid, len(answered(full)))
			}
			// The consumer moved past the batch it got; nothing else
			// changed: an empty incremental answer.
			if got := call(sessionFetch(v, sid, 1, map[int32]int64{0: 1}, nil, id)); got.ErrorCode != 0 || got.SessionID != sid || len(answered(got)) != 0 {
				t.Fatalf("idle incremental: error %d session %d, %d partitions", got.ErrorCode, got.SessionID, len(answered(got)))
			}
			// New data in partition 1: only it is answered.
			produce(1)
			got := answered(call(sessionFetch(v, sid, 2, nil, nil, id)))
			if len(got) != 1 || len(got[1].RecordBatches) == 0 || got[1].HighWatermark != 1 {
				t.Fatalf("incremental after append: %v", got)
			}
			// Forget partition 1; data arriving there is no longer answered.
			produce(1)
			produce(2)
			got = answered(call(sessionFetch(v, sid, 3, nil, []int32{1}, id)))
			if _, ok := got[1]; ok || len(got[2].RecordBatches) == 0 {
				t.Fatalf("after forgetting 1: %v", got)
			}
			// Wrong epoch, unknown session.
			if r := call(sessionFetch(v, sid, 3, nil, nil, id)); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
				t.Fatalf("stale epoch: %v", kerr.ErrorForCode(r.ErrorCode))
			}
			if r := call(sessionFetch(v, sid+1, 1, nil, nil, id)); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
				t.Fatalf("unknown session: %v", kerr.ErrorForCode(r.ErrorCode))
			}
			// Switching between names and ids within a session is refused.
			other := int16(25 - v)
			if r := call(sessionFetch(other, sid, 4, nil, nil, id)); r.ErrorCode != kerr.FetchSessionTopicIDError.Code {
				t.Fatalf("v%d in a v%d session: %v", other, v, kerr.ErrorForCode(r.ErrorCode))
			}
			// The epoch was not consumed by the refused request; close it.
			if r := call(sessionFetch(v, sid, -1, map[int32]int64{0: 0}, nil, id)); r.ErrorCode != 0 || r.SessionID != 0 || len(answered(r)) != 1 {
				t.Fatalf("closing fetch: error %d session %d", r.ErrorCode, r.SessionID)
			}
			if r := call(sessionFetch(v, sid, 4, nil, nil, id)); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
				t.Fatalf("closed session: %v", kerr.ErrorForCode(r.ErrorCode))
			}
			if n := f.srv.parts.sessions.len(); n != 0 {
				t.Fatalf("%d sessions left", n)
			}
		})
	}
}

func TestFetchSessionCacheEviction(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newFetchSessionCache(2, time.Minute, func() time.Time { return now })
	newSession := func(parts int) int32 {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.SessionEpoch = 12, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		for p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = int32(p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		fc := c.open(req, nil)
		_, id := c.finish(&fc, make([]fetchOutcome, len(fc.targets)))
		return id
	}
	a := newSession(2)
	b := newSession(3)
	if a == 0 || b == 0 || a == b {
		t.Fatalf("sessions %d %d", a, b)
	}
	if id := newSession(2); id != 0 {
		t.Fatal("a full cache gave a session to one no bigger than the smallest")
	}
	if id := newSession(4); id == 0 || c.sessions[a] != nil {
		t.Fatal("a bigger session did not take the smallest one's slot")
	}
	now = now.Add(2 * time.Minute)
	if id := newSession(1); id == 0 || c.len() != 2 {
		t.Fatal("a stale session was not evicted for a new one")
	}
	if nextSessionEpoch(1<<31-1) != 1 {
		t.Fatal("epoch does not wrap to 1")
	}
	// No slots: no sessions, full fetches still work.
	c0 := newFetchSessionCache(0, time.Minute, time.Now)
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	fc := c0.open(req, nil)
	if _, id := c0.finish(&fc, nil); id != 0 || fc.errCode != 0 {
		t.Fatalf("zero slots: session %d error %d", id, fc.errCode)
	}
}

// TestAppendFetchResponseMatchesKmsg: the hand encoder around file regions
// writes exactly kmsg's bytes, at every version, for random responses.
func TestAppendFetchResponseMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	file, err := os.Create(filepath.Join(t.TempDir(), "regions"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var pos int64
	for iter := range 300 {
		v := int16(4 + iter%15)
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = v
		resp.ThrottleMillis, resp.ErrorCode, resp.SessionID = rng.Int32(), int16(rng.IntN(3)), rng.Int32()
		var regions [][]storage.Region
		for ti := range rng.IntN(4) {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = string(bytes.Repeat([]byte{'a' + byte(ti)}, 1+rng.IntN(300)))
			rt.TopicID = [16]byte{byte(rng.Uint32()), 1}
			var rr []storage.Region
			for pi := range rng.IntN(4) {
				p := kmsg.NewFetchResponseTopicPartition()
				p.Partition, p.ErrorCode = int32(pi), int16(rng.IntN(2))
				p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int64(), rng.Int64(), rng.Int64()
				if rng.IntN(2) == 0 {
					p.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, rng.IntN(3))
					for i := range p.AbortedTransactions {
						p.AbortedTransactions[i].ProducerID, p.AbortedTransactions[i].FirstOffset = rng.Int64(), rng.Int64()
					}
				}
				if v >= 11 {
					p.PreferredReadReplica = rng.Int32N(3) - 1
				}
				if v >= 12 && rng.IntN(2) == 0 {
					p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = rng.Int32(), rng.Int64()
				}
				if v >= 12 && rng.IntN(2) == 0 {
					p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = rng.Int32(), rng.Int32()
				}
				if v >= 12 && rng.IntN(4) == 0 {
					p.SnapshotID.EndOffset, p.SnapshotID.Epoch = rng.Int64(), rng.Int32()
				}
				var reg storage.Region
				switch rng.IntN(3) {
				case 0: // records from a file region (sizes cross the 1- and 2-byte uvarint bounds)
					data := make([]byte, 1+rng.IntN(20000))
					for i := range data {
						data[i] = byte(rng.Uint32())
					}
					if _, err := file.WriteAt(data, pos); err != nil {
						t.Fatal(err)
					}
					reg = storage.Region{File: file, Pos: pos, Len: int64(len(data))}
					pos += int64(len(data))
					p.RecordBatches = data
				case 1:
					p.RecordBatches = []byte{}
				default:
					p.RecordBatches = nil
				}
				rt.Partitions = append(rt.Partitions, p)
				rr = append(rr, reg)
			}
			resp.Topics = append(resp.Topics, rt)
			regions = append(regions, rr)
		}
		if v >= 16 && rng.IntN(2) == 0 {
			for i := range 1 + rng.IntN(3) {
				b := kmsg.NewFetchResponseBroker()
				b.NodeID, b.Host, b.Port = int32(i), "host-"+string(rune('a'+i)), rng.Int32()
				if i%2 == 0 {
					b.Rack = kmsg.StringPtr("rack")
				}
				resp.Brokers = append(resp.Brokers, b)
			}
		}
		want := resp.AppendTo(nil)
		// Encode with the region partitions' bytes withheld, as the
		// handler does.
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				if regions[ti][pi].Len > 0 {
					resp.Topics[ti].Partitions[pi].RecordBatches = []byte{}
				}
			}
		}
		var got bytes.Buffer
		if _, err := writeParts(&got, nil, appendFetchResponse(resp, regions)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("iteration %d v%d: %d bytes, kmsg writes %d", iter, v, got.Len(), len(want))
		}
		back := kmsg.NewPtrFetchResponse()
		back.Version = v
		if err := back.ReadFrom(got.Bytes()); err != nil {
			t.Fatalf("iteration %d v%d: kmsg cannot read it back: %v", iter, v, err)
		}
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkFetch measures consumer Fetch throughput (MB/s of record bytes)
// through the real server on loopback: 16 MiB in 256 KiB batches, fetched
// whole per request and sent from the segment file with sendfile.
func BenchmarkFetch(b *testing.B) {
	f := newPartFixture(b)
	id := f.topic("bench", nil, []int32{1})
	val := bytes.Repeat([]byte("x"), 1024)
	var recs [][]byte
	for range 255 {
		recs = append(recs, val)
	}
	var total int64
	for range 64 {
		batch := recordbatch.BuildValues(time.Now().UnixMilli(), recs...)
		total += int64(len(batch))
		if r := f.produce(9, 1, "bench", id, map[int32][]byte{0: batch})[0]; r.ErrorCode != 0 {
			b.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	req := fetchReq(13, "", id, 0, 0)
	req.MaxBytes = 32 << 20
	req.Topics[0].Partitions[0].PartitionMaxBytes = 32 << 20
	raw := dialRaw(b, f.addr)
	frame := encodeRequest(req, 1)
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		raw.write(frame)
		_, body, err := raw.readFrame()
		if err != nil {
			b.Fatal(err)
		}
		if int64(len(body)) < total {
			b.Fatalf("answer of %d bytes, want at least %d", len(body), total)
		}
	}
}

// TestFollowerFetchZeroCopy: a follower's Fetch (replica id 2 of a
// partition replicated on 1 and 2) is answered through the replica manager
// with the records sent from the segment file, byte for byte what was
// produced, at the version the fetcher uses and at a flexible-with-tags
// one; a fetch past the end gets no records.
func TestFollowerFetchZeroCopy(t *testing.T) {
	f := newPartFixture(t)
	id := f.topic("rep", nil, []int32{1, 2})
	var want []byte
	for i := range 3 {
		b := recordbatch.BuildValues(time.Now().UnixMilli(), bytes.Repeat([]byte{byte('a' + i)}, 3000))
		sent := bytes.Clone(b)
		storage.Batch(sent).SetBaseOffset(int64(i))
		storage.Batch(sent).SetPartitionLeaderEpoch(0)
		want = append(want, sent...)
		if r := f.produce(9, 1, "rep", id, map[int32][]byte{0: b})[0]; r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	for _, v := range []int16{12, 18} {
		req := fetchReq(v, "rep", id, 0, 0)
		req.ReplicaID = 2
		req.ReplicaState.ID, req.ReplicaState.Epoch = 2, 2
		before := sendfileBytes.Load()
		p := onlyPartition(t, f.call(req).(*kmsg.FetchResponse))
		if p.ErrorCode != 0 || !bytes.Equal(p.RecordBatches, want) {
			t.Fatalf("v%d follower fetch: error %d, %d bytes, want %d", v, p.ErrorCode, len(p.RecordBatches), len(want))
		}
		if sent := sendfileBytes.Load() - before; runtime.GOOS == "linux" && sent < int64(len(want)) {
			t.Fatalf("v%d follower fetch: %d bytes went by sendfile, want %d", v, sent, len(want))
		}
	}
	// At the end: nothing, and the follower's fetch of offset 3 moves the HW.
	req := fetchReq(12, "rep", id, 0, 3)
	req.ReplicaID = 2
	p := onlyPartition(t, f.call(req).(*kmsg.FetchResponse))
	if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 3 {
		t.Fatalf("follower fetch at the end: error %d, %d bytes, hw %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
	}
}
