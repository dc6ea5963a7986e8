package e2e

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A zombie transactional producer (issue 12): a child process (raftka
// bench produce in one long transaction) is SIGSTOPped mid-transaction, a
// new producer with the same transactional.id fences it (InitProducerId
// aborts the zombie's open transaction and bumps the epoch) and commits a
// transaction of its own, then the zombie gets SIGCONT. Its writes fail
// with PRODUCER_FENCED / INVALID_PRODUCER_EPOCH while it goes on sending
// for seconds, nothing lands in any partition after the fencing (the end
// offsets stay where they were), and
// read_committed shows nothing of the zombie's transaction: exactly the
// new producer's records.
func TestZombieProducerSIGSTOP(t *testing.T) {
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	ctx := ctxFor(t, 180*time.Second)
	adm := kadm.NewClient(client(t, c))
	const topic, txnID = "zombie", "zombie-tx"
	if err := createTopic(ctx, adm, topic, 3, 3); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	zombie := exec.Command(cluster.Binary(t), "--log-level", "warn", "bench", "produce", "--bootstrap-server", strings.Join(seedAddrs(c), ","),
		"--topic", topic, "--record-size", "100", "--records", "100000000", "--duration", "120s",
		"--transaction-records", "100000000", "--transactional-id", txnID)
	zombie.Stderr = &stderr
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- zombie.Wait() }()
	pid := zombie.Process.Pid
	t.Cleanup(func() {
		// Only the process this test started, by its PID.
		_ = syscall.Kill(pid, syscall.SIGCONT)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-exited
	})
	total := func(o kadm.ListedOffsets) (n int64) {
		for _, p := range o[topic] {
			n += p.Offset
		}
		return n
	}
	// Mid-transaction: the zombie's open transaction holds records.
	invariants.WaitFor(t, 60*time.Second, func() (bool, string) {
		o, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		return total(o) > 5000, "the zombie has not written 5000 records yet"
	})
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGSTOP the zombie producer, pid %d", pid)
	stoppedAt, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	p := kgoWith(t, c, kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	want := []string{"new-0", "new-1", "new-2"}
	for _, v := range want {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("the new producer: %v", err)
		}
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("the new producer's commit: %v", err)
	}
	// EndTxn is answered once PrepareCommit is recorded; its markers (and
	// those of the zombie's aborted transaction) land after: the offsets
	// to compare with are taken once no transaction is open.
	var fenced kadm.ListedOffsets
	invariants.WaitFor(t, 30*time.Second, func() (bool, string) {
		hw, err1 := adm.ListEndOffsets(ctx, topic)
		lso, err2 := adm.ListCommittedOffsets(ctx, topic)
		if err1 != nil || err2 != nil {
			return false, "listing offsets failed"
		}
		for part, o := range hw[topic] {
			if lso[topic][part].Offset != o.Offset {
				return false, "a transaction is still open"
			}
		}
		fenced = hw
		return true, ""
	})
	t.Logf("fenced: end offsets %d at SIGSTOP, %d after the new producer's commit", total(stoppedAt), total(fenced))
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// The zombie goes on: each of its produces is refused, and it keeps
	// sending until its --duration. Once it has been refused, it gets a few
	// seconds more to land something, then is killed.
	invariants.WaitFor(t, 60*time.Second, func() (bool, string) {
		m := stderr.String()
		return strings.Contains(m, "PRODUCER_FENCED") || strings.Contains(m, "INVALID_PRODUCER_EPOCH"),
			"the zombie has not been refused with PRODUCER_FENCED or INVALID_PRODUCER_EPOCH"
	})
	time.Sleep(3 * time.Second)
	select {
	case err := <-exited:
		exited <- err
	default:
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	msg := stderr.String()
	for _, l := range strings.Split(msg, "\n") {
		if strings.Contains(l, "FENCED") || strings.Contains(l, "EPOCH") {
			t.Logf("the zombie: %.300s", l)
			break
		}
	}
	after, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for part, o := range fenced[topic] {
		if got := after[topic][part].Offset; got != o.Offset {
			t.Errorf("partition %d: end offset %d after SIGCONT, %d once fenced: the zombie's writes landed", part, got, o.Offset)
		}
	}
	read, err := invariants.ReadCommitted(ctx, seedAddrs(c), topic, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range read {
		got = append(got, string(r.Value))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") && len(got) != len(want) {
		t.Fatalf("read_committed read %d records (first %q), want only the new producer's %q", len(got), first(got), want)
	}
	for _, v := range got {
		if !strings.HasPrefix(v, "new-") {
			t.Fatalf("read_committed read a record of the zombie's transaction: %.40q", v)
		}
	}
}

// syncBuffer is a bytes.Buffer a child process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
