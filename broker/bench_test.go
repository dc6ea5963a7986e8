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
