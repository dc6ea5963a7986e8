package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

const offsetsTopic = "__consumer_offsets"

// produceTo writes n records to each of partitions 0..parts-1 of topic.
func produceTo(ctx context.Context, t *testing.T, c *cluster.Cluster, topic string, parts, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(c.Nodes())...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range parts {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func seedsOf(nodes []*cluster.Node) []string {
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.ClientAddr())
	}
	return seeds
}

// offsetsView is what a reader of __consumer_offsets ends up with: the
// latest commit per key and the latest generation per group.
type offsetsView struct {
	offsets     map[string]int64 // "group/topic/partition"
	generations map[string]int32
	records     int
	// A consumer-protocol group's records (key versions 3, 5-8 and 16):
	// the group epoch (3) and target epoch (6); which group-level records
	// (3, 6) are there; per member, which of its records (5, 7, 8) are;
	// per regex, its resolution (16).
	groupEpochs  map[string]int32
	targetEpochs map[string]int32
	groupRecs    map[string]map[uint16]bool
	memberRecs   map[string]map[string]map[uint16]bool
	regexes      map[string]map[string]regexResolution
}

// regexResolution is a ConsumerGroupRegularExpressionValue.
type regexResolution struct {
	topics             []string
	version, timestamp int64
}

// readRegexValue reads a ConsumerGroupRegularExpressionValue after its
// version: Topics (a compact array of compact strings), Version and
// Timestamp (int64), no tagged fields, nothing left over.
func readRegexValue(b []byte) (regexResolution, error) {
	var out regexResolution
	uv := func() (int, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > uint64(len(b)) {
			return 0, false
		}
		b = b[n:]
		return int(v), true
	}
	n, ok := uv()
	if !ok || n == 0 {
		return out, fmt.Errorf("topics: bad or null array length")
	}
	out.topics = []string{}
	for range n - 1 {
		l, ok := uv()
		if !ok || l == 0 || l-1 > len(b) {
			return out, fmt.Errorf("topics: bad string")
		}
		out.topics = append(out.topics, string(b[:l-1]))
		b = b[l-1:]
	}
	if len(b) != 17 || b[16] != 0 {
		return out, fmt.Errorf("want version, timestamp, no tags; %d bytes left", len(b))
	}
	out.version, out.timestamp = int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:]))
	return out, nil
}

// readKafkaString reads an int16-length string (a key's field).
func readKafkaString(b []byte) (string, []byte, error) {
	if len(b) < 2 || len(b) < 2+int(binary.BigEndian.Uint16(b)) {
		return "", nil, fmt.Errorf("short string in % x", b)
	}
	n := int(binary.BigEndian.Uint16(b))
	return string(b[2 : 2+n]), b[2+n:], nil
}

