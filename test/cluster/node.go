package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Node is one raftka process of a Cluster, across its restarts.
type Node struct {
	c              *Cluster
	id             int32
	dir            string
	dataDir        string
	configPath     string
	logPath        string
	clientPort     int
	controllerPort int
	metricsPort    int
	noMetrics      bool // metrics.listener omitted (Omit)
	brokerOnly     bool

	host string // "" for 127.0.0.1; its namespace's address when Isolated

	mu     sync.Mutex
	proc   *process // nil before the first start
	binary string   // SetBinary's; "" for the cluster's
}

// SetBinary makes the node's next starts run the raftka binary at path
// ("" for the cluster's own): a rolling upgrade or downgrade is SetBinary
// and Restart, one node at a time.
func (n *Node) SetBinary(path string) {
	n.mu.Lock()
	n.binary = path
	n.mu.Unlock()
}

// binaryPath is the binary the node runs.
func (n *Node) binaryPath() string {
	n.mu.Lock()
	b := n.binary
	n.mu.Unlock()
	switch {
	case b != "":
		return b
	case n.c.o.binary != "":
		return n.c.o.binary
	}
	return Binary(n.c.t)
}

// process is one run of the binary.
type process struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed once Wait returned
	err    error         // Wait's result, readable after done
	copied chan struct{} // closed once the log copier saw EOF
	ended  bool          // the harness ended it (Kill, Term); not a crash
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ID is the node.id.
func (n *Node) ID() int32 { return n.id }

// ClientAddr is the PLAINTEXT listener, host:port.
func (n *Node) ClientAddr() string { return n.addr(n.clientPort) }

// addr is host:port at the node's address.
func (n *Node) addr(port int) string {
	if n.host == "" {
		return loopback(port)
	}
	return net.JoinHostPort(n.host, strconv.Itoa(port))
}

// ControllerAddr is the CONTROLLER listener (on a broker-only node, the
// Raft non-voter's).
func (n *Node) ControllerAddr() string { return n.addr(n.controllerPort) }

// MetricsAddr is the metrics.listener address, or "" when the test omitted
// the key.
func (n *Node) MetricsAddr() string {
	if n.noMetrics {
		return ""
	}
	return n.addr(n.metricsPort)
}

// DataDir is the node's log dir (also its metadata dir).
func (n *Node) DataDir() string { return n.dataDir }

// ConfigPath is the node's server.properties.
func (n *Node) ConfigPath() string { return n.configPath }

// LogPath is the file holding every line the node's runs printed.
func (n *Node) LogPath() string { return n.logPath }

// Logs returns everything the node printed so far, over all its runs, each
// line prefixed with the node id.
func (n *Node) Logs() string {
	b, err := os.ReadFile(n.logPath)
	if err != nil {
		return ""
	}
	return string(b)
}

// PID is the current process id, or 0 if the node never started.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return 0
	}
	return n.proc.cmd.Process.Pid
}

// Running reports whether the node's process is alive (a stopped process
// counts as alive).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil && !n.proc.exited()
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// start launches the binary; the caller waits for readiness.
func (n *Node) start() {
	t := n.c.t
	t.Helper()
	p, err := n.launch("--log-level", n.c.o.logLevel, "--log-format", "console", "server", "--config", n.configPath)
	if err != nil {
		t.Fatalf("test/cluster: starting node %d: %v", n.id, err)
	}
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
}

// launch starts the binary with its output copied, line by line and
// prefixed with the node id, to the node's log file.
func (n *Node) launch(args ...string) (*process, error) {
	return n.launchCmd(n.binaryPath(), args...)
}

