package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// floats pulls the numbers of a result line out by pattern, failing the
// test when the line does not have its shape.
func floats(t *testing.T, re *regexp.Regexp, line string) []float64 {
	t.Helper()
	m := re.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("line %q does not match %s", line, re)
	}
	var out []float64
	for _, s := range m[1:] {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q in %q: %v", s, line, err)
		}
		out = append(out, f)
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

const num = `([0-9]+(?:\.[0-9]+)?)`

func TestBenchProduceConsumeE2E(t *testing.T) {
	bs := startKfake(t)

	out := mustRun(t, "", "bench", "produce", "--bootstrap-server", bs, "--topic", "perf", "--records", "2000", "--record-size", "100", "--partitions", "6", "--acks", "all")
	prod := floats(t, regexp.MustCompile(`^`+num+` records sent, `+num+` records/sec \(`+num+` MB/sec\), `+num+` ms avg latency, `+num+` ms max latency, `+num+` ms 50th, `+num+` ms 99th, `+num+` ms 99.9th, `+num+` ms max ack gap \(`+num+` ms in one partition\)\.$`), lastLine(out))
	if prod[0] != 2000 || prod[1] <= 0 || prod[2] <= 0 || !(prod[5] <= prod[6] && prod[6] <= prod[7] && prod[7] <= prod[4]+0.01) {
		t.Fatalf("produce result %v from %q", prod, lastLine(out))
	}
	if desc := mustRun(t, "", "topics", "describe", "--bootstrap-server", bs, "--topic", "perf"); !strings.Contains(desc, "PartitionCount: 6") {
		t.Fatalf("bench produce did not create the topic with 6 partitions:\n%s", desc)
	}

	out = mustRun(t, "", "bench", "consume", "--bootstrap-server", bs, "--topic", "perf", "--records", "2000")
	cons := floats(t, regexp.MustCompile(`^`+num+` records consumed, `+num+` records/sec \(`+num+` MB/sec\) in `+num+` s\.$`), lastLine(out))
	if cons[0] != 2000 || cons[1] <= 0 || cons[2] <= 0 {
		t.Fatalf("consume result %v", cons)
	}

	// JSON mode: one object on stdout, progress (if any) on stderr.
	stdout, _, err := runCLI(t, "", "bench", "consume", "--bootstrap-server", bs, "--topic", "perf", "--records", "2000", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("bench consume --json printed %q: %v", stdout, err)
	}
	if res.Mode != "consume" || res.Records != 2000 || res.Bytes != 200000 || res.MBPerSec <= 0 || res.RecordsPerSec <= 0 {
		t.Fatalf("consume JSON %+v", res)
	}

	stdout, _, err = runCLI(t, "", "bench", "produce", "--bootstrap-server", bs, "--topic", "perf", "--records", "2000", "--record-size", "1024", "--json", "--compression", "lz4", "--linger", "1ms", "--batch-max-bytes", "65536")
	if err != nil {
		t.Fatal(err)
	}
	res = benchResult{}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("bench produce --json printed %q: %v", stdout, err)
	}
	if res.Mode != "produce" || res.Records != 2000 || res.Errors != 0 || res.Bytes != 2000*1024 || res.LatP50Ms <= 0 || res.LatP99Ms < res.LatP50Ms || res.LatMaxMs < res.LatP999Ms {
		t.Fatalf("produce JSON %+v", res)
	}
	// No gap between acknowledgements can outlast the run itself.
	if res.MaxAckGapMs <= 0 || res.MaxAckGapMs > res.Seconds*1000 || res.MaxPartitionAckGapMs <= 0 || res.MaxPartitionAckGapMs > res.Seconds*1000 {
		t.Fatalf("produce JSON ack gaps %+v", res)
	}

	// e2e at 4000/s keeps the run near half a second.
	out = mustRun(t, "", "bench", "e2e", "--bootstrap-server", bs, "--topic", "e2e", "--records", "2000", "--throughput", "4000", "--partitions", "1")
	e2e := floats(t, regexp.MustCompile(`^`+num+` records, `+num+` records/sec, end-to-end latency `+num+` ms avg, `+num+` ms 50th, `+num+` ms 99th, `+num+` ms 99.9th, `+num+` ms max; produce latency `+num+` ms 50th, `+num+` ms 99th\.$`), lastLine(out))
	if e2e[0] != 2000 || e2e[3] <= 0 || e2e[3] > e2e[4] || e2e[4] > e2e[5] || e2e[5] > e2e[6]+0.01 {
		t.Fatalf("e2e result %v", e2e)
	}
	stdout, _, err = runCLI(t, "", "bench", "e2e", "--bootstrap-server", bs, "--topic", "e2e", "--records", "2000", "--throughput", "4000", "--json")
	if err != nil {
		t.Fatal(err)
	}
	res = benchResult{}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("bench e2e --json printed %q: %v", stdout, err)
	}
	if res.Mode != "e2e" || res.Records != 2000 || res.E2EP50Ms <= 0 || res.E2EP99Ms < res.E2EP50Ms || res.E2EP999Ms < res.E2EP99Ms {
		t.Fatalf("e2e JSON %+v", res)
	}
}