// addConsumerGroupRecord reads a ConsumerGroup* record as Kafka's schemas
// lay it out: key = int16 type, group [, member, or for 16 the regex];
// value = int16 version 0, then (for 3 and 6) the int32 epoch, (for 16)
// the regex's resolution.
func (v *offsetsView) addConsumerGroupRecord(typ uint16, r *kgo.Record) error {
	group, rest, err := readKafkaString(r.Key[2:])
	if err != nil {
		return fmt.Errorf("offset %d: type %d key: %w", r.Offset, typ, err)
	}
	if r.Value != nil && (len(r.Value) < 2 || binary.BigEndian.Uint16(r.Value) != 0) {
		return fmt.Errorf("offset %d: type %d value % x: want version 0", r.Offset, typ, r.Value)
	}
	switch typ {
	case 4:
		return fmt.Errorf("offset %d: a ConsumerGroupPartitionMetadata record, which Kafka 4.1 no longer writes (KAFKA-17747)", r.Offset)
	case 16:
		regex, rest, err := readKafkaString(rest)
		if err != nil || len(rest) != 0 {
			return fmt.Errorf("offset %d: type 16 key: %v, %d extra bytes", r.Offset, err, len(rest))
		}
		if v.regexes[group] == nil {
			v.regexes[group] = map[string]regexResolution{}
		}
		if r.Value == nil {
			delete(v.regexes[group], regex)
			return nil
		}
		res, err := readRegexValue(r.Value[2:])
		if err != nil {
			return fmt.Errorf("offset %d: type 16 value % x: %w", r.Offset, r.Value, err)
		}
		v.regexes[group][regex] = res
	case 3, 6:
		if len(rest) != 0 {
			return fmt.Errorf("offset %d: type %d key has %d extra bytes", r.Offset, typ, len(rest))
		}
		if v.groupRecs[group] == nil {
			v.groupRecs[group] = map[uint16]bool{}
		}
		if r.Value == nil {
			delete(v.groupRecs[group], typ)
			return nil
		}
		v.groupRecs[group][typ] = true
		if typ == 3 || typ == 6 {
			if len(r.Value) != 7 {
				return fmt.Errorf("offset %d: type %d value % x: want version, epoch, no tags", r.Offset, typ, r.Value)
			}
			epochs := map[uint16]map[string]int32{3: v.groupEpochs, 6: v.targetEpochs}[typ]
			epochs[group] = int32(binary.BigEndian.Uint32(r.Value[2:]))
		}
	default: // 5, 7, 8
		member, rest, err := readKafkaString(rest)
		if err != nil || len(rest) != 0 {
			return fmt.Errorf("offset %d: type %d key: %v, %d extra bytes", r.Offset, typ, err, len(rest))
		}
		if v.memberRecs[group] == nil {
			v.memberRecs[group] = map[string]map[uint16]bool{}
		}
		m := v.memberRecs[group][member]
		if m == nil {
			m = map[uint16]bool{}
			v.memberRecs[group][member] = m
		}
		if r.Value == nil {
			delete(m, typ)
			if len(m) == 0 {
				delete(v.memberRecs[group], member)
			}
			return nil
		}
		m[typ] = true
	}
	return nil
}

func (v *offsetsView) add(r *kgo.Record) error {
	v.records++
	if len(r.Key) < 2 {
		return fmt.Errorf("offset %d: key % x too short", r.Offset, r.Key)
	}
	switch binary.BigEndian.Uint16(r.Key) {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			return fmt.Errorf("offset %d: commit key: %w", r.Offset, err)
		}
		id := fmt.Sprintf("%s/%s/%d", k.Group, k.Topic, k.Partition)
		if r.Value == nil {
			delete(v.offsets, id)
			return nil
		}
		var val kmsg.OffsetCommitValue
		if err := val.ReadFrom(r.Value); err != nil {
			return fmt.Errorf("offset %d: commit value: %w", r.Offset, err)
		}
		if val.Version != 3 {
			return fmt.Errorf("offset %d: commit value version %d, want 3", r.Offset, val.Version)
		}
		v.offsets[id] = val.Offset
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			return fmt.Errorf("offset %d: group key: %w", r.Offset, err)
		}
		if r.Value == nil {
			delete(v.generations, k.Group)
			return nil
		}
		var val kmsg.GroupMetadataValue
		if err := val.ReadFrom(r.Value); err != nil {
			return fmt.Errorf("offset %d: group value: %w", r.Offset, err)
		}
		v.generations[k.Group] = val.Generation
	case 3, 4, 5, 6, 7, 8, 16:
		return v.addConsumerGroupRecord(binary.BigEndian.Uint16(r.Key), r)
	default:
		return fmt.Errorf("offset %d: unknown key version in % x", r.Offset, r.Key)
	}
	return nil
}

