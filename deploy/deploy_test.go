package deploy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Bounds for the Docker test; together they keep it near three minutes at
// worst, and a healthy run takes about one.
const (
	buildTimeout   = 150 * time.Second // go build and docker build
	clusterTimeout = 150 * time.Second // compose up through the last check
	readyTimeout   = 90 * time.Second  // every node answers /readyz
	cleanupTimeout = 90 * time.Second  // compose down -v, image removal
	nodes          = 3
)

// requireDocker returns the compose command (docker compose, or the older
// docker-compose). Without a Docker engine the test is skipped, unless
// CI=true: there a missing engine is a broken runner, not a reason to pass.
func requireDocker(t *testing.T) []string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true: Docker is required)", msg)
		}
		t.Skipf("%s; this test needs a Docker engine with compose (set CI=true to make its absence a failure)", msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		unavailable("no Docker engine answers: docker info: %v: %s", err, bytes.TrimSpace(out))
	}
	for _, cmd := range [][]string{{"docker", "compose"}, {"docker-compose"}} {
		if exec.CommandContext(ctx, cmd[0], append(slices.Clone(cmd[1:]), "version")...).Run() == nil {
			return cmd
		}
	}
	unavailable("neither docker compose nor docker-compose works")
	return nil
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// Another process may take one before compose binds it; compose then fails
// with a clear "port is already allocated".
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// run runs a command and returns its combined output; the error carries the
// output, so a failure explains itself.
func run(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}

// buildImage builds a static raftka and an image of it through
// build-image.sh, under a tag of its own that is removed at the end.
func buildImage(t *testing.T) (image, binary string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	binary = filepath.Join(t.TempDir(), "raftka")
	if _, err := run(ctx, "..", []string{"CGO_ENABLED=0"}, goCommand(), "build", "-trimpath", "-o", binary, "./cmd/raftka"); err != nil {
		t.Fatal(err)
	}
	image = "raftka-deploy-test:" + randomHex(t, 6)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if _, err := run(ctx, ".", nil, "docker", "image", "rm", "--force", image); err != nil {
			t.Errorf("removing the test image: %v", err)
		}
	})
	if _, err := run(ctx, ".", []string{"RAFTKA_BIN=" + binary, "IMAGE=" + image}, "sh", "build-image.sh"); err != nil {
		t.Fatal(err)
	}
	return image, binary
}

// composeCluster is one run of docker-compose.yml under a project name of
// its own, with every published port moved to a free one.
type composeCluster struct {
	t       *testing.T
	cmd     []string
	project string
	env     []string
	files   []string // compose files after docker-compose.yml (overlays)
	clients []string // 127.0.0.1:port of node 1..3
	metrics []string
}

func (c *composeCluster) compose(ctx context.Context, args ...string) (string, error) {
	full := append(slices.Clone(c.cmd[1:]), "--project-name", c.project, "--file", "docker-compose.yml")
	for _, f := range c.files {
		full = append(full, "--file", f)
	}
	return run(ctx, ".", c.env, c.cmd[0], append(full, args...)...)
}

// startCompose starts docker-compose.yml, with overlay files and extra
// environment when given.
func startCompose(t *testing.T, ctx context.Context, cmd []string, image, binary string, env []string, overlays ...string) *composeCluster {
	t.Helper()
	out, err := run(ctx, ".", nil, binary, "storage", "random-uuid")
	if err != nil {
		t.Fatal(err)
	}
	c := &composeCluster{t: t, cmd: cmd, project: "raftkadeploy" + randomHex(t, 5), files: overlays}
	c.env = append([]string{"RAFTKA_IMAGE=" + image, "RAFTKA_CLUSTER_ID=" + strings.TrimSpace(out)}, env...)
	ports := freePorts(t, 2*nodes)
	for n := 1; n <= nodes; n++ {
		client, metrics := ports[n-1], ports[nodes+n-1]
		c.env = append(c.env,
			fmt.Sprintf("RAFTKA_PORT_%d=%d", n, client),
			fmt.Sprintf("RAFTKA_METRICS_PORT_%d=%d", n, metrics))
		c.clients = append(c.clients, net.JoinHostPort("127.0.0.1", strconv.Itoa(client)))
		c.metrics = append(c.metrics, net.JoinHostPort("127.0.0.1", strconv.Itoa(metrics)))
	}
	// Cleanups run last-registered first: logs (on failure), then down.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if _, err := c.compose(ctx, "down", "--volumes", "--remove-orphans", "--timeout", "10"); err != nil {
			t.Errorf("compose down: %v", err)
		}
	})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := c.compose(ctx, "ps")
		t.Logf("compose ps (%v):\n%s", err, out)
		out, err = c.compose(ctx, "logs", "--no-color", "--tail=150")
		t.Logf("compose logs (%v):\n%s", err, out)
	})
	if _, err := c.compose(ctx, "up", "--detach"); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitReady polls every node's /readyz until all answer 200 or the
