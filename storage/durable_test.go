package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncProbe is an instrumented LogOptions.SyncData: it records the size of
// each file when its fsync began (what the fsync made durable), can hold
// fsyncs until released, and can fail them.
type syncProbe struct {
	mu      sync.Mutex
	synced  map[string]int64 // path -> size at the last fsync that succeeded
	calls   int
	hold    chan struct{} // non-nil: each fsync waits for a receive... of a close
	entered chan struct{} // one send per fsync that began, when held
	fail    error
}

func newSyncProbe() *syncProbe { return &syncProbe{synced: map[string]int64{}} }

func (p *syncProbe) sync(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	p.mu.Lock()
	hold, entered, fail := p.hold, p.entered, p.fail
	p.calls++
	p.mu.Unlock()
	if hold != nil {
		entered <- struct{}{}
		<-hold
	}
	if fail != nil {
		return fail
	}
	if err := f.Sync(); err != nil {
		return err
	}
	p.mu.Lock()
	p.synced[f.Name()] = st.Size()
	p.mu.Unlock()
	return nil
}

// holdAll makes fsyncs wait until the returned release is called.
func (p *syncProbe) holdAll() (release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold, p.entered = make(chan struct{}), make(chan struct{}, 64)
	hold := p.hold
	return func() {
		p.mu.Lock()
		p.hold, p.entered = nil, nil
		p.mu.Unlock()
		close(hold)
	}
}

func (p *syncProbe) syncedSize(path string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.synced[path]
}

func (p *syncProbe) numCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

func durableConfig() Config {
	cfg := DefaultConfig()
	cfg.FlushMessages = 1
	return cfg
}

type roundLog struct {
	mu     sync.Mutex
	rounds []int // logs per round
}

func (r *roundLog) add(n int, _ time.Duration) {
	r.mu.Lock()
	r.rounds = append(r.rounds, n)
	r.mu.Unlock()
}

func (r *roundLog) get() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.rounds...)
}

func openDurableManager(t testing.TB, probe *syncProbe, rounds *roundLog) *Manager {
	t.Helper()
	opts := ManagerOptions{Dirs: []string{t.TempDir()}, DisableScheduler: true, SyncData: probe.sync}
	if rounds != nil {
		opts.OnFlushRound = rounds.add
	}
	m, _, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}

func waitDurable(t testing.TB, l *Log) {
	t.Helper()
	if ch := l.MakeDurable(); ch != nil {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no group commit within 10s", l.tp)
		}
	}
}