// TestOffsetsTopicShowsGroupCommits: on three nodes, a franz-go consumer
// group's commits and generation are in __consumer_offsets in Kafka's
// schemas, read by franz-go and by kcat; a later commit after the slot's
// leader is killed is there too (the new leader writes the slot from the
// image); clients cannot write the topic.
func TestOffsetsTopicShowsGroupCommits(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3))
	ctx := ctxFor(t, 3*time.Minute)
	adm := kadm.NewClient(client(t, c))
	const topic, group, parts, perPart = "committed", "offsets-reader", 3, 10
	if err := createTopic(ctx, adm, topic, parts, 3); err != nil {
		t.Fatal(err)
	}
	produceTo(ctx, t, c, topic, parts, perPart)

	consumer, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(c.Nodes())...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for got := 0; got < parts*perPart; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", got, parts*perPart)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		got += fs.NumRecords()
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}

	want := func(off int64) func(*offsetsView) bool {
		return func(v *offsetsView) bool {
			for p := range parts {
				if v.offsets[fmt.Sprintf("%s/%s/%d", group, topic, p)] != off {
					return false
				}
			}
			return v.generations[group] >= 1
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	v := readOffsetsTopic(rctx, t, c.Nodes(), want(perPart))
	cancel()
	t.Logf("franz-go read %d records of %s: %v, generation %d", v.records, offsetsTopic, v.offsets, v.generations[group])

	kcatShows(ctx, t, c, group, topic)

	// Clients' writes are refused as Kafka refuses them.
	perr := client(t, c).ProduceSync(ctx, &kgo.Record{Topic: offsetsTopic, Key: []byte("k"), Value: []byte("v")}).FirstErr()
	if !errors.Is(perr, kerr.InvalidTopicException) {
		t.Errorf("producing to %s: %v, want INVALID_TOPIC_EXCEPTION", offsetsTopic, perr)
	}

	// The slot's leader dies; the group's next commit reaches the topic
	// through the new leader.
	coord, ok := adm.FindGroupCoordinators(ctx, group)[group]
	if !ok || coord.Err != nil {
		t.Fatalf("FindCoordinator: %v", coord.Err)
	}
	leader := coord.NodeID
	consumer.Close()
	c.Node(leader).Kill()
	t.Logf("killed node %d, the leader of the group's slot", leader)
	var rest []*cluster.Node
	for _, n := range c.Nodes() {
		if n.ID() != leader {
			rest = append(rest, n)
		}
	}
	adm2 := kadm.NewClient(client(t, c, rest...))
	commits := kadm.Offsets{}
	for p := range parts {
		commits.Add(kadm.Offset{Topic: topic, Partition: int32(p), At: 3, LeaderEpoch: -1})
	}
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		resp, err := adm2.CommitOffsets(ctx, group, commits)
		if err == nil {
			err = resp.Error()
		}
		return err == nil, fmt.Sprint("commit after failover: ", err)
	})
	rctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	v = readOffsetsTopic(rctx, t, rest, want(3))
	t.Logf("after failover: %v", v.offsets)
}

// readOffsetsTopic consumes __consumer_offsets from the start, seeded
// with nodes, until done says the view is complete or ctx ends.
func readOffsetsTopic(ctx context.Context, t *testing.T, nodes []*cluster.Node, done func(*offsetsView) bool) *offsetsView {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(nodes)...), kgo.ConsumeTopics(offsetsTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	v := &offsetsView{offsets: map[string]int64{}, generations: map[string]int32{}, groupEpochs: map[string]int32{},
		targetEpochs: map[string]int32{}, groupRecs: map[string]map[uint16]bool{}, memberRecs: map[string]map[string]map[uint16]bool{},
		regexes: map[string]map[string]regexResolution{}}
	for !done(v) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("__consumer_offsets never showed the commits; read %d records: offsets %v", v.records, v.offsets)
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if err := v.add(r); err != nil && bad == nil {
				bad = err
			}
		})
		if bad != nil {
			t.Fatal(bad)
		}
	}
	return v
}

