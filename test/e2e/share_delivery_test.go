package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// setGroupConfig sets a GROUP resource config (IncrementalAlterConfigs,
// resource type 32), as franz-go's share tests set share.auto.offset.reset.
func setGroupConfig(ctx context.Context, cl *kgo.Client, group, key, value string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = 32, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = key, kmsg.StringPtr(value)
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, rr := range resp.Resources {
		if err := kerr.ErrorForCode(rr.ErrorCode); err != nil {
			return fmt.Errorf("%s=%s: %w", key, value, err)
		}
	}
	return nil
}

// shareLedger is what a share group's members saw, by record value.
type shareLedger struct {
	mu         sync.Mutex
	deliveries map[int]int // times delivered
	accepted   map[int]int
	released   map[int]int
	rejected   map[int]int
	byMember   map[string]int
	ackErrs    int
	// clientLog counts the members' franz-go log messages at info and
	// above, by member and message: what the client did not surface.
	clientLog map[string]int
	// firstAck is when each value was first accepted or rejected, and
	// partition where it lives (the failover check allows a second
	// acceptance or rejection only of an acknowledgement in flight to the
	// killed leader).
	firstAck  map[int]time.Time
	partition map[int]int32
}

func newShareLedger() *shareLedger {
	return &shareLedger{deliveries: map[int]int{}, accepted: map[int]int{}, released: map[int]int{}, rejected: map[int]int{}, byMember: map[string]int{}, clientLog: map[string]int{},
		firstAck: map[int]time.Time{}, partition: map[int]int32{}}
}

// decide is the members' policy: values ending in 7 are released on their
// first delivery (and accepted when they come back), values ending in 9
// rejected, the rest accepted.
func (l *shareLedger) decide(member string, v int, partition int32) kgo.AckStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deliveries[v]++
	l.partition[v] = partition
	l.byMember[member]++
	switch {
	case v%10 == 7 && l.deliveries[v] == 1:
		l.released[v]++
		return kgo.AckRelease
	case v%10 == 9:
		l.rejected[v]++
		if l.rejected[v] == 1 {
			l.firstAck[v] = time.Now()
		}
		return kgo.AckReject
	}
	l.accepted[v]++
	if l.accepted[v] == 1 {
		l.firstAck[v] = time.Now()
	}
	return kgo.AckAccept
}

// done says whether every value below n was accepted or rejected.
func (l *shareLedger) done(n int) (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	missing := 0
	for v := range n {
		if l.accepted[v] == 0 && l.rejected[v] == 0 {
			missing++
		}
	}
	return missing == 0, fmt.Sprintf("%d of %d records not yet accepted or rejected (%d deliveries)", missing, n, len(l.deliveries))
}

// check returns what breaks the share group's promises for values below n.
// inFlight, when set, says whether a value's first acceptance may not have
// been durable (its acknowledgement was in flight to a killed leader): such
// a value may be delivered and accepted again. It returns how many were.
func (l *shareLedger) check(n int, inFlight func(v int) bool) (bad []string, again int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for v := range n {
		if inFlight != nil && inFlight(v) && (l.accepted[v] > 1 || l.rejected[v] > 1 || l.deliveries[v] > 2) {
			again++
			continue
		}
		switch {
		case v%10 == 9 && (l.rejected[v] != 1 || l.deliveries[v] != 1):
			bad = append(bad, fmt.Sprintf("rejected record %d delivered %d times", v, l.deliveries[v]))
		case v%10 == 9:
		case l.accepted[v] != 1:
			bad = append(bad, fmt.Sprintf("record %d accepted %d times (delivered %d)", v, l.accepted[v], l.deliveries[v]))
		case v%10 == 7 && l.deliveries[v] != 2:
			bad = append(bad, fmt.Sprintf("released record %d delivered %d times, want 2", v, l.deliveries[v]))
		case v%10 != 7 && l.deliveries[v] != 1:
			bad = append(bad, fmt.Sprintf("record %d delivered %d times", v, l.deliveries[v]))
		}
	}
	return bad, again
}

// ledgerLogger is a kgo.Logger counting a member's messages at info and
// above in its ledger.
type ledgerLogger struct {
	l      *shareLedger
	member string
}

func (g ledgerLogger) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (g ledgerLogger) Log(level kgo.LogLevel, msg string, _ ...any) {
	g.l.mu.Lock()
	g.l.clientLog[fmt.Sprintf("%s %s: %s", g.member, level, msg)]++
	g.l.mu.Unlock()
}

