package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Opt configures a cluster (kfake style).
type Opt interface{ apply(*opts) }

type opt struct{ fn func(*opts) }

func (o opt) apply(c *opts) { o.fn(c) }

type kv struct{ key, value string }

type opts struct {
	nodes         int
	brokerOnly    map[int32]bool
	overrides     []kv
	nodeOverrides map[int32][]kv
	omit          map[string]bool
	formatArgs    []string
	ready         func(ctx context.Context, n *Node) error
	readyTimeout  time.Duration
	termTimeout   time.Duration
	clusterID     string
	logLevel      string
	tailLines     int
	binary        string // "" for Binary()
	isolated      bool
	// dynamic: the nodes formatted --initial-controllers (KIP-853); the
	// other controllers are formatted --no-initial-controllers. nil: a
	// static controller.quorum.voters.
	dynamic []int32
}

// DynamicQuorum formats a dynamic controller quorum (KIP-853,
// kraft.version 1): every node gets controller.quorum.bootstrap.servers
// (the initial voters' controller listeners) instead of
// controller.quorum.voters; the nodes named are formatted
// --initial-controllers with each other, the other controllers
// --no-initial-controllers (observers until raftka cluster add-controller
// promotes them).
func DynamicQuorum(initial ...int32) Opt {
	return opt{func(o *opts) { o.dynamic = slices.Clone(initial) }}
}

// Isolated runs every node in a network namespace of its own, at its own
// address on a bridge the test process reaches too, so a test can cut one
// node off the network (Node.Cut, Node.Heal) while its process runs. It
// needs root and iproute2: without them the test is skipped (failed under
// CI=true).
func Isolated() Opt { return opt{func(o *opts) { o.isolated = true }} }

// WithBinary runs (and formats) every node with the raftka binary at path,
// such as a previous release's from BuildRevision, instead of this tree's.
func WithBinary(path string) Opt { return opt{func(o *opts) { o.binary = path }} }

// Nodes sets the number of nodes, with ids 1..n. Default 3.
func Nodes(n int) Opt { return opt{func(o *opts) { o.nodes = n }} }

// BrokerOnly gives the nodes with these ids process.roles=broker: they are
// Raft non-voters (not in controller.quorum.voters), with a CONTROLLER
// listener for the metadata log.
func BrokerOnly(ids ...int32) Opt {
	return opt{func(o *opts) {
		for _, id := range ids {
			o.brokerOnly[id] = true
		}
	}}
}

// Override sets a server.properties key on every node, replacing the
// harness's value if it writes one.
func Override(key, value string) Opt {
	return opt{func(o *opts) { o.overrides = append(o.overrides, kv{key, value}) }}
}

// Omit leaves a key the harness writes out of every node's
// server.properties, so the node runs on raftka's default for it (a test of
// a plain Kafka-style file). Omitting metrics.listener also makes
// Node.MetricsAddr empty, and the default readiness check then waits for
// ApiVersions only.
func Omit(key string) Opt {
	return opt{func(o *opts) { o.omit[key] = true }}
}

// FormatArgs adds arguments to every node's `raftka storage format` (for
// example --add-scram).
func FormatArgs(args ...string) Opt {
	return opt{func(o *opts) { o.formatArgs = append(o.formatArgs, args...) }}
}

// FreePorts returns n loopback ports that were free a moment ago and that
// no other cluster of this test binary was given, for tests that add
// listeners of their own.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := freePorts(n)
	if err != nil {
		t.Fatalf("test/cluster: %v", err)
	}
	return ports
}

// NodeOverride sets a key on one node; it wins over Override.
func NodeOverride(id int32, key, value string) Opt {
	return opt{func(o *opts) { o.nodeOverrides[id] = append(o.nodeOverrides[id], kv{key, value}) }}
}

// Ready replaces the readiness check run after a node starts. The default
// (ServingReady) waits until the client port answers ApiVersions and
// /readyz reports the broker registered and unfenced.
func Ready(fn func(ctx context.Context, n *Node) error) Opt {
	return opt{func(o *opts) { o.ready = fn }}
}

// ReadyTimeout bounds the wait for a node to become ready. Default 60s.
func ReadyTimeout(d time.Duration) Opt { return opt{func(o *opts) { o.readyTimeout = d }} }

// TermTimeout bounds the wait for a node to exit after SIGTERM. Default 30s.
func TermTimeout(d time.Duration) Opt { return opt{func(o *opts) { o.termTimeout = d }} }

