package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// mountTinyTmpfs mounts a tmpfs of size at dir, unmounted when the test
// ends (after the cluster's processes, whose cleanup was registered
// later). Filling it makes every write into it fail with ENOSPC: a real
// I/O failure that chmod cannot give a root process.
func mountTinyTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("cannot mount a tmpfs (needs root): %v: %s", err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// fillDir writes zeros into a file in dir until the file system is full.
func fillDir(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for range 4096 { // bounded: the tmpfs is far smaller than 4 GiB
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
	t.Fatal("the tmpfs never filled up")
}

// JBOD, a failed log dir: node 1 has two log.dirs, the second a tiny
// tmpfs. Under an acks=all idempotent load the tmpfs is filled, so node
// 1's next writes there fail with ENOSPC. That dir goes offline alone:
// DescribeLogDirs lists it with KAFKA_STORAGE_ERROR, the partitions it
// held are led elsewhere and node 1 leaves their ISRs, the partitions in
// node 1's other dir keep node 1 in their ISR, the broker keeps serving,
// and every acknowledged record is read back exactly once.
func TestJBODFailedLogDirGoesOffline(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	root := t.TempDir()
	good, bad := filepath.Join(root, "good"), filepath.Join(root, "bad")
	mountTinyTmpfs(t, bad, "24m")
	if err := os.MkdirAll(good, 0o755); err != nil {
		t.Fatal(err)
	}
	c := cluster.Start(t, cluster.NodeOverride(1, "log.dirs", good+","+bad))
	h := harness{Cluster: c}
	ctx := ctxFor(t, 3*time.Minute)
	const topic, partitions = "jbod", 8
	if err := invariants.CreateTopic(ctx, h.Seeds(), topic, partitions, 3, nil); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })

	adm := kadm.NewClient(client(t, c))
	dirsOf := func() (kadm.DescribedLogDirs, error) { return adm.DescribeBrokerLogDirs(ctx, 1, nil) }
	dirs, err := dirsOf()
	if err != nil {
		t.Fatal(err)
	}
	inDir := map[string][]int32{}
	for _, d := range dirs {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic {
				inDir[d.Dir] = append(inDir[d.Dir], p.Partition)
			}
		})
	}
	badParts, goodParts := inDir[bad], inDir[good]
	slices.Sort(badParts)
	slices.Sort(goodParts)
	if len(badParts) == 0 || len(goodParts) == 0 {
		t.Fatalf("node 1 placed %v in %s and %v in %s; want both dirs used", goodParts, good, badParts, bad)
	}
	t.Logf("node 1: partitions %v in the good dir, %v in the tmpfs", goodParts, badParts)

	var rec invariants.Recorder
	p, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: h.Seeds(), Topic: topic, Partitions: partitions,
		Name: "jbod", Rate: 400, MaxRecords: 40000}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(10 * time.Second)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) { return rec.Count() >= 400, fmt.Sprintf("%d acknowledged", rec.Count()) })

	failedAt := time.Now()
	fillDir(t, bad)

	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		dirs, err := dirsOf()
		if err != nil {
			return false, err.Error()
		}
		d, ok := dirs[bad]
		if !ok || !errors.Is(d.Err, kerr.KafkaStorageError) {
			return false, fmt.Sprintf("DescribeLogDirs of node 1: %s is %+v", bad, d)
		}
		if g := dirs[good]; g.Err != nil {
			return false, fmt.Sprintf("the good dir answers %v", g.Err)
		}
		return true, ""
	})
	// The operator's view, as kafka-log-dirs.sh --describe prints it.
	out, err := cluster.Run(t, "log-dirs", "describe", "--bootstrap-server", c.Bootstrap(), "--broker-list", "1", "--topic-list", topic)
	if err != nil {
		t.Fatalf("raftka log-dirs describe: %v\n%s", err, out)
	}
	var doc struct {
		Brokers []struct {
			Broker  int32 `json:"broker"`
			LogDirs []struct {
				LogDir     string  `json:"logDir"`
				Error      *string `json:"error"`
				Partitions []struct {
					Partition string `json:"partition"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	if i := strings.Index(out, "{"); i < 0 || json.Unmarshal([]byte(strings.TrimSpace(out[i:])), &doc) != nil || len(doc.Brokers) != 1 {
		t.Fatalf("raftka log-dirs describe printed:\n%s", out)
	}
	seen := 0
	for _, d := range doc.Brokers[0].LogDirs {
		if d.LogDir == bad || d.LogDir == good {
			seen++
		}
		switch d.LogDir {
		case bad:
			if d.Error == nil || *d.Error != "org.apache.kafka.common.errors.KafkaStorageException" || len(d.Partitions) != 0 {
				t.Fatalf("log-dirs describe, failed dir: %+v", d)
			}
		case good:
			if d.Error != nil || len(d.Partitions) != len(goodParts) {
				t.Fatalf("log-dirs describe, good dir: error %v, %d partitions, want %d", d.Error, len(d.Partitions), len(goodParts))
			}
		}
	}
	if seen != 2 {
		t.Fatalf("log-dirs describe listed %d of node 1's two log dirs:\n%s", seen, out)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		st, _, err := invariants.StateFrom(ctx, h, topic, 1)
		if err != nil {
			return false, err.Error()
		}
		var wrong []string
		for _, part := range badParts {
			s := st[part]
			if s.Leader == 1 || s.InISR(1) || s.Leader < 0 {
				wrong = append(wrong, fmt.Sprintf("partition %d (tmpfs): leader %d ISR %v", part, s.Leader, s.ISR))
			}
		}
		for _, part := range goodParts {
			if s := st[part]; !s.InISR(1) || s.Leader < 0 {
				wrong = append(wrong, fmt.Sprintf("partition %d (good dir): leader %d ISR %v", part, s.Leader, s.ISR))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})
	// Every partition, those of the failed dir included, keeps taking
	// acknowledged records after the failure.
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		var slow []string
		for part := range int32(partitions) {
			if n := rec.CountSince(part, time.Now().Add(-2*time.Second)); n < 20 {
				slow = append(slow, fmt.Sprintf("partition %d: %d acks in the last 2s", part, n))
			}
		}
		return len(slow) == 0, strings.Join(slow, "; ")
	})
	t.Logf("failure to full service: %v", time.Since(failedAt).Round(time.Millisecond))

	// Node 1 still serves: it answers Metadata and leads partitions of
	// its good dir once preferred leadership comes back, and its process
	// is alive.
	if _, err := nodeMetadata(ctx, c.Node(1)); err != nil {
		t.Fatalf("node 1 stopped answering: %v", err)
	}
	if _, err := p.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, h, topic, "failed log dir", invariants.Check(rec.Acks(), read))

	// A restart with the dir still full: node 1 starts on its good dir,
	// with the full dir offline from the start; the partitions of that
	// dir stay off it (not re-created empty elsewhere) and those of the
	// good dir rejoin their ISRs.
	c.Node(1).Kill()
	c.Node(1).Restart()
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		dirs, err := dirsOf()
		if err != nil {
			return false, err.Error()
		}
		if d := dirs[bad]; !errors.Is(d.Err, kerr.KafkaStorageError) {
			return false, fmt.Sprintf("after restart %s is %+v", bad, d)
		}
		var wrong []string
		st, _, err := invariants.StateFrom(ctx, h, topic, 1)
		if err != nil {
			return false, err.Error()
		}
		for _, part := range goodParts {
			if !st[part].InISR(1) {
				wrong = append(wrong, fmt.Sprintf("partition %d (good dir): ISR %v", part, st[part].ISR))
			}
		}
		for _, part := range badParts {
			if st[part].InISR(1) || st[part].Leader == 1 {
				wrong = append(wrong, fmt.Sprintf("partition %d (full dir): leader %d ISR %v", part, st[part].Leader, st[part].ISR))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})
	if _, err := os.Stat(filepath.Join(good, fmt.Sprintf("%s-%d", topic, badParts[0]))); err == nil {
		t.Fatalf("partition %d of the failed dir was re-created in the good dir", badParts[0])
	}

	// The dir repaired (emptied of the filler) and node 1 restarted:
	// its logs there open again, catch up from the leaders and rejoin
	// every ISR, and still nothing acknowledged is lost.
	if err := os.Remove(filepath.Join(bad, "filler")); err != nil {
		t.Fatal(err)
	}
	c.Node(1).Kill()
	c.Node(1).Restart()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })
	dirs, err = dirsOf()
	if err != nil {
		t.Fatal(err)
	}
	if d := dirs[bad]; d.Err != nil {
		t.Fatalf("repaired dir answers %v", d.Err)
	}
	read, err = invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, h, topic, "after the repair", invariants.Check(rec.Acks(), read))
}

// AlterReplicaLogDirs under load: a partition that node 1 leads moves
// from one of its log dirs to the other while an acks=all idempotent
// producer writes to it (the copy serves as a future replica, then swaps).
// The move completes, DescribeLogDirs shows the partition in the new dir
// only, the partition keeps taking acknowledged records after the move,
// It then moves back with `raftka reassign execute` and a log_dirs entry
// (verify reports it done), and every acknowledged record is read back
// exactly once, also after node 1 restarts on the moved log.
func TestJBODAlterReplicaLogDirsUnderLoad(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	c := cluster.Start(t, cluster.NodeOverride(1, "log.dirs", a+","+b))
	h := harness{Cluster: c}
	ctx := ctxFor(t, 3*time.Minute)
	const topic, partitions = "jbodmove", 6
	if err := invariants.CreateTopic(ctx, h.Seeds(), topic, partitions, 3, nil); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })
	adm := kadm.NewClient(client(t, c))
	where := func() (map[int32]string, map[int32]bool, error) {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
		if err != nil {
			return nil, nil, err
		}
		at, future := map[int32]string{}, map[int32]bool{}
		for _, d := range dirs {
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				if p.Topic != topic {
					return
				}
				if p.IsFuture {
					future[p.Partition] = true
				} else {
					at[p.Partition] = d.Dir
				}
			})
		}
		return at, future, nil
	}
	at, _, err := where()
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := invariants.StateFrom(ctx, h, topic)
	if err != nil {
		t.Fatal(err)
	}
	move := int32(-1)
	for p := range int32(partitions) {
		if at[p] == a && (move < 0 || st[p].Leader == 1) {
			move = p
		}
	}
	if move < 0 {
		t.Fatalf("node 1 holds nothing in %s: %v", a, at)
	}
	t.Logf("moving partition %d (leader %d) from %s to %s on node 1", move, st[move].Leader, a, b)

	var rec invariants.Recorder
	p, err := invariants.StartProducer(invariants.ProducerConfig{Seeds: h.Seeds(), Topic: topic, Partitions: partitions,
		Name: "jbodmove", Rate: 600, MaxRecords: 60000, ValueSize: 2048}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(10 * time.Second)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) { return rec.Count() >= 1500, fmt.Sprintf("%d acknowledged", rec.Count()) })

	var req kadm.AlterReplicaLogDirsReq
	req.Add(b, kadm.TopicsSet{topic: {move: {}}})
	resps, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, req)
	if err != nil {
		t.Fatal(err)
	}
	resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if r.Err != nil {
			t.Fatalf("AlterReplicaLogDirs %s-%d: %v", r.Topic, r.Partition, r.Err)
		}
	})
	movedAt := time.Now()
	sawFuture := false
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		at, future, err := where()
		if err != nil {
			return false, err.Error()
		}
		sawFuture = sawFuture || future[move]
		return at[move] == b && !future[move], fmt.Sprintf("partition %d in %q, future %v", move, at[move], future[move])
	})
	t.Logf("moved in %v (future replica seen: %v)", time.Since(movedAt).Round(time.Millisecond), sawFuture)
	if _, err := os.Stat(filepath.Join(a, fmt.Sprintf("%s-%d", topic, move))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old copy is still in %s: %v", a, err)
	}
	// Moving it to the dir it is in changes nothing; to a dir that is not
	// one of log.dirs is LOG_DIR_NOT_FOUND.
	var same, unknown kadm.AlterReplicaLogDirsReq
	same.Add(b, kadm.TopicsSet{topic: {move: {}}})
	unknown.Add(filepath.Join(root, "nope"), kadm.TopicsSet{topic: {move: {}}})
	firstErr := func(rs kadm.AlterReplicaLogDirsResponses, err error) error {
		if err != nil {
			return err
		}
		var e error
		n := 0
		rs.Each(func(r kadm.AlterReplicaLogDirsResponse) {
			n++
			if e == nil {
				e = r.Err
			}
		})
		if n != 1 {
			return fmt.Errorf("%d answers, want 1", n)
		}
		return e
	}
	if err := firstErr(adm.AlterBrokerReplicaLogDirs(ctx, 1, same)); err != nil {
		t.Fatalf("move to the same dir: %v", err)
	}
	if err := firstErr(adm.AlterBrokerReplicaLogDirs(ctx, 1, unknown)); !errors.Is(err, kerr.LogDirNotFound) {
		t.Fatalf("move to an unknown dir: %v, want LOG_DIR_NOT_FOUND", err)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		n := rec.CountSince(move, time.Now().Add(-2*time.Second))
		return n >= 20, fmt.Sprintf("partition %d: %d acks in the last 2s", move, n)
	})

	// Back again with kafka-reassign-partitions.sh's JSON: log_dirs names
	// node 1's dir, "any" the others'; verify exits 0 once it is there.
	reps := st[move].Replicas
	logDirs := make([]string, len(reps))
	for i, r := range reps {
		logDirs[i] = "any"
		if r == 1 {
			logDirs[i] = a
		}
	}
	plan, _ := json.Marshal(map[string]any{"version": 1, "partitions": []map[string]any{{"topic": topic, "partition": move, "replicas": reps, "log_dirs": logDirs}}})
	planFile := filepath.Join(root, "plan.json")
	if err := os.WriteFile(planFile, plan, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := cluster.Run(t, "reassign", "execute", "--bootstrap-server", c.Bootstrap(), "--reassignment-json-file", planFile)
	if err != nil || !strings.Contains(out, fmt.Sprintf("Successfully started log directory move for: %s-%d-1", topic, move)) {
		t.Fatalf("reassign execute: %v\n%s", err, out)
	}
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		out, err := cluster.Run(t, "reassign", "verify", "--bootstrap-server", c.Bootstrap(), "--reassignment-json-file", planFile)
		return err == nil && strings.Contains(out, fmt.Sprintf("Reassignment of replica %s-%d-1 completed successfully.", topic, move)), out
	})
	if at, _, err := where(); err != nil || at[move] != a {
		t.Fatalf("after reassign execute partition %d is in %q (%v), want %s", move, at[move], err, a)
	}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		n := rec.CountSince(move, time.Now().Add(-2*time.Second))
		return n >= 20, fmt.Sprintf("partition %d: %d acks in the last 2s", move, n)
	})
	if _, err := p.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	read, err := invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, h, topic, "log dir moves", invariants.Check(rec.Acks(), read))

	c.Node(1).Kill()
	c.Node(1).Restart()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) { return invariants.FullISR(ctx, h, topic, partitions) })
	at, _, err = where()
	if err != nil {
		t.Fatal(err)
	}
	if at[move] != a {
		t.Fatalf("after a restart partition %d is in %q, want %s", move, at[move], a)
	}
	read, err = invariants.ReadAll(ctx, h.Seeds(), topic)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, h, topic, "after a restart", invariants.Check(rec.Acks(), read))
}
