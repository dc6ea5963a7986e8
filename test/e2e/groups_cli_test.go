package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeRow is one data line of `raftka groups describe`.
type describeRow struct {
	partition          int32
	current, end, lag  string
	consumer, clientID string
}

// parseDescribe reads the rows of group's table from the command's
// combined output (stderr's notes are lines of their own).
func parseDescribe(t *testing.T, out, group, topic string) map[int32]describeRow {
	t.Helper()
	rows := map[int32]describeRow{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) != 9 || f[0] != group || f[1] != topic {
			continue
		}
		p, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatalf("row %q: partition %q", l, f[2])
		}
		rows[int32(p)] = describeRow{partition: int32(p), current: f[3], end: f[4], lag: f[5], consumer: f[6], clientID: f[8]}
	}
	return rows
}

// TestGroupsCLI runs `raftka groups` against a three-node cluster: lag is
// the partitions' end offsets minus the commits, a reset is refused while
// the group has a member, a dry run changes nothing, --execute moves the
// group, and delete-offsets / delete remove what they name.
func TestGroupsCLI(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, group = "cli-lag", "cli-group"
	c := cluster.Start(t, cluster.Nodes(3))
	ctx := ctxFor(t, 3*time.Minute)
	cl := client(t, c)
	adm := kadm.NewClient(cl)
	if err := createTopic(ctx, adm, topic, 3, 3); err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	perPartition := []int{10, 20, 30}
	for p, n := range perPartition {
		for range n {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(args ...string) (string, error) {
		return cluster.Run(t, append([]string{"--log-level", "error", "groups"}, append(args, "--bootstrap-server", c.Bootstrap())...)...)
	}
	mustRun := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("groups %v: %v\n%s", args, err, out)
		}
		return out
	}

	// One live member of a classic group commits 3, 5 and 7.
	assigned := make(chan struct{}, 1)
	member, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("cli-member"),
		kgo.DisableAutoCommit(), kgo.RetryTimeout(20*time.Second),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	pollCtx, stopPoll := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			member.PollFetches(pollCtx)
		}
	}()
	select {
	case <-assigned:
	case <-ctx.Done():
		t.Fatal("the member was never assigned partitions")
	}
	commits := map[int32]int64{0: 3, 1: 5, 2: 7}
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		offs := map[string]map[int32]kgo.EpochOffset{topic: {}}
		for p, o := range commits {
			offs[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
		why := ""
		member.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				why = err.Error()
				return
			}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if e := kerr.ErrorForCode(rp.ErrorCode); e != nil {
						why = e.Error()
					}
				}
			}
		})
		return why == "", "commit: " + why
	})

	out := mustRun("list")
	if !strings.Contains(out, group+"\n") {
		t.Fatalf("list:\n%s", out)
	}
	if out := mustRun("list", "--state", "stable"); !strings.Contains(out, group) || !strings.Contains(out, "Stable") {
		t.Fatalf("list --state stable:\n%s", out)
	}
	if out := mustRun("list", "--state", "Empty"); strings.Contains(out, group) {
		t.Fatalf("list --state Empty shows the live group:\n%s", out)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	out = mustRun("describe", "--group", group)
	rows := parseDescribe(t, out, group, topic)
	if len(rows) != 3 {
		t.Fatalf("describe shows %d rows:\n%s", len(rows), out)
	}
	for p, want := range commits {
		end, _ := ends.Lookup(topic, p)
		r := rows[p]
		if end.Offset != int64(perPartition[p]) || r.end != strconv.FormatInt(end.Offset, 10) ||
			r.current != strconv.FormatInt(want, 10) || r.lag != strconv.FormatInt(end.Offset-want, 10) ||
			r.clientID != "cli-member" || r.consumer == "-" {
			t.Errorf("partition %d: %+v, want commit %d end %d (ListOffsets %d)", p, r, want, perPartition[p], end.Offset)
		}
	}
	if out := mustRun("describe", "--group", group, "--members"); !strings.Contains(out, "cli-member") || !strings.Contains(out, "#PARTITIONS") {
		t.Errorf("describe --members:\n%s", out)
	}
	if out := mustRun("describe", "--group", group, "--state"); !strings.Contains(out, "Stable") || !strings.Contains(out, "COORDINATOR (ID)") {
		t.Errorf("describe --state:\n%s", out)
	}

	// A live member: refused, dry run or not, and nothing moves.
	for _, mode := range []string{"--dry-run", "--execute"} {
		out, err := run("reset-offsets", "--group", group, "--all-topics", "--to-earliest", mode)
		if err == nil || !strings.Contains(out, "Assignments can only be reset if the group '"+group+"' is inactive, but the current state is Stable.") {
			t.Errorf("reset %s with a member: %v\n%s", mode, err, out)
		}
	}
	checkCommits := func(want map[int32]int64) {
		t.Helper()
		got, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		for p, w := range want {
			if o, _ := got.Lookup(topic, p); o.At != w {
				t.Errorf("partition %d committed %d, want %d", p, o.At, w)
			}
		}
	}
	checkCommits(commits)

	// The member leaves: the group is Empty and can be reset.
	stopPoll()
	<-polled
	member.Close()
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		out, err := run("describe", "--group", group, "--state")
		return err == nil && strings.Contains(out, "Empty"), fmt.Sprintf("the group is not Empty: %v\n%s", err, out)
	})
	out = mustRun("reset-offsets", "--group", group, "--topic", topic+":0,2", "--to-offset", "25")
	for _, want := range []string{"NEW-OFFSET", "\n" + group + "       " + topic + "         0          10", "\n" + group + "       " + topic + "         2          25"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	checkCommits(commits)
	mustRun("reset-offsets", "--group", group, "--topic", topic+":0,2", "--to-offset", "25", "--execute")
	checkCommits(map[int32]int64{0: 10, 1: 5, 2: 25})
	mustRun("reset-offsets", "--group", group, "--all-topics", "--shift-by", "-2", "--execute")
	checkCommits(map[int32]int64{0: 8, 1: 3, 2: 23})
	out = mustRun("describe", "--group", group)
	if rows := parseDescribe(t, out, group, topic); rows[0].lag != "2" || rows[1].lag != "17" || rows[2].lag != "7" || rows[0].consumer != "-" {
		t.Errorf("describe after reset:\n%s", out)
	}

	out = mustRun("delete-offsets", "--group", group, "--topic", topic+":1")
	if !strings.Contains(out, "Request succeeded for deleting offsets from group "+group+".") {
		t.Errorf("delete-offsets:\n%s", out)
	}
	got, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := got.Lookup(topic, 1); ok && o.At >= 0 {
		t.Errorf("partition 1 still committed at %d", o.At)
	}
	if out := mustRun("delete", "--group", group); !strings.Contains(out, "Deletion of requested consumer groups ('"+group+"') was successful.") {
		t.Errorf("delete:\n%s", out)
	}
	if out := mustRun("describe", "--group", group); !strings.Contains(out, "Consumer group '"+group+"' does not exist.") {
		t.Errorf("describe after delete:\n%s", out)
	}
	if out, err := run("delete", "--group", group); err == nil || !strings.Contains(out, "GROUP_ID_NOT_FOUND") {
		t.Errorf("second delete: %v\n%s", err, out)
	}
}