// shareBrokerFaults are franz-go's warnings about ShareFetch answers it
// drops, in part or whole, because the broker got them wrong. A partition
// it did not ask for is one our share session still held while franz-go's
// mirror of it did not: its acquired records were never surfaced nor
// released.
var shareBrokerFaults = []string{
	"broker returned partition from share fetch that we did not ask for",
	"broker returned duplicate partition in share fetch response",
	"broker omitted partition from share fetch response that we sent acks for",
	"broker share fetch response has acquired records but no record data",
	"broker share fetch response had degenerate AcquiredRecords ranges",
	"broker share fetch response had unsorted or overlapping AcquiredRecords",
}

// brokerFaults returns the members' shareBrokerFaults messages and counts.
func (l *shareLedger) brokerFaults() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k, n := range l.clientLog {
		for _, f := range shareBrokerFaults {
			if strings.Contains(k, f) {
				out = append(out, fmt.Sprintf("%dx %s", n, k))
			}
		}
	}
	sort.Strings(out)
	return out
}

func (l *shareLedger) clientLogCounts() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.clientLog))
	for k := range l.clientLog {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %dx %s", l.clientLog[k], k)
	}
	return b.String()
}

func (l *shareLedger) counts() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, a, r, j := 0, 0, 0, 0
	for _, c := range l.deliveries {
		d += c
	}
	for _, c := range l.accepted {
		a += c
	}
	for _, c := range l.released {
		r += c
	}
	for _, c := range l.rejected {
		j += c
	}
	return fmt.Sprintf("delivered %d (redelivered %d), accepted %d, released %d, rejected (archived) %d, ack errors %d, per member %v",
		d, d-len(l.deliveries), a, r, j, l.ackErrs, l.byMember)
}

// runShareMember polls as one member of group until ctx ends,
// acknowledging every record by l's policy.
func runShareMember(ctx context.Context, c *cluster.Cluster, group, topic, member string, l *shareLedger) error {
	var seeds []string
	for _, n := range c.Nodes() {
		seeds = append(seeds, n.ClientAddr())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID(member), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(time.Second),
		kgo.WithLogger(ledgerLogger{l, member}),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			for _, r := range rs {
				if r.Err != nil {
					l.mu.Lock()
					l.ackErrs++
					l.mu.Unlock()
				}
			}
		}))
	if err != nil {
		return err
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			v, err := strconv.Atoi(string(r.Value))
			if err != nil {
				return
			}
			r.Ack(l.decide(member, v, r.Partition))
		})
	}
	fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = cl.FlushAcks(fctx)
	return nil
}

// TestShareGroupDelivery: three franz-go share consumers on a 6-partition
// RF=3 topic with a producer writing while they consume. Every record is
// accepted exactly once across the group, released ones come back once
// (to any member) and are accepted then, rejected ones are never
// delivered again; a classic consumer group on the same topic meanwhile
// reads every record in order.
func TestShareGroupDelivery(t *testing.T) { shareDeliveryRun(t, false) }

// TestShareGroupLeaderKilled is TestShareGroupDelivery with a partition
// leader (not the active controller) SIGKILLed while the producer writes
// the last third: its partitions' new leaders load the share-partition
// state from the metadata log, so no record whose acceptance was answered
// before the kill is delivered again, and none is lost. Only acceptances
// and rejections that may have been in flight to the killed node (on its
// partitions, from 5 s before the kill to 10 s after) may be made again;
// their count is printed, with the members' client log messages. The
// classic group may go back once per partition, to its last commit, when
// its member rejoins after the kill; it still reads every record.
func TestShareGroupLeaderKilled(t *testing.T) { shareDeliveryRun(t, true) }

