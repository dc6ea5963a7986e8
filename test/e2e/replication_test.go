package e2e

// Issue 5's replication tests: real processes, real clients, faults by
// signal, and the checkers of test/invariants as the judge. Each is bounded
// in time; together they take a few minutes.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produced is a broker's answer for one partition of a Produce.
type produced struct {
	Err  error // the partition's error code, nil for none
	Base int64
}

// rawProduce sends one Produce (v9, by topic name) of values to exactly
// addr and returns the partition's answer. A context that ends before the
// answer comes is returned as err.
func rawProduce(ctx context.Context, addr, topic string, partition int32, acks int16, timeout time.Duration, values ...string) (produced, error) {
	var vs [][]byte
	for _, v := range values {
		vs = append(vs, []byte(v))
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = acks
	req.TimeoutMillis = int32(timeout / time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = recordbatch.BuildValues(time.Now().UnixMilli(), vs...)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := invariants.RawRequest(ctx, addr, req)
	if err != nil {
		return produced{}, err
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return produced{}, fmt.Errorf("produce answer has %d topics", len(pr.Topics))
	}
	p := pr.Topics[0].Partitions[0]
	return produced{Err: kerr.ErrorForCode(p.ErrorCode), Base: p.BaseOffset}, nil
}

// produceAcked starts an idempotent acks=all producer on topic and waits
// until n more records are acknowledged; it returns the stopped producer's
// acknowledgements.
func produceAcked(t *testing.T, h harness, topic string, partitions int32, name string, n int) []invariants.Ack {
	t.Helper()
	var rec invariants.Recorder
	p, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: h.Seeds(), Topic: topic, Partitions: partitions,
		Name: name, Rate: 500, MaxRecords: n}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		failed, lastErr := rec.Failed()
		return rec.Count() == n, fmt.Sprintf("%d of %d acknowledged, %d failed (last %v)", rec.Count(), n, failed, lastErr)
	})
	if _, err := p.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	return rec.Acks()
}

// Failover under load: SIGKILL the leader of a random partition, wait for
// a new leader and for acknowledgements to flow, restart it, wait for the
// full ISR; RAFTKA_FAILOVER_ROUNDS rounds (5 by default). Every
// acknowledged record is then read exactly once, in order.
func TestReplicationFailoverUnderLoad(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	rounds := invariants.EnvInt(t, "RAFTKA_FAILOVER_ROUNDS", 5)
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"),
		cluster.Override("default.replication.factor", "3"),
		cluster.Override("min.insync.replicas", "2"))
	r := invariants.Failover(t, harness{Cluster: c}, invariants.FailoverConfig{Topic: "failover", Partitions: 6, Rounds: rounds})
	checkReport(t, harness{Cluster: c}, "failover", "failover", r)
}

// Failover under load with SASL_SSL on every listener, the controller
// listener included, and the authorizer on: a SIGKILLed leader's
// replacement is elected, and the restarted node rejoins every ISR,
// through TLS and SCRAM.
func TestReplicationFailoverUnderLoadSASLSSL(t *testing.T) {
	rounds := invariants.EnvInt(t, "RAFTKA_FAILOVER_ROUNDS", 3)
	sc := startSASLSSLCluster(t, cluster.Override("default.replication.factor", "3"), cluster.Override("min.insync.replicas", "2"))
	h := harness{Cluster: sc.c}
	r := invariants.Failover(t, h, invariants.FailoverConfig{Topic: "failover", Partitions: 6, Rounds: rounds})
	checkReport(t, h, "failover", "failover over SASL_SSL", r)
}