// deadline passes.
func (c *composeCluster) waitReady(ctx context.Context) {
	c.t.Helper()
	// The requests run under the caller's ctx, not the readiness deadline,
	// so the answers reported on timeout are real ones.
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	last := make([]string, len(c.metrics))
	ready := func(i int) bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.metrics[i]+"/readyz", nil)
		if err != nil {
			c.t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			last[i] = err.Error()
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		last[i] = fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(body))
		return resp.StatusCode == http.StatusOK
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		all := true
		for i := range c.metrics {
			all = ready(i) && all
		}
		if all {
			return
		}
		select {
		case <-deadline.C:
			c.t.Fatalf("nodes not ready within %v; last /readyz answers: %q", readyTimeout, last)
		case <-ctx.Done():
			c.t.Fatalf("waiting for /readyz: %v; last answers: %q", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// consumeAll reads topic from the start with a fresh client until want
// records arrived or ctx ends, and returns the values read.
func consumeAll(ctx context.Context, seeds []string, topic string, want int) ([]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var values []string
	var lastErr error // fetch errors are retried by kgo; kept to explain a timeout
	for len(values) < want {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return values, fmt.Errorf("read %d of %d records: %w (last fetch error: %v)", len(values), want, ctx.Err(), lastErr)
		}
		fetches.EachError(func(_ string, _ int32, err error) { lastErr = err })
		fetches.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	return values, nil
}

func produceRange(ctx context.Context, cl *kgo.Client, topic string, from, to int) error {
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("record-%04d", i))})
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

func checkValues(t *testing.T, got []string, n int) {
	t.Helper()
	slices.Sort(got)
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("record-%04d", i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read %d records, want exactly record-0000..record-%04d once each; got %q", len(got), n-1, got)
	}
}

