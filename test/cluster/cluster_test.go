package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/magiconair/properties"
	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMain(m *testing.M) { Main(m) }

// kraftKeys are the keys of the Kafka-shaped reference file that raftka acts on.
func kraftKeys(t *testing.T) []string {
	data, err := os.ReadFile(filepath.Join("..", "..", "broker", "config", "testdata", "kraft-combined.properties"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := properties.Load(data, properties.UTF8)
	if err != nil {
		t.Fatal(err)
	}
	var known []string
	for _, d := range config.Defs() {
		known = append(known, d.Name)
	}
	var keys []string
	for _, k := range p.Keys() {
		if slices.Contains(known, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) < 15 {
		t.Fatalf("only %d raftka keys in the reference file: %v", len(keys), keys)
	}
	return keys
}

func TestPrepareWritesKraftShapedConfigs(t *testing.T) {
	c := Prepare(t, Nodes(3), Override("num.partitions", "4"), NodeOverride(2, "broker.rack", "r2"), Override("log.segment.bytes", "1048576"))
	want := kraftKeys(t)
	seen := map[string]bool{}
	for _, n := range c.Nodes() {
		cfg, warnings, err := config.Load(n.ConfigPath(), nil)
		if err != nil {
			t.Fatalf("node %d: %v", n.ID(), err)
		}
		if len(warnings) != 0 {
			t.Errorf("node %d: warnings %q", n.ID(), warnings)
		}
		if cfg.NodeID != n.ID() || !cfg.Roles.Broker || !cfg.Roles.Controller {
			t.Errorf("node %d: id %d roles %v", n.ID(), cfg.NodeID, cfg.Roles)
		}
		if len(cfg.Voters) != 3 {
			t.Fatalf("voters %v", cfg.Voters)
		}
		for i, v := range cfg.Voters {
			if v.ID != int32(i+1) || v.Addr() != c.Node(v.ID).ControllerAddr() {
				t.Errorf("voter %v, node's controller listener %s", v, c.Node(v.ID).ControllerAddr())
			}
		}
		if l, ok := cfg.Listener("PLAINTEXT"); !ok || l.Addr() != n.ClientAddr() {
			t.Errorf("client listener %v", l)
		}
		if l, ok := cfg.ControllerListener(); !ok || l.Addr() != n.ControllerAddr() {
			t.Errorf("controller listener %v", l)
		}
		if len(cfg.AdvertisedListeners) != 1 || cfg.AdvertisedListeners[0].Addr() != n.ClientAddr() {
			t.Errorf("advertised %v", cfg.AdvertisedListeners)
		}
		if !slices.Equal(cfg.LogDirs, []string{n.DataDir()}) || cfg.MetricsListener != n.MetricsAddr() {
			t.Errorf("dirs %v metrics %q", cfg.LogDirs, cfg.MetricsListener)
		}
		if cfg.NumPartitions != 4 || cfg.LogSegmentBytes != 1<<20 || cfg.MinInsyncReplicas != 2 || cfg.DefaultReplicationFactor != 3 {
			t.Errorf("overrides and defaults: %+v", cfg)
		}
		if (cfg.Rack == "r2") != (n.ID() == 2) {
			t.Errorf("node %d rack %q", n.ID(), cfg.Rack)
		}
		if cfg.BrokerSessionTimeout > 5*time.Second {
			t.Errorf("session timeout %v is long for tests", cfg.BrokerSessionTimeout)
		}
		text, _ := os.ReadFile(n.ConfigPath())
		p, err := properties.Load(text, properties.UTF8)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range want {
			if _, ok := p.Get(k); !ok {
				t.Errorf("node %d: %s, set in Kafka's file, is missing", n.ID(), k)
			}
		}
		if _, err := storage.CheckDirs([]string{n.DataDir()}, c.ClusterID(), n.ID()); err != nil {
			t.Errorf("node %d not formatted: %v", n.ID(), err)
		}
		for _, a := range []string{n.ClientAddr(), n.ControllerAddr(), n.MetricsAddr()} {
			if seen[a] {
				t.Errorf("address %s used twice", a)
			}
			seen[a] = true
		}
		if n.Running() || n.PID() != 0 {
			t.Errorf("node %d running before StartAll", n.ID())
		}
	}
	if got := c.Bootstrap(); got != strings.Join([]string{c.Node(1).ClientAddr(), c.Node(2).ClientAddr(), c.Node(3).ClientAddr()}, ",") {
		t.Errorf("bootstrap %q", got)
	}
	if _, err := storage.ParseUUID(c.ClusterID()); err != nil {
		t.Errorf("cluster id %q: %v", c.ClusterID(), err)
	}
}

func TestPrepareBrokerOnlyAndClusterID(t *testing.T) {
	id := storage.RandomUUID().String()
	c := Prepare(t, Nodes(4), BrokerOnly(4), ClusterID(id))
	if c.ClusterID() != id {
		t.Fatalf("cluster id %q", c.ClusterID())
	}
	cfg, _, err := config.Load(c.Node(4).ConfigPath(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Roles.Controller || len(cfg.Voters) != 3 || c.Node(4).ControllerAddr() == "" {
		t.Errorf("broker-only node: roles %v voters %v", cfg.Roles, cfg.Voters)
	}
	cfg, _, err = config.Load(c.Node(1).ConfigPath(), nil)
	if err != nil || cfg.OffsetsTopicReplicationFactor != 3 {
		t.Fatalf("%v %+v", err, cfg)
	}
	if _, err := storage.CheckDirs([]string{c.Node(4).DataDir()}, id, 4); err != nil {
		t.Error(err)
	}
}

func TestSingleNodeFactors(t *testing.T) {
	c := Prepare(t, Nodes(1))
	cfg, _, err := config.Load(c.Node(1).ConfigPath(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DefaultReplicationFactor != 1 || cfg.MinInsyncReplicas != 1 || cfg.TransactionStateLogMinISR != 1 || len(c.Nodes()) != 1 {
		t.Errorf("one node: %+v", cfg)
	}
}

func TestRunVersion(t *testing.T) {
	out, err := Run(t, "version")
	if err != nil || !strings.HasPrefix(out, "raftka ") {
		t.Fatalf("%v %q", err, out)
	}
	if _, err := Run(t, "no-such-command"); err == nil {
		t.Error("an unknown command succeeded")
	}
}

// The node exec path: output lands in the node's log, each line prefixed.
func TestLaunchCapturesOutput(t *testing.T) {
	c := Prepare(t, Nodes(1), ReadyTimeout(5*time.Second))
	n := c.Node(1)
	p, err := n.launch("version")
	if err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
	// A process that exits is reported by the readiness wait at once.
	err = n.waitReady()
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("waitReady: %v", err)
	}
	<-p.copied
	p.ended = true
	if !strings.Contains(n.Logs(), "n1| raftka ") || !strings.Contains(n.Logs(), "n1| ==== test/cluster: starting") {
		t.Fatalf("logs:\n%s", n.Logs())
	}
	if n.Running() {
		t.Error("exited node reports running")
	}
}

// Signals, on a stand-in long-running process (raftka server is not needed
// to test the harness's process handling).
func TestSignals(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	c := Prepare(t, Nodes(1), TermTimeout(10*time.Second))
	n := c.Node(1)
	run := func(script string) *process {
		p, err := n.launchCmd(sh, "-c", script)
		if err != nil {
			t.Fatal(err)
		}
		n.mu.Lock()
		n.proc = p
		n.mu.Unlock()
		return p
	}
	// The trap is set before "up" is printed: the test waits for "up" and
	// then signals, and a SIGTERM that came before the trap would kill the
	// shell (it did once in a CI run, with the e2e package's parallel tests
	// loading the machine).
	loop := `trap 'echo bye; exit 0' TERM; echo up; while :; do sleep 0.05; done`

	run(loop)
	WaitFor(t, 10*time.Second, func() (bool, string) { return strings.Contains(n.Logs(), "n1| up"), "no output yet" })
	n.Stop()
	WaitFor(t, 10*time.Second, func() (bool, string) { s := procState(n.PID()); return s == "T", "state " + s })
	n.Cont()
	WaitFor(t, 10*time.Second, func() (bool, string) { s := procState(n.PID()); return s != "T", "state " + s })
	n.Term()
	if n.Running() || !strings.Contains(n.Logs(), "n1| bye") {
		t.Fatalf("after Term: running %v, logs:\n%s", n.Running(), n.Logs())
	}

	p := run(loop)
	pid := n.PID()
	n.Kill()
	if n.Running() || syscall.Kill(pid, 0) == nil {
		t.Fatal("process alive after Kill")
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("exit status %v", p.cmd.ProcessState)
	}

	// Cleanup kills what is still running, by process group.
	run(loop)
	pid = n.PID()
	n.cleanup()
	if syscall.Kill(pid, 0) == nil {
		t.Fatal("process alive after cleanup")
	}
}

// procState is the state letter from /proc (Linux), or "" if unknown.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}

func TestFreePorts(t *testing.T) {
	a, err := freePorts(10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := freePorts(10)
	if err != nil {
		t.Fatal(err)
	}
	all := append(a, b...)
	slices.Sort(all)
	if len(slices.Compact(all)) != 20 {
		t.Fatalf("ports repeat: %v %v", a, b)
	}
	if lo, ok := pickCeiling(); ok {
		for _, p := range all {
			if p < pickFloor || p >= lo {
				t.Errorf("port %d is outside [%d, %d), below the ephemeral range", p, pickFloor, lo)
			}
		}
	}
	for _, p := range a {
		l, err := net.Listen("tcp", loopback(p))
		if err != nil {
			t.Errorf("port %d not free: %v", p, err)
			continue
		}
		l.Close()
	}
}

func TestWaitFor(t *testing.T) {
	if err := waitFor(time.Second, func() (bool, string) { return true, "" }); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	if err := waitFor(10*time.Second, func() (bool, string) { return calls.Add(1) >= 5, "fewer than 5 calls" }); err != nil || calls.Load() != 5 {
		t.Fatalf("%v after %d calls", err, calls.Load())
	}
	err := waitFor(50*time.Millisecond, func() (bool, string) { return false, "the moon is not blue" })
	if err == nil || !strings.Contains(err.Error(), "the moon is not blue") || !strings.Contains(err.Error(), "50ms") {
		t.Fatalf("err %v", err)
	}
}

func TestTailFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, err := tailFile(path, 60)
	if err != nil || len(lines) != 60 || lines[0] != "line 41" || lines[59] != "line 100" {
		t.Fatalf("%v %d %q", err, len(lines), lines)
	}
	lines, _ = tailFile(path, 200)
	if len(lines) != 100 || lines[0] != "line 1" {
		t.Fatalf("short file: %d %q", len(lines), lines[0])
	}
	if lines, _ := tailFile(path, 0); len(lines) != 0 {
		t.Fatal("n=0")
	}
	if _, err := tailFile(filepath.Join(t.TempDir(), "none"), 5); err == nil {
		t.Fatal("missing file")
	}
}

// The failure printer: a failed test gets each node's tail in its log.
func TestCleanupPrintsTailOnFailure(t *testing.T) {
	rec := &recordingTB{TB: t}
	c := &Cluster{t: rec, o: opts{tailLines: 2}}
	n := &Node{c: c, id: 1, logPath: filepath.Join(t.TempDir(), "raftka.log")}
	c.nodes = []*Node{n}
	if err := os.WriteFile(n.logPath, []byte("n1| a\nn1| b\nn1| c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.cleanup()
	if len(rec.logs) != 0 {
		t.Fatalf("passing test printed %q", rec.logs)
	}
	rec.failed = true
	c.cleanup()
	if len(rec.logs) != 1 || !strings.Contains(rec.logs[0], "node 1: last 2 log lines") || !strings.HasSuffix(rec.logs[0], "n1| b\nn1| c") {
		t.Fatalf("printed %q", rec.logs)
	}
}

type recordingTB struct {
	testing.TB
	failed bool
	logs   []string
}

func (r *recordingTB) Failed() bool { return r.failed }
func (r *recordingTB) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func TestCopyPrefixed(t *testing.T) {
	var out strings.Builder
	long := strings.Repeat("x", 70<<10)
	copyPrefixed(&out, strings.NewReader("one\ntwo\n"+long+"\nlast"), "n3| ")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if lines[0] != "n3| one" || lines[1] != "n3| two" || lines[len(lines)-1] != "n3| last" {
		t.Fatalf("lines %q", lines[:2])
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "n3| ") {
			t.Fatalf("unprefixed line of %d bytes", len(l))
		}
	}
}

func TestEscapeRoundTrip(t *testing.T) {
	for _, s := range []string{"plain", " leading space", `back\slash`, "a=b:c#d!e", "tab\there", "new\nline", "ü", ""} {
		text := escapeKey("k"+s) + "=" + escapeValue(s) + "\n"
		p, err := properties.LoadString(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		p.DisableExpansion = true
		if got, ok := p.Get("k" + s); !ok || got != s {
			t.Errorf("%q read back as %q (%v)", s, got, ok)
		}
	}
}

// fakeBroker answers one connection's requests with answer(request bytes).
func fakeBroker(t *testing.T, answer func(req []byte) []byte) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			r := bufio.NewReader(conn)
			req, err := readFrame(r, 1<<20)
			if err == nil {
				if resp := answer(req); resp != nil {
					conn.Write(resp)
				}
			}
			conn.Close()
		}
	}()
	return l.Addr().String()
}

// decodeApiVersionsRequest checks the harness's hand-made frame the way a
// broker reads it: header v2, then the v3 body.
func decodeApiVersionsRequest(t *testing.T, b []byte) (corr uint32, req *kmsg.ApiVersionsRequest) {
	if len(b) < 10 || binary.BigEndian.Uint16(b) != 18 || binary.BigEndian.Uint16(b[2:]) != 3 {
		t.Errorf("header %x", b[:min(len(b), 10)])
		return 0, nil
	}
	corr = binary.BigEndian.Uint32(b[4:])
	idLen := int(binary.BigEndian.Uint16(b[8:]))
	rest := b[10+idLen:]
	if string(b[10:10+idLen]) != "raftka-test-cluster" || rest[0] != 0 {
		t.Errorf("client id or tags %q", b[10:])
	}
	req = kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	if err := req.ReadFrom(rest[1:]); err != nil {
		t.Errorf("body: %v", err)
	}
	return corr, req
}

func frameResponse(corr uint32, resp *kmsg.ApiVersionsResponse) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 4), corr)
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func TestApiVersionsProbe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ok := fakeBroker(t, func(b []byte) []byte {
		corr, req := decodeApiVersionsRequest(t, b)
		if req == nil || req.ClientSoftwareName != "raftka-test-cluster" {
			return nil
		}
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.Version = 3
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 4}}
		return frameResponse(corr, resp)
	})
	keys, err := ApiVersions(ctx, ok)
	if err != nil || len(keys) != 1 || keys[0].MaxVersion != 4 {
		t.Fatalf("%v %v", keys, err)
	}

	old := fakeBroker(t, func(b []byte) []byte {
		corr, _ := decodeApiVersionsRequest(t, b)
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		resp.ErrorCode = 35
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: 2}}
		return frameResponse(corr, resp)
	})
	if keys, err := ApiVersions(ctx, old); err != nil || len(keys) != 1 {
		t.Fatalf("v0 answer: %v %v", keys, err)
	}

	cases := map[string]func([]byte) []byte{
		"closes":       func([]byte) []byte { return nil },
		"wrong corr":   func([]byte) []byte { return frameResponse(99, kmsg.NewPtrApiVersionsResponse()) },
		"huge frame":   func([]byte) []byte { return []byte{0x7f, 0, 0, 0} },
		"garbage body": func(b []byte) []byte { return []byte{0, 0, 0, 6, 0, 0, 0, 7, 0xff, 0xff} },
	}
	for name, answer := range cases {
		if _, err := ApiVersions(ctx, fakeBroker(t, answer)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// Nothing listening: the port from a closed listener.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	if _, err := ApiVersions(ctx, addr); err == nil {
		t.Error("dial to a closed port succeeded")
	}
}
