package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkReassignment is issue 16's reassignment figure: four nodes, an
// RF=3 topic of 6 partitions on brokers {1,2,3} filled with
// RAFTKA_BENCH_REASSIGN_MB MiB (2048 by default: the 2 GB
// partition set), then moved with `raftka reassign execute` to {2,3,4}
// unthrottled and back to {1,2,3} under `--throttle`
// (RAFTKA_BENCH_REASSIGN_THROTTLE_MB MiB/s, 20 by default). Each move
// copies one new replica of every partition, so the MB/s is the set's
// size over the time from execute until nothing is listed as moving and
// every partition has its three replicas in sync. Beside it, a probe
// producer writes 1 KiB acks=all records at 200/s throughout; its p99
// before and during each move is what clients see of the move. Run it
// alone: go test ./test/e2e -run XXX -bench Reassignment -benchtime 1x.
func BenchmarkReassignment(b *testing.B) {
	mib := envInt(b, "RAFTKA_BENCH_REASSIGN_MB", 2048)
	throttle := envInt(b, "RAFTKA_BENCH_REASSIGN_THROTTLE_MB", 20) << 20
	const topic, parts = "moving", 6
	c := cluster.Start(b, cluster.Nodes(4), cluster.LogLevel("warn"), cluster.Override("min.insync.replicas", "2"))
	h := harness{Cluster: c}
	ctx := ctxFor(b, 30*time.Minute)
	cl := client(b, c)
	from, to := map[int32][]int32{}, map[int32][]int32{}
	for p := range int32(parts) {
		from[p] = rotate([]int32{1, 2, 3}, int(p))
		to[p] = rotate([]int32{2, 3, 4}, int(p))
	}
	createAssigned(b, ctx, cl, topic, from)
	cluster.WaitFor(b, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, parts, 4) })

	start := time.Now()
	fill(b, ctx, c, topic, int64(mib)<<20)
	b.Logf("filled %d MiB in %v (RF=3 acks=all)", mib, time.Since(start).Round(time.Millisecond))

	probe := startProbe(b, c, topic)
	defer probe.stop()
	time.Sleep(5 * time.Second)
	b.Logf("probe produce p99 before any move: %.1f ms", probe.p99())

	move := func(name string, want map[int32][]int32, rate int) {
		plan := filepath.Join(b.TempDir(), name+".json")
		var parts []string
		for p := range int32(len(want)) {
			var reps []string
			for _, r := range want[p] {
				reps = append(reps, strconv.Itoa(int(r)))
			}
			parts = append(parts, fmt.Sprintf(`{"topic":%q,"partition":%d,"replicas":[%s]}`, topic, p, strings.Join(reps, ",")))
		}
		if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[`+strings.Join(parts, ",")+`]}`), 0o600); err != nil {
			b.Fatal(err)
		}
		args := []string{"reassign", "execute", "--bootstrap-server", c.Node(2).ClientAddr(), "--reassignment-json-file", plan}
		if rate > 0 {
			args = append(args, "--throttle", strconv.Itoa(rate))
		}
		probe.reset()
		began := time.Now()
		if out, err := cluster.Run(b, args...); err != nil {
			b.Fatalf("%s: execute: %v\n%s", name, err, out)
		}
		a := pinned{cl.Broker(2)}
		cluster.WaitFor(b, 20*time.Minute, func() (bool, string) {
			l, err := a.listAll(ctx, topic)
			if err != nil {
				return false, err.Error()
			}
			if len(l) > 0 {
				return false, fmt.Sprintf("%d partitions still moving", len(l))
			}
			return invariants.FullISR(ctx, h, topic, len(want))
		})
		took := time.Since(began)
		p99 := probe.p99()
		if out, err := cluster.Run(b, "reassign", "verify", "--bootstrap-server", c.Node(2).ClientAddr(), "--reassignment-json-file", plan); err != nil {
			b.Fatalf("%s: verify: %v\n%s", name, err, out)
		}
		rate64 := float64(mib) / took.Seconds()
		b.ReportMetric(rate64, name+"_MiB/s")
		b.ReportMetric(p99, name+"_produce_p99_ms")
		b.Logf("%s: %d MiB moved in %v: %.1f MiB/s (throttle %d B/s); probe produce p99 during the move %.1f ms",
			name, mib, took.Round(time.Millisecond), rate64, rate, p99)
	}
	for range b.N {
		move("unthrottled", to, 0)
		move("throttled", from, throttle)
	}
}

// rotate returns s turned left by n, so that each partition's preferred
// leader differs.
func rotate(s []int32, n int) []int32 {
	n %= len(s)
	return append(append([]int32{}, s[n:]...), s[:n]...)
}

func envInt(t testing.TB, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", key, v)
	}
	return n
}

// fill writes total bytes of incompressible 16 KiB records, acks=all.
func fill(t testing.TB, ctx context.Context, c *cluster.Cluster, topic string, total int64) {
	t.Helper()
	pcl, err := kgo.NewClient(kgo.SeedBrokers(seedAddrs(c)...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.MaxBufferedBytes(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	value := make([]byte, 16<<10)
	_, _ = rand.Read(value)
	var once sync.Once
	for written := int64(0); written < total; written += int64(len(value)) {
		pcl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				once.Do(func() { t.Errorf("fill: %v", err) })
			}
		})
	}
	if err := pcl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// probe produces 1 KiB acks=all records at 200/s and keeps the latency of
// each acknowledgement since the last reset.
type probe struct {
	cl   *kgo.Client
	mu   sync.Mutex
	hist *hdrhistogram.Histogram
	done chan struct{}
	wg   sync.WaitGroup
}

func startProbe(t testing.TB, c *cluster.Cluster, topic string) *probe {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedAddrs(c)...), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	p := &probe{cl: cl, hist: hdrhistogram.New(1, 120_000_000, 3), done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		value := make([]byte, 1024)
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
			sent := time.Now()
			cl.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					return
				}
				p.mu.Lock()
				_ = p.hist.RecordValue(time.Since(sent).Microseconds())
				p.mu.Unlock()
			})
		}
	}()
	return p
}

func (p *probe) reset() {
	p.mu.Lock()
	p.hist.Reset()
	p.mu.Unlock()
}

// p99 is the 99th percentile since the last reset, in milliseconds.
func (p *probe) p99() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return float64(p.hist.ValueAtQuantile(99)) / 1000
}

func (p *probe) stop() {
	close(p.done)
	p.wg.Wait()
	p.cl.Close()
}

// BenchmarkNodeReplacement is issue 16's replacement figure: the time from
// kill -9 of a broker-only node holding a replica of every partition
// (RAFTKA_BENCH_REPLACE_MB MiB in all, 512 by default, RF=3 over 6
// partitions) to every partition at three in-sync replicas again, by the
// runbook of README.md's "Replacing a lost broker": its disk is gone, a new
// node 5 starts, `raftka reassign drain --broker 4 --broker-list 5` moves
// the replicas onto it. Also reported: the drain alone, from the command to
// full replication.
func BenchmarkNodeReplacement(b *testing.B) {
	mib := envInt(b, "RAFTKA_BENCH_REPLACE_MB", 512)
	const topic, parts = "replaced", 6
	for range b.N {
		c := cluster.Prepare(b, cluster.Nodes(5), cluster.BrokerOnly(4, 5), cluster.LogLevel("warn"),
			cluster.Override("min.insync.replicas", "2"))
		c.StartNodes(1, 2, 3, 4)
		h := harness{Cluster: c}
		ctx := ctxFor(b, 20*time.Minute)
		cl := client(b, c, c.Node(1), c.Node(2), c.Node(3))
		assign := map[int32][]int32{}
		for p := range int32(parts) {
			assign[p] = rotate([]int32{4, 1 + p%3, 1 + (p+1)%3}, int(p))
		}
		createAssigned(b, ctx, cl, topic, assign)
		cluster.WaitFor(b, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, parts, 5) })
		fill(b, ctx, c, topic, int64(mib)<<20)

		killed := time.Now()
		c.Node(4).Kill()
		if err := os.RemoveAll(c.Node(4).DataDir()); err != nil {
			b.Fatal(err)
		}
		c.StartNodes(5)
		drained := time.Now()
		out, err := cluster.Run(b, "reassign", "drain", "--broker", "4", "--broker-list", "5", "--bootstrap-server", c.Node(1).ClientAddr())
		if err != nil {
			b.Fatalf("drain: %v\n%s", err, out)
		}
		a := pinned{cl.Broker(1)}
		cluster.WaitFor(b, 15*time.Minute, func() (bool, string) {
			l, err := a.listAll(ctx, topic)
			if err != nil {
				return false, err.Error()
			}
			if len(l) > 0 {
				return false, fmt.Sprintf("%d partitions still moving", len(l))
			}
			return invariants.FullISR(ctx, h, topic, parts, 4)
		})
		total, drain := time.Since(killed), time.Since(drained)
		b.ReportMetric(total.Seconds(), "s_kill_to_full_replication")
		b.ReportMetric(drain.Seconds(), "s_drain")
		b.Logf("%d MiB: kill -9 to full replication %v (of it, from the drain command once node 5 was up: %v)", mib,
			total.Round(time.Millisecond), drain.Round(time.Millisecond))
	}
}
