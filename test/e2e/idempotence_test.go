package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A producer whose connections are cut after the broker has appended a
// batch and sent its acknowledgement, but before the client reads it, must
// retry that batch; the idempotent producer's retry is recognised as a
// duplicate (same producer id, epoch and sequence) and nothing is written
// twice. A non-idempotent producer under the same cuts is the control: it
// must write duplicates, which shows the cuts hit appended batches.
func TestIdempotentProducerSurvivesCutConnections(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	ctx := ctxFor(t, 150*time.Second)
	adm := kadm.NewClient(client(t, c))

	var pending atomic.Int32 // Produce acknowledgements still to be cut
	proxies := make(map[string]*cutProxy)
	for _, n := range c.Nodes() {
		proxies[n.ClientAddr()] = startCutProxy(t, n.ClientAddr(), &pending)
	}
	dial := func(ctx context.Context, network, host string) (net.Conn, error) {
		if p, ok := proxies[host]; ok {
			host = p.Addr()
		}
		var d net.Dialer
		return d.DialContext(ctx, network, host)
	}
	cutsSoFar := func() int64 {
		var n int64
		for _, p := range proxies {
			n += p.cuts.Load()
		}
		return n
	}

	run := func(t *testing.T, topic string, records int, idempotent bool) (dups, lost int, cuts int64) {
		t.Helper()
		if err := createTopic(ctx, adm, topic, 3, 3); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
		opts := []kgo.Opt{kgo.Dialer(dial), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(2 * time.Millisecond),
			// franz-go retries a cut request after a metadata refresh,
			// which by default waits out a 5s minimum metadata age.
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }), kgo.MetadataMinAge(100 * time.Millisecond)}
		if !idempotent {
			// Pipelined like the idempotent producer's batches are not
			// (franz-go allows one in flight per broker with idempotence).
			opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
		}
		cl := kgoWith(t, c, opts...)
		before := cutsSoFar()

		// Arm a cut at every tenth of the acknowledgements, so cuts land
		// while batches are in flight throughout the run. The records go
		// in twenty rounds, each flushed before the next: produced all at
		// once, they could leave in a few batches whose acknowledgements
		// all came back before the first cut was armed (a CI run cut
		// none).
		acked := make([]bool, records)
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			ackCount atomic.Int64
			failures []error
		)
		const rounds = 20
		for i := range records {
			if i > 0 && i%(records/rounds) == 0 {
				if err := cl.Flush(ctx); err != nil {
					t.Fatalf("flush: %v", err)
				}
			}
			wg.Add(1)
			r := &kgo.Record{Key: []byte(strconv.Itoa(i % 97)), Value: []byte(strconv.Itoa(i))}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Errorf("record %s: %w", r.Value, err))
					mu.Unlock()
					return
				}
				acked[i] = true
				if n := ackCount.Add(1); n%int64(records/10) == 0 {
					pending.Add(1)
				}
			})
		}
		wg.Wait()
		pending.Store(0)
		cuts = cutsSoFar() - before
		if idempotent && len(failures) > 0 {
			t.Errorf("%d of %d idempotent records failed, first: %v", len(failures), records, failures[0])
		}

		// Read everything back directly (not through the proxies).
		dups, lost = readBackOnce(t, ctx, c, adm, topic, acked, idempotent)
		t.Logf("%s: %d records, %d cut acknowledgements, %d failed, %d duplicate copies, %d acknowledged but missing",
			topic, records, cuts, len(failures), dups, lost)
		return dups, lost, cuts
	}

	t.Run("idempotent", func(t *testing.T) {
		dups, lost, cuts := run(t, "idempotent-cuts", 10_000, true)
		if cuts < 3 {
			t.Fatalf("only %d produce acknowledgements were cut; the test did not exercise retries", cuts)
		}
		if dups != 0 || lost != 0 {
			t.Errorf("idempotent producer through %d cut acknowledgements: %d duplicate records, %d acknowledged records lost", cuts, dups, lost)
		}
	})
	t.Run("control-non-idempotent", func(t *testing.T) {
		dups, lost, cuts := run(t, "plain-cuts", 1_000, false)
		if cuts < 3 {
			t.Fatalf("only %d produce acknowledgements were cut", cuts)
		}
		if lost != 0 {
			t.Errorf("non-idempotent producer: %d acknowledged records lost", lost)
		}
		if dups == 0 {
			t.Errorf("a non-idempotent producer wrote no duplicates through %d cut acknowledgements: the cuts did not hit appended batches, so the idempotent case proves nothing", cuts)
		}
	})
}

// readBackOnce reads topic from the start to its end offsets and counts,
// for records whose values are their indexes into acked, the extra copies
// and the acknowledged records missing. For an idempotent producer it also
// fails the test on any record behind a later one in its partition.
func readBackOnce(t *testing.T, ctx context.Context, c *cluster.Cluster, adm *kadm.Client, topic string, acked []bool, ordered bool) (dups, lost int) {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	endMap := make(map[int32]int64)
	ends.Each(func(o kadm.ListedOffset) { endMap[o.Partition] = o.Offset })
	got := consumeKgo(t, ctx, c, topic, endMap)
	seen := make([]int, len(acked))
	lastInPart := make(map[int32]int)
	for _, r := range got {
		i, err := strconv.Atoi(r.Value)
		if err != nil || i < 0 || i >= len(acked) {
			t.Fatalf("read a record that was never produced: %q at %d/%d", r.Value, r.Partition, r.Offset)
		}
		seen[i]++
		// One producer's records reach a partition in the order sent; a
		// retried batch must not land behind a later one.
		if ordered {
			if prev, ok := lastInPart[r.Partition]; ok && i <= prev {
				t.Errorf("partition %d offset %d holds record %d after record %d: reordered or duplicated", r.Partition, r.Offset, i, prev)
			}
			lastInPart[r.Partition] = i
		}
	}
	for i, n := range seen {
		if n > 1 {
			dups += n - 1
		}
		if acked[i] && n == 0 {
			lost++
		}
	}
	return dups, lost
}

