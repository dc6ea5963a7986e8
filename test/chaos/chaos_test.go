//go:build long

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
)

// harness adapts a test/cluster Cluster to invariants.Harness.
type harness = cluster.ByID

func judge(t *testing.T, h harness, topic, what string, r invariants.Report) {
	t.Helper()
	t.Logf("%s: %v", what, r)
	if !r.OK() {
		t.Errorf("%s: invariants broken: %v", what, r)
		invariants.LogSuspects(t, h, topic, r)
	}
	if r.Acknowledged == 0 {
		t.Errorf("%s: nothing was acknowledged", what)
	}
}

// Issue 5's failover under load, 50 rounds (RAFTKA_CHAOS_FAILOVER_ROUNDS).
func TestChaosFailover(t *testing.T) {
	rounds := invariants.EnvInt(t, "RAFTKA_CHAOS_FAILOVER_ROUNDS", 50)
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"),
		cluster.Override("default.replication.factor", "3"),
		cluster.Override("min.insync.replicas", "2"))
	h := harness{Cluster: c}
	r := invariants.Failover(t, h, invariants.FailoverConfig{Topic: "failover", Partitions: 6, Rounds: rounds})
	judge(t, h, "failover", "failover", r)
}

// A soak: RAFTKA_CHAOS_SOAK_STEPS steps (30 by default), each picking a
// random node and a random fault: SIGKILL then restart, SIGSTOP then
// SIGCONT, or SIGTERM then restart. Each fault lasts until every partition
// has acknowledged writes again without the node; after each step the
// cluster must return to full ISRs. Two idempotent acks=all producers and a
// consumer run throughout; at the end nothing acknowledged may be lost or
// duplicated, and the consumer must have read nothing that later vanished.
func TestChaosSoak(t *testing.T) {
	steps := invariants.EnvInt(t, "RAFTKA_CHAOS_SOAK_STEPS", 30)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RAFTKA_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RAFTKA_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("soak: %d steps, seed %d (RAFTKA_CHAOS_SEED to repeat the choices)", steps, seed)
	rng := rand.New(rand.NewPCG(seed, 0xc4a05))

	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"),
		cluster.Override("min.insync.replicas", "2"),
		cluster.Override("replica.lag.time.max.ms", "3000"),
		cluster.Override("leader.imbalance.check.interval.seconds", "2"))
	h := harness{Cluster: c}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(steps)*3*time.Minute)
	defer cancel()
	const topic, partitions = "soak", 6
	invariants.WaitFor(t, time.Minute, func() (bool, string) {
		err := invariants.CreateTopic(ctx, h.Seeds(), topic, partitions, 3, nil)
		return err == nil, fmt.Sprint(err)
	})
	invariants.WaitFor(t, time.Minute, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })

	cons, err := invariants.StartConsumer(h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var rec invariants.Recorder
	var prods []*invariants.Producer
	for i := range 2 {
		p, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: h.Seeds(), Topic: topic, Partitions: partitions,
			Name: fmt.Sprintf("soak%d", i), Rate: 150, MaxRecords: 150 * 180 * steps}, &rec)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Stop(5 * time.Second)
		prods = append(prods, p)
	}
	flowing := func(since time.Time) func() (bool, string) {
		return func() (bool, string) {
			for p := range int32(partitions) {
				if rec.CountSince(p, since) == 0 {
					failed, lastErr := rec.Failed()
					return false, fmt.Sprintf("partition %d: no acknowledgement since %v (%d failed, last %v)", p, since.Format("15:04:05.000"), failed, lastErr)
				}
			}
			return true, ""
		}
	}
	invariants.WaitFor(t, time.Minute, flowing(time.Now()))

	for step := range steps {
		n := c.Node(int32(1 + rng.IntN(3)))
		from := time.Now()
		var fault string
		switch rng.IntN(3) {
		case 0:
			fault = "SIGKILL"
			n.Kill()
			invariants.WaitFor(t, time.Minute, flowing(time.Now()))
			n.Restart()
		case 1:
			fault = "SIGSTOP"
			n.Stop()
			invariants.WaitFor(t, time.Minute, flowing(time.Now()))
			n.Cont()
		default:
			fault = "SIGTERM"
			n.Term()
			invariants.WaitFor(t, time.Minute, flowing(time.Now()))
			n.Restart()
		}
		invariants.WaitFor(t, 2*time.Minute, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })
		stall, _ := invariants.LongestStall(rec.Acks(), from, time.Now())
		t.Logf("step %d: %s node %d: healed after %v, longest produce stall %v", step+1, fault, n.ID(),
			time.Since(from).Round(time.Millisecond), stall.Round(time.Millisecond))
	}

	for _, p := range prods {
		if _, err := p.Stop(time.Minute); err != nil {
			t.Error(err)
		}
	}
	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	acks := rec.Acks()
	judge(t, h, topic, "soak, final read", invariants.Check(acks, read))
	_, end, err := invariants.EndOffsets(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	invariants.WaitFor(t, time.Minute, func() (bool, string) { return cons.Reached(end) })
	seen := cons.Records()
	judge(t, h, topic, "soak, live consumer", invariants.Check(acks, seen))
	if gone := invariants.Vanished(seen, read); len(gone) > 0 {
		t.Errorf("the consumer read %d records that later vanished, first %+v", len(gone), gone[0])
	}
}
