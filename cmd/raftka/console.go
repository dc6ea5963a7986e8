package main

// The web console: read-only pages on the metrics listener (console.enable),
// rendered on the server with html/template and no JavaScript, so they work
// with scripts off and every value they show (topic names, group ids, client
// ids, record keys and values: untrusted input) goes through the template's
// contextual escaping. The pages read what this node already holds: the
// metadata image (topics, partitions, ISR, brokers, configs, committed
// offsets), the replica manager (log sizes and offsets, high watermarks,
// records of the partitions hosted here), the group coordinator (groups
// coordinated here) and the Raft node. Nothing is asked of other brokers:
// a page says where a figure is this node's only.

import (
	"cmp"
	"context"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
)

//go:embed console/*.html
var consoleFiles embed.FS

// consoleDeps is what the console reads. Funcs that are nil leave their
// part of a page out.
type consoleDeps struct {
	NodeID  int32
	LogDirs []string
	Image   func() *metadata.Image
	Health  func() replica.Health
	Groups  func(*metadata.Image) []group.GroupStat
	Members func(groupID string) ([]consoleMember, error)
	Raft    func() raftfsm.RaftStats
	// Records returns up to n of the newest records below the high
	// watermark of a partition hosted here.
	Records func(topic string, partition int32, n int) ([]consoleRecord, error)
	// Gatherer is the node's Prometheus registry, for the request figures
	// on this broker's page.
	Gatherer prometheus.Gatherer
	Now      func() time.Time
}

type consoleMember struct {
	MemberID, InstanceID, ClientID, ClientHost string
}

// consoleRecord is one record as a page shows it.
type consoleRecord struct {
	Partition int32
	Offset    int64
	Timestamp int64
	Key       []byte // nil: null
	Value     []byte
	Headers   int
}

// console serves the pages; see consoleMux.
type console struct {
	deps  consoleDeps
	pages map[string]*template.Template

	lagMu  sync.Mutex
	lagLog map[string][]int64 // group -> total lag samples, oldest first
}

// lagSamples is how many lag samples a group's sparkline keeps.
const lagSamples = 60

func newConsole(d consoleDeps) (*console, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	c := &console{deps: d, pages: map[string]*template.Template{}, lagLog: map[string][]int64{}}
	funcs := template.FuncMap{
		"show":  showBytes,
		"ids":   consoleIDs,
		"bytes": humanBytes,
		"ms":    func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") },
	}
	for _, p := range []string{"overview", "topics", "topic", "groups", "group", "broker"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(consoleFiles, "console/layout.html", "console/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", p, err)
		}
		c.pages[p] = t
	}
	return c, nil
}

// routes adds the console's pages to mux.
func (c *console) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", c.overview)
	mux.HandleFunc("GET /topics", c.topics)
	mux.HandleFunc("GET /topics/{name}", c.topic)
	mux.HandleFunc("GET /groups", c.groups)
	mux.HandleFunc("GET /groups/{id}", c.group)
	mux.HandleFunc("GET /brokers/{id}", c.broker)
}