// ClusterID formats the nodes with this id instead of a random one.
func ClusterID(id string) Opt { return opt{func(o *opts) { o.clusterID = id }} }

// LogLevel is the nodes' --log-level. Default debug.
func LogLevel(level string) Opt { return opt{func(o *opts) { o.logLevel = level }} }

// TailLines is how many log lines per node a failed test prints. Default 60.
func TailLines(n int) Opt { return opt{func(o *opts) { o.tailLines = n }} }

// Cluster is a set of raftka nodes started by one test.
type Cluster struct {
	t         testing.TB
	o         opts
	root      string
	clusterID string
	nodes     []*Node
	netns     *netnsNet // Isolated's network; nil on loopback
}

// Start prepares the cluster (see Prepare), starts every node and waits
// until each is ready.
func Start(t testing.TB, o ...Opt) *Cluster {
	t.Helper()
	c := Prepare(t, o...)
	c.StartAll()
	return c
}

// Prepare builds the binary, picks ports, writes each node's
// server.properties and formats its directories with one cluster id, but
// starts nothing: for tests that change files before the first start.
func Prepare(t testing.TB, o ...Opt) *Cluster {
	t.Helper()
	cfg := opts{
		nodes:         3,
		brokerOnly:    map[int32]bool{},
		nodeOverrides: map[int32][]kv{},
		omit:          map[string]bool{},
		ready:         ServingReady,
		readyTimeout:  60 * time.Second,
		termTimeout:   30 * time.Second,
		logLevel:      "debug",
		tailLines:     60,
	}
	for _, opt := range o {
		opt.apply(&cfg)
	}
	if cfg.nodes < 1 {
		t.Fatalf("test/cluster: Nodes(%d): need at least one node", cfg.nodes)
	}
	c := &Cluster{t: t, o: cfg, root: t.TempDir()}
	t.Cleanup(c.cleanup) // after TempDir, so it runs before the dir goes

	ports, err := freePorts(3 * cfg.nodes)
	if err != nil {
		t.Fatalf("test/cluster: %v", err)
	}
	for i := range cfg.nodes {
		id := int32(i + 1)
		dir := filepath.Join(c.root, "n"+strconv.Itoa(int(id)))
		n := &Node{
			c:              c,
			id:             id,
			dir:            dir,
			dataDir:        filepath.Join(dir, "data"),
			configPath:     filepath.Join(dir, "server.properties"),
			logPath:        filepath.Join(dir, "raftka.log"),
			clientPort:     ports[3*i],
			controllerPort: ports[3*i+1],
			metricsPort:    ports[3*i+2],
			noMetrics:      cfg.omit["metrics.listener"],
			brokerOnly:     cfg.brokerOnly[id],
		}
		c.nodes = append(c.nodes, n)
	}
	if cfg.isolated {
		var ids []int32
		for _, n := range c.nodes {
			ids = append(ids, n.id)
		}
		c.netns = setupNetns(t, ids)
		c.netns.owned = true
		for _, n := range c.nodes {
			n.host = c.netns.host(n.id)
		}
	}
	if len(c.voters()) == 0 {
		t.Fatal("test/cluster: every node is broker-only; a cluster needs at least one controller")
	}
	for _, n := range c.nodes {
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(n.configPath, []byte(c.serverProperties(n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	c.clusterID = cfg.clusterID
	if c.clusterID == "" {
		out, err := Run(t, "storage", "random-uuid")
		if err != nil {
			t.Fatalf("test/cluster: %v\n%s", err, out)
		}
		c.clusterID = strings.TrimSpace(out)
	}
	var initial []string
	for _, id := range cfg.dynamic {
		n := c.Node(id)
		out, err := Run(t, "storage", "random-uuid")
		if err != nil {
			t.Fatalf("test/cluster: %v\n%s", err, out)
		}
		initial = append(initial, fmt.Sprintf("%d@%s:%s", id, n.ControllerAddr(), strings.TrimSpace(out)))
	}
	for _, n := range c.nodes {
		args := append([]string{"--log-level", "warn", "storage", "format", "--config", n.configPath, "--cluster-id", c.clusterID}, cfg.formatArgs...)
		switch {
		case cfg.dynamic == nil || n.brokerOnly:
		case slices.Contains(cfg.dynamic, n.id):
			args = append(args, "--initial-controllers", strings.Join(initial, ","))
		default:
			args = append(args, "--no-initial-controllers")
		}
		if out, err := RunBinary(t, n.binaryPath(), args...); err != nil {
			t.Fatalf("test/cluster: formatting node %d: %v\n%s", n.id, err, out)
		}
	}
	return c
}

// StartAll starts every node that is not running, then waits for each to
// be ready. All start before any is waited for: a node may need a quorum
// before it serves clients.
func (c *Cluster) StartAll() {
	c.t.Helper()
	c.startNodes(func(*Node) bool { return true })
}

// StartNodes is StartAll for the named nodes only: a node prepared but
// kept back joins a running cluster later (a new or replacement broker).
func (c *Cluster) StartNodes(ids ...int32) {
	c.t.Helper()
	c.startNodes(func(n *Node) bool { return slices.Contains(ids, n.id) })
}

func (c *Cluster) startNodes(want func(*Node) bool) {
	c.t.Helper()
	var started []*Node
	for _, n := range c.nodes {
		if want(n) && !n.Running() {
			n.start()
			started = append(started, n)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(started))
	for i, n := range started {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.waitReady()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			c.t.Fatalf("test/cluster: %v", err)
		}
	}
}

// ClusterID is the id the nodes were formatted with.
func (c *Cluster) ClusterID() string { return c.clusterID }

// Bootstrap is every node's client address, comma separated, for a
// client's bootstrap servers.
func (c *Cluster) Bootstrap() string {
	addrs := make([]string, 0, len(c.nodes))
	for _, n := range c.nodes {
		addrs = append(addrs, n.ClientAddr())
	}
	return strings.Join(addrs, ",")
}

// Node returns the node with this id (1..n).
func (c *Cluster) Node(id int32) *Node {
	c.t.Helper()
	if id < 1 || int(id) > len(c.nodes) {
		c.t.Fatalf("test/cluster: no node %d in a cluster of %d", id, len(c.nodes))
	}
	return c.nodes[id-1]
}

// Nodes returns every node, in id order.
func (c *Cluster) Nodes() []*Node { return slices.Clone(c.nodes) }

func (c *Cluster) voters() []*Node {
	var v []*Node
	for _, n := range c.nodes {
		if !n.brokerOnly {
			v = append(v, n)
		}
	}
	return v
}

// serverProperties renders a node's file in the shape of Kafka's KRaft
// combined-mode server.properties, then applies the overrides.
func (c *Cluster) serverProperties(n *Node) string {
	voters := c.voters()
	brokers := len(c.nodes)
	var quorum []string
	for _, v := range voters {
		quorum = append(quorum, fmt.Sprintf("%d@%s", v.id, v.ControllerAddr()))
	}
	roles, listeners := "broker,controller", fmt.Sprintf("PLAINTEXT://%s,CONTROLLER://%s", n.ClientAddr(), n.ControllerAddr())
	if n.brokerOnly {
		// A Raft non-voter still replicates the metadata log, over its
		// CONTROLLER listener.
		roles = "broker"
	}
	quorumKey, quorumValue := "controller.quorum.voters", strings.Join(quorum, ",")
	if c.o.dynamic != nil {
		var boot []string
		for _, id := range c.o.dynamic {
			boot = append(boot, c.nodes[id-1].ControllerAddr())
		}
		quorumKey, quorumValue = "controller.quorum.bootstrap.servers", strings.Join(boot, ",")
	}
	props := []kv{
		{"process.roles", roles},
		{"node.id", strconv.Itoa(int(n.id))},
		{quorumKey, quorumValue},
		{"listeners", listeners},
		{"inter.broker.listener.name", "PLAINTEXT"},
		{"advertised.listeners", "PLAINTEXT://" + n.ClientAddr()},
		{"controller.listener.names", "CONTROLLER"},
		{"listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"},
		{"log.dirs", n.dataDir},
		{"num.partitions", "1"},
		{"offsets.topic.replication.factor", strconv.Itoa(min(3, brokers))},
		{"transaction.state.log.replication.factor", strconv.Itoa(min(3, brokers))},
		{"transaction.state.log.min.isr", strconv.Itoa(min(2, brokers))},
		{"default.replication.factor", strconv.Itoa(min(3, brokers))},
		{"min.insync.replicas", strconv.Itoa(min(2, brokers))},
		{"socket.request.max.bytes", "104857600"},
		{"num.recovery.threads.per.data.dir", "0"}, // raftka picks: opening logs is I/O-bound
		{"log.retention.hours", "168"},
		{"log.segment.bytes", "1073741824"},
		{"log.retention.check.interval.ms", "1000"},
		// Short timeouts so failover and fencing tests finish quickly.
		{"broker.heartbeat.interval.ms", "250"},
		{"broker.session.timeout.ms", "2000"},
		{"controller.quorum.election.timeout.ms", "500"},
		{"controller.quorum.fetch.timeout.ms", "1000"},
		{"replica.lag.time.max.ms", "5000"},
		{"group.initial.rebalance.delay.ms", "0"},
		{"group.min.session.timeout.ms", "500"},
		{"metrics.listener", n.MetricsAddr()},
	}
	set := func(k, v string) {
		for i := range props {
			if props[i].key == k {
				props[i].value = v
				return
			}
		}
		props = append(props, kv{k, v})
	}
	for _, o := range c.o.overrides {
		set(o.key, o.value)
	}
	for _, o := range c.o.nodeOverrides[n.id] {
		set(o.key, o.value)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by test/cluster for node %d of %d.\n", n.id, len(c.nodes))
	for _, p := range props {
		if c.o.omit[p.key] {
			continue
		}
		b.WriteString(escapeKey(p.key))
		b.WriteByte('=')
		b.WriteString(escapeValue(p.value))
		b.WriteByte('\n')
	}
	return b.String()
}

// escapeKey and escapeValue write Java properties text that reads back as
// the given strings (temp dir paths may hold any character).
func escapeKey(s string) string {
	return escape(s, true)
}

func escapeValue(s string) string {
	return escape(s, false)
}

func escape(s string, key bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == ' ' && (key || i == 0):
			b.WriteString(`\ `)
		case key && (r == '=' || r == ':' || r == '#' || r == '!'):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

var usedPorts struct {
	sync.Mutex
	m map[int]bool
}

// freePorts returns n distinct loopback ports that were free a moment ago
// and have not been handed out before in this test binary. All n listeners
// are held open together so the kernel cannot hand one port out twice.
//
// The ports come from below the kernel's ephemeral range when it leaves
// room (listenBelowEphemeral): a port from that range (what listening on
// port 0 gives) is also the source port of the next outgoing connection
// that draws it, and in a busy run some client or node dialled out from
// it between this pick and the node's bind, which failed with "address
// already in use" (a fresh-clone CI run lost TestKIP848RollingClientUpgrade
// so). Below the range only listeners compete.
func freePorts(n int) ([]int, error) {
	usedPorts.Lock()
	defer usedPorts.Unlock()
	if usedPorts.m == nil {
		usedPorts.m = map[int]bool{}
	}
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("could not find %d free loopback ports", n)
		}
		l, err := listenBelowEphemeral()
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		held = append(held, l)
		p := l.Addr().(*net.TCPAddr).Port
		if usedPorts.m[p] {
			continue
		}
		usedPorts.m[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}

// pickFloor is the lowest port listenBelowEphemeral picks: above the
// ports well-known services and raftka's defaults (9092-9294) use.
const pickFloor = 20000

// pickCeiling is the first port of the kernel's ephemeral range
// (net.ipv4.ip_local_port_range; 32768, Linux's default, when it cannot be
// read), read once, and whether [pickFloor, it) leaves room to pick in
// (1,000 ports at least).
var pickCeiling = sync.OnceValues(func() (int, bool) {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				lo = v
			}
		}
	}
	return lo, lo-pickFloor >= 1000
})

// listenBelowEphemeral listens on a random free loopback port in
// [pickFloor, pickCeiling), or on one the kernel picks when that range
// is too small or keeps being taken.
func listenBelowEphemeral() (net.Listener, error) {
	if hi, ok := pickCeiling(); ok {
		for range 50 {
			p := pickFloor + rand.IntN(hi-pickFloor)
			if l, err := net.Listen("tcp", loopback(p)); err == nil {
				return l, nil
			}
		}
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// cleanup kills every process the cluster started and, when the test
// failed, prints each node's log tail.
func (c *Cluster) cleanup() {
	for _, n := range c.nodes {
		n.cleanup()
	}
	if c.netns != nil {
		c.netns.teardown()
	}
	if !c.t.Failed() {
		return
	}
	for _, n := range c.nodes {
		lines, err := tailFile(n.logPath, c.o.tailLines)
		if errors.Is(err, fs.ErrNotExist) {
			continue // never started
		}
		if err != nil {
			c.t.Logf("node %d: no log: %v", n.id, err)
			continue
		}
		c.t.Logf("---- node %d: last %d log lines of %s ----\n%s", n.id, len(lines), n.logPath, strings.Join(lines, "\n"))
	}
}
