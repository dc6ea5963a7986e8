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
	// Both sides, as kafka-reassign-partitions.sh sets them: the leader's
	// current replica and the one being added, and both rates on both
	// brokers.
	kadmc := kadm.NewClient(cl)
	if tc, err := kadmc.DescribeTopicConfigs(ctx, topic); err != nil {
		t.Fatal(err)
	} else {
		got := map[string]string{}
		for _, rc := range tc {
			for _, cfg := range rc.Configs {
				got[cfg.Key] = cfg.MaybeValue()
			}
		}
		if got["leader.replication.throttled.replicas"] != "0:1" || got["follower.replication.throttled.replicas"] != "0:2" {
			t.Fatalf("topic throttle lists after execute: leader %q follower %q, want 0:1 and 0:2", got["leader.replication.throttled.replicas"], got["follower.replication.throttled.replicas"])
		}
	}
	for _, b := range []int32{1, 2} {
		bc, err := kadmc.DescribeBrokerConfigs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range bc {
			for _, cfg := range rc.Configs {
				if (cfg.Key == "leader.replication.throttled.rate" || cfg.Key == "follower.replication.throttled.rate") && cfg.MaybeValue() != fmt.Sprint(rate) {
					t.Fatalf("broker %d %s = %q after execute, want %d", b, cfg.Key, cfg.MaybeValue(), rate)
				}
			}
		}
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
	cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
		tc, err := kadmc.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		for _, rc := range tc {
			for _, cfg := range rc.Configs {
				if (cfg.Key == "follower.replication.throttled.replicas" || cfg.Key == "leader.replication.throttled.replicas") && cfg.Value != nil && *cfg.Value != "" {
					return false, fmt.Sprintf("topic still throttles %q after verify", *cfg.Value)
				}
			}
		}
		for _, b := range []int32{1, 2} {
			bc, err := kadmc.DescribeBrokerConfigs(ctx, b)
			if err != nil {
				return false, err.Error()
			}
			for _, rc := range bc {
				for _, cfg := range rc.Configs {
					if (cfg.Key == "follower.replication.throttled.rate" || cfg.Key == "leader.replication.throttled.rate") && cfg.Source == 1 { // DYNAMIC_BROKER_CONFIG
						return false, fmt.Sprintf("broker %d still has a dynamic %s %v after verify", b, cfg.Key, cfg.MaybeValue())
					}
				}
			}
		}
		return true, ""
	})
}

// The leader side alone (KIP-73): broker 1 leads a single-replica
// partition of 3 MiB and has leader.replication.throttled.rate with the
// topic's leader.replication.throttled.replicas naming its replica; a
// move to {1, 2} without any follower throttle copies within 20% of the
// leader's rate, because the leader answers the new follower's fetches
// empty once over its quota.
func TestLeaderThrottledReassignment(t *testing.T) {
	const (
		topic   = "leader-throttled"
		rate    = 200 << 10 // bytes/s
		records = 3072
		size    = 1 << 10
	)
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	h := harness{Cluster: c}
	ctx := ctxFor(t, 3*time.Minute)
	cl := client(t, c)
	adm := pinned{cl.Broker(1)}
	kadmc := kadm.NewClient(cl)
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
	rs, list := fmt.Sprint(rate), "0:1"
	if err := configsErrE2E(kadmc.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "leader.replication.throttled.rate", Value: &rs}}, 1)); err != nil {
		t.Fatal(err)
	}
	if err := configsErrE2E(kadmc.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: &list}}, topic)); err != nil {
		t.Fatal(err)
	}
	// The configs reach broker 1's image through the metadata log; a
	// moment for that before the move starts.
	cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
		bc, err := kadmc.DescribeBrokerConfigs(ctx, 1)
		if err != nil {
			return false, err.Error()
		}
		for _, rc := range bc {
			for _, cfg := range rc.Configs {
				if cfg.Key == "leader.replication.throttled.rate" && cfg.MaybeValue() == rs {
					return true, ""
				}
			}
		}
		return false, "broker 1 does not show the leader throttle yet"
	})
	start := time.Now()
	alter(t, ctx, adm, topic, map[int32][]int32{0: {1, 2}})
	waitMoved(t, ctx, h, adm, topic, map[int32][]int32{0: {1, 2}})
	took := time.Since(start)
	bytes := float64(records * size)
	got := bytes / took.Seconds()
	t.Logf("copied %.0f bytes in %v (%.0f B/s; leader throttle %d B/s)", bytes, took.Round(time.Millisecond), got, rate)
	if got > 1.2*rate || got < 0.8*rate {
		t.Fatalf("copied at %.0f B/s, not within 20%% of the %d B/s leader throttle", got, rate)
	}
}

func configsErrE2E(resp kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range resp {
		if r.Err != nil {
			return fmt.Errorf("%s: %w %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	return nil
}
