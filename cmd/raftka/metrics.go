package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	rpprof "runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/raftka/raftka/broker"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// promMetrics adapts the broker's counters to Prometheus. The broker package
// stays free of a metrics library; this is the one place that knows the
// exposition format, with names in Kafka's spirit under a raftka_ prefix.
type promMetrics struct {
	reg       *prometheus.Registry
	connsOpen *prometheus.GaugeVec
	conns     *prometheus.CounterVec
	requests  *prometheus.CounterVec
	bytesIn   prometheus.Counter
	responses *prometheus.CounterVec
	bytesOut  prometheus.Counter
	rejected  *prometheus.CounterVec
	refused   *prometheus.CounterVec

	requestTime    *prometheus.HistogramVec
	requestPhases  [numPhases]*prometheus.HistogramVec
	phaseCache     [128]atomic.Pointer[[numPhases + 1]prometheus.Observer] // by API key: the phases, then the total
	responseErrors *prometheus.CounterVec
	topicBytesIn   *prometheus.CounterVec
	topicRecordsIn *prometheus.CounterVec
	topicBytesOut  *prometheus.CounterVec
	topicsSeen     sync.Map // topic name -> struct{}: topics with per-topic series
	logFlush       prometheus.Histogram
	flushRound     prometheus.Histogram
	raft           *raftMetrics
	groups         *groupMetrics
}

func newPromMetrics() *promMetrics {
	m := &promMetrics{
		reg: prometheus.NewRegistry(),
		connsOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "raftka_connections_open", Help: "Client connections open, by listener.",
		}, []string{"listener"}),
		conns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raftka_connections_total", Help: "Client connections accepted, by listener.",
		}, []string{"listener"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raftka_requests_total", Help: "Requests received, by API key and version.",
		}, []string{"api_key", "version"}),
		bytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "raftka_request_bytes_total", Help: "Bytes of request frames received.",
		}),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raftka_responses_total", Help: "Responses written in full, by API key and version.",
		}, []string{"api_key", "version"}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "raftka_response_bytes_total", Help: "Bytes of responses written.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raftka_rejected_requests_total", Help: "Frames or requests answered with an error or a close, by reason.",
		}, []string{"reason"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raftka_produce_refused_batches_total",
			Help: "Produced batches the leader refused for their content (corrupt or undecodable compressed records, invalid records, too large), by reason and client id.",
		}, []string{"reason", "client_id"}),
	}
	m.requestTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "raftka_request_total_time_seconds",
		Help:    "Time from a request's receipt to its response written (or its end without one), by request name.",
		Buckets: requestBuckets,
	}, []string{"request"})
	for i, ph := range requestPhaseNames {
		m.requestPhases[i] = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: ph.name, Help: ph.help, Buckets: requestBuckets,
		}, []string{"request"})
	}
	m.responseErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "raftka_request_errors_total",
		Help: "Non-zero error codes carried in responses (top level and per partition, topic or group), by request name and error.",
	}, []string{"request", "error"})
	m.topicBytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "raftka_topic_bytes_in_total", Help: "Bytes of record batches producers sent that this broker appended as leader, by topic.",
	}, []string{"topic"})
	m.topicRecordsIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "raftka_topic_records_in_total", Help: "Records in batches producers sent that this broker appended as leader, by topic.",
	}, []string{"topic"})
	m.topicBytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "raftka_topic_bytes_out_total", Help: "Bytes of record batches sent to consumers (not followers), by topic.",
	}, []string{"topic"})
	m.logFlush = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "raftka_log_flush_time_seconds",
		Help: "Time of each partition log flush that fsynced (flush.messages, flush.ms, a rolled segment, shutdown).",
		// 50 µs (a page-cache flush on an idle SSD) to about 6 s.
		Buckets: prometheus.ExponentialBuckets(0.00005, 2.5, 14),
	})
	m.reg.MustRegister(m.logFlush)
	m.flushRound = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "raftka_log_flush_round_logs",
		Help: "Partition logs fsynced by each durable-mode (flush.messages=1) group commit round of a log dir; the count's rate is the round rate.",
		// 1 to 4096 logs.
		Buckets: prometheus.ExponentialBuckets(1, 2, 13),
	})
	m.reg.MustRegister(m.flushRound)
	m.raft = newRaftMetrics(m.reg)
	m.groups = newGroupMetrics(m.reg)
	for _, h := range m.requestPhases {
		m.reg.MustRegister(h)
	}
	m.reg.MustRegister(m.connsOpen, m.conns, m.requests, m.bytesIn, m.responses, m.bytesOut, m.rejected, m.refused,
		m.requestTime, m.responseErrors, m.topicBytesIn, m.topicRecordsIn, m.topicBytesOut,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

var _ broker.Metrics = (*promMetrics)(nil)

func (m *promMetrics) ConnOpened(l string) {
	m.connsOpen.WithLabelValues(l).Inc()
	m.conns.WithLabelValues(l).Inc()
}
func (m *promMetrics) ConnClosed(l string) { m.connsOpen.WithLabelValues(l).Dec() }
func (m *promMetrics) RequestReceived(key, version int16, frameBytes int) {
	m.requests.WithLabelValues(strconv.Itoa(int(key)), strconv.Itoa(int(version))).Inc()
	m.bytesIn.Add(float64(frameBytes))
}
func (m *promMetrics) ResponseSent(key, version int16, bytes int64) {
	m.responses.WithLabelValues(strconv.Itoa(int(key)), strconv.Itoa(int(version))).Inc()
	m.bytesOut.Add(float64(bytes))
}
func (m *promMetrics) Rejected(r broker.Reason) { m.rejected.WithLabelValues(r.String()).Inc() }
func (m *promMetrics) BatchRefused(reason, clientID string) {
	m.refused.WithLabelValues(reason, clientID).Inc()
}

// requestBuckets span 50 µs to about 12 s: a queue or send phase of a
// local answer up to a Fetch or acks=all Produce waiting out its timeout.
var requestBuckets = prometheus.ExponentialBuckets(0.00005, 2.5, 15)

// The phases of broker.RequestTimes before Total, in its order, as Kafka's
// RequestMetrics names them.
const numPhases = 5

var requestPhaseNames = [numPhases]struct{ name, help string }{
	{"raftka_request_queue_time_seconds", "Time from a request's receipt to its handler starting, by request name."},
	{"raftka_request_local_time_seconds", "Time a request's handler worked before answering or waiting on others, by request name."},
	{"raftka_request_remote_time_seconds", "Time a request waited on others (the produce or fetch purgatory), by request name."},
	{"raftka_response_queue_time_seconds", "Time from a response being ready to its write starting, by request name (includes earlier responses on the connection)."},
	{"raftka_response_send_time_seconds", "Time writing a response, by request name."},
}

func (m *promMetrics) RequestCompleted(key int16, t broker.RequestTimes) {
	obs := m.observers(key)
	for i, d := range [numPhases + 1]time.Duration{t.Queue, t.Local, t.Remote, t.ResponseQueue, t.ResponseSend, t.Total} {
		obs[i].Observe(d.Seconds())
	}
}

// observers returns key's six histograms, found once per key: the label
// lookup (a hash of the name under a lock) is not paid per request.
func (m *promMetrics) observers(key int16) *[numPhases + 1]prometheus.Observer {
	var slot *atomic.Pointer[[numPhases + 1]prometheus.Observer]
	if key >= 0 && int(key) < len(m.phaseCache) {
		slot = &m.phaseCache[key]
		if o := slot.Load(); o != nil {
			return o
		}
	}
	name := requestName(key)
	var o [numPhases + 1]prometheus.Observer
	for i, h := range m.requestPhases {
		o[i] = h.WithLabelValues(name)
	}
	o[numPhases] = m.requestTime.WithLabelValues(name)
	if slot != nil {
		slot.Store(&o)
	}
	return &o
}

func (m *promMetrics) ResponseError(key, code int16) {
	name := strconv.Itoa(int(code))
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		// kerr answers UNKNOWN_SERVER_ERROR for a code it does not know:
		// keep the number then rather than a wrong name.
		if errors.As(e, &ke) && ke.Code == code {
			name = ke.Message
		}
	}
	m.responseErrors.WithLabelValues(requestName(key), name).Inc()
}

