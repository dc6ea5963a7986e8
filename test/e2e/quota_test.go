package e2e

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A producer with a 1 MiB/s producer_byte_rate quota (by client id) is
// throttled: it sees throttle_time_ms, and over 20 s its achieved rate is
// within 10% of the quota, while a client beside it without a quota
// produces well above it; then a consumer with a 1 MiB/s
// consumer_byte_rate reads the backlog at about its quota.
func TestClientQuotasThrottleProduceAndFetch(t *testing.T) {
	c := cluster.Start(t, cluster.Nodes(1))
	seeds := strings.Split(c.Bootstrap(), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "quota"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	const quota = 1 << 20
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr("throttled")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quota}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter quotas: %v %+v", err, res)
	}

	var mu sync.Mutex
	throttled, throttledMs := 0, int64(0)
	hook := throttleHook{fn: func(ms int32) {
		mu.Lock()
		throttled++
		throttledMs += int64(ms)
		mu.Unlock()
	}}
	producer := func(id string, hooks ...kgo.Hook) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID(id), kgo.DefaultProduceTopic("quota"),
			kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0),
			// The quota counts bytes as sent; uncompressed, those are the values'.
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.WithHooks(hooks...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	value := make([]byte, 64<<10)
	for i := range value {
		value[i] = byte(i * 7)
	}
	run := func(cl *kgo.Client, d time.Duration) float64 {
		var sent int64
		var wg sync.WaitGroup
		var smu sync.Mutex
		start := time.Now()
		for time.Since(start) < d && ctx.Err() == nil {
			// A bounded number in flight: the producer buffers, the
			// broker's throttle paces it.
			if cl.BufferedProduceRecords() > 16 {
				time.Sleep(time.Millisecond)
				continue
			}
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err == nil {
					smu.Lock()
					sent += int64(len(r.Value))
					smu.Unlock()
				}
			})
		}
		elapsed := time.Since(start)
		wg.Wait()
		return float64(sent) / elapsed.Seconds()
	}
	slow, fast := producer("throttled", hook), producer("free")
	var slowRate, fastRate float64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); slowRate = run(slow, 20*time.Second) }()
	go func() { defer wg.Done(); fastRate = run(fast, 5*time.Second) }()
	wg.Wait()
	t.Logf("throttled client %.0f B/s (quota %d), free client %.0f B/s, %d throttled answers, %d ms in all", slowRate, quota, fastRate, throttled, throttledMs)
	if throttled == 0 {
		t.Error("the throttled client never saw throttle_time_ms")
	}
	if math.Abs(slowRate-quota)/quota > 0.1 {
		t.Errorf("throttled client achieved %.0f B/s, want within 10%% of %d", slowRate, quota)
	}
	if fastRate < 2*quota {
		t.Errorf("the client without a quota achieved only %.0f B/s", fastRate)
	}

	// consumer_byte_rate: a consumer reading the backlog the producers
	// left is held to its quota as well.
	res, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr("reader")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: quota}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter quotas: %v %+v", err, res)
	}
	reader, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("reader"), kgo.ConsumeTopics("quota"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(256<<10), kgo.FetchMaxPartitionBytes(256<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	var read int64
	start := time.Now()
	for time.Since(start) < 10*time.Second && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := reader.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { read += int64(len(r.Value)) })
	}
	readRate := float64(read) / time.Since(start).Seconds()
	t.Logf("consumer with a quota read %.0f B/s", readRate)
	if math.Abs(readRate-quota)/quota > 0.15 {
		t.Errorf("consumer achieved %.0f B/s, want about %d", readRate, quota)
	}
}

// throttleHook reports each throttle a broker asked for.
type throttleHook struct{ fn func(int32) }

func (h throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, throttleInterval time.Duration, _ bool) {
	h.fn(int32(throttleInterval / time.Millisecond))
}
