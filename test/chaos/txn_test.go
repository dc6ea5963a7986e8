//go:build long

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Issue 12's transactions under faults, RAFTKA_CHAOS_TXN_ROUNDS rounds (50
// by default): four transactional producers run throughout while each
// round SIGKILLs, in turn, the transaction coordinator of one of them
// (mid-commit, as the load commits all the time) and the leader of a
// partition, and restarts it. At the end a read_committed consumer must
// find no aborted record, no committed record lost, no transaction torn,
// no record twice, and each producer's records in order
// (invariants.CheckTransactions).
func TestChaosTransactions(t *testing.T) {
	rounds := invariants.EnvInt(t, "RAFTKA_CHAOS_TXN_ROUNDS", 50)
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	h := harness{Cluster: c}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds)*time.Minute+5*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.Seeds()...), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic, producers = "txn-chaos", 4
	if _, err := adm.CreateTopic(ctx, 6, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}
	load := invariants.StartTxnLoad(invariants.TxnLoadConfig{Seeds: h.Seeds(), Topic: topic,
		Producers: producers, PerTxn: 6, AbortEvery: 4, IDPrefix: "chaos", Logf: t.Logf})
	stopped := false
	defer func() {
		if !stopped {
			load.Stop()
		}
	}()
	sleep := func(d time.Duration) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	sleep(3 * time.Second)
	for round, tries := 0, 0; round < rounds; tries++ {
		if tries > 3*rounds {
			t.Fatalf("only %d of %d rounds found a node to kill", round, rounds)
		}
		if ctx.Err() != nil {
			t.Fatalf("round %d: out of time", round)
		}
		var victim int32 = -1
		var what string
		if tries%2 == 0 {
			id := fmt.Sprintf("chaos-%d", rand.IntN(producers))
			if desc, err := adm.DescribeTransactions(ctx, id); err == nil && desc[id].Coordinator >= 0 {
				victim, what = desc[id].Coordinator, "the transaction coordinator of "+id
			}
		} else {
			part := rand.Int32N(6)
			if meta, err := adm.Metadata(ctx, topic); err == nil {
				if p, ok := meta.Topics[topic].Partitions[part]; ok && p.Leader >= 0 {
					victim, what = p.Leader, fmt.Sprintf("the leader of %s-%d", topic, part)
				}
			}
		}
		if victim < 0 {
			t.Logf("round %d: no node to kill found (the cluster is between leaders); trying again", round)
			sleep(2 * time.Second)
			continue
		}
		t.Logf("round %d: SIGKILL %s, node %d", round, what, victim)
		h.Kill(victim)
		sleep(time.Duration(1500+rand.IntN(2000)) * time.Millisecond)
		h.Restart(victim)
		sleep(time.Duration(1500+rand.IntN(2000)) * time.Millisecond)
		round++
	}
	t.Logf("%d rounds of faults", rounds)
	txns := load.Stop()
	stopped = true
	read, err := invariants.ReadCommitted(ctx, h.Seeds(), topic, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rep := invariants.CheckTransactions(txns, read)
	t.Log(rep)
	if !rep.Ok() {
		t.Errorf("transaction invariants broken: %v; examples: %q", rep, rep.Examples)
	}
	if rep.Committed == 0 {
		t.Error("no transaction committed")
	}
}