func (m *promMetrics) TopicProduced(topic string, bytes, records int64) {
	m.sawTopic(topic)
	m.topicBytesIn.WithLabelValues(topic).Add(float64(bytes))
	m.topicRecordsIn.WithLabelValues(topic).Add(float64(records))
}

func (m *promMetrics) TopicFetched(topic string, bytes int64) {
	m.sawTopic(topic)
	m.topicBytesOut.WithLabelValues(topic).Add(float64(bytes))
}

// sawTopic remembers that topic has per-topic series, so that
// pruneTopics can drop them once the topic is deleted (Kafka removes a
// deleted topic's BrokerTopicMetrics too); without it a cluster that
// creates and deletes topics grows its scrape without bound. A Load that
// hits is the whole cost per request.
func (m *promMetrics) sawTopic(topic string) {
	if _, ok := m.topicsSeen.Load(topic); !ok {
		m.topicsSeen.Store(topic, struct{}{})
	}
}

// pruneTopics deletes the per-topic series of every topic exists says is
// gone. It runs at scrape time (topicPruner), off the request path.
func (m *promMetrics) pruneTopics(exists func(topic string) bool) {
	m.topicsSeen.Range(func(k, _ any) bool {
		topic := k.(string)
		if !exists(topic) {
			m.topicsSeen.Delete(topic)
			m.topicBytesIn.DeleteLabelValues(topic)
			m.topicRecordsIn.DeleteLabelValues(topic)
			m.topicBytesOut.DeleteLabelValues(topic)
		}
		return true
	})
}

// topicPruner is an unchecked collector that exports nothing: its Collect
// prunes deleted topics' series before they are gathered again.
type topicPruner struct {
	m     *promMetrics
	image func() *metadata.Image
}