// Divergence: a leader takes acks=1 writes its followers never fetch (they
// are frozen), then dies. The followers, still in the ISR (the lag time is
// long), elect one of themselves cleanly and take more writes. The old
// leader returns and must truncate its unreplicated suffix by leader epoch:
// after a clean stop all three replicas hold byte-identical batches below
// the high watermark.
func TestReplicationDivergenceTruncatedOnReturn(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"),
		cluster.TermTimeout(60*time.Second),
		cluster.Override("replica.lag.time.max.ms", "60000"),
		cluster.Override("auto.leader.rebalance.enable", "false"),
		cluster.Override("min.insync.replicas", "2"))
	h := harness{Cluster: c}
	ctx := ctxFor(t, 4*time.Minute)
	const topic = "diverge"
	if err := invariants.CreateTopic(ctx, h.Seeds(), topic, 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, 1) })
	acked := produceAcked(t, h, topic, 1, "before", 50)

	st := partitionState(t, ctx, h, topic, 0)
	leader, followers := st.Leader, st.Followers()
	t.Logf("partition 0: leader %d, followers %v, epoch %d", leader, followers, st.LeaderEpoch)
	for _, f := range followers {
		c.Node(f).Stop()
	}
	var lonely []int64
	for i := range 5 {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := rawProduce(pctx, c.Node(leader).ClientAddr(), topic, 0, 1, 5*time.Second,
			fmt.Sprintf("acks1-%d-a", i), fmt.Sprintf("acks1-%d-b", i))
		cancel()
		if err != nil || res.Err != nil {
			t.Fatalf("acks=1 produce %d to the leader while its followers are frozen: %v / %v", i, err, res.Err)
		}
		lonely = append(lonely, res.Base)
	}
	t.Logf("leader %d acknowledged acks=1 batches at offsets %v that no follower fetched", leader, lonely)

	c.Node(leader).Kill()
	for _, f := range followers {
		c.Node(f).Cont()
	}
	var newLeader int32
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		all, _, err := invariants.StateFrom(ctx, h, topic, leader)
		if err != nil {
			return false, err.Error()
		}
		s := all[0]
		newLeader = s.Leader
		return slices.Contains(followers, s.Leader), fmt.Sprintf("partition 0: %+v", s)
	})
	t.Logf("node %d leads partition 0 after node %d died", newLeader, leader)
	acked = append(acked, produceAcked(t, h, topic, 1, "after", 50)...)

	c.Node(leader).Restart()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, 1) })
	acked = append(acked, produceAcked(t, h, topic, 1, "rejoined", 20)...)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, 1) })

	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, h, topic, "divergence", invariants.Check(acked, read))
	survived := 0
	for _, r := range read {
		if len(r.Value) > 5 && string(r.Value[:5]) == "acks1" {
			survived++
		}
	}
	t.Logf("%d of the 10 acks=1 records the old leader alone held survived (Kafka allows losing them)", survived)
	_, end, err := invariants.EndOffsets(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}

	// A clean stop of every node, then the files. The last one has no
	// quorum to confirm its controlled shutdown and waits that out.
	for _, n := range c.Nodes() {
		from := time.Now()
		n.Term()
		t.Logf("node %d: SIGTERM exit after %v", n.ID(), time.Since(from).Round(time.Millisecond))
	}
	hw := end[0]
	logs := map[int32]invariants.PartitionLog{}
	for _, n := range c.Nodes() {
		cp, err := invariants.HighWatermarks(n.DataDir())
		if err != nil {
			t.Fatalf("node %d: %v", n.ID(), err)
		}
		ckpt, ok := cp[storage.TopicPartition{Topic: topic, Partition: 0}]
		t.Logf("node %d: checkpointed high watermark %d (present %v)", n.ID(), ckpt, ok)
		hw = max(hw, ckpt)
		l, err := invariants.ReadPartitionLog(n.DataDir(), topic, 0)
		if err != nil {
			t.Fatalf("node %d: %v", n.ID(), err)
		}
		logs[n.ID()] = l
	}
	for id, l := range logs {
		if l.End() != hw {
			t.Errorf("node %d: log ends at %d, high watermark %d (every replica was in the ISR and writes had stopped)", id, l.End(), hw)
		}
	}
	if div := invariants.CompareReplicas(logs, hw); len(div) > 0 {
		t.Errorf("replicas diverge below the high watermark %d:", hw)
		for _, d := range div {
			t.Errorf("  %v", d)
		}
	}
	t.Logf("divergence: %d batches below high watermark %d compared on %d replicas", len(logs[1].Batches), hw, len(logs))
}

