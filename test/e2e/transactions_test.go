package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeAll reads topic from the start with the isolation level until
// want records arrived or quiet passes without a new one.
func consumeAll(t *testing.T, ctx context.Context, c *cluster.Cluster, topic string, iso kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl := kgoWith(t, c, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	var got []string
	quiet := time.Now().Add(10 * time.Second)
	for len(got) < want && time.Now().Before(quiet) && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, string(r.Value))
			quiet = time.Now().Add(10 * time.Second)
		})
	}
	return got
}

// A franz-go transactional producer on three nodes: committed transactions
// are seen by a read_committed consumer, aborted ones are not (a
// read_uncommitted one sees both, as in Kafka), the offsets committed in
// a transaction become the group's only when it commits, and a second
// producer with the same transactional id fences the first.
func TestTransactionalProducer(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	ctx := ctxFor(t, 150*time.Second)
	adm := kadm.NewClient(client(t, c))
	const topic = "txn-out"
	if err := createTopic(ctx, adm, topic, 3, 3); err != nil {
		t.Fatal(err)
	}

	p := kgoWith(t, c, kgo.TransactionalID("tx-e2e"), kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(30*time.Second))
	var committed, aborted []string
	for round := range 6 {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var vals []string
		for i := range 20 {
			v := fmt.Sprintf("r%d-%d", round, i)
			vals = append(vals, v)
			if err := p.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("round %d produce: %v", round, err)
			}
		}
		commit := round%2 == 0
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("round %d end (commit %v): %v", round, commit, err)
		}
		if commit {
			committed = append(committed, vals...)
		} else {
			aborted = append(aborted, vals...)
		}
	}

	// franz-go runs transaction version 2 (finalized by raftka): every
	// EndTxn bumped the epoch.
	if desc, err := adm.DescribeTransactions(ctx, "tx-e2e"); err != nil || desc["tx-e2e"].ProducerEpoch < 6 {
		t.Fatalf("after 6 transactions: %+v %v, want the epoch bumped at each EndTxn", desc, err)
	}

	got := consumeAll(t, ctx, c, topic, kgo.ReadCommitted(), len(committed))
	slices.Sort(got)
	slices.Sort(committed)
	if !slices.Equal(got, committed) {
		t.Fatalf("read_committed saw %d records, want the %d committed ones", len(got), len(committed))
	}
	all := consumeAll(t, ctx, c, topic, kgo.ReadUncommitted(), len(committed)+len(aborted))
	if len(all) != len(committed)+len(aborted) {
		t.Fatalf("read_uncommitted saw %d records, want %d", len(all), len(committed)+len(aborted))
	}

	// A zombie: the second producer's InitProducerId fences the first,
	// whose next transaction fails and writes nothing readable.
	p2 := kgoWith(t, c, kgo.TransactionalID("tx-e2e"), kgo.DefaultProduceTopic(topic))
	if err := p2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p2.ProduceSync(ctx, &kgo.Record{Value: []byte("new-instance")}).FirstErr(); err != nil {
		t.Fatalf("new instance: %v", err)
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	zerr := p.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr()
	if zerr == nil {
		zerr = p.EndTransaction(ctx, kgo.TryCommit)
	}
	if zerr == nil {
		t.Fatal("the fenced producer committed")
	}
	if !errors.Is(zerr, kerr.ProducerFenced) && !errors.Is(zerr, kerr.InvalidProducerEpoch) && !errors.Is(zerr, kerr.InvalidProducerIDMapping) {
		t.Logf("zombie failed with %v", zerr)
	}
	if err := p2.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("new instance commit: %v", err)
	}
	got = consumeAll(t, ctx, c, topic, kgo.ReadCommitted(), len(committed)+1)
	if slices.Contains(got, "zombie") || !slices.Contains(got, "new-instance") || len(got) != len(committed)+1 {
		t.Fatalf("after the zombie: %d records, zombie %v, new instance %v", len(got), slices.Contains(got, "zombie"), slices.Contains(got, "new-instance"))
	}

	// The transaction admin calls see the id; the markers follow EndTxn,
	// so the commit completes shortly after it is answered.
	for deadline := time.Now().Add(20 * time.Second); ; {
		desc, err := adm.DescribeTransactions(ctx, "tx-e2e")
		if err != nil {
			t.Fatal(err)
		}
		d, ok := desc["tx-e2e"]
		if ok && d.Err == nil && d.State == "CompleteCommit" {
			break
		}
		if !ok || d.Err != nil || d.State != "PrepareCommit" || time.Now().After(deadline) {
			t.Fatalf("DescribeTransactions: %+v", desc)
		}
		time.Sleep(100 * time.Millisecond)
	}
	list, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := list["tx-e2e"]; !ok {
		t.Fatalf("ListTransactions: %+v", list)
	}

	// A hanging transaction, found and aborted with the command line as
	// with kafka-transactions.sh: the partition's open transaction ends.
	hang := kgoWith(t, c, kgo.TransactionalID("tx-hang"), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := hang.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := hang.ProduceSync(ctx, &kgo.Record{Value: []byte("hanging"), Partition: 0}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	bs := strings.Join(seedAddrs(c), ",")
	// The list is the coordinator's image, which has a new id within a
	// Raft heartbeat.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, err := cluster.Run(t, "transactions", "list", "--bootstrap-server", bs)
		if err == nil && strings.Contains(out, "tx-hang") && strings.Contains(out, "Ongoing") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("transactions list: %v\n%s", err, out)
		}
	}
	out, err := cluster.Run(t, "transactions", "describe-producers", "--bootstrap-server", bs, "--topic", topic, "--partition", "0")
	if err != nil {
		t.Fatalf("describe-producers: %v\n%s", err, out)
	}
	start := ""
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if f := strings.Fields(l); len(f) == 6 && f[5] != "None" {
			start = f[5]
		}
	}
	if start == "" {
		t.Fatalf("no open transaction on %s-0:\n%s", topic, out)
	}
	if out, err := cluster.Run(t, "transactions", "abort", "--bootstrap-server", bs, "--topic", topic, "--partition", "0", "--start-offset", start); err != nil {
		t.Fatalf("abort: %v\n%s", err, out)
	}
	out, err = cluster.Run(t, "transactions", "describe-producers", "--bootstrap-server", bs, "--topic", topic, "--partition", "0")
	if err != nil || strings.Contains(out, " "+start+"\n") {
		t.Fatalf("describe-producers after the abort: %v\n%s", err, out)
	}
}

