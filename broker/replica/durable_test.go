package replica

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
)

// fsyncGate is one broker's instrumented data fsync: while held, fsyncs
// wait (and count as entered); released, they run.
type fsyncGate struct {
	mu      sync.Mutex
	hold    chan struct{}
	entered int
}

func (g *fsyncGate) sync(f *os.File) error {
	g.mu.Lock()
	hold := g.hold
	if hold != nil {
		g.entered++
	}
	g.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return f.Sync()
}

func (g *fsyncGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold = make(chan struct{})
	g.entered = 0
}

func (g *fsyncGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.hold != nil {
		close(g.hold)
		g.hold = nil
	}
}

func (g *fsyncGate) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.entered
}

func newDurableCluster(t *testing.T) (*cluster, map[int32]*fsyncGate) {
	gates := map[int32]*fsyncGate{1: {}, 2: {}, 3: {}}
	c := newCluster(t, clusterOpts{n: 3, syncData: func(id int32) func(*os.File) error { return gates[id].sync }})
	// Before the cluster's own cleanups (which wait for the flushers): a
	// test that fails with a gate held must still stop.
	t.Cleanup(func() {
		for _, g := range gates {
			g.open()
		}
	})
	parts := metadata.NewPartitions(0, [][]int32{{1, 2, 3}}, c.ctrl.image().UsableBrokers())
	c.ctrl.apply(t, &metadata.CreateTopic{Name: "d", ID: [16]byte{9}, Configs: map[string]string{
		"min.insync.replicas": strconv.Itoa(2), "flush.messages": "1"}, Partitions: parts})
	return c, gates
}

// followerLEO is what the leader knows of follower id's LEO (its last
// fetch offset).
func followerLEO(p *Partition, id int32) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.core == nil {
		return -1
	}
	if f, ok := p.core.followers[id]; ok {
		return f.leo
	}
	return -1
}

// In durable mode the HW passes a batch only once every replica it counts
// has fsynced it. With the leader's fsync held, both followers fetch,
// fsync and report the batch, and still the HW and the acks=all ack wait;
// the release lets both through.
func TestDurableHWWaitsForTheLeadersFsync(t *testing.T) {
	c, gates := newDurableCluster(t)
	leader := c.partition(1, "d")
	gates[1].close()
	_, ack, err := leader.AppendAsLeader(batchOf("a", "b"), -1)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both followers to report offset 2", func() bool {
		return followerLEO(leader, 2) == 2 && followerLEO(leader, 3) == 2
	})
	if gates[1].waiting() == 0 {
		t.Fatal("the leader started no fsync of the batch")
	}
	if hw := leader.Log().HighWatermark(); hw != 0 {
		t.Fatalf("HW %d with the leader's copy not fsynced, want 0", hw)
	}
	if done, err := ack.check(); done {
		t.Fatalf("acks=all decided (%v) before the leader's fsync", err)
	}
	gates[1].open()
	if err := ack.Wait(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if hw := leader.Log().HighWatermark(); hw != 2 {
		t.Fatalf("HW %d after the ack, want 2", hw)
	}
}

// A follower reports a batch (its fetch offset, which the leader counts as
// its LEO) only after fsyncing it: with both followers' fsyncs held, they
// have the batch in their logs, the leader has it on disk, and the leader
// still counts them at 0.
func TestDurableFollowerReportsOnlyFsyncedOffsets(t *testing.T) {
	c, gates := newDurableCluster(t)
	leader := c.partition(1, "d")
	gates[2].close()
	gates[3].close()
	_, ack, err := leader.AppendAsLeader(batchOf("a", "b", "c"), -1)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both followers to append the batch and start its fsync", func() bool {
		return c.partition(2, "d").Log().LogEndOffset() == 3 && c.partition(3, "d").Log().LogEndOffset() == 3 &&
			gates[2].waiting() > 0 && gates[3].waiting() > 0 && leader.Log().DurableEnd() == 3
	})
	for _, id := range []int32{2, 3} {
		if leo := followerLEO(leader, id); leo != 0 {
			t.Fatalf("the leader counts follower %d at %d before its fsync returned", id, leo)
		}
	}
	if hw := leader.Log().HighWatermark(); hw != 0 {
		t.Fatalf("HW %d, want 0", hw)
	}
	// One follower's fsync is enough for min.insync.replicas=2? No: the
	// HW is the smallest LEO over the whole ISR, as in Kafka.
	gates[2].open()
	waitFor(t, "follower 2 to report offset 3", func() bool { return followerLEO(leader, 2) == 3 })
	if done, err := ack.check(); done {
		t.Fatalf("acks=all decided (%v) with follower 3's copy not fsynced", err)
	}
	gates[3].open()
	if err := ack.Wait(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// acks=1 in durable mode waits for the leader's fsync and nothing else.
func TestDurableAcksOneWaitsForTheLeadersFsync(t *testing.T) {
	c, gates := newDurableCluster(t)
	leader := c.partition(1, "d")
	gates[1].close()
	_, ack, err := leader.AppendAsLeader(batchOf("x"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if ack == nil {
		t.Fatal("acks=1 in durable mode answered before the leader's fsync")
	}
	waitFor(t, "the leader's fsync to start", func() bool { return gates[1].waiting() > 0 })
	if done, err := ack.check(); done {
		t.Fatalf("acks=1 decided (%v) with the fsync held", err)
	}
	// Followers' fsyncs are not waited for: hold them and release the
	// leader's only.
	gates[2].close()
	gates[3].close()
	gates[1].open()
	if err := ack.Wait(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// Outside durable mode acks=1 is answered at once, as in Kafka.
	c.createTopic("p", 1, 1, 2, 3)
	if _, ack, err := c.partition(1, "p").AppendAsLeader(batchOf("y"), 1); err != nil || ack != nil {
		t.Fatalf("page-cache acks=1: ack %v, err %v; want none", ack, err)
	}
}
