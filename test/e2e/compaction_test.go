package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A compacted topic on three nodes: 50 keys updated 20 times each, ten of
// them then deleted. The cleaners (log.cleaner.backoff.ms=100) compact it,
// and retention.ms=1000, checked every 100 ms, never deletes it: reading
// from the start gives one record per key, the live keys' latest values
// and the deleted keys' tombstones (delete.retention.ms is a day). A
// follower whose copy is wiped re-replicates the compacted log (with its
// gaps) and holds the same table.
func TestCompactedTopicKeepsTable(t *testing.T) {
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"),
		cluster.Override("log.cleaner.backoff.ms", "100"),
		cluster.Override("log.retention.check.interval.ms", "100"))
	ctx := ctxFor(t, 2*time.Minute)
	cl := client(t, c)
	adm := kadm.NewClient(cl)
	const topic = "kv"
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"retention.ms":              kadm.StringPtr("1000"),
		"segment.bytes":             kadm.StringPtr("4096"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	want := map[string]*string{}
	var recs []*kgo.Record
	for round := range 20 {
		for k := range 50 {
			v := fmt.Sprintf("v%d", round)
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("key-%02d", k)), Value: []byte(v)})
			want[fmt.Sprintf("key-%02d", k)] = &v
		}
	}
	for k := range 10 {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("key-%02d", k))})
		want[fmt.Sprintf("key-%02d", k)] = nil
	}
	// One produce per round, so the log has batches of 50 records and
	// rolls segments (the active segment is never cleaned).
	for i := 0; i < len(recs); i += 50 {
		if err := cl.ProduceSync(ctx, recs[i:min(i+50, len(recs))]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	read := func() (map[string]*string, int, error) {
		rc, err := kgo.NewClient(kgo.SeedBrokers(c.Nodes()[0].ClientAddr()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			return nil, 0, err
		}
		defer rc.Close()
		ends, err := kadm.NewClient(rc).ListEndOffsets(ctx, topic)
		if err != nil {
			return nil, 0, err
		}
		end, _ := ends.Lookup(topic, 0)
		got, n := map[string]*string{}, 0
		for next := int64(0); next < end.Offset; {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			fs := rc.PollFetches(pctx)
			cancel()
			if err := fs.Err(); err != nil {
				return nil, 0, err
			}
			fs.EachRecord(func(r *kgo.Record) {
				n++
				if r.Value == nil {
					got[string(r.Key)] = nil
				} else {
					v := string(r.Value)
					got[string(r.Key)] = &v
				}
				next = r.Offset + 1
			})
		}
		return got, n, nil
	}
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
	var last string
	cluster.WaitFor(t, 90*time.Second, func() (bool, string) {
		got, n, err := read()
		if err != nil {
			return false, err.Error()
		}
		if why := same(got); why != "" {
			t.Fatalf("the table read back is wrong: %s", why)
		}
		last = fmt.Sprintf("%d records read for %d keys", n, len(want))
		// Compacted: about one record per key plus the active segment
		// (up to 4 KiB, never cleaned), a few hundred at most.
		return n < len(recs)/3, last
	})
	// Well past retention.ms, the compacted table is all still there.
	time.Sleep(2 * time.Second)
	got, n, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if why := same(got); why != "" {
		t.Fatalf("after retention.ms: %s (%d records)", why, n)
	}
	t.Logf("compacted: %s; after retention.ms, %d records", last, n)

	// A follower that lost its copy fetches the leader's compacted log,
	// gaps and all, from the start, and rejoins the ISR; its copy holds
	// the same table.
	h := harness{Cluster: c}
	st := partitionState(t, ctx, h, topic, 0)
	var f *cluster.Node
	for _, id := range st.Replicas {
		if id != st.Leader {
			f = c.Node(id)
			break
		}
	}
	f.Term()
	var part string
	filepath.WalkDir(f.DataDir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == topic+"-0" {
			part = p
		}
		return nil
	})
	if part == "" {
		t.Fatalf("node %d holds no %s-0 directory", f.ID(), topic)
	}
	if err := os.RemoveAll(part); err != nil {
		t.Fatal(err)
	}
	f.Restart()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, 1) })
	f.Term()
	// Opened as the node would open it after its clean stop; the cleaner
	// checkpoint is what lets recovery accept the copied gaps.
	ckpt, err := storage.ReadOffsetCheckpoint(filepath.Join(filepath.Dir(part), storage.CleanerCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	tp := storage.TopicPartition{Topic: topic, Partition: 0}
	if ckpt[tp] == 0 {
		t.Fatalf("node %d copied the compacted log but checkpointed no gaps: %v", f.ID(), ckpt)
	}
	l, rep, err := storage.OpenLog(part, storage.DefaultConfig(), storage.LogOptions{CleanShutdown: true, CleanerCheckpoint: ckpt[tp]})
	if err != nil {
		t.Fatal(err)
	}
	if rep.LostData() {
		t.Fatalf("opening node %d's copy cut it: %+v", f.ID(), rep.Truncations)
	}
	defer l.Close()
	copied := map[string]*string{}
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
					copied[string(r.Key)] = nil
				} else {
					v := string(r.Value)
					copied[string(r.Key)] = &v
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			off, data = b.NextOffset(), data[size:]
		}
	}
	if why := same(copied); why != "" {
		t.Fatalf("the re-replicated copy on node %d: %s", f.ID(), why)
	}
}