func (c *console) render(w http.ResponseWriter, page string, status int, data any) {
	var b strings.Builder
	if err := c.pages[page].Execute(&b, data); err != nil {
		http.Error(w, "console: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Nothing on these pages needs a script, a frame or a foreign origin.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

func (c *console) notFound(w http.ResponseWriter, what string) {
	c.render(w, "overview", http.StatusNotFound, pageData{Title: "Not found", Node: c.deps.NodeID, Missing: what})
}

// pageData is common to every page; each page's own figures hang off Page.
type pageData struct {
	Title   string
	Node    int32
	Now     string
	Missing string // set on a 404
	Page    any
}

func (c *console) page(title string, p any) pageData {
	return pageData{Title: title, Node: c.deps.NodeID, Now: c.deps.Now().UTC().Format("2006-01-02 15:04:05 UTC"), Page: p}
}

func (c *console) image() *metadata.Image {
	if c.deps.Image == nil {
		return metadata.NewImage()
	}
	if img := c.deps.Image(); img != nil {
		return img
	}
	return metadata.NewImage()
}

// local indexes this node's replicas by partition.
func (c *console) local() map[metadata.TopicPartition]replica.PartitionHealth {
	out := map[metadata.TopicPartition]replica.PartitionHealth{}
	if c.deps.Health == nil {
		return out
	}
	for _, p := range c.deps.Health().Partitions {
		out[metadata.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = p
	}
	return out
}

// --- overview

type brokerRow struct {
	ID                 int32
	Endpoints          []string
	Rack               string
	Epoch              int64
	Fenced, Shutdown   bool
	Leaders, Replicas  int
	Here, RaftLeader   bool
	HasRegistration    bool
	RaftVoterOrUnknown string
}

type overviewPage struct {
	ClusterID                  string
	Raft                       *raftfsm.RaftStats
	Brokers                    []brokerRow
	Topics, Partitions, Groups int
	URP, Offline               int
	Healthy                    bool
}

func (c *console) brokers(img *metadata.Image) []brokerRow {
	leaders, replicas := map[int32]int{}, map[int32]int{}
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			if p.Leader >= 0 {
				leaders[p.Leader]++
			}
			for _, r := range p.Replicas {
				replicas[r]++
			}
		}
	}
	var raftLeader int32 = -1
	if c.deps.Raft != nil {
		raftLeader = c.deps.Raft().LeaderID
	}
	var out []brokerRow
	for _, b := range img.Brokers() {
		row := brokerRow{ID: b.ID, Rack: b.Rack, Epoch: b.Epoch, Fenced: b.Fenced, Shutdown: b.InControlledShutdown,
			Leaders: leaders[b.ID], Replicas: replicas[b.ID], Here: b.ID == c.deps.NodeID, RaftLeader: b.ID == raftLeader, HasRegistration: true}
		for _, e := range b.Endpoints {
			row.Endpoints = append(row.Endpoints, fmt.Sprintf("%s://%s", e.Listener, hostPort(e.Host, int32(e.Port))))
		}
		out = append(out, row)
	}
	return out
}

func (c *console) overview(w http.ResponseWriter, _ *http.Request) {
	img := c.image()
	p := overviewPage{ClusterID: img.ClusterID(), Brokers: c.brokers(img), Topics: img.NumTopics(), Groups: len(img.Groups())}
	if c.deps.Raft != nil {
		st := c.deps.Raft()
		p.Raft = &st
	}
	for _, t := range img.Topics() {
		for _, part := range t.Partitions {
			p.Partitions++
			if part.Leader == metadata.NoLeader {
				p.Offline++
			}
			if len(part.ISR) < len(part.Replicas) {
				p.URP++
			}
		}
	}
	p.Healthy = p.URP == 0 && p.Offline == 0 && (p.Raft == nil || p.Raft.LeaderID >= 0)
	c.render(w, "overview", http.StatusOK, c.page("Cluster", p))
}

// --- topics

type topicRow struct {
	Name           string
	Internal       bool
	Partitions, RF int
	URP, Offline   int
	LocalBytes     int64
	LocalReplicas  int
}

func (c *console) topics(w http.ResponseWriter, _ *http.Request) {
	img := c.image()
	local := c.local()
	var rows []topicRow
	for _, t := range img.Topics() {
		r := topicRow{Name: t.Name, Internal: strings.HasPrefix(t.Name, "__"), Partitions: len(t.Partitions)}
		for _, p := range t.Partitions {
			r.RF = max(r.RF, len(p.Replicas))
			if len(p.ISR) < len(p.Replicas) {
				r.URP++
			}
			if p.Leader == metadata.NoLeader {
				r.Offline++
			}
			if h, ok := local[metadata.TopicPartition{Topic: t.Name, Partition: p.Partition}]; ok {
				r.LocalBytes += h.LogSize
				r.LocalReplicas++
			}
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b topicRow) int { return cmp.Compare(a.Name, b.Name) })
	c.render(w, "topics", http.StatusOK, c.page("Topics", rows))
}

type partitionRow struct {
	Partition            int32
	Leader               int32
	Replicas, ISR        []int32
	UnderReplicated      bool
	Offline              bool
	Local                bool
	LogStart, LogEnd, HW int64
	Size                 int64
}

type configRow struct{ Key, Value string }

type topicPage struct {
	Name        string
	ID          string
	Partitions  []partitionRow
	Configs     []configRow
	Records     []consoleRecord
	RecordsErr  string
	PerPart     int
	NotHostedOn []int32 // partitions whose records are on other brokers
}

func (c *console) topic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	img := c.image()
	t, ok := img.Topic(name)
	if !ok {
		c.notFound(w, "topic "+name)
		return
	}
	n := 10
	if v, err := strconv.Atoi(r.URL.Query().Get("records")); err == nil {
		n = min(max(v, 0), 100)
	}
	local := c.local()
	p := topicPage{Name: t.Name, ID: topicIDString(t.ID), PerPart: n}
	for _, part := range t.Partitions {
		row := partitionRow{Partition: part.Partition, Leader: part.Leader, Replicas: part.Replicas, ISR: part.ISR,
			UnderReplicated: len(part.ISR) < len(part.Replicas), Offline: part.Leader == metadata.NoLeader}
		if h, ok := local[metadata.TopicPartition{Topic: t.Name, Partition: part.Partition}]; ok {
			row.Local, row.LogStart, row.LogEnd, row.HW, row.Size = true, h.LogStartOffset, h.LogEndOffset, h.HighWatermark, h.LogSize
		}
		p.Partitions = append(p.Partitions, row)
		if n == 0 || c.deps.Records == nil {
			continue
		}
		if !row.Local {
			p.NotHostedOn = append(p.NotHostedOn, part.Partition)
			continue
		}
		recs, err := c.deps.Records(t.Name, part.Partition, n)
		if err != nil {
			p.RecordsErr = fmt.Sprintf("partition %d: %v", part.Partition, err)
			continue
		}
		p.Records = append(p.Records, recs...)
	}
	for k, v := range t.Configs {
		p.Configs = append(p.Configs, configRow{k, v})
	}
	slices.SortFunc(p.Configs, func(a, b configRow) int { return cmp.Compare(a.Key, b.Key) })
	c.render(w, "topic", http.StatusOK, c.page("Topic "+t.Name, p))
}

// --- groups

type groupRow struct {
	ID          string
	State       string
	Coordinator int32 // -1 unknown
	Here        bool
	Partitions  int
	Lag         int64 // -1 when no lag is known here
	Spark       string
}

type lagRow struct {
	Topic     string
	Partition int32
	Committed int64
	HW        int64 // -1 unknown here
	Lag       int64
	Metadata  string
}

type groupPage struct {
	groupRow
	Generation int32
	Protocol   string
	Members    []consoleMember
	MembersErr string
	Lags       []lagRow
}

// groupRows lists every group the image knows, with the state and lag
// where this broker coordinates it.
func (c *console) groupRows(img *metadata.Image) []groupRow {
	states := map[string]string{}
	if c.deps.Groups != nil {
		for _, s := range c.deps.Groups(img) {
			states[s.ID] = s.State.String()
		}
	}
	local := c.local()
	var rows []groupRow
	for _, id := range img.Groups() {
		row := groupRow{ID: id, Coordinator: -1, Lag: -1}
		if p, ok := group.Place(img, id); ok {
			row.Coordinator = p.Leader
		}
		if st, ok := states[id]; ok {
			row.State, row.Here = st, true
		}
		offs := img.Offsets(id)
		row.Partitions = len(offs)
		for tp, o := range offs {
			if h, ok := local[tp]; ok && row.Here {
				row.Lag = max(row.Lag, 0) + lagOf(h.HighWatermark, o.Offset)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func (c *console) groups(w http.ResponseWriter, _ *http.Request) {
	rows := c.groupRows(c.image())
	c.lagMu.Lock()
	for i, r := range rows {
		rows[i].Spark = sparkline(c.lagLog[r.ID])
	}
	c.lagMu.Unlock()
	c.render(w, "groups", http.StatusOK, c.page("Consumer groups", rows))
}

func (c *console) group(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	img := c.image()
	var p groupPage
	found := false
	for _, row := range c.groupRows(img) {
		if row.ID == id {
			p.groupRow, found = row, true
		}
	}
	if !found {
		c.notFound(w, "group "+id)
		return
	}
	if gen, ok := img.GroupGeneration(id); ok {
		p.Generation, p.Protocol = gen.Generation, gen.Protocol
	}
	if p.Here && c.deps.Members != nil {
		m, err := c.deps.Members(id)
		if err != nil {
			p.MembersErr = err.Error()
		}
		p.Members = m
	}
	local := c.local()
	for tp, o := range img.Offsets(id) {
		lr := lagRow{Topic: tp.Topic, Partition: tp.Partition, Committed: o.Offset, HW: -1, Lag: -1, Metadata: o.Metadata}
		if h, ok := local[tp]; ok {
			lr.HW, lr.Lag = h.HighWatermark, lagOf(h.HighWatermark, o.Offset)
		}
		p.Lags = append(p.Lags, lr)
	}
	slices.SortFunc(p.Lags, func(a, b lagRow) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	c.lagMu.Lock()
	p.Spark = sparkline(c.lagLog[id])
	c.lagMu.Unlock()
	c.render(w, "group", http.StatusOK, c.page("Group "+id, p))
}

// sampleLag records each coordinated group's total lag for the sparklines,
// at most maxGroups groups, each keeping lagSamples samples.
func (c *console) sampleLag(maxGroups int) {
	rows := c.groupRows(c.image())
	c.lagMu.Lock()
	defer c.lagMu.Unlock()
	seen := map[string]bool{}
	for _, r := range rows {
		if !r.Here || r.Lag < 0 {
			continue
		}
		if _, ok := c.lagLog[r.ID]; !ok && len(c.lagLog) >= maxGroups {
			continue
		}
		seen[r.ID] = true
		s := append(c.lagLog[r.ID], r.Lag)
		if len(s) > lagSamples {
			s = s[len(s)-lagSamples:]
		}
		c.lagLog[r.ID] = s
	}
	for id := range c.lagLog {
		if !seen[id] {
			delete(c.lagLog, id)
		}
	}
}

// sampleEvery runs sampleLag every d until ctx ends.
func (c *console) sampleEvery(ctx context.Context, d time.Duration, maxGroups int) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.sampleLag(maxGroups)
		}
	}
}

// sparkline is an SVG polyline's points for samples in a 120x24 box, ""
// with fewer than two.
func sparkline(samples []int64) string {
	if len(samples) < 2 {
		return ""
	}
	hi := slices.Max(samples)
	var b strings.Builder
	for i, v := range samples {
		x := float64(i) * 120 / float64(len(samples)-1)
		y := 23.0
		if hi > 0 {
			y = 23 - 22*float64(v)/float64(hi)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x, y)
	}
	return b.String()
}

// --- broker

type requestRow struct {
	Request string
	Count   uint64
	MeanMs  float64
	Errors  uint64
}

type brokerPage struct {
	brokerRow
	This      bool
	LogDirs   []string
	Led       []metadata.TopicPartition // led by the broker
	Requests  []requestRow
	Purgatory []configRow
}

func (c *console) broker(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	img := c.image()
	var p brokerPage
	found := false
	if err == nil {
		for _, b := range c.brokers(img) {
			if b.ID == int32(id) {
				p.brokerRow, found = b, true
			}
		}
	}
	if !found {
		c.notFound(w, "broker "+r.PathValue("id"))
		return
	}
	for _, t := range img.Topics() {
		for _, part := range t.Partitions {
			if part.Leader == p.ID {
				p.Led = append(p.Led, metadata.TopicPartition{Topic: t.Name, Partition: part.Partition})
			}
		}
	}
	if p.ID == c.deps.NodeID {
		p.This, p.LogDirs = true, c.deps.LogDirs
		p.Requests = c.requestRows()
		if c.deps.Health != nil {
			h := c.deps.Health()
			p.Purgatory = []configRow{{"Produce", strconv.Itoa(h.ProducePurgatory)}, {"Fetch", strconv.Itoa(h.FetchPurgatory)}, {"DeleteRecords", strconv.Itoa(h.DeleteRecordsPurgatory)}}
		}
	}
	c.render(w, "broker", http.StatusOK, c.page(fmt.Sprintf("Broker %d", p.ID), p))
}

// requestRows reads this node's request counts, mean times and errors per
// API from its metrics registry.
func (c *console) requestRows() []requestRow {
	if c.deps.Gatherer == nil {
		return nil
	}
	fams, err := c.deps.Gatherer.Gather()
	if err != nil {
		return nil
	}
	rows := map[string]*requestRow{}
	row := func(name string) *requestRow {
		if rows[name] == nil {
			rows[name] = &requestRow{Request: name}
		}
		return rows[name]
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var req string
			for _, l := range m.GetLabel() {
				if l.GetName() == "request" {
					req = l.GetValue()
				}
			}
			switch f.GetName() {
			case "raftka_request_total_time_seconds":
				h := m.GetHistogram()
				r := row(req)
				r.Count = h.GetSampleCount()
				if r.Count > 0 {
					r.MeanMs = 1000 * h.GetSampleSum() / float64(r.Count)
				}
			case "raftka_request_errors_total":
				row(req).Errors += uint64(m.GetCounter().GetValue())
			}
		}
	}
	var out []requestRow
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b requestRow) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Request, b.Request)
	})
	return out
}

// --- formatting

// shown is a key or value as a page shows it: text when it is valid UTF-8
// without control characters (newlines and tabs aside), hex otherwise,
// cut at 1 KiB. The template escapes the text; nothing here is HTML.
type shown struct {
	Text  string
	Hex   bool
	Null  bool
	Cut   int // bytes not shown
	Bytes int
}

const shownMax = 1024

func showBytes(b []byte) shown {
	if b == nil {
		return shown{Null: true}
	}
	s := shown{Bytes: len(b)}
	if len(b) > shownMax {
		s.Cut, b = len(b)-shownMax, b[:shownMax]
	}
	text := utf8.Valid(b)
	for _, r := range string(b) {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			text = false
			break
		}
	}
	if text {
		s.Text = string(b)
	} else {
		s.Text, s.Hex = fmt.Sprintf("% x", b), true
	}
	return s
}

func consoleIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ",")
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
