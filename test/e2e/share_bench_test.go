package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkShareQueue is the queue-throughput figure of share groups: a
// 6-partition RF=3 topic on three nodes holding records of 1 KiB is
// drained by a share group of 1, 3 and 10 members acknowledging every
// record on its own (accept), and, in the same run, read by a classic
// consumer group. It reports records/s accepted (until every record's
// acknowledgement is answered), the ratio to the consumer group's
// records/s, the p99 of the acknowledgement latency (from a record's Ack to
// the broker's answer for its partition), and the metadata Raft entries
// per 1,000 acknowledgements (the share-partition writes are coalesced).
//
// The backlog is 600,000 records (RAFTKA_SHARE_BENCH_RECORDS), 600 MB: with
// 120,000 a share group drained it in 0.27-0.93 s and the classic group in
// 0.07-0.15 s, so each figure was mostly fixed costs, the group's start and
// the last acknowledgements' wait. franz-go sends a member's
// acknowledgements with its next ShareFetch, which long-polls
// (FetchMaxWait, 500 ms) once the queue is empty, so the last answers come
// about 500 ms after the drain: that is the ack p99 of a short run, and a
// run must be long for it to be a small part of the rate.
func BenchmarkShareQueue(b *testing.B) {
	const topic, parts, size = "queue-bench", 6, 1024
	records := int64(invariants.EnvInt(b, "RAFTKA_SHARE_BENCH_RECORDS", 600000))
	// RAFTKA_SHARE_PROFILE=dir: a CPU profile of each node over the first
	// seconds of every share group run (dir/members-N.node-ID.pprof), for
	// finding where the queue's time goes.
	profDir := os.Getenv("RAFTKA_SHARE_PROFILE")
	opts := []cluster.Opt{cluster.Nodes(3), cluster.LogLevel("warn")}
	if profDir != "" {
		opts = append(opts, cluster.Override("metrics.pprof.enable", "true"))
	}
	c := cluster.Start(b, opts...)
	ctx := ctxFor(b, 15*time.Minute)
	cl := spreadingProducer(b, c)
	adm := kadm.NewClient(cl)
	if err := createTopic(ctx, adm, topic, parts, 3); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, size)
	for i := range records {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Errorf("produce: %v", err)
			}
		})
		if i%5000 == 4999 {
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}

	classicRate := func() float64 {
		group := fmt.Sprintf("bench-classic-%d", time.Now().UnixNano())
		cc, err := kgo.NewClient(kgo.SeedBrokers(seedAddrs(c)...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		n, start := 0, time.Now()
		for int64(n) < records && ctx.Err() == nil {
			n += cc.PollFetches(ctx).NumRecords()
		}
		return float64(n) / time.Since(start).Seconds()
	}
	for _, members := range []int{1, 3, 10} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) {
			for range b.N {
				group := fmt.Sprintf("bench-share-%d-%d", members, time.Now().UnixNano())
				if err := setGroupConfig(ctx, cl, group, "share.auto.offset.reset", "earliest"); err != nil {
					b.Fatal(err)
				}
				raftBefore := metadataHW(ctx, b, cl)
				var accepted, answered atomic.Int64
				var latMu sync.Mutex
				var lats []time.Duration
				mctx, stop := context.WithCancel(ctx)
				var wg sync.WaitGroup
				if profDir != "" {
					for _, n := range c.Nodes() {
						wg.Add(1)
						go func() {
							defer wg.Done()
							cpuProfile(ctx, b, n.MetricsAddr(), filepath.Join(profDir, fmt.Sprintf("members-%d.node-%d.pprof", members, n.ID())))
						}()
					}
				}
				start := time.Now()
				for i := range members {
					wg.Add(1)
					go func() {
						defer wg.Done()
						// The oldest unanswered Ack per partition, for the latency.
						var pendMu sync.Mutex
						pending := map[int32]time.Time{}
						mc, err := kgo.NewClient(kgo.SeedBrokers(seedAddrs(c)...), kgo.ClientID(fmt.Sprintf("bench-%d", i)),
							kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond),
							kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
								now := time.Now()
								for _, r := range rs {
									pendMu.Lock()
									at, ok := pending[r.Partition]
									delete(pending, r.Partition)
									pendMu.Unlock()
									if ok {
										latMu.Lock()
										lats = append(lats, now.Sub(at))
										latMu.Unlock()
									}
								}
								answered.Add(1)
							}))
						if err != nil {
							b.Error(err)
							return
						}
						defer mc.Close()
						for mctx.Err() == nil {
							fs := mc.PollFetches(mctx)
							now := time.Now()
							fs.EachRecord(func(r *kgo.Record) {
								pendMu.Lock()
								if _, ok := pending[r.Partition]; !ok {
									pending[r.Partition] = now
								}
								pendMu.Unlock()
								r.Ack(kgo.AckAccept)
								accepted.Add(1)
							})
							if accepted.Load() >= records {
								fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
								_ = mc.FlushAcks(fctx)
								cancel()
							}
						}
					}()
				}
				for accepted.Load() < records && ctx.Err() == nil {
					time.Sleep(10 * time.Millisecond)
				}
				// Every acknowledgement answered: the group's lag is 0.
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
					d, err := adm.DescribeShareGroupOffsets(ctx, group)
					var lag int64
					if err == nil {
						for _, o := range d[group].Offsets.Sorted() {
							lag += max(o.Lag, 0)
						}
					}
					if err == nil && lag == 0 && len(d[group].Offsets[topic]) == parts {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("lag %d after a minute (%v)", lag, err)
					}
				}
				elapsed := time.Since(start)
				stop()
				wg.Wait()
				if profDir != "" {
					for _, n := range c.Nodes() {
						b.Logf("node %d: %s", n.ID(), shareFetchTimes(ctx, n.MetricsAddr()))
					}
				}
				raftEntries := metadataHW(ctx, b, cl) - raftBefore
				classic := classicRate()
				rate := float64(records) / elapsed.Seconds()
				slices.Sort(lats)
				p50, p99 := time.Duration(0), time.Duration(0)
				if len(lats) > 0 {
					p50, p99 = lats[len(lats)/2], lats[len(lats)*99/100]
				}
				b.ReportMetric(rate, "accepted/s")
				b.ReportMetric(rate/classic, "x_consumer_group")
				b.ReportMetric(float64(p50.Microseconds())/1000, "ack_p50_ms")
				b.ReportMetric(float64(p99.Microseconds())/1000, "ack_p99_ms")
				b.ReportMetric(float64(raftEntries)*1000/float64(records), "raft_entries/1k_acks")
				b.Logf("%d members: %d records accepted in %v (%.0f/s; consumer group %.0f/s, %.2fx); ack p50 %v, p99 %v over %d answers; %d metadata Raft entries (%.1f per 1,000 acknowledgements)",
					members, records, elapsed.Round(time.Millisecond), rate, classic, rate/classic, p50, p99, len(lats), raftEntries, float64(raftEntries)*1000/float64(records))
			}
		})
	}
}