// A consume bench that asks for more records than exist reports what it
// read and fails.
func TestBenchConsumeShortTopic(t *testing.T) {
	bs := startKfake(t, kfake.SeedTopics(2, "few"))
	mustRun(t, "a\nb\nc\n", "produce", "--bootstrap-server", bs, "--topic", "few")
	stdout, _, err := runCLI(t, "", "bench", "consume", "--bootstrap-server", bs, "--topic", "few", "--records", "10", "--idle-timeout", "1s", "--json")
	if err == nil || !strings.Contains(err.Error(), "only 3 of 10 records") {
		t.Fatalf("err %v", err)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Records != 3 {
		t.Fatalf("JSON %q: %+v, %v", stdout, res, err)
	}
}

func TestBenchDurationAndThroughput(t *testing.T) {
	bs := startKfake(t)
	// 300 records/s for 1s: the cap, not the record count, ends the run.
	stdout, _, err := runCLI(t, "", "bench", "produce", "--bootstrap-server", bs, "--topic", "paced", "--duration", "1s", "--throughput", "300", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%q: %v", stdout, err)
	}
	if res.Records < 250 || res.Records > 301 {
		t.Fatalf("paced run sent %d records, want about 300", res.Records)
	}
}

func TestBenchFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "produce", "--records", "10"}, "--topic is required"},
		{[]string{"bench", "produce", "--topic", "t"}, "give --records or --duration"},
		{[]string{"bench", "produce", "--topic", "t", "--records", "10", "--acks", "some"}, `--acks "some"`},
		{[]string{"bench", "produce", "--topic", "t", "--records", "10", "--batch-max-bytes", "10"}, "--batch-max-bytes 10"},
		{[]string{"bench", "produce", "--topic", "t", "--records", "10", "--payload", "xml"}, `--payload "xml"`},
		{[]string{"bench", "consume", "--topic", "t", "--records", "-1"}, "must not be negative"},
		{[]string{"bench", "e2e", "--topic", "t", "--records", "10", "--throughput", "-1"}, "want a positive records/s rate"},
		{[]string{"bench", "kfake", "--listen", "0.0.0.0:9092"}, "127.0.0.1 only"},
		{[]string{"bench", "commit", "--topic", "t"}, "give --commits or --duration"},
		{[]string{"bench", "commit", "--topic", "t", "--commits", "1", "--groups", "0"}, "must be at least 1"},
		{[]string{"bench", "commit", "--topic", "t", "--commits", "1", "--clients", "0"}, "must be at least 1"},
		{[]string{"bench", "topics", "--count", "0"}, "must be at least 1"},
	} {
		_, _, err := runCLI(t, "", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestEventPayloads: the events payload is distinct values of the asked
// size that compress like application data, neither to nothing (copies of
// one value would) nor not at all (random bytes).
func TestEventPayloads(t *testing.T) {
	vs := eventPayloads(1024, 4096)
	seen := map[string]bool{}
	for _, v := range vs {
		if len(v) != 1024 {
			t.Fatalf("value of %d bytes", len(v))
		}
		seen[string(v)] = true
	}
	if len(seen) != 4096 {
		t.Fatalf("%d distinct values of 4096", len(seen))
	}
	raw := bytes.Join(vs[:512], nil)
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if ratio := float64(len(raw)) / float64(buf.Len()); ratio < 2 || ratio > 8 {
		t.Errorf("lz4 compresses the events %.1fx, want 2-8x", ratio)
	}
}

// syncBuffer lets the test read what a running command has written.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBenchKfakeServes(t *testing.T) {
	app := newApp()
	out := &syncBuffer{}
	app.Writer, app.ErrWriter = out, out
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, []string{"raftka", "--log-level", "error", "bench", "kfake", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("bench kfake: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("bench kfake did not stop within 10s of its context ending")
		}
	})
	re := regexp.MustCompile(`kfake listening on (127\.0\.0\.1:[0-9]+)`)
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bench kfake printed %q", out.String())
		}
		select {
		case err := <-done:
			t.Fatalf("bench kfake exited early: %v; output %q", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	mustRun(t, "x\ny\n", "produce", "--bootstrap-server", addr, "--topic", "auto")
	if got := mustRun(t, "", "consume", "--bootstrap-server", addr, "--topic", "auto", "--from-beginning", "--max-messages", "2"); len(got) != 4 {
		t.Fatalf("consumed %q from bench kfake", got)
	}
}

func TestAckGaps(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type ack struct {
		ms   int
		part int32
	}
	for _, tc := range []struct {
		name             string
		acks             []ack
		longest, partLon time.Duration
	}{
		{"none", nil, 0, 0},
		{"one ack has no gap", []ack{{5, 0}}, 0, 0},
		{"steady", []ack{{0, 0}, {10, 0}, {20, 0}}, 10 * time.Millisecond, 10 * time.Millisecond},
		{"longest wins", []ack{{0, 0}, {10, 0}, {1510, 0}, {1520, 0}}, 1500 * time.Millisecond, 1500 * time.Millisecond},
		// Partition 1 stalls for 900 ms while partition 0 keeps acknowledging.
		{"one partition stalls", []ack{{0, 1}, {0, 0}, {300, 0}, {600, 0}, {900, 1}}, 300 * time.Millisecond, 900 * time.Millisecond},
		// A partition's first acknowledgement starts its clock; it is no gap.
		{"first ack of a partition", []ack{{0, 0}, {100, 3}, {150, 3}}, 100 * time.Millisecond, 50 * time.Millisecond},
		{"earlier time ignored", []ack{{100, 0}, {50, 0}, {130, 0}}, 30 * time.Millisecond, 30 * time.Millisecond},
		{"partition beyond the tracked range", []ack{{0, maxGapPartitions}, {40, maxGapPartitions}}, 40 * time.Millisecond, 0},
		{"negative partition", []ack{{0, -1}, {70, -1}}, 70 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g ackGaps
			for _, a := range tc.acks {
				g.observe(at(a.ms), a.part)
			}
			if g.longest != tc.longest || g.partLong != tc.partLon {
				t.Fatalf("longest %v, in one partition %v; want %v, %v", g.longest, g.partLong, tc.longest, tc.partLon)
			}
			if len(g.partLast) > maxGapPartitions {
				t.Fatalf("tracking %d partitions", len(g.partLast))
			}
		})
	}
}

