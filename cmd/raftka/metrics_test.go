package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	rpprof "runtime/pprof"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/raftka/raftka/metadata"
)

type fixedReady struct {
	ok  bool
	why string
}

func (f fixedReady) ready() (bool, string) { return f.ok, f.why }

func TestMetricsMuxServesProbesMetricsAndPprof(t *testing.T) {
	m := newPromMetrics()
	m.BatchRefused("corrupt_message", "bad-producer")
	m.BatchRefused("corrupt_message", "bad-producer")
	srv := httptest.NewServer(metricsMux(m, fixedReady{false, "not registered"}, true))
	defer srv.Close()

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s body: %v", path, err)
		}
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		path     string
		code     int
		contains string
	}{
		{"/healthz", http.StatusOK, "ok"},
		{"/readyz", http.StatusServiceUnavailable, "not registered"},
		{"/metrics", http.StatusOK, "go_goroutines"},
		{"/metrics", http.StatusOK, `raftka_produce_refused_batches_total{client_id="bad-producer",reason="corrupt_message"} 2`},
		{"/debug/pprof/", http.StatusOK, "goroutine"},
		{"/debug/pprof/goroutine?debug=1", http.StatusOK, "goroutine profile"},
		{"/debug/pprof/allocs?debug=1", http.StatusOK, "heap profile"},
		{"/debug/pprof/cmdline", http.StatusOK, ""},
	} {
		code, body := get(tc.path)
		if code != tc.code || !strings.Contains(body, tc.contains) {
			t.Errorf("GET %s = %d %.80q, want %d containing %q", tc.path, code, body, tc.code, tc.contains)
		}
	}
}

// Without metrics.pprof.enable the profiler is not served, while the probes
// and /metrics are.
func TestMetricsMuxHidesPprofByDefault(t *testing.T) {
	srv := httptest.NewServer(metricsMux(newPromMetrics(), fixedReady{true, "ready"}, false))
	defer srv.Close()
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/healthz", http.StatusOK},
		{"/readyz", http.StatusOK},
		{"/metrics", http.StatusOK},
		{"/debug/pprof/", http.StatusNotFound},
		{"/debug/pprof/profile?seconds=1", http.StatusNotFound},
		{"/debug/pprof/cmdline", http.StatusNotFound},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatalf("GET %s: %v", tc.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s = %d, want %d", tc.path, resp.StatusCode, tc.code)
		}
	}
}

// The bench's scrape-cost figure counts CPU samples by this label, so a
// handler that ran unlabelled would make scraping look free.
func TestScrapeHandlersRunUnderTheProfilerLabel(t *testing.T) {
	for _, tc := range []struct {
		path string
		want string
	}{
		{"/metrics", "scrape"},
		{"/", "scrape"},
		{"/groups/g1", "scrape"},
		{"/debug/pprof/profile", ""},
	} {
		var got string
		h := scrapeLabelled(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			got, _ = rpprof.Label(r.Context(), scrapeWorkLabel[0])
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tc.path, nil))
		if got != tc.want {
			t.Errorf("%s: label %q, want %q", tc.path, got, tc.want)
		}
	}
}

// A deleted topic's per-topic series go at the next scrape; a live
// topic's stay and keep counting.
func TestDeletedTopicsSeriesArePruned(t *testing.T) {
	m := newPromMetrics()
	m.TopicProduced("kept", 100, 2)
	m.TopicProduced("deleted", 50, 1)
	m.TopicFetched("deleted", 50)
	m.pruneTopics(func(topic string) bool { return topic == "kept" })
	m.TopicFetched("kept", 10)
	srv := httptest.NewServer(metricsMux(m, fixedReady{true, "ok"}, false))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	if strings.Contains(text, `topic="deleted"`) {
		t.Errorf("series of the deleted topic still exported")
	}
	for _, want := range []string{`raftka_topic_bytes_in_total{topic="kept"} 100`, `raftka_topic_bytes_out_total{topic="kept"} 10`} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s", want)
		}
	}
	// Produced to again after the prune (a topic re-created with the
	// same name): counted from zero, and prunable again.
	m.TopicProduced("deleted", 7, 1)
	m.pruneTopics(func(string) bool { return false })
	ch := make(chan prometheus.Metric, 8)
	m.topicBytesIn.Collect(ch)
	close(ch)
	if n := len(ch); n != 0 {
		t.Errorf("%d bytes-in series after pruning every topic", n)
	}
	topicPruner{m: m, image: func() *metadata.Image { return nil }}.Collect(nil)
}