// cpuProfile writes a 2 s CPU profile of the node serving /debug/pprof/
// on addr to path.
func cpuProfile(ctx context.Context, b *testing.B, addr, path string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/profile?seconds=2", nil)
	if err != nil {
		b.Error(err)
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Errorf("profile of %s: %v", addr, err)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(path, body, 0o644)
	}
	if err != nil {
		b.Errorf("profile of %s: %v", addr, err)
	}
}

// shareFetchTimes is a node's ShareFetch count and mean time since it
// started, from its /metrics.
func shareFetchTimes(ctx context.Context, addr string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var sum, count float64
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case `raftka_request_total_time_seconds_sum{request="ShareFetch"}`:
			sum = v
		case `raftka_request_total_time_seconds_count{request="ShareFetch"}`:
			count = v
		}
	}
	if count == 0 {
		return "no ShareFetch"
	}
	return fmt.Sprintf("%.0f ShareFetch, mean %.1f ms", count, sum/count*1000)
}

// metadataHW is the metadata log's high watermark (DescribeQuorum), to
// count the Raft entries a run cost.
func metadataHW(ctx context.Context, b *testing.B, cl *kgo.Client) int64 {
	b.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		b.Fatalf("DescribeQuorum: %v", err)
	}
	return resp.Topics[0].Partitions[0].HighWatermark
}
