package broker

import (
	"bytes"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkMetadataPipelined measures a loopback round trip of Metadata v12
// for one topic, five requests in flight on one connection, through the
// whole server path (frame, decode, handler, ordered writer).
func BenchmarkMetadataPipelined(b *testing.B) {
	_, addr := startServer(b, defaultAPIs, fuzzOptions(b))
	rc := dialRaw(b, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("orders")
	req.Topics = append(req.Topics, rt)
	frame := encodeRequest(req, 1)
	const inflight = 5
	b.ReportAllocs()
	b.ResetTimer()
	sent, recv := 0, 0
	for recv < b.N {
		for sent < b.N && sent-recv < inflight {
			if _, err := rc.c.Write(frame); err != nil {
				b.Fatal(err)
			}
			sent++
		}
		if _, _, err := rc.readFrame(); err != nil {
			b.Fatal(err)
		}
		recv++
	}
}

// BenchmarkProduce measures Produce through the whole server path on
// loopback (frame read, decode, append to a real log, acks=all on RF=1,
// ordered writer) the way a busy producer drives it: six partitions of one
// batch each per request, five requests in flight. The batches are the
// same bytes every time (no producer id, so the log accepts repeats).
func BenchmarkProduce(b *testing.B) {
	for _, c := range []struct {
		name       string
		recordSize int
		records    int
	}{
		{"1KiBx64", 1024, 64},
		{"100Bx500", 100, 500},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := newPartFixture(b)
			const partitions = 6
			var reps [][]int32
			for range partitions {
				reps = append(reps, []int32{1})
			}
			f.topic("bench", nil, reps...)
			val := bytes.Repeat([]byte("v"), c.recordSize)
			var vals [][]byte
			for range c.records {
				vals = append(vals, val)
			}
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "bench"
			var perReq int64
			for p := range int32(partitions) {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition, rp.Records = p, recordbatch.BuildValues(time.Now().UnixMilli(), vals...)
				perReq += int64(len(rp.Records))
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			frame := encodeRequest(req, 1)
			raw := dialRaw(b, f.addr)
			const inflight = 5
			b.SetBytes(perReq)
			b.ReportAllocs()
			b.ResetTimer()
			sent, recv := 0, 0
			for recv < b.N {
				for sent < b.N && sent-recv < inflight {
					raw.write(frame)
					sent++
				}
				if _, _, err := raw.readFrame(); err != nil {
					b.Fatal(err)
				}
				recv++
			}
		})
	}
}

// BenchmarkProduceToFetch measures the end-to-end path one record takes at
// low rate (what bench e2e's latency is made of): a consumer's Fetch waits
// at the end of the log in the purgatory, a producer sends one small batch
// with acks=all, and an op ends when both the produce answer and the
// consumer's fetch answer holding the record have arrived.
func BenchmarkProduceToFetch(b *testing.B) {
	f := newPartFixture(b)
	id := f.topic("e2e", nil, []int32{1})
	producer, consumer := dialRaw(b, f.addr), dialRaw(b, f.addr)
	preq := kmsg.NewPtrProduceRequest()
	preq.Version, preq.Acks, preq.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "e2e"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = recordbatch.BuildValues(time.Now().UnixMilli(), bytes.Repeat([]byte("v"), 100))
	rt.Partitions = append(rt.Partitions, rp)
	preq.Topics = append(preq.Topics, rt)
	pframe := encodeRequest(preq, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// The fetch waits at the log end before the record is sent, off
		// the clock.
		b.StopTimer()
		freq := fetchReq(13, "", id, 0, int64(i))
		freq.MaxWaitMillis, freq.MinBytes = 10000, 1
		consumer.send(freq, int32(i))
		waitTB(b, "the fetch to arrive", func() bool { return f.srv.Counters().RequestsFor(1, 13) == uint64(i+1) })
		b.StartTimer()
		producer.write(pframe)
		if _, _, err := producer.readFrame(); err != nil {
			b.Fatal(err)
		}
		if _, body, err := consumer.readFrame(); err != nil || len(body) < len(rp.Records) {
			b.Fatalf("fetch answered %d bytes, %v", len(body), err)
		}
	}
}