// TestComposeClusterServesKafkaClients builds the image, starts the compose
// cluster, and checks a Kafka client on the host sees three brokers at the
// published ports, that a replicated topic takes acks=all writes and reads
// them back, and that it keeps doing both after one node is SIGKILLed.
func TestComposeClusterServesKafkaClients(t *testing.T) {
	cmd := requireDocker(t)
	image, binary := buildImage(t)

	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	c := startCompose(t, ctx, cmd, image, binary, nil)
	c.waitReady(ctx)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.clients...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// Advertised listeners must be the published host ports, or the client
	// could bootstrap and then not reach any broker. The node that answers
	// may not have applied the last broker's registration yet (each node
	// answers from its own metadata image, as KRaft brokers do): ask again
	// for a bounded time.
	wantAddrs := slices.Sorted(slices.Values(c.clients))
	var advertised []string
	for deadline := time.Now().Add(30 * time.Second); ; {
		brokers, err := adm.ListBrokers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		advertised = advertised[:0]
		for _, b := range brokers {
			advertised = append(advertised, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
		}
		slices.Sort(advertised)
		if slices.Equal(advertised, wantAddrs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("brokers advertise %q, want the published %q", advertised, wantAddrs)
		}
		time.Sleep(200 * time.Millisecond)
	}

	const topic = "deploy-test"
	if resp, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	if err := produceRange(ctx, cl, topic, 0, 100); err != nil {
		t.Fatalf("produce: %v", err)
	}
	got, err := consumeAll(ctx, c.clients, topic, 100)
	if err != nil {
		t.Fatal(err)
	}
	checkValues(t, got, 100)

	// SIGKILL the leader of partition 0, so at least one partition must
	// fail over.
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	td := topics[topic]
	if td.Err != nil || len(td.Partitions) != 3 {
		t.Fatalf("describe %s: %v, %d partitions", topic, td.Err, len(td.Partitions))
	}
	victim := td.Partitions[0].Leader
	if victim < 1 || victim > nodes {
		t.Fatalf("partition 0 leader %d is not one of the compose nodes", victim)
	}
	if _, err := c.compose(ctx, "kill", "-s", "SIGKILL", fmt.Sprintf("raftka-%d", victim)); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed raftka-%d (leader of %s-0)", victim, topic)

	// Writes continue once the controller has fenced the dead broker and
	// moved its leaderships (broker.session.timeout.ms, 9 s by default);
	// kgo retries until then.
	if err := produceRange(ctx, cl, topic, 100, 200); err != nil {
		t.Fatalf("produce after killing raftka-%d: %v", victim, err)
	}
	var survivors []string
	for i, addr := range c.clients {
		if int32(i+1) != victim {
			survivors = append(survivors, addr)
		}
	}
	got, err = consumeAll(ctx, survivors, topic, 200)
	if err != nil {
		t.Fatalf("after killing raftka-%d: %v", victim, err)
	}
	checkValues(t, got, 200)

	// The metadata quorum also still commits with two of three voters.
	var created kadm.CreateTopicResponse
	if created, err = adm.CreateTopic(ctx, 1, 2, nil, topic+"-after-kill"); err != nil || created.Err != nil {
		t.Fatalf("create a topic after killing raftka-%d: %v %v", victim, err, created.Err)
	}
}

// TestComposeSecureCluster runs docker-compose.secure.yml over
// docker-compose.yml with TLS material from raftka local --secure
// --init-only, as the file's header says: admin over SASL_SSL with SCRAM
// creates an RF=3 topic and writes it with acks=all (the brokers replicate
// over SASL_SSL), reads it back, and a PLAINTEXT client is refused.
func TestComposeSecureCluster(t *testing.T) {
	cmd := requireDocker(t)
	image, binary := buildImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // read through the bind mount
		t.Fatal(err)
	}
	out, err := run(ctx, ".", nil, binary, "local", "--secure", "--init-only", "--dir", dir,
		"--tls-hosts", "localhost,127.0.0.1,raftka-1,raftka-2,raftka-3")
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(out)
	if err := os.Chmod(dir+"/tls", 0o755); err != nil {
		t.Fatal(err)
	}
	c := startCompose(t, ctx, cmd, image, binary, []string{"RAFTKA_SECURE_DIR=" + dir, "RAFTKA_ADMIN_PASSWORD=" + password}, "docker-compose.secure.yml")
	c.waitReady(ctx)

	caPEM, err := os.ReadFile(dir + "/tls/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	secured := []kgo.Opt{kgo.SeedBrokers(c.clients...), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}),
		kgo.SASL(scram.Auth{User: "admin", Pass: password}.AsSha512Mechanism())}
	cl, err := kgo.NewClient(append(secured, kgo.RequiredAcks(kgo.AllISRAcks()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic = "deploy-secure"
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, err := adm.CreateTopic(ctx, 3, 3, nil, topic)
		if err == nil && resp.Err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create %s over SASL_SSL: %v %v", topic, err, resp.Err)
		}
		time.Sleep(time.Second)
	}
	if err := produceRange(ctx, cl, topic, 0, 100); err != nil {
		t.Fatalf("produce: %v", err)
	}
	rcl, err := kgo.NewClient(append(secured, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer rcl.Close()
	var got []string
	for len(got) < 100 {
		fs := rcl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 100", len(got))
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	checkValues(t, got, 100)

	plain, err := kgo.NewClient(kgo.SeedBrokers(c.clients[0]), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	defer pcancel()
	if err := plain.Ping(pctx); err == nil {
		t.Fatal("a PLAINTEXT client was served by the secured cluster")
	}
}