// A durable-mode append counts (DurableEnd) only once an fsync that
// began after its bytes were written has returned: while the fsync is
// held the durable end stays put, and the size the fsync covered includes
// the batch.
func TestDurableAppendCountsOnlyAfterItsFsync(t *testing.T) {
	probe := newSyncProbe()
	m := openDurableManager(t, probe, nil)
	l, err := m.GetOrCreate("d", 0, durableConfig())
	if err != nil {
		t.Fatal(err)
	}
	var hooks atomic.Int32
	l.OnDurable(func() { hooks.Add(1) })
	release := probe.holdAll()
	res, err := l.Append(benchBatch(1024), AppendOptions{LeaderEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.LastOffset != 0 || l.LogEndOffset() != 1 {
		t.Fatalf("appended at %d, LEO %d", res.LastOffset, l.LogEndOffset())
	}
	select {
	case <-probe.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the append started no fsync")
	}
	if got := l.DurableEnd(); got != 0 {
		t.Fatalf("durable end %d while the fsync is held, want 0", got)
	}
	if hooks.Load() != 0 {
		t.Fatal("OnDurable ran before the fsync returned")
	}
	ch := l.MakeDurable()
	release()
	<-ch
	if got := l.DurableEnd(); got != 1 {
		t.Fatalf("durable end %d after the round, want 1", got)
	}
	seg := filepath.Join(l.Dir(), segmentName(0)+logSuffix)
	if size, want := probe.syncedSize(seg), int64(len(benchBatch(1024))); size < want {
		t.Fatalf("the fsync covered %d bytes of %s, the batch ends at %d", size, seg, want)
	}
	waitFor(t, func() bool { return hooks.Load() > 0 })
	// The indexes are not part of the durable path (recovery rebuilds the
	// segment holding the recovery point), and the recovery point stays.
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point moved to %d by a data-only fsync", rp)
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// One round covers every log appended to while the previous round ran:
// 8 logs x 5 appends cost 8 fsyncs in one round, not 40.
func TestGroupCommitAcrossLogs(t *testing.T) {
	probe := newSyncProbe()
	rounds := &roundLog{}
	m := openDurableManager(t, probe, rounds)
	const nLogs, perLog = 8, 5
	logs := make([]*Log, nLogs)
	for i := range logs {
		l, err := m.GetOrCreate("g", int32(i), durableConfig())
		if err != nil {
			t.Fatal(err)
		}
		logs[i] = l
	}
	release := probe.holdAll()
	// The first round takes logs[0] alone and is held in its fsync.
	if _, err := logs[0].Append(benchBatch(1024), AppendOptions{LeaderEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	<-probe.entered
	for range perLog {
		for _, l := range logs {
			if _, err := l.Append(benchBatch(1024), AppendOptions{LeaderEpoch: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	release()
	for _, l := range logs {
		waitDurable(t, l)
		if l.DurableEnd() != l.LogEndOffset() {
			t.Fatalf("%s: durable end %d, LEO %d", l.tp, l.DurableEnd(), l.LogEndOffset())
		}
	}
	got := rounds.get()
	if len(got) != 2 || got[0] != 1 || got[1] != nLogs {
		t.Fatalf("rounds of %v logs, want [1 %d]", got, nLogs)
	}
	if n := probe.numCalls(); n != 1+nLogs {
		t.Fatalf("%d fsyncs for %d appends, want %d", n, 1+nLogs*perLog, 1+nLogs)
	}
}

// Outside durable mode the log end counts at once and nothing is queued.
func TestDurableEndOutsideDurableMode(t *testing.T) {
	probe := newSyncProbe()
	m := openDurableManager(t, probe, nil)
	l, err := m.GetOrCreate("p", 0, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(benchBatch(1024), AppendOptions{LeaderEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	if l.DurableEnd() != 1 || l.MakeDurable() != nil {
		t.Fatalf("durable end %d, want the LEO 1 with nothing to wait for", l.DurableEnd())
	}
	if probe.numCalls() != 0 {
		t.Fatal("a page-cache log was fsynced")
	}
	// Switching to durable mode: what was written before counts only
	// once it is fsynced.
	if err := l.UpdateConfig(durableConfig()); err != nil {
		t.Fatal(err)
	}
	if l.DurableEnd() != 0 {
		t.Fatalf("durable end %d right after switching to durable mode, want 0", l.DurableEnd())
	}
	waitDurable(t, l)
	if l.DurableEnd() != 1 {
		t.Fatalf("durable end %d, want 1", l.DurableEnd())
	}
}

// A failed fsync stops the durable end for good: after a failure Linux
// may have dropped the dirty pages, so a later success proves nothing.
func TestDurableFsyncFailureIsSticky(t *testing.T) {
	probe := newSyncProbe()
	m := openDurableManager(t, probe, nil)
	l, err := m.GetOrCreate("f", 0, durableConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(benchBatch(1024), AppendOptions{LeaderEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	waitDurable(t, l)
	boom := errors.New("EIO")
	probe.mu.Lock()
	probe.fail = boom
	probe.mu.Unlock()
	if _, err := l.Append(benchBatch(1024), AppendOptions{LeaderEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	waitDurable(t, l)
	if !errors.Is(l.FlushError(), boom) || l.DurableEnd() != 1 {
		t.Fatalf("after a failed fsync: durable end %d, flush error %v; want 1 and %v", l.DurableEnd(), l.FlushError(), boom)
	}
	probe.mu.Lock()
	probe.fail = nil
	probe.mu.Unlock()
	if _, err := l.Append(benchBatch(1024), AppendOptions{LeaderEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	waitDurable(t, l)
	if l.DurableEnd() != 1 {
		t.Fatalf("durable end moved to %d after a failed fsync", l.DurableEnd())
	}
}

// Truncation takes the durable end down with the log end; what is
// appended after counts once fsynced again.
func TestDurableEndFollowsTruncation(t *testing.T) {
	probe := newSyncProbe()
	m := openDurableManager(t, probe, nil)
	l, err := m.GetOrCreate("t", 0, durableConfig())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.Append(benchBatch(1024), AppendOptions{LeaderEpoch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	waitDurable(t, l)
	if err := l.Truncate(1); err != nil {
		t.Fatal(err)
	}
	if l.DurableEnd() != 1 {
		t.Fatalf("durable end %d after truncating to 1", l.DurableEnd())
	}
	release := probe.holdAll()
	if _, err := l.Append(benchBatch(1024), AppendOptions{LeaderEpoch: 2}); err != nil {
		t.Fatal(err)
	}
	<-probe.entered
	if l.DurableEnd() != 1 {
		t.Fatalf("durable end %d before the re-append's fsync, want 1", l.DurableEnd())
	}
	release()
	waitDurable(t, l)
	if l.DurableEnd() != 2 {
		t.Fatalf("durable end %d, want 2", l.DurableEnd())
	}
}

// The group commit adds no allocation to an append (the log is queued in
// a reused slice), and a round costs a constant few however many logs and
// batches it covers (its channel).
func TestDurableAppendAllocs(t *testing.T) {
	probe := newSyncProbe()
	m := openDurableManager(t, probe, nil)
	batch := benchBatch(1024)
	plain, err := m.GetOrCreate("a", 0, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	durable, err := m.GetOrCreate("a", 1, durableConfig())
	if err != nil {
		t.Fatal(err)
	}
	appendTo := func(l *Log) {
		if _, err := l.Append(batch, AppendOptions{LeaderEpoch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	appendTo(durable) // starts the flusher
	waitDurable(t, durable)
	base := testing.AllocsPerRun(200, func() { appendTo(plain) })
	// Rounds held in their fsync, so only the append path is counted.
	release := probe.holdAll()
	appendTo(durable)
	<-probe.entered
	got := testing.AllocsPerRun(200, func() { appendTo(durable) })
	mk := testing.AllocsPerRun(200, func() { durable.MakeDurable() })
	release()
	waitDurable(t, durable)
	slack := 0.0
	if raceEnabled {
		slack = 0.5 // the race detector's pool drops, as below
	}
	if got > base+slack || mk != 0 {
		t.Fatalf("allocations per append: %v durable, %v page cache; per MakeDurable: %v", got, base, mk)
	}

	// A round: a second manager whose fsync allocates nothing (the
	// probe's Stat would), counting its rounds.
	var nRounds atomic.Int64
	m2, _, err := OpenManager(ManagerOptions{Dirs: []string{t.TempDir()}, DisableScheduler: true,
		SyncData: func(f *os.File) error { return f.Sync() }, OnFlushRound: func(int, time.Duration) { nRounds.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	logs := make([]*Log, 8)
	for i := range logs {
		if logs[i], err = m2.GetOrCreate("r", int32(i), durableConfig()); err != nil {
			t.Fatal(err)
		}
	}
	// Follower appends (a fetcher's round): no validation pools, whose
	// items the race detector drops at random.
	fb := benchBatch(1024)
	follow := func(l *Log) {
		Batch(fb).SetBaseOffset(l.LogEndOffset())
		if _, err := l.AppendAsFollower(fb); err != nil {
			t.Fatal(err)
		}
	}
	pcFollower, err := m2.GetOrCreate("pc", 0, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	perFollow := testing.AllocsPerRun(100, func() { follow(pcFollower) })
	round := func(perLog int) func() {
		return func() {
			for _, l := range logs {
				for range perLog {
					follow(l)
				}
			}
			for _, l := range logs {
				if ch := l.MakeDurable(); ch != nil {
					<-ch
				}
			}
		}
	}
	allocs := func(perLog int) (perCall, rounds float64) {
		const runs = 30
		r0 := nRounds.Load()
		perCall = testing.AllocsPerRun(runs, round(perLog))
		return perCall, float64(nRounds.Load()-r0) / (runs + 1) // AllocsPerRun warms up once
	}
	allocs(4)
	for _, perLog := range []int{4, 32} {
		got, rounds := allocs(perLog)
		appendsCost := float64(8*perLog) * perFollow
		t.Logf("group commit of 8 logs, %d follower appends each: %.0f allocations in %.1f rounds (%.0f of them the appends' own)", perLog, got, rounds, appendsCost)
		// The appends' own, then one channel per round and nothing per batch.
		limit := appendsCost + rounds + 1
		if raceEnabled {
			// The race detector's pool drops: about a quarter of the
			// batches' validation buffers allocated again. An
			// allocation per batch would still be four times that.
			limit += 0.5 * float64(8*perLog)
		}
		if got > limit {
			t.Fatalf("%.0f allocations for %d durable follower appends in %.1f rounds, want <= %.0f", got, 8*perLog, rounds, limit)
		}
	}
}

// BenchmarkDurableAppend appends 1 KiB batches to 8 partitions from 8
// goroutines (a produce request per goroutine and batch) and waits for
// each batch to be durable, as an acks=1 producer does in durable mode,
// beside the same appends without fsync (page cache). Real fsyncs: the
// figure is the disk's.
func BenchmarkDurableAppend(b *testing.B) {
	for _, mode := range []string{"pagecache", "durable"} {
		b.Run(mode, func(b *testing.B) {
			m, _, err := OpenManager(ManagerOptions{Dirs: []string{b.TempDir()}, DisableScheduler: true})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			cfg := DefaultConfig()
			if mode == "durable" {
				cfg = durableConfig()
			}
			logs := make([]*Log, 8)
			for i := range logs {
				if logs[i], err = m.GetOrCreate("bench", int32(i), cfg); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int32
			batch := benchBatch(1024)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.SetParallelism(1)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				l := logs[int(next.Add(1)-1)%len(logs)]
				buf := make([]byte, len(batch))
				for pb.Next() {
					copy(buf, batch)
					if _, err := l.Append(buf, AppendOptions{LeaderEpoch: 1}); err != nil {
						b.Error(err)
						return
					}
					if ch := l.MakeDurable(); ch != nil {
						<-ch
					}
				}
			})
		})
	}
}
