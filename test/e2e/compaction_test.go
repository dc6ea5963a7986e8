package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A key-value workload through real clients on a three-node RF=3
// compacted topic (issue 11): 10,000 keys updated 20 times each, rounds
// alternating between franz-go and kcat -K (librdkafka's murmur2
// partitioner, so both put a key in the same partition), then 1,000 keys
// deleted with tombstones by both. One node is killed with SIGKILL in the
// middle of the writes and restarted while they go on. The cleaners
// (log.cleaner.backoff.ms=100, 32 KiB segments, min.cleanable.dirty.ratio
// 0.01) compact it, and retention.ms=1000, checked every 100 ms, never
// deletes it:
//   - reading from the start, with franz-go and with kcat, gives every
//     key's latest value and the deleted keys' tombstones (delete.retention.ms
//     is a day), at every moment of the cleaning, and once cleaned about
//     one record per key (plus the active segments, never cleaned);
//   - the killed and restarted node's own copy converges to the same
//     table;
//   - a follower whose copy is wiped re-replicates the compacted log (with
//     its gaps) and holds the same table.
func TestCompactedTopicKeepsTable(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"),
		cluster.Override("log.cleaner.backoff.ms", "100"),
		cluster.Override("log.retention.check.interval.ms", "100"))
	ctx := ctxFor(t, 3*time.Minute)
	cl := client(t, c)
	adm := kadm.NewClient(cl)
	const (
		topic        = "kv"
		parts        = 3
		keys         = 10_000
		rounds       = 20
		deleted      = 1_000
		segmentBytes = 32 << 10
	)
	resp, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"retention.ms":              kadm.StringPtr("1000"),
		"segment.bytes":             kadm.StringPtr(strconv.Itoa(segmentBytes)),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	kcat, kcatMissing := findKcat()
	if kcatMissing != "" {
		missingTool(t, kcatMissing)
	}
	key := func(k int) string { return fmt.Sprintf("key-%05d", k) }
	want := map[string]*string{}
	produced := 0
	// checkEnds fails the test unless the partitions' end offsets count
	// every record produced so far (more would be retries' duplicates,
	// harmless to a table; both producers are idempotent, so there are
	// none).
	checkEnds := func() {
		t.Helper()
		var total int64
		// A killed leader's partitions answer errors until the client
		// learns their new leaders.
		cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
			ends, err := adm.ListEndOffsets(ctx, topic)
			if err != nil {
				return false, err.Error()
			}
			total = 0
			var why string
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err != nil {
					why = fmt.Sprintf("partition %d: %v", o.Partition, o.Err)
				}
				total += o.Offset
			})
			if len(ends[topic]) != parts {
				why = fmt.Sprintf("%d partitions answered", len(ends[topic]))
			}
			return why == "", why
		})
		if total < int64(produced) {
			t.Fatalf("end offsets sum to %d after %d records were acknowledged", total, produced)
		}
	}
	// kcatProduce sends lines "key:value" (an empty value is a tombstone,
	// -Z) with librdkafka's Java-compatible partitioner, idempotent.
	kcatProduce := func(lines []string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, kcat, "-b", c.Bootstrap(), "-P", "-t", topic, "-K:", "-Z",
			"-X", "partitioner=murmur2_random", "-X", "enable.idempotence=true", "-X", "linger.ms=20")
		cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
		// librdkafka logs a killed node's refused connections as errors
		// ("% ERROR: ... Connection refused"): only failed deliveries fail
		// the test, and the end offsets below tell whether every record
		// arrived.
		if out, err := cmd.CombinedOutput(); err != nil || bytes.Contains(out, []byte("Delivery failed")) {
			t.Fatalf("kcat -P -K: %v\n%s", err, out)
		}
		produced += len(lines)
		checkEnds()
	}
	kgoProduce := func(recs []*kgo.Record) {
		t.Helper()
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("franz-go produce: %v", err)
		}
		produced += len(recs)
		checkEnds()
	}
	victim := c.Nodes()[2]
	for round := range rounds {
		pad := strings.Repeat("x", round%7*3)
		if round%2 == 0 {
			recs := make([]*kgo.Record, keys)
			for k := range keys {
				v := fmt.Sprintf("r%02d-franz-%s", round, pad)
				recs[k] = &kgo.Record{Topic: topic, Key: []byte(key(k)), Value: []byte(v)}
				want[key(k)] = &v
			}
			kgoProduce(recs)
		} else {
			lines := make([]string, keys)
			for k := range keys {
				v := fmt.Sprintf("r%02d-kcat-%s", round, pad)
				lines[k] = key(k) + ":" + v
				want[key(k)] = &v
			}
			kcatProduce(lines)
		}
		switch round {
		case 7:
			victim.Kill()
		case 12:
			victim.Restart()
		}
	}
	var tomb []*kgo.Record
	var tombLines []string
	for k := range deleted {
		want[key(k)] = nil
		if k%2 == 0 {
			tomb = append(tomb, &kgo.Record{Topic: topic, Key: []byte(key(k))})
		} else {
			tombLines = append(tombLines, key(k)+":")
		}
	}
	kgoProduce(tomb)
	kcatProduce(tombLines)

	same := func(got map[string]*string) string {
		for k, w := range want {
			g, ok := got[k]
			if !ok || (g == nil) != (w == nil) || g != nil && *g != *w {
				return fmt.Sprintf("key %s: got %v, want %v", k, g, w)
			}
		}
		if len(got) != len(want) {
			return fmt.Sprintf("%d keys, want %d", len(got), len(want))
		}
		return ""
	}
	// read consumes every partition from the start to its end with
	// franz-go: the table, and how many records it took.
	read := func() (map[string]*string, int, error) {
		rc, err := kgo.NewClient(kgo.SeedBrokers(seedAddrs(c)...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			return nil, 0, err
		}
		defer rc.Close()
		ends, err := kadm.NewClient(rc).ListEndOffsets(ctx, topic)
		if err != nil {
			return nil, 0, err
		}
		next := map[int32]int64{}
		left := 0
		ends.Each(func(o kadm.ListedOffset) {
			if o.Offset > 0 {
				left++
			}
		})
		got, n, partOf := map[string]*string{}, 0, map[string]int32{}
		for left > 0 {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			fs := rc.PollFetches(pctx)
			cancel()
			if err := fs.Err(); err != nil {
				return nil, 0, err
			}
			var bad error
			fs.EachRecord(func(r *kgo.Record) {
				n++
				if p, ok := partOf[string(r.Key)]; ok && p != r.Partition && bad == nil {
					bad = fmt.Errorf("key %s in partitions %d and %d: the producers' partitioners disagree", r.Key, p, r.Partition)
				}
				partOf[string(r.Key)] = r.Partition
				if r.Value == nil {
					got[string(r.Key)] = nil
				} else {
					v := string(r.Value)
					got[string(r.Key)] = &v
				}
				end, _ := ends.Lookup(topic, r.Partition)
				if next[r.Partition] < end.Offset && r.Offset+1 >= end.Offset {
					left--
				}
				next[r.Partition] = r.Offset + 1
			})
			if bad != nil {
				t.Fatal(bad)
			}
		}
		return got, n, nil
	}
	// Compacted: about one record per key, plus the active segments (32
	// KiB each, never cleaned; a record takes at least 25 bytes).
	bound := len(want) + parts*segmentBytes/25
	var last string
	cluster.WaitFor(t, 90*time.Second, func() (bool, string) {
		got, n, err := read()
		if err != nil {
			return false, err.Error()
		}
		if why := same(got); why != "" {
			t.Fatalf("the table read back is wrong: %s", why)
		}
		last = fmt.Sprintf("%d records read for %d keys, %d produced", n, len(want), produced)
		return n <= bound, last
	})
	// Well past retention.ms, the compacted table is all still there, and
	// kcat reads the same.
	time.Sleep(2 * time.Second)
	got, n, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if why := same(got); why != "" {
		t.Fatalf("after retention.ms: %s (%d records)", why, n)
	}
	if why := same(consumeKcatTable(t, ctx, kcat, c, topic)); why != "" {
		t.Fatalf("kcat read: %s", why)
	}
	t.Logf("compacted: %s; after retention.ms, %d records", last, n)

	// The node killed mid-writes converged to the same table in its own
	// files (opened as the node would open them after its clean stop).
	h := harness{Cluster: c}
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, parts) })
	victim.Term()
	if why := same(tableOnDisk(t, victim, topic, parts)); why != "" {
		t.Fatalf("node %d, killed and restarted: %s", victim.ID(), why)
	}
	victim.Restart()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, parts) })

	// A follower that lost its copy of partition 0 fetches the leader's
	// compacted log, gaps and all, from the start, and rejoins the ISR;
	// its copy holds the same table.
	st := partitionState(t, ctx, h, topic, 0)
	var f *cluster.Node
	for _, id := range st.Replicas {
		if id != st.Leader {
			f = c.Node(id)
			break
		}
	}
	f.Term()
	part := partitionDir(t, f, topic, 0)
	if err := os.RemoveAll(part); err != nil {
		t.Fatal(err)
	}
	f.Restart()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, parts) })
	f.Term()
	ckpt, err := storage.ReadOffsetCheckpoint(filepath.Join(filepath.Dir(part), storage.CleanerCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if ckpt[storage.TopicPartition{Topic: topic, Partition: 0}] == 0 {
		t.Fatalf("node %d copied the compacted log but checkpointed no gaps: %v", f.ID(), ckpt)
	}
	if why := same(tableOnDisk(t, f, topic, parts)); why != "" {
		t.Fatalf("the re-replicated copy on node %d: %s", f.ID(), why)
	}
}

// partitionDir is the directory of topic-partition on stopped node n.
func partitionDir(t *testing.T, n *cluster.Node, topic string, partition int32) string {
	t.Helper()
	var dir string
	name := fmt.Sprintf("%s-%d", topic, partition)
	filepath.WalkDir(n.DataDir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == name {
			dir = p
		}
		return nil
	})
	if dir == "" {
		t.Fatalf("node %d holds no %s directory", n.ID(), name)
	}
	return dir
}

