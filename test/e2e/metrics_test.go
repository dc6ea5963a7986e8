package e2e

// Issue 17's first metrics, checked on real processes: the under-replicated
// gauge follows a frozen follower, the per-topic byte counters follow the
// bytes produced and fetched, and the request time histograms count every
// request.

import (
	"bufio"
	"context"
	"fmt"
	"github.com/twmb/franz-go/pkg/kadm"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/raftka/raftka/test/cluster"
	"github.com/raftka/raftka/test/invariants"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scrape reads a node's /metrics into sample line (name and labels) ->
// value.
func scrape(n *cluster.Node) (map[string]float64, error) {
	hc := http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + n.MetricsAddr() + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if strings.HasPrefix(line, "#") || i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("node %d: %q: %w", n.ID(), line, err)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// sum adds the samples whose line starts with prefix.
func sum(samples map[string]float64, prefix string) float64 {
	var v float64
	for k, x := range samples {
		if strings.HasPrefix(k, prefix) {
			v += x
		}
	}
	return v
}

// produceBatch sends one acks=all Produce of values to addr and returns the
// batch's size in bytes.
func produceBatch(ctx context.Context, addr, topic string, values ...[]byte) (int, error) {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = recordbatch.BuildValues(time.Now().UnixMilli(), values...)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := invariants.RawRequest(ctx, addr, req)
	if err != nil {
		return 0, err
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("produce answer has %d topics", len(pr.Topics))
	}
	if err := kerr.ErrorForCode(pr.Topics[0].Partitions[0].ErrorCode); err != nil {
		return 0, err
	}
	return len(rp.Records), nil
}

func TestMetricsUnderReplicatedTrafficAndRequestTimes(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const lag = 2 * time.Second
	const topic = "metered"
	c, h, ctx := startLagCluster(t, lag, topic, 1)
	st := partitionState(t, ctx, h, topic, 0)
	leader := c.Node(st.Leader)

	// Bytes in: the leader's per-topic counter moves by the batch bytes
	// produced.
	bytesIn := `raftka_topic_bytes_in_total{topic="` + topic + `"}`
	recordsIn := `raftka_topic_records_in_total{topic="` + topic + `"}`
	before, err := scrape(leader)
	if err != nil {
		t.Fatal(err)
	}
	var sent, records int
	value := []byte(strings.Repeat("v", 200))
	for i := range 50 {
		vals := make([][]byte, 1+i%10)
		for j := range vals {
			vals[j] = value
		}
		n, err := produceBatch(ctx, leader.ClientAddr(), topic, vals...)
		if err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		sent += n
		records += len(vals)
	}
	after, err := scrape(leader)
	if err != nil {
		t.Fatal(err)
	}
	moved := after[bytesIn] - before[bytesIn]
	if moved < 0.95*float64(sent) || moved > 1.05*float64(sent) {
		t.Errorf("%s moved by %v for %d bytes produced", bytesIn, moved, sent)
	}
	if got := after[recordsIn] - before[recordsIn]; got != float64(records) {
		t.Errorf("%s moved by %v for %d records produced", recordsIn, got, records)
	}
	t.Logf("produced %d bytes in 50 batches: %s moved by %v", sent, bytesIn, moved)

	// Bytes out: a consumer's fetch of everything moves the per-topic
	// counter by the record bytes it was sent.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID, fetch.MaxBytes = 12, -1, 4<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 4 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	resp, err := invariants.RawRequest(ctx, leader.ClientAddr(), fetch)
	if err != nil {
		t.Fatal(err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch answer: %+v", fr)
	}
	got := len(fr.Topics[0].Partitions[0].RecordBatches)
	if got != sent {
		t.Fatalf("fetched %d bytes of the %d produced", got, sent)
	}
	bytesOut := `raftka_topic_bytes_out_total{topic="` + topic + `"}`
	if s, err := scrape(leader); err != nil || s[bytesOut]-after[bytesOut] != float64(got) {
		t.Errorf("%s moved by %v for %d bytes fetched (%v)", bytesOut, s[bytesOut]-after[bytesOut], got, err)
	}

	// Request times: every request counted by raftka_requests_total is in
	// the histogram once it has ended. Produce and Metadata are answered
	// by now; others may be in flight (follower fetches wait up to
	// replica.fetch.wait.max.ms), at most a few per open connection.
	cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
		s, err := scrape(leader)
		if err != nil {
			return false, err.Error()
		}
		for _, api := range []struct {
			key  int
			name string
		}{{0, "Produce"}, {3, "Metadata"}, {18, "ApiVersions"}} {
			reqs := sum(s, fmt.Sprintf(`raftka_requests_total{api_key="%d",`, api.key))
			timed := s[`raftka_request_total_time_seconds_count{request="`+api.name+`"}`]
			if reqs == 0 || reqs != timed {
				return false, fmt.Sprintf("%s: %v requests, %v in the time histogram", api.name, reqs, timed)
			}
		}
		all, timed, conns := sum(s, "raftka_requests_total{"), sum(s, "raftka_request_total_time_seconds_count{"), sum(s, "raftka_connections_open{")
		if timed > all || all-timed > 5*conns {
			return false, fmt.Sprintf("%v requests, %v timed, %v connections open", all, timed, conns)
		}
		return true, ""
	})

	// Under-replicated: freeze a follower that is not the Raft leader (the
	// ISR change must commit through the controller meanwhile); the
	// leader's node reports it within the lag time plus 2 s, and 0 once
	// the follower is back in the ISR.
	cl := client(t, c)
	qlead, err := quorumLeader(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	victim := int32(-1)
	for _, f := range st.Followers() {
		if f != qlead {
			victim = f
			break
		}
	}
	if got, err := metric(leader, "raftka_under_replicated_partitions"); err != nil || got != 0 {
		t.Fatalf("under-replicated before the freeze: %v, %v", got, err)
	}
	c.Node(victim).Stop()
	frozen := time.Now()
	cluster.WaitFor(t, lag+2*time.Second, func() (bool, string) {
		got, err := metric(leader, "raftka_under_replicated_partitions")
		if err != nil {
			return false, err.Error()
		}
		return got >= 1, fmt.Sprintf("leader %d reports %v under-replicated partitions %v after freezing node %d", leader.ID(), got, time.Since(frozen).Round(time.Millisecond), victim)
	})
	seen := time.Since(frozen)
	c.Node(victim).Cont()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		got, err := metric(leader, "raftka_under_replicated_partitions")
		if err != nil {
			return false, err.Error()
		}
		return got == 0, fmt.Sprintf("leader %d reports %v under-replicated partitions after SIGCONT", leader.ID(), got)
	})
	// The shrink may be the leader's (lag) or the controller's (it fences
	// the silent broker and drops it from every ISR, which the leader does
	// not count, as in Kafka); the return is always the leader's expansion.
	if expands, err := metric(leader, "raftka_isr_expands_total"); err != nil || expands < 1 {
		t.Errorf("ISR expansions on the leader: %v, %v", expands, err)
	}
	t.Logf("node %d frozen: under-replicated reported after %v (lag time %v)", victim, seen.Round(time.Millisecond), lag)
}

