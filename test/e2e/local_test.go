package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// freeBasePort finds n consecutive free loopback ports at base, base+100 and
// base+200 (raftka local's client, controller and metrics ranges).
func freeBasePort(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		base := 20000 + (os.Getpid()*7+try*311)%30000
		ok := true
		for _, off := range []int{0, 100, 200} {
			for i := 0; i < n && ok; i++ {
				ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+off+i))
				if err != nil {
					ok = false
					break
				}
				ln.Close()
			}
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port range for raftka local")
	return 0
}

// lockedBuffer collects a process's output for assertions and failure logs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// `raftka local` is what `make run` runs: three nodes that serve RF=3
// topics, survive kill -9 of one node (the supervisor restarts it and every
// acknowledged record is still there), and all stop on one Ctrl-C.
func TestLocalClusterSurvivesKillAndStopsOnInterrupt(t *testing.T) {
	bin := cluster.Binary(t)
	base := freeBasePort(t, 3)
	out := &lockedBuffer{}
	cmd := exec.Command(bin, "--log-format", "json", "local", "--nodes", "3", "--dir", t.TempDir(),
		"--base-port", strconv.Itoa(base), "--restart-delay", "1s",
		"--override", "broker.session.timeout.ms=3000", "--override", "broker.heartbeat.interval.ms=500")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed once Wait has returned; waitErr is its result.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // our own process group only
			<-exited
		}
		if t.Failed() {
			t.Logf("raftka local output:\n%s", tail(out.String(), 80))
		}
	})

	seeds := []string{fmt.Sprintf("127.0.0.1:%d", base), fmt.Sprintf("127.0.0.1:%d", base+1), fmt.Sprintf("127.0.0.1:%d", base+2)}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := ctxFor(t, 3*time.Minute)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		brokers, err := adm.ListBrokers(ctx)
		if err != nil {
			return false, err.Error()
		}
		return len(brokers) == 3, fmt.Sprintf("%d brokers", len(brokers))
	})
	if err := createTopic(ctx, adm, "local", 3, 3); err != nil {
		t.Fatal(err)
	}
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			r := &kgo.Record{Topic: "local", Key: []byte(strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 100)

	// kill -9 node 2, found as a child of the supervisor we started.
	victim := childPID(t, cmd.Process.Pid, "node2")
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	produce(100, 200) // acks=all with min.insync.replicas=2 still works
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		return strings.Count(out.String(), `"message":"node started"`) >= 4, "node 2 not restarted yet"
	})
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		brokers, err := adm.ListBrokers(ctx)
		if err != nil {
			return false, err.Error()
		}
		return len(brokers) == 3, fmt.Sprintf("%d brokers after the restart", len(brokers))
	})
	produce(200, 300)

	got := map[string]string{}
	rcl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("local"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rcl.Close()
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		rcl.PollFetches(fctx).EachRecord(func(r *kgo.Record) { got[string(r.Key)] = string(r.Value) })
		return len(got) >= 300, fmt.Sprintf("read %d of 300", len(got))
	})
	for i := 0; i < 300; i++ {
		if got[strconv.Itoa(i)] != "v"+strconv.Itoa(i) {
			t.Fatalf("record %d: got %q", i, got[strconv.Itoa(i)])
		}
	}

	stopAt := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("raftka local exited with %v after Ctrl-C", waitErr)
		}
		t.Logf("all three nodes stopped %v after the interrupt", time.Since(stopAt).Round(time.Millisecond))
	case <-time.After(90 * time.Second):
		t.Fatal("raftka local did not stop within 90 s of the interrupt")
	}
}

// childPID finds the server process of one node among the children of the
// supervisor (by its config path), so the test signals only what it started.
func childPID(t *testing.T, parent int, node string) int {
	t.Helper()
	out, err := exec.Command("pgrep", "-P", strconv.Itoa(parent)).Output()
	if err != nil {
		t.Fatalf("pgrep -P %d: %v", parent, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && bytes.Contains(cmdline, []byte("/"+node+"/server.properties")) {
			return pid
		}
	}
	t.Fatalf("no child of %d runs %s", parent, node)
	return 0
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// `raftka local --secure` starts a SASL_SSL + SCRAM + ACL cluster with a
// test CA: admin (password in the data directory) works over TLS from
// franz-go, the raftka CLI and kcat as printed; a client without TLS, or
// with a wrong password, is refused.
func TestLocalSecureCluster(t *testing.T) {
	bin := cluster.Binary(t)
	base := freeBasePort(t, 3)
	dir := t.TempDir()
	out := &lockedBuffer{}
	cmd := exec.Command(bin, "--log-format", "json", "local", "--secure", "--nodes", "3", "--dir", dir, "--base-port", strconv.Itoa(base))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // our own process group only
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("raftka local output:\n%s", tail(out.String(), 80))
		}
	})
	ctx := ctxFor(t, 3*time.Minute)
	var password string
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		b, err := os.ReadFile(dir + "/admin.password")
		password = strings.TrimSpace(string(b))
		return err == nil && password != "", fmt.Sprint(err)
	})
	caPEM, err := os.ReadFile(dir + "/tls/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate in tls/ca.pem")
	}
	seeds := []string{fmt.Sprintf("localhost:%d", base), fmt.Sprintf("localhost:%d", base+1), fmt.Sprintf("localhost:%d", base+2)}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}),
		kgo.SASL(scram.Auth{User: "admin", Pass: password}.AsSha512Mechanism()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		brokers, err := adm.ListBrokers(ctx)
		if err != nil {
			return false, err.Error()
		}
		return len(brokers) == 3, fmt.Sprintf("%d brokers", len(brokers))
	})
	if err := createTopic(ctx, adm, "secure-local", 3, 3); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "secure-local", Value: []byte("v" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d over SASL_SSL with acks=all: %v", i, err)
		}
	}
	if out, err := cluster.Run(t, "topics", "list", "--bootstrap-server", seeds[0], "--command-config", dir+"/admin-client.properties"); err != nil || !strings.Contains(out, "secure-local") {
		t.Fatalf("raftka CLI with the printed --command-config: %v\n%s", err, out)
	}
	if err := pingOver(ctx, seeds[0], nil, nil); err == nil {
		t.Fatal("a PLAINTEXT client was served")
	}
	if err := pingOver(ctx, seeds[0], &tls.Config{RootCAs: pool}, scram.Auth{User: "admin", Pass: "wrong"}.AsSha512Mechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v", err)
	}

	// The kcat line the supervisor printed, run as printed (consuming
	// instead of -L).
	kcat, missing := findKcat()
	if missing != "" {
		missingTool(t, missing)
	}
	var line string
	for _, l := range strings.Split(out.String(), "\n") {
		if i := strings.Index(l, "kcat -b "); i >= 0 {
			line = strings.TrimSpace(l[i:])
		}
	}
	fields := strings.Fields(line)
	if len(fields) < 4 || fields[len(fields)-1] != "-L" {
		t.Fatalf("no kcat line printed:\n%s", tail(out.String(), 20))
	}
	args := append(fields[1:len(fields)-1], "-C", "-t", "secure-local", "-o", "beginning", "-e", "-q")
	kctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	got, err := exec.CommandContext(kctx, kcat, args...).CombinedOutput()
	if err != nil || !strings.Contains(string(got), "v19") {
		t.Fatalf("kcat as printed: %v\n%s", err, got)
	}
}