// kcatShows reads the topic with kcat (librdkafka) and checks that the
// group's commit keys are there: kcat prints keys as bytes, so it is the
// key layout (int16 version 1, then group, topic and partition) that is
// looked for.
func kcatShows(ctx context.Context, t *testing.T, c *cluster.Cluster, group, topic string) {
	t.Helper()
	kcat, missing := findKcat()
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kcat missing under CI=true: %s", missing)
		}
		t.Logf("kcat part skipped: %s", missing)
		return
	}
	kctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(kctx, kcat, "-C", "-b", c.Bootstrap(), "-t", offsetsTopic, "-o", "beginning", "-e", "-q",
		"-f", "%k\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	var key bytes.Buffer
	_ = binary.Write(&key, binary.BigEndian, int16(1))
	_ = binary.Write(&key, binary.BigEndian, int16(len(group)))
	key.WriteString(group)
	_ = binary.Write(&key, binary.BigEndian, int16(len(topic)))
	key.WriteString(topic)
	if n := bytes.Count(out, key.Bytes()); n < 3 {
		t.Errorf("kcat printed %d commit keys of %s for %s, want one per partition at least; output %q", n, group, topic, out)
	}
}

// TestBurrowReadsOffsetsTopic starts Debian's Burrow (1.2.1) on the
// cluster and checks that its kafka consumer module decodes the group's
// commits from __consumer_offsets (offset commit key v1, value v3) with the
// committed offsets, and that its HTTP API knows the cluster.
//
// Burrow 1.2.1 requires a [zookeeper] section for its own coordination
// (notifier locks) and creates its root path there at start; with
// root-path "/" there is nothing to create and no notifier is configured,
// so it never needs a ZooKeeper: the server named is a closed loopback port.
//
// Then its lag endpoint (/v3/kafka/<cluster>/consumer/<group>/lag) must
// report each partition's lag as the end offset minus the commit. Burrow
// before 1.9.4 fetches end offsets with ListOffsets v0, which Kafka 4
// removed (KIP-896) and raftka answers without advertising it
// (broker/api_list_offsets.go); without that answer Burrow's storage drops
// every commit and reports no lag, as it does against Kafka 4.1.
func TestBurrowReadsOffsetsTopic(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	burrow := ""
	for _, name := range []string{"Burrow", "burrow"} {
		if p, err := exec.LookPath(name); err == nil {
			burrow = p
			break
		}
	}
	if burrow == "" {
		missingTool(t, "Burrow is not on PATH (Debian/Ubuntu: apt-get install burrow)")
	}
	c := cluster.Start(t, cluster.Nodes(1))
	ctx := ctxFor(t, 3*time.Minute)
	adm := kadm.NewClient(client(t, c))
	const topic, group = "burrowed", "burrow-group"
	if err := createTopic(ctx, adm, topic, 2, 1); err != nil {
		t.Fatal(err)
	}
	produceTo(ctx, t, c, topic, 2, 20)
	commits := kadm.Offsets{}
	commits.Add(kadm.Offset{Topic: topic, Partition: 0, At: 15, LeaderEpoch: -1})
	commits.Add(kadm.Offset{Topic: topic, Partition: 1, At: 12, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, group, commits); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}

	ports := cluster.FreePorts(t, 2)
	dir := t.TempDir()
	var quoted []string
	for _, a := range seedsOf(c.Nodes()) {
		quoted = append(quoted, strconv.Quote(a))
	}
	servers := "[" + strings.Join(quoted, ", ") + "]"
	conf := fmt.Sprintf(`[general]
pidfile=%[1]q
[logging]
filename=%[2]q
level="debug"
[zookeeper]
servers=["127.0.0.1:%[3]d"]
timeout=6
root-path="/"
[client-profile.raftka]
client-id="burrow-e2e"
kafka-version="2.0.0"
[cluster.raftka]
class-name="kafka"
servers=%[4]s
client-profile="raftka"
topic-refresh=2
offset-refresh=2
[consumer.raftka]
class-name="kafka"
cluster="raftka"
servers=%[4]s
client-profile="raftka"
offsets-topic="__consumer_offsets"
start-latest=false
[httpserver.default]
address="127.0.0.1:%[5]d"
[storage.default]
class-name="inmemory"
workers=2
intervals=10
expire-group=604800
min-distance=1
[evaluator.default]
class-name="caching"
expire-cache=1
`, filepath.Join(dir, "burrow.pid"), filepath.Join(dir, "burrow.log"), ports[0], servers, ports[1])
	if err := os.WriteFile(filepath.Join(dir, "burrow.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "burrow.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(burrow, "--config-dir", dir)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// Only the Burrow started here, by its pid.
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			for _, f := range []string{"burrow.out", "burrow.log"} {
				b, _ := os.ReadFile(filepath.Join(dir, f))
				t.Logf("%s (pid %d):\n%s", f, pid, tail(string(b), 60))
			}
		}
	})

	// Burrow logs each commit it decodes (zap JSON lines: "consumer
	// offset" with group, topic, partition and offset).
	want := map[int32]int64{0: 15, 1: 12}
	cluster.WaitFor(t, 90*time.Second, func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("Burrow exited: %v", err)
		default:
		}
		b, _ := os.ReadFile(filepath.Join(dir, "burrow.log"))
		seen := map[int32]int64{}
		for _, line := range bytes.Split(b, []byte("\n")) {
			var e struct {
				Msg       string `json:"msg"`
				Group     string `json:"group"`
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Offset    int64  `json:"offset"`
			}
			if json.Unmarshal(line, &e) == nil && e.Msg == "consumer offset" && e.Group == group && e.Topic == topic {
				seen[e.Partition] = e.Offset
			}
		}
		return seen[0] == want[0] && seen[1] == want[1], fmt.Sprintf("Burrow decoded %v, want %v", seen, want)
	})
	st, body, err := burrowGet(ctx, fmt.Sprintf("http://127.0.0.1:%d/v3/kafka", ports[1]))
	if err != nil {
		t.Fatal(err)
	}
	if st.Error || !slices.Contains(st.Clusters, "raftka") {
		t.Errorf("Burrow's cluster list: %s", body)
	}

	// Burrow's storage keeps a commit only once it knows the partition's
	// end offset, so commits it read before its first offset refresh may be
	// gone: commit again (bounded) until the lag it reports is right.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets: %v %v", err, ends.Error())
	}
	again := map[int32]int64{0: 16, 1: 13}
	wantLag := map[int32]int64{}
	for p, at := range again {
		end, _ := ends.Lookup(topic, p)
		wantLag[p] = end.Offset - at
	}
	lagURL := fmt.Sprintf("http://127.0.0.1:%d/v3/kafka/raftka/consumer/%s/lag", ports[1], group)
	last := time.Time{}
	cluster.WaitFor(t, 90*time.Second, func() (bool, string) {
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			commits := kadm.Offsets{}
			for p, at := range again {
				commits.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
			}
			if resp, err := adm.CommitOffsets(ctx, group, commits); err != nil || resp.Error() != nil {
				return false, fmt.Sprintf("commit: %v %v", err, resp.Error())
			}
		}
		lag, body, err := burrowLag(ctx, lagURL)
		if err != nil {
			return false, err.Error()
		}
		got := map[int32]int64{}
		for _, p := range lag.Status.Partitions {
			if p.Topic == topic && p.End.Offset == again[p.Partition] {
				got[p.Partition] = p.CurrentLag
			}
		}
		return !lag.Error && lag.Status.Status != "" && maps.Equal(got, wantLag),
			fmt.Sprintf("Burrow's lag %v, want %v (end offsets %v minus commits %v); answer %s", got, wantLag, ends, again, body)
	})
}