// franz-go's GroupTransactSession consume-transform-produce: every input
// record lands in the output exactly once, read_committed, and the group's
// committed offsets (made in the transactions) reach the input's end.
func TestGroupTransactSessionExactlyOnce(t *testing.T) { testGroupTransactSession(t, false) }

// TestGroupTransactSessionKIP848 is the same in a KIP-848 consumer group
// (kgo.ServerSideBalancer): the TxnOffsetCommits carry the member epoch,
// which the coordinator checks as Kafka's validateOffsetCommit does.
func TestGroupTransactSessionKIP848(t *testing.T) { testGroupTransactSession(t, true) }

func testGroupTransactSession(t *testing.T, consumerProtocol bool) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	ctx := ctxFor(t, 150*time.Second)
	adm := kadm.NewClient(client(t, c))
	const in, out, group, n = "etl-in", "etl-out", "etl", 300
	var extra []kgo.Opt
	if consumerProtocol {
		extra = append(extra, kgo.ServerSideBalancer())
	}
	for _, tp := range []string{in, out} {
		if err := createTopic(ctx, adm, tp, 3, 3); err != nil {
			t.Fatal(err)
		}
	}
	src := kgoWith(t, c, kgo.DefaultProduceTopic(in))
	for i := range n {
		if err := src.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := kgo.NewGroupTransactSession(append([]kgo.Opt{kgo.SeedBrokers(seedAddrs(c)...), kgo.RetryTimeout(20 * time.Second),
		kgo.TransactionalID("etl-1"), kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.DefaultProduceTopic(out),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond)}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	seen := 0
	for seen < n && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := sess.PollFetches(pctx)
		cancel()
		if fs.Empty() {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, &kgo.Record{Key: r.Key, Value: append([]byte("out-"), r.Value...)})
		})
		for _, r := range recs {
			sess.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("End: %v", err)
		}
		if committed {
			seen += len(recs)
		}
	}
	if consumerProtocol {
		// The session's group really is a KIP-848 consumer group.
		d := describe848(ctx, t, client(t, c), group)
		if d.ErrorCode != 0 || len(d.Members) != 1 || d.Members[0].MemberType != 1 {
			t.Fatalf("ConsumerGroupDescribe: error %d, members %+v", d.ErrorCode, d.Members)
		}
	}
	got := consumeAll(t, ctx, c, out, kgo.ReadCommitted(), n)
	slices.Sort(got)
	got = slices.Compact(got)
	if len(got) != n {
		t.Fatalf("output holds %d distinct records, want %d", len(got), n)
	}
	all := consumeAll(t, ctx, c, out, kgo.ReadCommitted(), n+1)
	if len(all) != n {
		t.Fatalf("output holds %d records (duplicates), want %d", len(all), n)
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		o, ok := offs.Lookup(in, e.Partition)
		if !ok || o.At != e.Offset {
			t.Errorf("partition %d: committed %+v, end %d", e.Partition, o, e.Offset)
		}
	})
}