// tableOnDisk opens every partition of topic in stopped node n's files,
// as the node would after a clean stop (the cleaner checkpoint is what
// lets recovery accept a compacted log's gaps), and returns the table its
// records make.
func tableOnDisk(t *testing.T, n *cluster.Node, topic string, parts int32) map[string]*string {
	t.Helper()
	table := map[string]*string{}
	for p := range parts {
		dir := partitionDir(t, n, topic, p)
		ckpt, err := storage.ReadOffsetCheckpoint(filepath.Join(filepath.Dir(dir), storage.CleanerCheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		tp := storage.TopicPartition{Topic: topic, Partition: p}
		l, rep, err := storage.OpenLog(dir, storage.DefaultConfig(), storage.LogOptions{CleanShutdown: true, CleanerCheckpoint: ckpt[tp]})
		if err != nil {
			t.Fatal(err)
		}
		if rep.LostData() {
			l.Close()
			t.Fatalf("opening node %d's %s cut it: %+v", n.ID(), tp, rep.Truncations)
		}
		for off := l.LogStartOffset(); off < l.LogEndOffset(); {
			r, err := l.Read(off, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			data, err := r.Bytes()
			if err != nil || len(data) == 0 {
				t.Fatalf("read at %d: %v", off, err)
			}
			for len(data) > 0 {
				size, err := storage.BatchSize(data)
				if err != nil {
					t.Fatal(err)
				}
				b := storage.Batch(data[:size])
				err = b.Records(func(r storage.Record) bool {
					if r.Value == nil {
						table[string(r.Key)] = nil
					} else {
						v := string(r.Value)
						table[string(r.Key)] = &v
					}
					return true
				})
				if err != nil {
					t.Fatal(err)
				}
				off, data = b.NextOffset(), data[size:]
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return table
}

// consumeKcatTable reads topic from the start to its end with kcat and
// returns the table its records make (a NULL value is a tombstone).
func consumeKcatTable(t *testing.T, ctx context.Context, kcat string, c *cluster.Cluster, topic string) map[string]*string {
	t.Helper()
	out, err := exec.CommandContext(ctx, "timeout", "60", kcat, "-b", c.Bootstrap(), "-C", "-t", topic,
		"-o", "beginning", "-e", "-q", "-f", "%k\t%S\t%s\n").Output()
	if err != nil {
		t.Fatalf("kcat -C: %v", err)
	}
	table := map[string]*string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 3)
		if len(f) != 3 {
			t.Fatalf("kcat printed %q", sc.Text())
		}
		if f[1] == "-1" {
			table[f[0]] = nil
		} else {
			v := f[2]
			table[f[0]] = &v
		}
	}
	return table
}