// spreadingProducer is a client whose records without keys go to the
// partitions in turn, so every partition has records.
func spreadingProducer(t testing.TB, c *cluster.Cluster) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedAddrs(c)...), kgo.RetryTimeout(20*time.Second), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func shareDeliveryRun(t *testing.T, kill bool) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, group, parts, total = "share-work", "share-workers", 6, 6000
	c := cluster.Start(t, cluster.Nodes(3))
	cl := spreadingProducer(t, c)
	adm := kadm.NewClient(cl)
	ctx := ctxFor(t, 4*time.Minute)
	if err := createTopic(ctx, adm, topic, parts, 3); err != nil {
		t.Fatal(err)
	}
	if err := setGroupConfig(ctx, cl, group, "share.auto.offset.reset", "earliest"); err != nil {
		t.Fatal(err)
	}
	var produced atomic.Int64 // records written and flushed
	var posMu sync.Mutex
	pos := map[int]string{} // value -> partition/offset, for the diagnosis
	onProduced := func(r *kgo.Record, err error) {
		if err != nil {
			t.Errorf("produce: %v", err)
			return
		}
		v, _ := strconv.Atoi(string(r.Value))
		posMu.Lock()
		pos[v] = fmt.Sprintf("%d/%d", r.Partition, r.Offset)
		posMu.Unlock()
	}
	// produce writes values from..to-1, flushing every chunk records and
	// pausing pause after each flush (so a kill lands while it writes).
	produceErr := func(from, to, chunk int, pause time.Duration) error {
		for i := from; i < to; i++ {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}, onProduced)
			if i%chunk == chunk-1 {
				if err := cl.Flush(ctx); err != nil {
					return err
				}
				produced.Store(int64(i + 1))
				time.Sleep(pause)
			}
		}
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		produced.Store(int64(to))
		return nil
	}
	produce := func(from, to int) {
		t.Helper()
		if err := produceErr(from, to, 500, 0); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, total/3)

	l := newShareLedger()
	mctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := runShareMember(mctx, c, group, topic, fmt.Sprintf("member-%d", i), l); err != nil {
				t.Error(err)
			}
		}()
	}
	// The classic group reads the same topic.
	classic := map[int32][]int64{}
	var classicMu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		var seeds []string
		for _, n := range c.Nodes() {
			seeds = append(seeds, n.ClientAddr())
		}
		cc, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("classic-readers"), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(time.Second))
		if err != nil {
			t.Error(err)
			return
		}
		defer cc.Close()
		for mctx.Err() == nil {
			cc.PollFetches(mctx).EachRecord(func(r *kgo.Record) {
				classicMu.Lock()
				classic[r.Partition] = append(classic[r.Partition], r.Offset)
				classicMu.Unlock()
			})
		}
	}()
	produce(total/3, 2*total/3)
	var inFlight func(int) bool
	if kill {
		// The last third is written THROUGH the kill: the producer runs
		// in small flushed chunks, and the leader dies once a quarter of
		// them is written, while the producer keeps going (its records
		// for the dead leader's partitions wait for the new leaders).
		perr := make(chan error, 1)
		go func() { perr <- produceErr(2*total/3, total, 50, 20*time.Millisecond) }()
		cluster.WaitFor(t, time.Minute, func() (bool, string) {
			n := produced.Load()
			return n >= int64(2*total/3+total/12), fmt.Sprintf("produced %d before the kill", n)
		})
		// What the classic group had committed, to tell a rewind to its
		// commit from a lost commit.
		if o, err := adm.FetchOffsets(ctx, "classic-readers"); err == nil {
			committed := map[int32]int64{}
			o.Each(func(r kadm.OffsetResponse) { committed[r.Partition] = r.At })
			t.Logf("classic group's commits before the kill: %v", committed)
		} else {
			t.Logf("classic group's commits before the kill: %v", err)
		}
		victim, killedAt, led := killAPartitionLeader(ctx, t, c, cl, topic)
		atKill := produced.Load()
		inFlight = func(v int) bool {
			return led[l.partition[v]] && l.firstAck[v].After(killedAt.Add(-5*time.Second)) && l.firstAck[v].Before(killedAt.Add(10*time.Second))
		}
		if err := <-perr; err != nil {
			t.Fatal(err)
		}
		t.Logf("SIGKILLed node %d, leader of partitions %v, with %d of %d records written; the producer wrote the rest through the kill", victim, led, atKill, total)
		if atKill >= total {
			t.Fatalf("the producer had finished (%d records) before the kill", atKill)
		}
	} else {
		produce(2*total/3, total)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for ok, why := l.done(total); !ok; ok, why = l.done(total) {
		if time.Now().After(deadline) {
			l.mu.Lock()
			posMu.Lock()
			var missing []string
			for v := range total {
				if l.accepted[v] == 0 && l.rejected[v] == 0 && len(missing) < 30 {
					missing = append(missing, fmt.Sprintf("%d at %s delivered %d", v, pos[v], l.deliveries[v]))
				}
			}
			posMu.Unlock()
			l.mu.Unlock()
			d, err := kadm.NewClient(cl).DescribeShareGroupOffsets(ctx, group)
			t.Fatalf("%s; %s; missing %v; share offsets %+v (%v); members' client log: %s", why, l.counts(), missing, d[group].Offsets, err, l.clientLogCounts())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Anything delivered twice shows up within a poll or two.
	time.Sleep(3 * time.Second)
	cluster.WaitFor(t, time.Minute, func() (bool, string) {
		classicMu.Lock()
		defer classicMu.Unlock()
		n := 0
		for _, offs := range classic {
			n += distinctOffsets(offs)
		}
		return n >= total, fmt.Sprintf("classic group read %d of %d", n, total)
	})
	stop()
	wg.Wait()
	t.Logf("share group: %s", l.counts())
	t.Logf("members' client log (info and above): %s", l.clientLogCounts())
	if bad := l.brokerFaults(); len(bad) > 0 {
		t.Errorf("franz-go found share answers it discards as a broker's fault: %v", bad)
	}
	bad, again := l.check(total, inFlight)
	for i, b := range bad {
		if i == 20 {
			t.Errorf("... %d more", len(bad)-20)
			break
		}
		t.Error(b)
	}
	if kill {
		t.Logf("accepted again after the kill (acknowledgements in flight to the killed leader): %d", again)
	}
	// The classic group reads in order. Only with the kill may it go
	// back, once per partition, as a group does when its coordinator's
	// failover makes its member rejoin: it resumes from its last commit
	// (the start, with none yet), so it reads some records again.
	n, reads, rewinds := 0, 0, 0
	for p, offs := range classic {
		back := 0
		for i := range offs {
			if i > 0 && offs[i] <= offs[i-1] {
				back++
				if !kill || back > 1 {
					t.Errorf("classic group partition %d: offset %d after %d", p, offs[i], offs[i-1])
					break
				}
				t.Logf("classic group partition %d: back to offset %d after %d (rejoined after the kill)", p, offs[i], offs[i-1])
			}
		}
		rewinds += back
		n += distinctOffsets(offs)
		reads += len(offs)
	}
	t.Logf("classic group: %d records (%d reads, %d rewinds), in order per partition", n, reads, rewinds)
	if n < total {
		t.Errorf("classic group read %d records, want %d", n, total)
	}
	if !kill {
		shareOffsetsAdmin(ctx, t, c, cl, group, topic, total)
	}
}

// distinctOffsets counts the different offsets in offs.
func distinctOffsets(offs []int64) int {
	seen := make(map[int64]struct{}, len(offs))
	for _, o := range offs {
		seen[o] = struct{}{}
	}
	return len(seen)
}

// shareOffsetsAdmin checks the share-group offset admin calls on a group
// whose members left after consuming total records: every start offset is
// at the end with no lag (DescribeShareGroupOffsets and `raftka
// share-groups describe --offsets`); `reset-offsets --to-earliest
// --execute` moves them back (AlterShareGroupOffsets), and a new member
// gets every record again.
func shareOffsetsAdmin(ctx context.Context, t *testing.T, c *cluster.Cluster, cl *kgo.Client, group, topic string, total int) {
	t.Helper()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		d, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		g := d[group]
		if g.Err != nil {
			return false, g.Err.Error()
		}
		for _, o := range g.Offsets.Sorted() {
			end, _ := ends.Lookup(topic, o.Partition)
			if o.Err != nil || o.StartOffset != end.Offset || o.Lag != 0 {
				return false, fmt.Sprintf("partition %d: start %d lag %d err %v, end %d", o.Partition, o.StartOffset, o.Lag, o.Err, end.Offset)
			}
		}
		return len(g.Offsets[topic]) == 6, fmt.Sprintf("%d partitions described", len(g.Offsets[topic]))
	})
	out, err := exec.CommandContext(ctx, cluster.Binary(t), "share-groups", "describe", "--bootstrap-server", strings.Join(seedAddrs(c), ","), "--group", group).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "START-OFFSET") {
		t.Fatalf("share-groups describe: %v\n%s", err, out)
	}
	t.Logf("raftka share-groups describe --group %s:%s", group, out)
	// The members have left (their clients closed): the group is empty.
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		out, err = exec.CommandContext(ctx, cluster.Binary(t), "share-groups", "reset-offsets", "--bootstrap-server", strings.Join(seedAddrs(c), ","),
			"--group", group, "--topic", topic, "--to-earliest", "--execute").CombinedOutput()
		return err == nil, fmt.Sprintf("reset-offsets: %v: %s", err, out)
	})
	got := map[int]bool{}
	var mu sync.Mutex
	mctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	joined := false
	defer func() {
		stop()
		if !joined {
			<-done
		}
	}()
	go func() {
		defer close(done)
		mc, err := kgo.NewClient(kgo.SeedBrokers(seedAddrs(c)...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(time.Second))
		if err != nil {
			t.Error(err)
			return
		}
		defer mc.Close()
		for mctx.Err() == nil {
			mc.PollFetches(mctx).EachRecord(func(r *kgo.Record) {
				v, _ := strconv.Atoi(string(r.Value))
				mu.Lock()
				got[v] = true
				mu.Unlock()
				r.Ack(kgo.AckAccept)
			})
		}
	}()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == total, fmt.Sprintf("after reset-offsets --to-earliest a new member got %d of %d records", len(got), total)
	})
	t.Logf("after reset-offsets --to-earliest a new member consumed all %d records again", total)
	stop()
	<-done
	joined = true
	// delete-offsets (DeleteShareGroupOffsets) once the member has left:
	// the partitions have no state any more (start offset -1).
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		out, err = exec.CommandContext(ctx, cluster.Binary(t), "share-groups", "delete-offsets", "--bootstrap-server", strings.Join(seedAddrs(c), ","),
			"--group", group, "--topic", topic).CombinedOutput()
		return err == nil, fmt.Sprintf("delete-offsets: %v: %s", err, out)
	})
	// The coordinator answers from its image, which may trail the write.
	cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
		d, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		for _, o := range d[group].Offsets.Sorted() {
			if o.StartOffset != -1 {
				return false, fmt.Sprintf("after delete-offsets partition %d starts at %d, want -1", o.Partition, o.StartOffset)
			}
		}
		return true, ""
	})
}