// sarama's transactional producer: commits and aborts, and a
// read_committed consumer that sees only the committed records, each
// partition's in the order they were sent.
func TestSaramaTransactionalProducer(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	ctx := ctxFor(t, 120*time.Second)
	adm := kadm.NewClient(client(t, c))
	const topic = "sarama-txn"
	if err := createTopic(ctx, adm, topic, 3, 3); err != nil {
		t.Fatal(err)
	}
	cfg := saramaConfig(sarama.V4_0_0_0)
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = "sarama-txn-1"
	cfg.Producer.Transaction.Retry.Max = 50
	cfg.Producer.Transaction.Retry.Backoff = 100 * time.Millisecond
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer(seedAddrs(c), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var committed []string
	for round := range 4 {
		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		var vals []string
		for i := range 10 {
			v := fmt.Sprintf("s%d-%02d", round, i)
			vals = append(vals, v)
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(strconv.Itoa(i % 3)), Value: sarama.StringEncoder(v)}); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if round == 1 {
			if err := p.AbortTxn(); err != nil {
				t.Fatalf("abort: %v", err)
			}
			continue
		}
		if err := p.CommitTxn(); err != nil {
			t.Fatalf("commit: %v", err)
		}
		committed = append(committed, vals...)
	}
	cl := kgoWith(t, c, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	byKey := map[string][]string{}
	n := 0
	for quiet := time.Now().Add(10 * time.Second); n < len(committed) && time.Now().Before(quiet); {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			byKey[string(r.Key)] = append(byKey[string(r.Key)], string(r.Value))
			n++
		})
	}
	if n != len(committed) {
		t.Fatalf("read_committed saw %d records, want %d", n, len(committed))
	}
	for k, vals := range byKey {
		if !slices.IsSorted(vals) {
			t.Errorf("key %s out of order: %v", k, vals)
		}
		for _, v := range vals {
			if !slices.Contains(committed, v) {
				t.Errorf("read an aborted record %s", v)
			}
		}
	}
}

// SIGKILL the transaction coordinator right after it answered an EndTxn
// (the commit recorded, its markers on the way): the node that takes the
// slot over writes the markers again, the producer carries on, and a
// read_committed consumer sees every acknowledged committed transaction
// whole, no aborted record and no record twice.
func TestTransactionsSurviveCoordinatorKill(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	ctx := ctxFor(t, 180*time.Second)
	adm := kadm.NewClient(client(t, c))
	const topic, id = "txn-kill", "tx-kill"
	if err := createTopic(ctx, adm, topic, 3, 3); err != nil {
		t.Fatal(err)
	}
	p := kgoWith(t, c, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(20*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }), kgo.RetryTimeout(60*time.Second))
	var committed, aborted []string
	unsure := map[string]bool{}
	killed := false
	for round := range 10 {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var vals []string
		for i := range 10 {
			v := fmt.Sprintf("k%d-%d", round, i)
			vals = append(vals, v)
			if err := p.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("round %d produce: %v", round, err)
			}
		}
		commit := round%4 != 3
		err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit))
		switch {
		case err != nil:
			t.Logf("round %d: EndTxn %v: outcome unknown", round, err)
			for _, v := range vals {
				unsure[v] = true
			}
		case commit:
			committed = append(committed, vals...)
		default:
			aborted = append(aborted, vals...)
		}
		if round == 4 && !killed {
			desc, err := adm.DescribeTransactions(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			coord := desc[id].Coordinator
			t.Logf("killing coordinator %d after the commit of round %d", coord, round)
			c.Node(coord).Kill()
			killed = true
		}
	}
	if !killed {
		t.Fatal("the coordinator was not killed")
	}
	got := consumeAll(t, ctx, c, topic, kgo.ReadCommitted(), len(committed)+len(unsure))
	seen := map[string]bool{}
	for _, v := range got {
		if seen[v] {
			t.Errorf("%s read twice", v)
		}
		seen[v] = true
	}
	for _, v := range committed {
		if !seen[v] {
			t.Errorf("committed %s not read", v)
		}
	}
	for _, v := range aborted {
		if seen[v] {
			t.Errorf("aborted %s read", v)
		}
	}
	// An unsure transaction is whole or absent.
	for round := range 10 {
		n := 0
		for i := range 10 {
			if seen[fmt.Sprintf("k%d-%d", round, i)] {
				n++
			}
		}
		if n != 0 && n != 10 {
			t.Errorf("round %d torn: %d of 10 records visible", round, n)
		}
	}
	t.Logf("committed %d, aborted %d, unsure %d, read %d", len(committed), len(aborted), len(unsure), len(got))
}

