package invariants

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// Harness is what the scenarios need of a running cluster. test/cluster's
// Cluster fits it through a few lines of adapter in the calling test
// package (this package may not import test/cluster). Kill and Restart are
// called from the test's goroutine only and fail the test themselves.
type Harness interface {
	Seeds() []string
	Nodes() []int32
	ClientAddr(id int32) string
	Kill(id int32)    // SIGKILL, wait until gone
	Restart(id int32) // start again on the same directories, wait until ready
	DataDir(id int32) string
}

// LogSuspects logs, for each position a report names, the batch holding it
// on every node's disk: leader epochs and producer fields tell a retried
// idempotent batch from a truncation. Call it once writes have stopped.
func LogSuspects(t testing.TB, h Harness, topic string, r Report) {
	t.Helper()
	byPart := map[int32][]int64{}
	for _, p := range r.Suspects {
		byPart[p.Partition] = append(byPart[p.Partition], p.Offset)
	}
	for _, part := range slices.Sorted(maps.Keys(byPart)) {
		for _, id := range h.Nodes() {
			l, err := ReadPartitionLog(h.DataDir(id), topic, part)
			if err != nil {
				t.Logf("node %d %s-%d: %v", id, topic, part, err)
				continue
			}
			for _, line := range DescribeAt(l, byPart[part]...) {
				t.Logf("node %d %s-%d %s", id, topic, part, line)
			}
		}
	}
}