func (n *Node) launchCmd(bin string, args ...string) (*process, error) {
	logFile, err := os.OpenFile(n.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if w := n.c.netns; w != nil {
		// ip netns exec enters the namespace and execs the binary: the
		// process (and its pid) is raftka's.
		cmd = exec.Command("ip", append([]string{"netns", "exec", w.ns(n.id), bin}, args...)...)
	}
	cmd.Dir = n.dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = sysProcAttr()
	fmt.Fprintf(logFile, "n%d| ==== test/cluster: starting %s %v\n", n.id, bin, args)
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		logFile.Close()
		return nil, err
	}
	w.Close() // the child holds its copy; EOF comes when the child's side closes
	p := &process{cmd: cmd, done: make(chan struct{}), copied: make(chan struct{})}
	go func() {
		defer close(p.copied)
		copyPrefixed(logFile, r, fmt.Sprintf("n%d| ", n.id))
		r.Close()
		logFile.Close()
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// copyPrefixed copies lines from r to w with prefix in front of each. A
// line longer than the buffer is written in pieces, each prefixed.
func copyPrefixed(w io.Writer, r io.Reader, prefix string) {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriter(w)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			bw.WriteString(prefix)
			bw.Write(line)
			if line[len(line)-1] != '\n' {
				bw.WriteByte('\n')
			}
			if br.Buffered() == 0 {
				bw.Flush()
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	bw.Flush()
}

// waitReady runs the readiness check until it passes, the process exits,
// or the ready timeout passes.
func (n *Node) waitReady() error {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), n.c.o.readyTimeout)
	defer cancel()
	var last error
	for attempt := 0; ; attempt++ {
		attemptCtx, attemptCancel := context.WithTimeout(ctx, 2*time.Second)
		last = n.c.o.ready(attemptCtx, n)
		attemptCancel()
		if last == nil {
			return nil
		}
		wait := time.NewTimer(min(time.Duration(attempt+1)*20*time.Millisecond, 250*time.Millisecond))
		select {
		case <-p.done:
			wait.Stop()
			return fmt.Errorf("node %d exited before it was ready: %v", n.id, p.err)
		case <-ctx.Done():
			wait.Stop()
			return fmt.Errorf("node %d not ready after %v: %v", n.id, n.c.o.readyTimeout, last)
		case <-wait.C:
		}
	}
}

// signal sends sig to the node's process (or its whole process group).
func (n *Node) signal(sig syscall.Signal, group bool) *process {
	t := n.c.t
	t.Helper()
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil || p.exited() {
		t.Fatalf("test/cluster: node %d is not running", n.id)
	}
	pid := p.cmd.Process.Pid
	if group {
		pid = -pid // Setpgid made the node the leader of a group with its pid
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("test/cluster: node %d: %v: %v", n.id, sig, err)
	}
	return p
}

// Kill sends SIGKILL to the node's process group and waits until it is gone.
func (n *Node) Kill() {
	n.c.t.Helper()
	p := n.signal(syscall.SIGKILL, true)
	p.ended = true
	n.awaitExit(p, 30*time.Second)
}

// Term sends SIGTERM and waits, up to the TermTimeout, for a clean exit. A
// node that does not exit in time is killed and the test fails; so does
// one that exits with an error.
func (n *Node) Term() {
	t := n.c.t
	t.Helper()
	p := n.signal(syscall.SIGTERM, false)
	p.ended = true
	timer := time.NewTimer(n.c.o.termTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		n.awaitExit(p, 30*time.Second)
		t.Fatalf("test/cluster: node %d did not exit within %v of SIGTERM", n.id, n.c.o.termTimeout)
	}
	<-p.copied
	if p.err != nil {
		t.Fatalf("test/cluster: node %d exited after SIGTERM with %v", n.id, p.err)
	}
}

// Stop freezes the node with SIGSTOP: it keeps its sockets but answers
// nothing, like a long GC pause or a hung host.
func (n *Node) Stop() {
	n.c.t.Helper()
	n.signal(syscall.SIGSTOP, false)
}

// Cont resumes a node frozen by Stop.
func (n *Node) Cont() {
	n.c.t.Helper()
	n.signal(syscall.SIGCONT, false)
}

// Restart stops the node with SIGTERM if it is running, starts it again on
// the same ports and directories, and waits until it is ready.
func (n *Node) Restart() {
	t := n.c.t
	t.Helper()
	if n.Running() {
		n.Term()
	}
	n.start()
	if err := n.waitReady(); err != nil {
		t.Fatalf("test/cluster: %v", err)
	}
}

func (n *Node) awaitExit(p *process, timeout time.Duration) {
	t := n.c.t
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		t.Fatalf("test/cluster: node %d (pid %d) still running %v after SIGKILL", n.id, p.cmd.Process.Pid, timeout)
	}
	select {
	case <-p.copied:
	case <-timer.C:
		t.Fatalf("test/cluster: node %d: output still open %v after exit (a child process holds it?)", n.id, timeout)
	}
}

// cleanup kills the process group if it is still running and reports a run
// that ended by itself.
func (n *Node) cleanup() {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil {
		return
	}
	if !p.exited() {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.ended = true
	} else if !p.ended {
		n.c.t.Logf("test/cluster: node %d had exited by itself: %v", n.id, p.err)
	}
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		n.c.t.Errorf("test/cluster: node %d (pid %d) survived SIGKILL", n.id, p.cmd.Process.Pid)
		return
	}
	select {
	case <-p.copied:
	case <-timer.C:
		n.c.t.Errorf("test/cluster: node %d: output still open after exit", n.id)
	}
}

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if n <= 0 {
		return nil, nil
	}
	ring := make([]string, n)
	count := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		ring[count%n] = sc.Text()
		count++
	}
	if count <= n {
		return ring[:count], sc.Err()
	}
	start := count % n
	return append(ring[start:], ring[:start]...), sc.Err()
}