// burrowLagAnswer is the part of Burrow's consumer lag answer checked.
type burrowLagAnswer struct {
	Error  bool `json:"error"`
	Status struct {
		Status     string `json:"status"`
		Partitions []struct {
			Topic      string `json:"topic"`
			Partition  int32  `json:"partition"`
			CurrentLag int64  `json:"current_lag"`
			End        struct {
				Offset int64 `json:"offset"`
			} `json:"end"`
		} `json:"partitions"`
	} `json:"status"`
}

func burrowLag(ctx context.Context, url string) (burrowLagAnswer, string, error) {
	var lag burrowLagAnswer
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return lag, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return lag, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return lag, "", err
	}
	if err := json.Unmarshal(b, &lag); err != nil {
		return lag, string(b), fmt.Errorf("Burrow answered %d %q: %w", resp.StatusCode, b, err)
	}
	return lag, string(b), nil
}

type burrowClusters struct {
	Error    bool     `json:"error"`
	Clusters []string `json:"clusters"`
}

func burrowGet(ctx context.Context, url string) (burrowClusters, string, error) {
	var st burrowClusters
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return st, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return st, "", err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, string(b), fmt.Errorf("Burrow answered %d %q: %w", resp.StatusCode, b, err)
	}
	return st, string(b), nil
}