// A topic that the broker asked does not list yet, but the controller
// already holds (created moments ago by `topics create`), is no failure:
// the create answers TOPIC_ALREADY_EXISTS and bench goes on.
func TestBenchProduceTopicCreatedElsewhere(t *testing.T) {
	c, bs := startKfakeCluster(t, kfake.SeedTopics(2, "raced"))
	c.ControlKey(kmsg.Metadata.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.MetadataRequest)
		if len(req.Topics) != 1 || req.Topics[0].Topic == nil || *req.Topics[0].Topic != "raced" {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.Version = req.Version
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr("raced")
		rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	stdout, _, err := runCLI(t, "", "bench", "produce", "--bootstrap-server", bs, "--topic", "raced", "--records", "100", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Records != 100 {
		t.Fatalf("JSON %q: %+v, %v", stdout, res, err)
	}
}

// Transactional produce: transactions of --transaction-records records,
// counted with their commit latency; read_committed consume reads them.
func TestBenchTransactionalProduce(t *testing.T) {
	bs := startKfake(t)
	stdout, _, err := runCLI(t, "", "bench", "produce", "--bootstrap-server", bs, "--topic", "tx", "--records", "500", "--record-size", "100",
		"--partitions", "3", "--transaction-records", "50", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("bench produce --json printed %q: %v", stdout, err)
	}
	if res.Records != 500 || res.Transactions != 10 || res.TxnPerSec <= 0 || res.EndTxnP50Ms <= 0 || res.EndTxnP99Ms < res.EndTxnP50Ms {
		t.Fatalf("transactional produce JSON %+v", res)
	}
	out := mustRun(t, "", "bench", "consume", "--bootstrap-server", bs, "--topic", "tx", "--records", "500", "--isolation-level", "read_committed")
	if !strings.HasPrefix(lastLine(out), "500 records consumed") {
		t.Fatalf("read_committed consume: %q", lastLine(out))
	}
	// Four producers at once, each with its own transactional id: the
	// records and transactions are their sums.
	stdout, _, err = runCLI(t, "", "bench", "produce", "--bootstrap-server", bs, "--topic", "tx4", "--records", "400", "--record-size", "100",
		"--partitions", "3", "--transaction-records", "20", "--transactional-producers", "4", "--json")
	if err != nil {
		t.Fatal(err)
	}
	res = benchResult{}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("bench produce --json printed %q: %v", stdout, err)
	}
	if res.Records != 400 || res.Transactions != 20 || res.TxnPerSec <= 0 {
		t.Fatalf("four transactional producers' JSON %+v", res)
	}
	out = mustRun(t, "", "bench", "consume", "--bootstrap-server", bs, "--topic", "tx4", "--records", "400", "--isolation-level", "read_committed")
	if !strings.HasPrefix(lastLine(out), "400 records consumed") {
		t.Fatalf("read_committed consume of four producers' transactions: %q", lastLine(out))
	}
	for _, args := range [][]string{
		{"bench", "produce", "--topic", "tx", "--records", "10", "--transaction-records", "5", "--transactional-producers", "0"},
		{"bench", "produce", "--topic", "tx", "--records", "10", "--transaction-records", "-1"},
		{"bench", "produce", "--topic", "tx", "--records", "10", "--transaction-records", "5", "--acks", "1"},
		{"bench", "consume", "--topic", "tx", "--records", "10", "--isolation-level", "dirty"},
	} {
		if _, _, err := runCLI(t, "", append(args, "--bootstrap-server", bs)...); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
}

// TestBenchCommit: commit mode sends the asked number of OffsetCommit
// requests, each of the asked partitions, from workers on clients of
// their own, and the last one's offsets are what the group reads back.
func TestBenchCommit(t *testing.T) {
	bs := startKfake(t)
	stdout, _, err := runCLI(t, "", "bench", "commit", "--bootstrap-server", bs, "--topic", "offsets", "--partitions", "8",
		"--partitions-per-commit", "5", "--groups", "2", "--concurrency", "2", "--clients", "2", "--commits", "40", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%q: %v", stdout, err)
	}
	if res.Mode != "commit" || res.Records != 40 || res.Errors != 0 || res.OffsetsPerCommit != 5 || res.CommitsPerSec <= 0 ||
		res.OffsetsPerSec != res.CommitsPerSec*5 || res.LatP99Ms <= 0 {
		t.Fatalf("commit result %+v", res)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fetched, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "raftka-bench-commit-0")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil || o.At < 0 || o.At >= 40 {
			t.Errorf("%s-%d: committed %d, err %v", o.Topic, o.Partition, o.At, o.Err)
		}
		n++
	})
	if n != 5 {
		t.Fatalf("group 0 has %d committed partitions, want 5", n)
	}
}

// TestBenchTopics: topics mode creates the asked topics, reports them, and
// deletes them after.
func TestBenchTopics(t *testing.T) {
	bs := startKfake(t)
	stdout, _, err := runCLI(t, "", "bench", "topics", "--bootstrap-server", bs, "--count", "12", "--partitions", "2", "--concurrency", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%q: %v", stdout, err)
	}
	if res.Mode != "topics" || res.Records != 12 || res.Errors != 0 || res.TopicsPerSec <= 0 || res.LatP99Ms <= 0 {
		t.Fatalf("topics result %+v", res)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range listed.Names() {
		if strings.HasPrefix(name, "raftka-bench-topic-") {
			t.Errorf("topic %s left after the run", name)
		}
	}
}