func (topicPruner) Describe(chan<- *prometheus.Desc) {}

func (p topicPruner) Collect(chan<- prometheus.Metric) {
	img := p.image()
	if img == nil {
		return
	}
	p.m.pruneTopics(func(topic string) bool {
		_, ok := img.Topic(topic)
		return ok
	})
}

// logFlushed is storage's OnFlush.
func (m *promMetrics) logFlushed(d time.Duration) { m.logFlush.Observe(d.Seconds()) }

// logFlushRound is storage's OnFlushRound (each data fsync in it is also
// a logFlushed sample).
func (m *promMetrics) logFlushRound(logs int, _ time.Duration) { m.flushRound.Observe(float64(logs)) }

// requestName is Kafka's name for an API key, as its RequestMetrics label
// request=X has it (Produce, Fetch, ...), or the number for a key kmsg
// does not know.
func requestName(key int16) string {
	if n := kmsg.NameForKey(key); n != "Unknown" {
		return n
	}
	return strconv.Itoa(int(key))
}

// addNode exports the Raft node's and the broker registration's state,
// read at scrape time.
func (m *promMetrics) addNode(node *raftfsm.Node, life *broker.Lifecycle) {
	m.reg.MustRegister(
		newRaftStatsCollector(node.RaftStats),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "raftka_metadata_snapshot_restores_total", Help: "Metadata snapshots this node restored, from disk or installed from the leader.",
		}, func() float64 { return float64(node.SnapshotRestores()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "raftka_broker_fenced", Help: "1 while the controller has this broker fenced.",
		}, func() float64 { return b2f(life.Fenced()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "raftka_broker_epoch", Help: "This broker's registration epoch, -1 before registration.",
		}, func() float64 { return float64(life.Epoch()) }),
	)
}

// catchUpWaits exports broker.Server.CatchUpWaits when scraped.
type catchUpWaits struct {
	waits func() (clients, replicas uint64)
	desc  *prometheus.Desc
}

func newCatchUpWaits(waits func() (clients, replicas uint64)) prometheus.Collector {
	return &catchUpWaits{waits: waits, desc: prometheus.NewDesc("raftka_catch_up_waits_total",
		"Requests that met a partition this node's metadata was behind on (another node named it first) and waited for it to catch up, by who sent them (client, replica).",
		[]string{"from"}, nil)}
}

func (c *catchUpWaits) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *catchUpWaits) Collect(ch chan<- prometheus.Metric) {
	clients, replicas := c.waits()
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(clients), "client")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(replicas), "replica")
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

type readyChecker interface{ ready() (bool, string) }

// serveMetrics serves /metrics, /healthz (the process answers), /readyz
// (the node can take client traffic) and, with metrics.pprof.enable, the Go
// profiler under /debug/pprof/ on metrics.listener. The profiler is opt-in:
// it has no authentication and a CPU profile or trace costs the broker
// while it runs, so it is there only where an operator asked for it.
func serveMetrics(addr string, pprofOn bool, m *promMetrics, rc readyChecker, cons *console, log zerolog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics.listener %s: %w", addr, err)
	}
	mux := metricsMux(m, rc, pprofOn)
	if cons != nil {
		cons.routes(mux)
	}
	srv := &http.Server{Handler: scrapeLabelled(mux), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("metrics listener stopped")
		}
	}()
	msg := "metrics, /healthz and /readyz listening"
	if pprofOn {
		msg = "metrics, /healthz, /readyz and /debug/pprof/ listening"
	}
	if cons != nil {
		msg += "; web console on /"
	}
	log.Info().Str("addr", ln.Addr().String()).Msg(msg)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// scrapeWorkLabel is the profiler label (key, value) on the CPU the metrics
// listener's handlers spend: `make bench` reads a CPU profile of a loaded
// broker being scraped and attributes to scraping exactly the samples with
// this label (goroutines a handler starts inherit it), a figure that does
// not drown in the run-to-run noise of comparing two throughput runs.
var scrapeWorkLabel = [2]string{"raftka.work", "scrape"}

// scrapeLabelled runs h under scrapeWorkLabel, except the profiler's own
// paths: a CPU profile being taken is not scraping cost.
func scrapeLabelled(h http.Handler) http.Handler {
	labels := rpprof.Labels(scrapeWorkLabel[0], scrapeWorkLabel[1])
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			h.ServeHTTP(w, r)
			return
		}
		rpprof.Do(r.Context(), labels, func(ctx context.Context) {
			h.ServeHTTP(w, r.WithContext(ctx))
		})
	})
}

// metricsMux routes the metrics listener's paths.
func metricsMux(m *promMetrics, rc readyChecker, pprofOn bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, why := rc.ready()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, why)
	})
	if !pprofOn {
		return mux
	}
	// Registered by hand: the net/http/pprof import's init only touches
	// http.DefaultServeMux, which we do not serve. pprof.Index also serves
	// the named profiles (heap, allocs, goroutine, block, mutex, ...).
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