// ISR: a frozen follower leaves the ISR within the lag time (plus the
// controller's round trip), acks=all writes with min.insync.replicas=2 flow
// meanwhile, and the thawed follower returns to the ISR.
func TestReplicationISRShrinkAndExpand(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const lag = 3 * time.Second
	const topic, partitions = "isr", 3
	c, h, ctx := startLagCluster(t, lag, topic, partitions)

	var rec invariants.Recorder
	prod, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: h.Seeds(), Topic: topic, Partitions: partitions,
		Name: "isr", Rate: 200, MaxRecords: 40_000}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Stop(5 * time.Second)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) { return rec.Count() >= 20, fmt.Sprintf("%d acknowledged", rec.Count()) })

	st := partitionState(t, ctx, h, topic, 0)
	victim := st.Followers()[0]
	c.Node(victim).Stop()
	frozen := time.Now()
	// Every partition has the victim as a replica (RF=3 on three nodes).
	var left time.Duration
	cluster.WaitFor(t, lag+15*time.Second, func() (bool, string) {
		all, _, err := invariants.StateFrom(ctx, h, topic, victim)
		if err != nil {
			return false, err.Error()
		}
		for p, s := range all {
			if s.InISR(victim) {
				return false, fmt.Sprintf("partition %d ISR %v still holds frozen node %d after %v", p, s.ISR, victim, time.Since(frozen).Round(time.Millisecond))
			}
			if len(s.ISR) < 2 {
				return false, fmt.Sprintf("partition %d ISR %v", p, s.ISR)
			}
		}
		left = time.Since(frozen)
		return true, ""
	})
	shrunk := time.Now()
	// acks=all writes keep flowing to every partition with two in sync.
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		for p := range int32(partitions) {
			if n := rec.CountSince(p, shrunk); n < 10 {
				failed, lastErr := rec.Failed()
				return false, fmt.Sprintf("partition %d: %d acknowledged since the ISR shrank (%d failed, last %v)", p, n, failed, lastErr)
			}
		}
		return true, ""
	})
	c.Node(victim).Cont()
	thawed := time.Now()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })
	back := time.Since(thawed)
	stall, at := invariants.LongestStall(rec.Acks(), frozen, time.Now())

	if _, err := prod.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, h, topic, "isr", invariants.Check(rec.Acks(), read))
	t.Logf("SIGSTOP node %d: out of every ISR after %v (lag time %v); SIGCONT: back in every ISR after %v; longest produce stall %v from %v after the freeze",
		victim, left.Round(time.Millisecond), lag, back.Round(time.Millisecond), stall.Round(time.Millisecond), at.Sub(frozen).Round(time.Millisecond))
}

// Rolling restart: SIGTERM and restart each node in turn while two
// idempotent acks=all producers and a consumer run. Nothing acknowledged is
// lost or duplicated, the consumer sees every acknowledged record, and the
// preferred leaders are back after each restart.
func TestReplicationRollingRestart(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, append([]cluster.Opt{cluster.Nodes(3), cluster.LogLevel("info")}, rollingRestartOpts()...)...)
	rollingRestart(t, c)
}

// The rolling restart with SASL_SSL on every listener, the controller
// listener included, and the authorizer on (startSASLSSLCluster): Raft
// streams, registrations, heartbeats, AlterPartition and follower fetch
// reconnect through TLS and SCRAM after each restart.
func TestReplicationRollingRestartSASLSSL(t *testing.T) {
	sc := startSASLSSLCluster(t, rollingRestartOpts()...)
	rollingRestart(t, sc.c)
}

func rollingRestartOpts() []cluster.Opt {
	return []cluster.Opt{
		cluster.Override("min.insync.replicas", "2"),
		cluster.Override("auto.leader.rebalance.enable", "true"),
		cluster.Override("leader.imbalance.check.interval.seconds", "1"),
		cluster.Override("leader.imbalance.per.broker.percentage", "0"),
	}
}

