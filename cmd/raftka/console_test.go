package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker"
	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
)

// hostile is what an attacker controls: a group id, a client id, record
// keys and values (topic names are limited to [a-zA-Z0-9._-] by Kafka).
const hostile = `<script>alert(1)</script>`

func consoleFixture(t *testing.T) *httptest.Server {
	t.Helper()
	slots := [16]byte{0xc0}
	img, d := metadata.NewImage().Apply([]metadata.Record{
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 5, Rack: "r1", Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}},
		&metadata.RegisterBroker{BrokerID: 2, BrokerEpoch: 6, Fenced: true},
		&metadata.CreateTopic{Name: "orders", ID: [16]byte{1}, Configs: map[string]string{"retention.ms": "60000"}, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1},
			{Partition: 1, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2},
		}},
		&metadata.CreateTopic{Name: group.OffsetsTopic, ID: slots, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		}},
		&metadata.CommitOffsets{Group: hostile, Offsets: []metadata.OffsetCommit{{Topic: "orders", Partition: 0, Offset: 40, Metadata: hostile}}},
	})
	if len(d.Skipped) > 0 {
		t.Fatal(d.Skipped[0].Err)
	}
	health := replica.Health{Partitions: []replica.PartitionHealth{
		{Topic: "orders", Partition: 0, Leader: true, Replicas: 2, ISR: 1, LogSize: 2048, LogEndOffset: 50, HighWatermark: 50},
	}}
	m := newPromMetrics()
	m.RequestReceived(0, 9, 100)
	m.RequestCompleted(0, brokerTimes(3*time.Millisecond))
	cons, err := newConsole(consoleDeps{
		NodeID: 1, LogDirs: []string{"/var/lib/raftka/logs"},
		Image:  func() *metadata.Image { return img },
		Health: func() replica.Health { return health },
		Groups: func(*metadata.Image) []group.GroupStat { return []group.GroupStat{{ID: hostile, State: group.Stable}} },
		Members: func(string) ([]consoleMember, error) {
			return []consoleMember{{MemberID: "m-1", ClientID: hostile, ClientHost: "/127.0.0.1"}}, nil
		},
		Raft: func() raftfsm.RaftStats {
			return raftfsm.RaftStats{LeaderID: 1, Term: 4, CommitIndex: 77, PublishedIndex: 77}
		},
		Records: func(topic string, p int32, n int) ([]consoleRecord, error) {
			return []consoleRecord{
				{Partition: p, Offset: 48, Timestamp: 1_700_000_000_000, Key: []byte("k1"), Value: []byte(`<img src=x onerror=alert(2)>`)},
				{Partition: p, Offset: 49, Key: nil, Value: []byte{0x00, 0xff, 0x10}},
			}, nil
		},
		Gatherer: m.reg,
		Now:      func() time.Time { return time.Date(2026, 12, 2, 20, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	cons.sampleLag(10)
	health.Partitions[0].HighWatermark = 55
	cons.sampleLag(10)
	mux := metricsMux(m, fixedReady{true, "ready"}, false)
	cons.routes(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func brokerTimes(d time.Duration) (t broker.RequestTimes) { t.Local, t.Total = d, d; return }

func getPage(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusNotFound && ct != "text/html; charset=utf-8" && !strings.HasPrefix(path, "/metrics") {
		t.Errorf("GET %s: Content-Type %q", path, ct)
	}
	return resp.StatusCode, string(b)
}

func TestConsolePages(t *testing.T) {
	srv := consoleFixture(t)
	escaped := `&lt;script&gt;alert(1)&lt;/script&gt;`
	groupPath := "/groups/" + url.PathEscape(hostile)
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/", []string{"Cluster", "Attention", "1 under-replicated partitions", "Raft leader (active controller)", ">77<",
			"PLAINTEXT://127.0.0.1:9092", "r1", "fenced", "(this node)", "(controller)"}},
		{"/topics", []string{`<a href="/topics/orders">orders</a>`, `<tr class="warn">`, "2.0 KiB", "(internal)"}},
		{"/topics/orders", []string{"Topic orders", "retention.ms", "60000", "under-replicated", "not hosted on this broker",
			"k1", `&lt;img src=x onerror=alert(2)&gt;`, `<span class="hex">00 ff 10</span>`, `<span class="muted">null</span>`,
			"2023-11-14 22:13:20.000", "partitions 1 are on other brokers"}},
		{"/groups", []string{escaped, "Stable", ">15<", `<polyline points="0.0,8.3 120.0,1.0"/>`}},
		{groupPath, []string{"Group " + escaped, "m-1", escaped, ">40<", ">55<", ">15<", "Stable"}},
		{"/brokers/1", []string{"Broker 1", "(this node)", "/var/lib/raftka/logs", "Produce", "3.00", "orders-0"}},
		{"/brokers/2", []string{"Broker 2", "fenced", "own console", "orders-1"}},
	} {
		code, body := getPage(t, srv, tc.path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d", tc.path, code)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s lacks %q", tc.path, w)
			}
		}
		for _, raw := range []string{hostile, "<img src=x", "<script"} {
			if strings.Contains(body, raw) {
				t.Errorf("GET %s shows %q unescaped", tc.path, raw)
			}
		}
		if strings.Contains(body, "<script") || strings.Contains(body, "javascript:") {
			t.Errorf("GET %s has script", tc.path)
		}
	}
	for _, path := range []string{"/topics/nope", "/groups/nope", "/brokers/9", "/brokers/x"} {
		if code, body := getPage(t, srv, path); code != http.StatusNotFound || !strings.Contains(body, "Not found") {
			t.Errorf("GET %s: %d", path, code)
		}
	}
	// The probes and /metrics still answer beside the console.
	if code, _ := getPage(t, srv, "/metrics"); code != http.StatusOK {
		t.Errorf("/metrics: %d", code)
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

func TestShowBytes(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want shown
	}{
		{nil, shown{Null: true}},
		{[]byte("plain\ttext\n"), shown{Text: "plain\ttext\n", Bytes: 11}},
		{[]byte("<b>"), shown{Text: "<b>", Bytes: 3}},
		{[]byte{0xff, 0xfe}, shown{Text: "ff fe", Hex: true, Bytes: 2}},
		{[]byte("a\x1bb"), shown{Text: "61 1b 62", Hex: true, Bytes: 3}},
		{[]byte(strings.Repeat("x", shownMax+5)), shown{Text: strings.Repeat("x", shownMax), Cut: 5, Bytes: shownMax + 5}},
	} {
		if got := showBytes(tc.in); got != tc.want {
			t.Errorf("showBytes(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// recentRecords reads the newest records below the high watermark, not
// past it, across batches, keeping null keys null.
func TestRecentRecords(t *testing.T) {
	l, _, err := storage.OpenLog(filepath.Join(t.TempDir(), "t-0"), storage.DefaultConfig(), storage.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 4 {
		b := recordbatch.Build(1000, recordbatch.Record{Key: nil, Value: []byte{byte('a' + 2*i)}}, recordbatch.Record{Key: []byte("k"), Value: []byte{byte('b' + 2*i)}})
		if _, err := l.Append(b, storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	l.SetHighWatermark(6) // the last batch not replicated yet
	got, err := recentRecords(l, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	var vals []string
	for _, r := range got {
		vals = append(vals, string(r.Value))
	}
	if strings.Join(vals, "") != "def" || got[0].Offset != 3 || got[2].Offset != 5 || string(got[0].Key) != "k" || got[1].Key != nil {
		t.Fatalf("recent records %+v", got)
	}
	if got, err := recentRecords(l, 0, 100); err != nil || len(got) != 6 {
		t.Fatalf("all below the HW: %d records, %v", len(got), err)
	}
}
