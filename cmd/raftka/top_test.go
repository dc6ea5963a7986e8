package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRenderTop(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 19, 30, 0, 0, time.UTC)
	prev := &topSnapshot{At: t0, ClusterID: "c1", RaftLeader: 1, Term: 3, CommitIndex: 90,
		Topics: []topTopic{{Name: "orders", Partitions: 3, EndOffset: 100}, {Name: "quiet", Partitions: 1, EndOffset: 7}},
		Groups: []topGroup{{Name: "billing", State: "Stable", Members: 2, Lag: 40}},
	}
	cur := &topSnapshot{At: t0.Add(2 * time.Second), ClusterID: "c1", RaftLeader: 1, Term: 3, CommitIndex: 97,
		Voters:  []topVoter{{ID: 1, Leader: true, Lag: 0}, {ID: 2, Lag: 3}, {ID: 3, Lag: -1}},
		Brokers: []topBroker{{ID: 1, Addr: "127.0.0.1:9092", Leaders: 3}, {ID: 2, Addr: "127.0.0.1:9093", Fenced: true}},
		Topics: []topTopic{
			{Name: "orders", Partitions: 3, EndOffset: 200},
			{Name: "quiet", Partitions: 1, EndOffset: 7},
			{Name: "sick", Partitions: 2, URP: 1, Down: 1, EndOffset: 5},
			{Name: "new", Partitions: 1},
		},
		Groups: []topGroup{{Name: "billing", State: "Stable", Members: 2, Lag: 50}, {Name: "audit", State: "Empty", Lag: 60}, {Name: "broken", State: "Dead", Lag: -1}},
	}
	var b strings.Builder
	renderTop(&b, prev, cur, topOptions{Rows: 3, Interval: 2 * time.Second})
	out := b.String()
	for _, want := range []string{
		"raftka top  cluster c1  2026-12-02 19:30:02 UTC  every 2s\n",
		"CRITICAL: 1 offline partitions, 1 under-replicated partitions, broker 2 fenced\n",
		"Quorum:  leader 1  term 3  commit index 97  voters 1 leader (lag 0), 2 (lag 3), 3 (lag ?)\n",
		"Brokers: 1 127.0.0.1:9092 up, leads 3; 2 127.0.0.1:9093 FENCED, leads 0\n",
		// Trouble first, then the busiest (100 records in 2 s), then by name;
		// a topic new since prev has no rate yet.
		"TOPIC   PARTITIONS  UNDER-REPLICATED  OFFLINE  END OFFSET  RECORDS/S\nsick    2           1                 1        5           -\norders  3           0                 0        200         50.0\nnew     1           0                 0        0           -\n(1 more topics)\n",
		"GROUP    STATE   MEMBERS  LAG  LAG CHANGE/S\naudit    Empty   0        60   -\nbilling  Stable  2        50   +5.0\nbroken   Dead    0        ?    -\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("screen lacks %q:\n%s", want, out)
		}
	}

	// The first refresh has no rates; a missing answer is said in place.
	b.Reset()
	cur.GroupsErr, cur.Groups = errors.New("GROUP_AUTHORIZATION_FAILED"), nil
	renderTop(&b, nil, cur, topOptions{Rows: 10, Interval: time.Second})
	out = b.String()
	for _, want := range []string{"orders  3           0                 0        200         -\n", "Groups: unavailable: GROUP_AUTHORIZATION_FAILED\n", "some answers missing"} {
		if !strings.Contains(out, want) {
			t.Errorf("first screen lacks %q:\n%s", want, out)
		}
	}
}

func TestTopHealth(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    topSnapshot
		want string
	}{
		{"healthy", topSnapshot{RaftLeader: 2, Topics: []topTopic{{Name: "a", Partitions: 3}}}, "OK: every partition fully replicated, a controller is active"},
		{"no controller", topSnapshot{RaftLeader: -1}, "CRITICAL: no active controller"},
		{"urp", topSnapshot{RaftLeader: 1, Topics: []topTopic{{URP: 2}, {URP: 1}}}, "WARNING: 3 under-replicated partitions"},
		{"quorum unknown", topSnapshot{RaftLeader: -1, QuorumErr: errors.New("x")}, "WARNING: some answers missing"},
	} {
		if got := topHealth(&tc.s); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Against a real node: the quorum and broker lines come from raftka's
// DescribeQuorum and DescribeCluster; this node has no group coordinator,
// which the groups part says in place (after the request timeout: kgo
// retries COORDINATOR_NOT_AVAILABLE).
func TestTopAgainstOneNode(t *testing.T) {
	addr := startNode(t)
	out := mustRun(t, "", "cluster", "watch", "--bootstrap-server", addr, "--iterations", "1", "--request-timeout", "4s")
	for _, want := range []string{"raftka top  cluster status-cluster  ", "Quorum:  leader 1  term ", "voters 1 leader (lag 0)", "Brokers: 1 " + addr + " up, leads 0\n", "Groups: unavailable: ", "WARNING: some answers missing"} {
		if !strings.Contains(out, want) {
			t.Errorf("raftka cluster watch lacks %q:\n%s", want, out)
		}
	}
}

// Against a Kafka-protocol cluster with traffic: two refreshes show the
// records produced in between as a rate and the group's lag.
func TestTopRefreshesWithTraffic(t *testing.T) {
	bs := startKfake(t, kfake.SeedTopics(1, "watched"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.DefaultProduceTopic("watched"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.ConsumerGroup("watchers"), kgo.ConsumeTopics("watched"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for n := 0; n < 3; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("nothing consumed")
		}
		n += fs.NumRecords()
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	// 7 more arrive while top waits between its two refreshes.
	go func() {
		time.Sleep(300 * time.Millisecond)
		for range 7 {
			cl.Produce(ctx, &kgo.Record{Value: []byte("w")}, nil)
		}
		cl.Flush(ctx)
	}()
	out := mustRun(t, "", "top", "--bootstrap-server", bs, "--iterations", "2", "--interval", "1500ms", "--request-timeout", "10s")
	frames := strings.Split(out, "raftka top  cluster ")
	if len(frames) != 3 {
		t.Fatalf("%d frames, want 2:\n%s", len(frames)-1, out)
	}
	first, second := frames[1], frames[2]
	if !strings.Contains(first, "\nwatched  1           0                 0        3           -\n") {
		t.Errorf("first frame lacks the topic at end offset 3 without a rate:\n%s", first)
	}
	if !strings.Contains(second, "\nwatched  1           0                 0        10          ") {
		t.Errorf("second frame lacks the topic at end offset 10:\n%s", second)
	}
	if strings.Contains(second, "        10          -\n") {
		t.Errorf("second frame has no rate:\n%s", second)
	}
	if !strings.Contains(second, "\nwatchers  ") || !strings.Contains(second, "  7    +") {
		t.Errorf("second frame lacks group watchers with lag 7, growing:\n%s", second)
	}
}