// TestOffsetsTopicShowsConsumerGroupRecords: a KIP-848 group's state is in
// __consumer_offsets as Kafka 4.1's coordinator writes it (records 3, 5-8
// and 16): the group epoch and target epoch ConsumerGroupDescribe shows,
// each member's subscription, target and current assignment, and the
// resolution of the regex one member subscribes with (its topics, a
// version and a time); a member that leaves has its three records
// tombstoned, and its regex, which no other member uses, too, so a
// reader no longer sees them.
func TestOffsetsTopicShowsConsumerGroupRecords(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(1), cluster.Override("group.consumer.heartbeat.interval.ms", "500"),
		cluster.Override("group.consumer.min.heartbeat.interval.ms", "500"))
	ctx := ctxFor(t, 3*time.Minute)
	cl := client(t, c)
	adm := kadm.NewClient(cl)
	const topic, group, parts = "cg-records", "cg-records-group", 4
	if err := createTopic(ctx, adm, topic, parts, 1); err != nil {
		t.Fatal(err)
	}
	var members []*kgo.Client
	for i := range 2 {
		opts := []kgo.Opt{kgo.SeedBrokers(seedsOf(c.Nodes())...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer()}
		if i == 0 {
			// franz-go sends its regex as SubscribedTopicRegex, ".*(?:(?:cg-records)).*".
			opts = append(opts, kgo.ConsumeRegex())
		}
		m, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		go func() {
			for !m.PollFetches(ctx).IsClientClosed() && ctx.Err() == nil {
			}
		}()
		members = append(members, m)
	}
	var d kmsg.ConsumerGroupDescribeResponseGroup
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		d = describe848(ctx, t, cl, group)
		return d.State == "Stable" && len(d.Members) == 2, fmt.Sprintf("group %s with %d members", d.State, len(d.Members))
	})
	shows := func(d kmsg.ConsumerGroupDescribeResponseGroup) func(*offsetsView) bool {
		return func(v *offsetsView) bool {
			if v.groupEpochs[group] != d.Epoch || v.targetEpochs[group] != d.AssignmentEpoch || len(v.memberRecs[group]) != len(d.Members) {
				return false
			}
			regexes := map[string]bool{}
			for _, m := range d.Members {
				if r := v.memberRecs[group][m.MemberID]; !r[5] || !r[7] || !r[8] {
					return false
				}
				if m.SubscribedTopicRegex != nil {
					regexes[*m.SubscribedTopicRegex] = true
				}
			}
			if len(v.regexes[group]) != len(regexes) {
				return false
			}
			for re := range regexes {
				if r, ok := v.regexes[group][re]; !ok || !slices.Equal(r.topics, []string{topic}) || r.version <= 0 || r.timestamp <= 0 {
					return false
				}
			}
			return true
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	v := readOffsetsTopic(rctx, t, c.Nodes(), shows(d))
	cancel()
	t.Logf("%d records: group epoch %d, target epoch %d, members %v, regexes %v", v.records, v.groupEpochs[group], v.targetEpochs[group], v.memberRecs[group], v.regexes[group])
	if len(v.regexes[group]) != 1 {
		t.Fatalf("regex records %v, want the regex member's", v.regexes[group])
	}

	members[0].Close()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		d = describe848(ctx, t, cl, group)
		return d.State == "Stable" && len(d.Members) == 1, fmt.Sprintf("group %s with %d members", d.State, len(d.Members))
	})
	rctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	v = readOffsetsTopic(rctx, t, c.Nodes(), shows(d))
	t.Logf("after the regex member left: group epoch %d, members %v, regexes %v", v.groupEpochs[group], v.memberRecs[group], v.regexes[group])
}