// An idempotent producer keeps writing while the leader of one of its
// partitions is killed with SIGKILL and later restarted (RF=3): the new
// leader must know the producer's sequences from the replicated log, so
// the batches retried to it are neither duplicated nor refused, and
// nothing acknowledged is lost.
func TestIdempotentProducerSurvivesLeaderKill(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	ctx := ctxFor(t, 150*time.Second)
	adm := kadm.NewClient(client(t, c))
	const topic, records = "idempotent-kill", 30_000
	if err := createTopic(ctx, adm, topic, 3, 3); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	// A small buffer keeps the producer's pace tied to the cluster's, so
	// records are still in flight when the leader dies.
	cl := kgoWith(t, c, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(2*time.Millisecond),
		kgo.MaxBufferedRecords(500), kgo.RecordPartitioner(kgo.ManualPartitioner()))

	acked := make([]bool, records)
	var (
		ackCount atomic.Int64
		mu       sync.Mutex
		failures []error
		wg       sync.WaitGroup
	)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := range records {
			wg.Add(1)
			r := &kgo.Record{Partition: int32(i % 3), Value: []byte(strconv.Itoa(i))}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Errorf("record %s: %w", r.Value, err))
					mu.Unlock()
					return
				}
				acked[i] = true
				ackCount.Add(1)
			})
		}
		wg.Wait()
	}()

	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		n := ackCount.Load()
		return n >= records/5, fmt.Sprintf("%d records acknowledged before the kill", n)
	})
	victim := c.Node(partitionLeader(t, ctx, client(t, c), topic, 0))
	atKill := ackCount.Load()
	victim.Kill()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		n := ackCount.Load()
		return n >= atKill+records/5, fmt.Sprintf("%d acknowledged since node %d was killed at %d", n-atKill, victim.ID(), atKill)
	})
	victim.Restart()
	select {
	case <-produced:
	case <-ctx.Done():
		t.Fatalf("producer still had %d records unacknowledged at the deadline", int64(records)-ackCount.Load())
	}
	if len(failures) > 0 {
		t.Errorf("%d of %d records failed across the leader kill, first: %v", len(failures), records, failures[0])
	}
	dups, lost := readBackOnce(t, ctx, c, adm, topic, acked, true)
	t.Logf("killed leader node %d at %d acknowledgements: %d records, %d failed, %d duplicate copies, %d acknowledged but missing",
		victim.ID(), atKill, records, len(failures), dups, lost)
	if dups != 0 || lost != 0 {
		t.Errorf("idempotent producer across a leader kill: %d duplicate records, %d acknowledged records lost", dups, lost)
	}
}

// cutProxy forwards one node's client port on loopback. It reads Kafka
// frames in both directions, remembers which correlation ids belong to
// Produce requests, and while *pending is positive, closes the connection
// pair instead of forwarding a Produce response: the broker has appended
// the batch, the client never hears so.
type cutProxy struct {
	ln      net.Listener
	target  string
	pending *atomic.Int32
	cuts    atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startCutProxy(t *testing.T, target string, pending *atomic.Int32) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, pending: pending, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *cutProxy) Addr() string { return p.ln.Addr().String() }

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		cc, err := p.ln.Accept()
		if err != nil {
			return
		}
		sc, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			cc.Close()
			continue
		}
		if !p.track(cc, sc) {
			return
		}
		var keys sync.Map // correlation id -> api key
		p.wg.Add(2)
		go p.pipe(cc, sc, func(frame []byte) bool {
			if len(frame) >= 8 {
				keys.Store(int32(binary.BigEndian.Uint32(frame[4:8])), int16(binary.BigEndian.Uint16(frame[0:2])))
			}
			return true
		})
		go p.pipe(sc, cc, func(frame []byte) bool {
			if len(frame) < 4 {
				return true
			}
			key, _ := keys.LoadAndDelete(int32(binary.BigEndian.Uint32(frame[0:4])))
			if key != int16(0) {
				return true
			}
			for {
				v := p.pending.Load()
				if v <= 0 {
					return true
				}
				if p.pending.CompareAndSwap(v, v-1) {
					p.cuts.Add(1)
					return false
				}
			}
		})
	}
}

// track registers a connection pair, or closes it if the proxy is closing.
func (p *cutProxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		a.Close()
		b.Close()
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

// pipe copies frames from src to dst until either side fails or forward
// says to cut, then closes both.
func (p *cutProxy) pipe(src, dst net.Conn, forward func(frame []byte) bool) {
	defer p.wg.Done()
	defer src.Close()
	defer dst.Close()
	br := bufio.NewReader(src)
	var size [4]byte
	for {
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 0 || n > 128<<20 {
			return
		}
		frame := make([]byte, 4+n)
		copy(frame, size[:])
		if _, err := io.ReadFull(br, frame[4:]); err != nil {
			return
		}
		if !forward(frame[4:]) {
			return
		}
		if _, err := dst.Write(frame); err != nil {
			return
		}
	}
}

func (p *cutProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