// librdkafka's transactional producer (confluent-kafka-python): commits and
// aborts, read_committed sees exactly the committed records in order,
// read_uncommitted the aborted ones too; kcat reading the same topic
// counts the same with -X isolation.level.
func TestConfluentAndKcatTransactions(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	python, pythonMissing := findConfluentPython()
	if pythonMissing != "" {
		missingTool(t, pythonMissing)
	}
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	ctx := ctxFor(t, 150*time.Second)
	adm := kadm.NewClient(client(t, c))
	const topic, parts = "compat-txn", 3
	createAndWait(t, ctx, c, adm, topic, parts)
	runScript(t, ctx, exec.CommandContext(ctx, python, "../compat/confluent_txn.py",
		"--bootstrap", c.Bootstrap(), "--topic", topic, "--partitions", strconv.Itoa(parts)), python)

	kcat, kcatMissing := findKcat()
	if kcatMissing != "" {
		missingTool(t, kcatMissing)
	}
	// 6 rounds of 30, rounds 1 and 4 aborted.
	for iso, want := range map[string]int{"read_committed": 120, "read_uncommitted": 180} {
		out, err := exec.CommandContext(ctx, kcat, "-b", c.Bootstrap(), "-C", "-t", topic, "-o", "beginning", "-e", "-q",
			"-X", "isolation.level="+iso, "-f", "%s\n").Output()
		if err != nil {
			t.Fatalf("kcat %s: %v", iso, err)
		}
		if n := strings.Count(string(out), "\n"); n != want {
			t.Errorf("kcat %s read %d records, want %d", iso, n, want)
		}
	}
}

// Concurrent transactional producers while the transaction coordinator of
// one of them and then a partition leader are SIGKILLed and restarted: a
// read_committed consumer finds no aborted record, no committed record
// lost, no transaction torn (all of its records visible or none) and no
// record twice, and each producer's records in order (the checks are
// test/invariants' CheckTransactions, which the long chaos run shares).
func TestTransactionsUnderFaults(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	ctx := ctxFor(t, 240*time.Second)
	adm := kadm.NewClient(client(t, c))
	const topic = "txn-faults"
	if err := createTopic(ctx, adm, topic, 6, 3); err != nil {
		t.Fatal(err)
	}
	load := invariants.StartTxnLoad(invariants.TxnLoadConfig{Seeds: seedAddrs(c), Topic: topic,
		Producers: 4, PerTxn: 6, AbortEvery: 4, IDPrefix: "load", Logf: t.Logf})
	wait := func(d time.Duration) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	wait(4 * time.Second)
	desc, err := adm.DescribeTransactions(ctx, "load-0")
	if err != nil {
		t.Fatal(err)
	}
	coord := c.Node(desc["load-0"].Coordinator)
	t.Logf("SIGKILL the coordinator of load-0, node %d", coord.ID())
	coord.Kill()
	wait(5 * time.Second)
	coord.Restart()
	wait(4 * time.Second)
	meta, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := c.Node(meta.Topics[topic].Partitions[0].Leader)
	t.Logf("SIGKILL the leader of %s-0, node %d", topic, leader.ID())
	leader.Kill()
	wait(5 * time.Second)
	leader.Restart()
	wait(4 * time.Second)
	txns := load.Stop()
	read, err := invariants.ReadCommitted(ctx, seedAddrs(c), topic, 5*time.Second)
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