// WaitFor polls cond until it holds, failing t when timeout passes first
// with cond's last explanation.
func WaitFor(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	wait := 10 * time.Millisecond
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %v: %s", timeout, why)
		}
		timer := time.NewTimer(wait)
		<-timer.C
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// StateFrom asks the nodes of h, in order and skipping those in skip, for
// topic's partitions and returns the first answer with the node that gave it.
func StateFrom(ctx context.Context, h Harness, topic string, skip ...int32) (map[int32]PartitionState, int32, error) {
	var errs []string
	for _, id := range h.Nodes() {
		if slices.Contains(skip, id) {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := TopicState(actx, h.ClientAddr(id), topic)
		cancel()
		if err == nil {
			return st, id, nil
		}
		errs = append(errs, fmt.Sprintf("node %d: %v", id, err))
	}
	return nil, -1, fmt.Errorf("no node answered metadata for %s: %s", topic, strings.Join(errs, "; "))
}

// FullISR reports whether every node of h not in skip sees every partition
// of topic (want of them) led, with every replica in its ISR.
func FullISR(ctx context.Context, h Harness, topic string, want int, skip ...int32) (bool, string) {
	for _, id := range h.Nodes() {
		if slices.Contains(skip, id) {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := TopicState(actx, h.ClientAddr(id), topic)
		cancel()
		if err != nil {
			return false, fmt.Sprintf("node %d: %v", id, err)
		}
		if len(st) != want {
			return false, fmt.Sprintf("node %d sees %d partitions of %s, want %d", id, len(st), topic, want)
		}
		for p, s := range st {
			if s.Leader < 0 || len(s.ISR) != len(s.Replicas) || len(s.Replicas) == 0 {
				return false, fmt.Sprintf("node %d: partition %d leader %d replicas %v isr %v", id, p, s.Leader, s.Replicas, s.ISR)
			}
		}
	}
	return true, ""
}

// FailoverConfig shapes the Failover scenario.
type FailoverConfig struct {
	Topic      string
	Partitions int32  // default 6
	Rounds     int    // default 5
	Seed       uint64 // victim choice; 0 picks one, which is logged
	Rate       int    // records per second; default 200
	Wait       time.Duration
	// Wait bounds each wait of a round (new leader, acks again, back in
	// the ISR); default 60s.
}

// Failover is issue 5's "failover under load": an idempotent acks=all
// producer writes to an RF=3 topic (min.insync.replicas comes from the
// cluster's config) while each round SIGKILLs the leader of a random
// partition, waits until the partition has another leader and
// acknowledgements for it flow again, restarts the victim and waits until
// every ISR is full again. Afterwards everything is read back and checked;
// the report is returned for the caller to judge and print (and
// LogSuspects to explain).
func Failover(t testing.TB, h Harness, cfg FailoverConfig) Report {
	t.Helper()
	if cfg.Partitions == 0 {
		cfg.Partitions = 6
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = 5
	}
	if cfg.Rate == 0 {
		cfg.Rate = 200
	}
	if cfg.Wait == 0 {
		cfg.Wait = 60 * time.Second
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	t.Logf("failover: %d rounds, seed %d", cfg.Rounds, cfg.Seed)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.Rounds+2)*3*cfg.Wait)
	defer cancel()

	WaitFor(t, cfg.Wait, func() (bool, string) {
		err := CreateTopic(ctx, h.Seeds(), cfg.Topic, cfg.Partitions, 3, nil)
		return err == nil, fmt.Sprintf("create topic %s: %v", cfg.Topic, err)
	})
	WaitFor(t, cfg.Wait, func() (bool, string) { return FullISR(ctx, h, cfg.Topic, int(cfg.Partitions)) })

	var rec Recorder
	// Bounded in count: enough for every round at the full rate, and more.
	maxRecords := cfg.Rate * int(time.Duration(cfg.Rounds+2)*3*cfg.Wait/time.Second)
	prod, err := StartProducer(ProducerConfig{Seeds: h.Seeds(), Topic: cfg.Topic, Partitions: cfg.Partitions,
		Name: "failover", Rate: cfg.Rate, MaxRecords: maxRecords, ValueSize: 100}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			prod.Stop(5 * time.Second)
		}
	}()
	WaitFor(t, cfg.Wait, func() (bool, string) {
		n := rec.Count()
		return n >= 2*int(cfg.Partitions), fmt.Sprintf("%d records acknowledged before the first round", n)
	})

	for round := range cfg.Rounds {
		part := rng.Int32N(cfg.Partitions)
		var victim int32 = -1
		WaitFor(t, cfg.Wait, func() (bool, string) {
			st, _, err := StateFrom(ctx, h, cfg.Topic)
			if err != nil {
				return false, err.Error()
			}
			victim = st[part].Leader
			return victim > 0, fmt.Sprintf("partition %d has leader %d", part, victim)
		})
		killed := time.Now()
		h.Kill(victim)
		var newLeader int32
		WaitFor(t, cfg.Wait, func() (bool, string) {
			st, _, err := StateFrom(ctx, h, cfg.Topic, victim)
			if err != nil {
				return false, err.Error()
			}
			newLeader = st[part].Leader
			return newLeader > 0 && newLeader != victim, fmt.Sprintf("partition %d led by %d after node %d was killed", part, newLeader, victim)
		})
		elected := time.Since(killed)
		WaitFor(t, cfg.Wait, func() (bool, string) {
			n := rec.CountSince(part, killed)
			failed, lastErr := rec.Failed()
			return n > 0, fmt.Sprintf("no acknowledgement for partition %d since the kill (%d failed, last %v)", part, failed, lastErr)
		})
		resumed := time.Since(killed)
		h.Restart(victim)
		WaitFor(t, cfg.Wait, func() (bool, string) { return FullISR(ctx, h, cfg.Topic, int(cfg.Partitions)) })
		t.Logf("round %d: SIGKILL node %d (leader of partition %d): node %d leads after %v, acks resume after %v, full ISR again after %v",
			round+1, victim, part, newLeader, elected.Round(time.Millisecond), resumed.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	}

	sent, err := prod.Stop(cfg.Wait)
	stopped = true
	if err != nil {
		t.Errorf("producer: %v", err)
	}
	failed, lastErr := rec.Failed()
	read, err := ReadAll(ctx, h.Seeds(), cfg.Topic)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	r := Check(rec.Acks(), read)
	t.Logf("failover: %d records sent, %d failed (last error %v)", sent, failed, lastErr)
	return r
}
