package e2e

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A throttled reassignment (KIP-73, follower side): a single-replica
// partition holding 3 MiB of incompressible records moves to {1, 2} with
// `raftka reassign execute --throttle`; broker 2's copy may catch up no
// faster than the throttle allows (checked with 20% slack; unthrottled it
// takes well under a second). Once it is done, verify removes the
// throttle configs.
func TestThrottledReassignmentCatchUp(t *testing.T) {
	const (
		topic   = "throttled"
		rate    = 200 << 10 // bytes/s
		records = 3072
		size    = 1 << 10
	)
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	h := harness{Cluster: c}
	ctx := ctxFor(t, 3*time.Minute)
	cl := client(t, c)
	adm := pinned{cl.Broker(1)}
	createAssigned(t, ctx, cl, topic, map[int32][]int32{0: {1}})

	pcl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(16<<10),
		kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	for i := range records {
		v := make([]byte, size)
		_, _ = rand.Read(v)
		pcl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("record %d: %v", i, err)
			}
		})
	}
	if err := pcl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, fmt.Appendf(nil, `{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[1,2]}]}`, topic), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := cluster.Run(t, "reassign", "execute", "--bootstrap-server", c.Node(1).ClientAddr(), "--reassignment-json-file", plan, "--throttle", fmt.Sprint(rate))
	if err != nil || !strings.Contains(out, fmt.Sprintf("The inter-broker throttle limit was set to %d B/s", rate)) {
		t.Fatalf("execute: %v\n%s", err, out)
	}
	waitMoved(t, ctx, h, adm, topic, map[int32][]int32{0: {1, 2}})
	took := time.Since(start)
	bytes := float64(records * size) // the records alone: batch headers only add
	if got := bytes / took.Seconds(); got > 1.2*rate {
		t.Fatalf("copied %.0f bytes in %v: %.0f B/s, above the %d B/s throttle by more than 20%%", bytes, took, got, rate)
	}
	t.Logf("copied %.0f bytes in %v (%.0f B/s; throttle %d B/s)", bytes, took.Round(time.Millisecond), bytes/took.Seconds(), rate)

	out, err = cluster.Run(t, "reassign", "verify", "--bootstrap-server", c.Node(1).ClientAddr(), "--reassignment-json-file", plan)
	if err != nil || !strings.Contains(out, "Clearing broker-level throttles on brokers 1,2,3") || !strings.Contains(out, "Clearing topic-level throttles on topic "+topic) {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	// Every broker's image shows the deletes within moments.
	kadmc := kadm.NewClient(cl)
	cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
		tc, err := kadmc.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		for _, rc := range tc {
			for _, cfg := range rc.Configs {
				if cfg.Key == "follower.replication.throttled.replicas" && cfg.Value != nil && *cfg.Value != "" {
					return false, fmt.Sprintf("topic still throttles %q after verify", *cfg.Value)
				}
			}
		}
		bc, err := kadmc.DescribeBrokerConfigs(ctx, 2)
		if err != nil {
			return false, err.Error()
		}
		for _, rc := range bc {
			for _, cfg := range rc.Configs {
				if cfg.Key == "follower.replication.throttled.rate" && cfg.Source == 1 { // DYNAMIC_BROKER_CONFIG
					return false, fmt.Sprintf("broker 2 still has a dynamic throttle %v after verify", cfg.MaybeValue())
				}
			}
		}
		return true, ""
	})
}