// killAPartitionLeader SIGKILLs a node that leads some of topic's
// partitions and is not the active controller, and returns it, when, and
// the partitions it led.
func killAPartitionLeader(ctx context.Context, t *testing.T, c *cluster.Cluster, cl *kgo.Client, topic string) (int32, time.Time, map[int32]bool) {
	t.Helper()
	ql, err := quorumLeader(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	byLeader := map[int32]map[int32]bool{}
	for _, p := range md.Topics[topic].Partitions {
		if byLeader[p.Leader] == nil {
			byLeader[p.Leader] = map[int32]bool{}
		}
		byLeader[p.Leader][p.Partition] = true
	}
	for _, n := range c.Nodes() {
		if n.ID() != ql && len(byLeader[n.ID()]) > 0 {
			n.Kill()
			return n.ID(), time.Now(), byLeader[n.ID()]
		}
	}
	t.Fatalf("no partition leader besides the controller %d: %v", ql, byLeader)
	return 0, time.Time{}, nil
}

// TestShareGroupLockExpiry: a member that stops (SIGSTOP of a `raftka
// consume --share-group` process, its connections still open) holds the
// records its last ShareFetch acquired; when their acquisition lock
// (share.record.lock.duration.ms, 4 s here) expires they go to the other
// members with a delivery count of 2, and every record is consumed. (The
// stopped member keeps its assignment until its 10 s session times out,
// so records of partitions assigned to it alone wait for that.)
func TestShareGroupLockExpiry(t *testing.T) {
	const topic, group, total = "share-stuck", "share-stuck-workers", 3000
	c := cluster.Start(t, cluster.Nodes(3),
		cluster.Override("group.share.min.record.lock.duration.ms", "1000"),
		cluster.Override("group.share.record.lock.duration.ms", "4000"),
		// A 10 s session (Kafka's 45 s default would only make the test
		// wait): still well past the 4 s lock, so the lock expires first.
		cluster.Override("group.share.min.session.timeout.ms", "6000"),
		cluster.Override("group.share.session.timeout.ms", "10000"))
	cl := spreadingProducer(t, c)
	ctx := ctxFor(t, 3*time.Minute)
	if err := createTopic(ctx, kadm.NewClient(cl), topic, 6, 3); err != nil {
		t.Fatal(err)
	}
	if err := setGroupConfig(ctx, cl, group, "share.auto.offset.reset", "earliest"); err != nil {
		t.Fatal(err)
	}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, total/2)

	child := exec.Command(cluster.Binary(t), "--log-level", "warn", "consume", "--bootstrap-server", strings.Join(seedAddrs(c), ","),
		"--topic", topic, "--share-group", group)
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pid := child.Process.Pid
	exited := make(chan error, 1)
	var printedMu sync.Mutex
	printed := map[int]bool{}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if v, err := strconv.Atoi(sc.Text()); err == nil {
				printedMu.Lock()
				printed[v] = true
				printedMu.Unlock()
			}
		}
		exited <- child.Wait()
	}()
	t.Cleanup(func() {
		// Only the process this test started, by its PID.
		_ = syscall.Kill(pid, syscall.SIGCONT)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-exited
	})
	nPrinted := func() int {
		printedMu.Lock()
		defer printedMu.Unlock()
		return len(printed)
	}
	cluster.WaitFor(t, time.Minute, func() (bool, string) {
		return nPrinted() >= 100, fmt.Sprintf("the share consumer process printed %d records", nPrinted())
	})
	// More records while it runs, so its next fetch acquires some.
	produce(total/2, 3*total/4)
	time.Sleep(500 * time.Millisecond)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	atStop := nPrinted()
	t.Logf("SIGSTOP the share consumer process (pid %d) after it printed %d records", pid, atStop)
	produce(3*total/4, total)
	upTo := total // values produced so far

	var mu sync.Mutex
	seen := map[int]int32{} // value -> highest delivery count seen by the live members
	var expiredAfter time.Duration
	mctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var seeds []string
			for _, n := range c.Nodes() {
				seeds = append(seeds, n.ClientAddr())
			}
			mc, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID(fmt.Sprintf("live-%d", i)), kgo.ShareGroup(group),
				kgo.ConsumeTopics(topic), kgo.FetchMaxWait(time.Second))
			if err != nil {
				t.Error(err)
				return
			}
			defer mc.Close()
			for mctx.Err() == nil {
				mc.PollFetches(mctx).EachRecord(func(r *kgo.Record) {
					v, _ := strconv.Atoi(string(r.Value))
					mu.Lock()
					if r.DeliveryCount() >= 2 && expiredAfter == 0 {
						expiredAfter = time.Since(stoppedAt)
					}
					seen[v] = max(seen[v], r.DeliveryCount())
					mu.Unlock()
					r.Ack(kgo.AckAccept)
				})
			}
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = mc.FlushAcks(fctx)
		}()
	}
	allConsumed := func() {
		cluster.WaitFor(t, 2*time.Minute, func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			printedMu.Lock()
			defer printedMu.Unlock()
			missing := 0
			for v := range upTo {
				if _, ok := seen[v]; !ok && !printed[v] {
					missing++
				}
			}
			return missing == 0, fmt.Sprintf("%d records neither printed by the stopped process nor consumed by the live members", missing)
		})
	}
	redelivered := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, dc := range seen {
			if dc >= 2 {
				n++
			}
		}
		return n
	}
	allConsumed()
	// franz-go keeps at most one ShareFetch per broker in flight, and none
	// while it handles the last answer: at the SIGSTOP the process may
	// have had none waiting anywhere, and then it holds nothing. Let it
	// run again and stop it anew (the live members now compete for the
	// records, so it holds some of them).
	for attempt := 2; redelivered() == 0 && attempt <= 4; attempt++ {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		produce(upTo, upTo+total/4)
		time.Sleep(500 * time.Millisecond)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		stoppedAt, expiredAfter = time.Now(), 0
		mu.Unlock()
		produce(upTo+total/4, upTo+total/2)
		upTo += total / 2
		t.Logf("attempt %d: the stopped process held no records; SIGCONT, SIGSTOP again, %d records in all", attempt, upTo)
		allConsumed()
	}
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	printedMu.Lock() // the reader of the stopped process's output still runs
	defer printedMu.Unlock()
	again, both := 0, 0
	for v, dc := range seen {
		if dc >= 2 {
			again++
		}
		if printed[v] {
			both++
		}
	}
	t.Logf("stopped process printed %d; live members consumed %d, %d of them redelivered after the lock expired (first %v after SIGSTOP, lock 4s); %d printed by the stopped process too (its acknowledgements not sent before the stop)",
		atStop, len(seen), again, expiredAfter.Round(100*time.Millisecond), both)
	if again == 0 {
		t.Fatal("no record came back from the stopped member: its acquisition locks never expired")
	}
	if expiredAfter < 3*time.Second {
		t.Errorf("a record came back %v after the stop, before its 4 s lock could expire", expiredAfter)
	}
}