// TestLagOfPartitionsElsewhere: the coordinator exports lag for committed
// partitions it holds no replica of (an RF=1 topic spread over three
// nodes), from their leaders' high watermarks, and counts none unknown.
func TestLagOfPartitionsElsewhere(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3))
	ctx := ctxFor(t, 2*time.Minute)
	adm := kadm.NewClient(client(t, c))
	const topic, group = "spread", "spread-group"
	// RF=1 (min.insync.replicas 1 for it: the cluster's default is 2), so
	// each partition lives on one node only.
	one := "1"
	if resp, err := adm.CreateTopic(ctx, 6, 1, map[string]*string{"min.insync.replicas": &one}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	produceTo(ctx, t, c, topic, 6, 10)
	commits := kadm.Offsets{}
	want := map[string]float64{}
	for p := range int32(6) {
		commits.Add(kadm.Offset{Topic: topic, Partition: p, At: int64(p), LeaderEpoch: -1})
		want[fmt.Sprintf(`raftka_consumer_group_lag{group=%q,partition="%d",topic=%q}`, group, p, topic)] = float64(10 - p)
	}
	if resp, err := adm.CommitOffsets(ctx, group, commits); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	fc, ok := adm.FindGroupCoordinators(ctx, group)[group]
	if !ok || fc.Err != nil {
		t.Fatalf("find coordinator: %v", fc.Err)
	}
	coord := c.Node(fc.NodeID)
	// The coordinator hosts some of the six partitions at most; the test
	// needs at least one elsewhere.
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := 0
	for _, p := range md.Topics[topic].Partitions {
		if p.Leader != coord.ID() {
			elsewhere++
		}
	}
	if elsewhere == 0 {
		t.Fatalf("every partition of %s is on the coordinator, node %d", topic, coord.ID())
	}
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		samples, err := scrape(coord)
		if err != nil {
			return false, err.Error()
		}
		for name, v := range want {
			if got, ok := samples[name]; !ok || got != v {
				return false, fmt.Sprintf("%s = %v (exported %v), want %v; unknown %v", name, got, ok, v, samples["raftka_consumer_group_lag_unknown_partitions"])
			}
		}
		if u := samples["raftka_consumer_group_lag_unknown_partitions"]; u != 0 {
			return false, fmt.Sprintf("%v partitions unknown", u)
		}
		return true, ""
	})
	t.Logf("node %d coordinates %s; %d of 6 partitions led elsewhere, all with lag", coord.ID(), group, elsewhere)
}
