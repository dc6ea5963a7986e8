package broker

import (
	"testing"

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
