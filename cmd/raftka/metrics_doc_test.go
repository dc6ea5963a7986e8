package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker"
	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
)

// exercised returns a promMetrics with every metric observed once, so that
// labelled families appear in a scrape.
func exercised(t *testing.T) *promMetrics {
	t.Helper()
	m := newPromMetrics()
	m.ConnOpened("CLIENT")
	m.RequestReceived(0, 9, 100)
	m.ResponseSent(0, 9, 50)
	m.Rejected(broker.ReasonBadHeader)
	m.BatchRefused("corrupt_message", "c")
	m.RequestCompleted(0, broker.RequestTimes{Local: time.Millisecond, Total: time.Millisecond})
	m.ResponseError(0, 3)
	m.TopicProduced("t", 100, 2)
	m.TopicFetched("t", 100)
	m.logFlushed(time.Millisecond)
	m.logFlushRound(6, time.Millisecond)
	m.Committed(time.Millisecond)
	m.Applied(time.Millisecond)
	m.SnapshotPersisted(100, time.Millisecond)
	m.LeaderElected(false, time.Millisecond)
	m.RebalanceCompleted(time.Second)
	m.reg.MustRegister(newGroupCollector(func(*metadata.Image) []group.GroupStat { return []group.GroupStat{{ID: "g", State: group.Stable}} },
		func() *metadata.Image {
			img, _ := metadata.NewImage().Apply([]metadata.Record{&metadata.CommitOffsets{Group: "g", Offsets: []metadata.OffsetCommit{{Topic: "t", Offset: 1}}}})
			return img
		},
		func() replica.Health {
			return replica.Health{Partitions: []replica.PartitionHealth{{Topic: "t", Leader: true, Replicas: 3, ISR: 2, MinISR: 2, HighWatermark: 4}}}
		}, 10, nil))
	m.reg.MustRegister(newCatchUpWaits(func() (uint64, uint64) { return 0, 0 }))
	m.reg.MustRegister(newRaftStatsCollector(func() raftfsm.RaftStats { return raftfsm.RaftStats{Term: 2, LeaderID: 1, LeaderChanges: 2} }))
	m.reg.MustRegister(newPartitionCollector(func() replica.Health {
		return replica.Health{Partitions: []replica.PartitionHealth{{Topic: "t", Leader: true, Replicas: 3, ISR: 2, MinISR: 2}}}
	}, func() bool { return true }, metadata.NewImage))
	return m
}

// Every metric METRICS.md documents is exported, so the table cannot name
// a metric that does not exist.
func TestMetricsDocNamesExportedMetrics(t *testing.T) {
	doc, err := os.ReadFile("METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `(raftka_[a-z_]+)` \\|").FindAllSubmatch(doc, -1)
	if len(rows) < 10 {
		t.Fatalf("METRICS.md names %d metrics; the table did not parse", len(rows))
	}
	m := exercised(t)
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range fams {
		have[f.GetName()] = true
	}
	for _, r := range rows {
		if name := string(r[1]); !have[name] {
			t.Errorf("METRICS.md documents %s, which is not exported", name)
		}
	}
}

// value returns the sum of a gathered family's samples (counter, gauge or
// histogram count), -1 if the family is missing.
func value(t *testing.T, m *promMetrics, name string) float64 {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		var v float64
		for _, s := range f.GetMetric() {
			switch {
			case s.Gauge != nil:
				v += s.Gauge.GetValue()
			case s.Counter != nil:
				v += s.Counter.GetValue()
			case s.Histogram != nil:
				v += float64(s.Histogram.GetSampleCount())
			}
		}
		return v
	}
	return -1
}

func TestPartitionCollectorCounts(t *testing.T) {
	img, _ := metadata.NewImage().Apply([]metadata.Record{
		&metadata.CreateTopic{Name: "t", ID: [16]byte{1}, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
			{Partition: 1, Replicas: []int32{2}, ISR: []int32{2}, Leader: metadata.NoLeader},
		}},
	})
	health := replica.Health{IsrShrinks: 3, IsrExpands: 2, Partitions: []replica.PartitionHealth{
		{Topic: "a", Partition: 0, Leader: true, Replicas: 3, ISR: 3, MinISR: 2, LogSize: 100, LogEndOffset: 7},
		{Topic: "a", Partition: 1, Leader: true, Replicas: 3, ISR: 2, MinISR: 2, LogSize: 50},
		{Topic: "a", Partition: 2, Leader: true, Replicas: 3, ISR: 1, MinISR: 2},
		{Topic: "b", Partition: 0, Leader: false, Replicas: 3, ISR: 1, MinISR: 2},
	}}
	for _, tc := range []struct {
		controller bool
		want       map[string]float64
	}{
		{true, map[string]float64{
			"raftka_partitions": 4, "raftka_leader_partitions": 3, "raftka_under_replicated_partitions": 2,
			"raftka_under_min_isr_partitions": 1, "raftka_at_min_isr_partitions": 1, "raftka_offline_partitions": 1,
			"raftka_metadata_active_controller": 1, "raftka_isr_shrinks_total": 3, "raftka_isr_expands_total": 2,
			"raftka_log_size_bytes": 150, "raftka_log_end_offset": 7,
		}},
		{false, map[string]float64{"raftka_offline_partitions": 0, "raftka_metadata_active_controller": 0, "raftka_under_replicated_partitions": 2}},
	} {
		m := newPromMetrics()
		m.reg.MustRegister(newPartitionCollector(func() replica.Health { return health }, func() bool { return tc.controller }, func() *metadata.Image { return img }))
		for name, want := range tc.want {
			if got := value(t, m, name); got != want {
				t.Errorf("controller=%v: %s = %v, want %v", tc.controller, name, got, want)
			}
		}
	}
}

func TestPromAdapterLabels(t *testing.T) {
	m := exercised(t)
	m.ResponseError(1, 3)
	m.ResponseError(1, 3)
	m.ResponseError(1, 9999)
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"raftka_request_total_time_seconds", 1},
		{"raftka_request_errors_total", 4},
		{"raftka_topic_bytes_in_total", 100},
		{"raftka_topic_records_in_total", 2},
	} {
		if got := value(t, m, tc.name); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
	srv := httptest.NewServer(metricsMux(m, fixedReady{true, "ready"}, false))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`raftka_request_errors_total{error="UNKNOWN_TOPIC_OR_PARTITION",request="Fetch"} 2`,
		`raftka_request_errors_total{error="9999",request="Fetch"} 1`,
		`raftka_request_total_time_seconds_count{request="Produce"} 1`,
		`raftka_topic_bytes_out_total{topic="t"} 100`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
