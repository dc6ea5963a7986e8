package e2e

// deploy/'s Grafana dashboard and Prometheus alert rules name only metrics
// a running node exports: a node serves some traffic (a produce, a group
// consuming and committing, so the labelled series exist), and every
// raftka_ name in the dashboard JSON and the rules file must appear in its
// /metrics.

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// deployMetricNames returns the raftka_ metric names a deploy/ file names,
// in any expression, template query or text.
func deployMetricNames(t *testing.T, rel string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", rel))
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`\braftka_[a-z0-9_]*[a-z0-9]`).FindAllString(string(b), -1)
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) < 5 {
		t.Fatalf("deploy/%s names only %d metrics: %v", rel, len(names), names)
	}
	return names
}

func TestDeployMonitoringNamesExportedMetrics(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	files := []string{"grafana/raftka.json", "prometheus/raftka-alerts.yml"}
	want := map[string][]string{} // name -> files naming it
	for _, f := range files {
		for _, n := range deployMetricNames(t, f) {
			want[n] = append(want[n], f)
		}
	}

	c := cluster.Start(t, cluster.Nodes(1))
	node := c.Node(1)
	ctx := ctxFor(t, 90*time.Second)
	cl := client(t, c)
	const topic = "monitored"
	if err := createTopic(ctx, kadm.NewClient(cl), topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	if r := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("seen by the dashboard")}); r.FirstErr() != nil {
		t.Fatal(r.FirstErr())
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(node.ClientAddr()), kgo.ConsumerGroup("dashboard-group"),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	got := 0
	for got == 0 {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no record consumed: %v", err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		got += fs.NumRecords()
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}

	var missing []string
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		samples, err := scrape(node)
		if err != nil {
			return false, err.Error()
		}
		have := map[string]bool{}
		for line := range samples {
			name, _, _ := strings.Cut(line, "{")
			have[name] = true
		}
		missing = missing[:0]
		for name, in := range want {
			if !have[name] {
				missing = append(missing, name+" (in "+strings.Join(in, ", ")+")")
			}
		}
		slices.Sort(missing)
		return len(missing) == 0, "not exported: " + strings.Join(missing, "; ")
	})
	// The lag series is the consumer's: committed at the end of the topic.
	samples, err := scrape(node)
	if err != nil {
		t.Fatal(err)
	}
	lag := `raftka_consumer_group_lag{group="dashboard-group",partition="0",topic="` + topic + `"}`
	if v, ok := samples[lag]; !ok || v != 0 {
		t.Errorf("%s = %v (exported %v), want 0 after committing the only record", lag, v, ok)
	}
}