func rollingRestart(t *testing.T, c *cluster.Cluster) {
	h := harness{Cluster: c}
	ctx := ctxFor(t, 5*time.Minute)
	const topic, partitions = "rolling", 6
	if err := invariants.CreateTopic(ctx, h.Seeds(), topic, partitions, 3, nil); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) { return preferredLeaders(ctx, h, topic, partitions) })

	cons, err := invariants.StartConsumer(h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var rec invariants.Recorder
	var prods []*invariants.Producer
	for i := range 2 {
		p, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: h.Seeds(), Topic: topic, Partitions: partitions,
			Name: fmt.Sprintf("roll%d", i), Rate: 150, MaxRecords: 60_000}, &rec)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Stop(5 * time.Second)
		prods = append(prods, p)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) { return rec.Count() >= 50, fmt.Sprintf("%d acknowledged", rec.Count()) })

	for _, n := range c.Nodes() {
		from := time.Now()
		n.Term()
		stopped := time.Since(from)
		n.Restart()
		// A missing preferred leader is an error, but the data checks
		// below must still run.
		cluster.WaitFor(t, 90*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })
		if ok, why := eventually(30*time.Second, func() (bool, string) { return preferredLeaders(ctx, h, topic, partitions) }); !ok {
			t.Errorf("node %d: preferred leaders not back %v after SIGTERM: %s", n.ID(), time.Since(from).Round(time.Millisecond), why)
		}
		restored := time.Since(from)
		// Some acknowledgements after the preferred leaders returned, so
		// the stall window closes on flowing writes.
		mark := time.Now()
		cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
			n := rec.CountSince(-1, mark)
			return n >= 20, fmt.Sprintf("%d acknowledged since the preferred leaders returned", n)
		})
		stall, at := invariants.LongestStall(rec.Acks(), from, time.Now())
		t.Logf("node %d: SIGTERM exit after %v, preferred leaders back after %v, longest produce stall %v (from %v after SIGTERM)",
			n.ID(), stopped.Round(time.Millisecond), restored.Round(time.Millisecond), stall.Round(time.Millisecond), at.Sub(from).Round(time.Millisecond))
	}

	for _, p := range prods {
		if _, err := p.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	}
	if failed, lastErr := rec.Failed(); failed > 0 {
		t.Logf("%d produces failed (last %v): allowed, they are not acknowledged", failed, lastErr)
	}
	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	acks := rec.Acks()
	checkReport(t, h, topic, "rolling restart, final read", invariants.Check(acks, read))

	_, end, err := invariants.EndOffsets(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return cons.Reached(end) })
	seen := cons.Records()
	checkReport(t, h, topic, "rolling restart, live consumer", invariants.Check(acks, seen))
	if gone := invariants.Vanished(seen, read); len(gone) > 0 {
		t.Errorf("the consumer read %d records the final read does not hold (read past the high watermark?), first %+v", len(gone), gone[0])
	}
	if errs := cons.Errors(); len(errs) > 0 {
		t.Logf("consumer saw %d fetch errors (retried), first %v", len(errs), errs[0])
	}
}

// Minority leader: a leader whose two followers are frozen is cut off from
// the ISR and the metadata quorum; it must not acknowledge an acks=all
// write (NOT_ENOUGH_REPLICAS, a timeout, or no answer at all are fine).
func TestReplicationMinorityLeaderCannotAck(t *testing.T) {
	const lag = 2 * time.Second
	const topic = "minority"
	c, h, ctx := startLagCluster(t, lag, topic, 1)
	st := partitionState(t, ctx, h, topic, 0)
	addr := c.Node(st.Leader).ClientAddr()
	// The metadata may name the leader a moment before it acts as one.
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		res, err := rawProduce(ctx, addr, topic, 0, -1, 5*time.Second, "healthy")
		return err == nil && res.Err == nil, fmt.Sprintf("acks=all produce with a full ISR: %v / %v", err, res.Err)
	})

	for _, f := range st.Followers() {
		c.Node(f).Stop()
	}
	frozen := time.Now()
	// Attempts until well past the lag time: a leader that shrank its ISR
	// to itself would start acknowledging then. Each attempt either waits
	// out its request timeout or is refused; a ticker paces refusals.
	pace := time.NewTicker(500 * time.Millisecond)
	defer pace.Stop()
	attempts := 0
	for ; attempts < 20 && time.Since(frozen) < 3*lag; attempts++ {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := rawProduce(pctx, addr, topic, 0, -1, 2*time.Second, fmt.Sprintf("cut-off-%d", attempts))
		cancel()
		at := time.Since(frozen).Round(time.Millisecond)
		switch {
		case err != nil:
			t.Logf("%v after the freeze: no answer (%v): not acknowledged", at, err)
		case res.Err == nil:
			t.Errorf("%v after the freeze: leader %d acknowledged an acks=all write at offset %d with both followers frozen", at, st.Leader, res.Base)
		case errors.Is(res.Err, kerr.NotEnoughReplicas), errors.Is(res.Err, kerr.NotEnoughReplicasAfterAppend), errors.Is(res.Err, kerr.RequestTimedOut):
			t.Logf("%v after the freeze: %v: not acknowledged", at, res.Err)
		default:
			t.Logf("%v after the freeze: unexpected error kind %v (still not an acknowledgement)", at, res.Err)
		}
		<-pace.C
	}
	if time.Since(frozen) < 3*lag {
		t.Errorf("%d attempts ended %v after the freeze, before 3x the lag time", attempts, time.Since(frozen))
	}

	for _, f := range st.Followers() {
		c.Node(f).Cont()
	}
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, 1) })
	acked := produceAcked(t, h, topic, 1, "healed", 20)
	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, h, topic, "minority leader, after healing", invariants.Check(acked, read))
}
