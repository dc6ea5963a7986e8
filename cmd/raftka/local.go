package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"
)

// `raftka local` is what `make run` calls: N combined-mode nodes on this
// machine as child processes of one supervisor, their logs interleaved with a
// node prefix. The supervisor owns the children: Ctrl-C reaches only it (the
// children run in their own process group) and it asks each child to shut
// down cleanly, so a node leading Raft hands leadership over before it exits.
func init() {
	overrides := &overrideList{}
	register(&cli.Command{
		Name:  "local",
		Usage: "run an N-node cluster on this machine in the foreground (what make run does)",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "nodes", Value: 3, Usage: "number of nodes (1 to 9)"},
			&cli.StringFlag{Name: "dir", Value: "data", Usage: "directory for each node's config and data"},
			&cli.IntFlag{Name: "base-port", Value: 9092, Usage: "client port of node 1; node i listens on base-port+i-1"},
			&cli.IntFlag{Name: "controller-base-port", Usage: "controller port of node 1 (default base-port+100)"},
			&cli.IntFlag{Name: "metrics-base-port", Usage: "metrics port of node 1 (default base-port+200)"},
			&cli.GenericFlag{Name: "override", Value: overrides, Usage: "key=value applied to every node's server.properties (repeatable; commas stay in the value)"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 60 * time.Second, Usage: "how long a node may take to shut down cleanly before it is killed"},
			&cli.DurationFlag{Name: "restart-delay", Value: 5 * time.Second, Usage: "restart a node that exited on its own after this long (0: leave it down)"},
			&cli.BoolFlag{Name: "secure", Usage: "SASL_SSL with SCRAM and ACLs on, a test CA made in --dir/tls, and the admin user (prints how to connect kcat)"},
			&cli.StringFlag{Name: "tls-hosts", Value: "localhost,127.0.0.1,::1", Usage: "with --secure: the names and addresses the brokers' certificate is made for (when --dir/tls is first made)"},
			&cli.BoolFlag{Name: "init-only", Usage: "with --secure: make --dir/tls, the admin password and admin-client.properties, print the password, and exit (for deploy/docker-compose.secure.yml)"},
		},
		Action: func(c *cli.Context) error { return runLocal(c, overrides.take()) },
	})
}

type localPlan struct {
	nodes                       int
	dir                         string
	clientBase, ctrlBase, mBase int
	overrides                   []string
	secure                      *secureLocal // --secure; nil for PLAINTEXT
}

func (p localPlan) nodeDir(id int) string { return filepath.Join(p.dir, fmt.Sprintf("node%d", id)) }

// properties renders node id's server.properties in the shape a Kafka user
// writes for KRaft combined mode, so `make run` exercises the same parsing
// path as a migrated config.
func (p localPlan) properties(id int) string {
	var voters []string
	for i := 1; i <= p.nodes; i++ {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i, p.ctrlBase+i-1))
	}
	rf := min(3, p.nodes)
	isr := min(2, p.nodes)
	var b strings.Builder
	fmt.Fprintf(&b, "# written by raftka local; regenerated on every start\n")
	fmt.Fprintf(&b, "process.roles=broker,controller\n")
	fmt.Fprintf(&b, "node.id=%d\n", id)
	fmt.Fprintf(&b, "controller.quorum.voters=%s\n", strings.Join(voters, ","))
	fmt.Fprintf(&b, "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d\n", p.clientBase+id-1, p.ctrlBase+id-1)
	fmt.Fprintf(&b, "advertised.listeners=PLAINTEXT://localhost:%d\n", p.clientBase+id-1)
	fmt.Fprintf(&b, "inter.broker.listener.name=PLAINTEXT\n")
	fmt.Fprintf(&b, "controller.listener.names=CONTROLLER\n")
	fmt.Fprintf(&b, "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n")
	fmt.Fprintf(&b, "log.dirs=%s\n", filepath.ToSlash(filepath.Join(p.nodeDir(id), "logs")))
	fmt.Fprintf(&b, "metrics.listener=127.0.0.1:%d\n", p.mBase+id-1)
	// A local development cluster on loopback: profiling it is the point.
	fmt.Fprintf(&b, "metrics.pprof.enable=true\n")
	// The web console shows records; on a loopback development cluster
	// that is what it is for.
	fmt.Fprintf(&b, "console.enable=true\n")
	fmt.Fprintf(&b, "num.partitions=3\n")
	fmt.Fprintf(&b, "default.replication.factor=%d\n", rf)
	fmt.Fprintf(&b, "offsets.topic.replication.factor=%d\n", rf)
	fmt.Fprintf(&b, "transaction.state.log.replication.factor=%d\n", rf)
	fmt.Fprintf(&b, "transaction.state.log.min.isr=%d\n", isr)
	fmt.Fprintf(&b, "min.insync.replicas=%d\n", isr)
	if p.secure != nil {
		b.WriteString(p.secure.properties(p, id))
	}
	for _, o := range p.overrides {
		fmt.Fprintf(&b, "%s\n", o)
	}
	return b.String()
}

func runLocal(c *cli.Context, overrides []string) error {
	p := localPlan{
		nodes:      c.Int("nodes"),
		dir:        c.String("dir"),
		clientBase: c.Int("base-port"),
		ctrlBase:   c.Int("controller-base-port"),
		mBase:      c.Int("metrics-base-port"),
		overrides:  overrides,
	}
	if p.nodes < 1 || p.nodes > 9 {
		return fmt.Errorf("--nodes %d: want 1 to 9", p.nodes)
	}
	if p.ctrlBase == 0 {
		p.ctrlBase = p.clientBase + 100
	}
	if p.mBase == 0 {
		p.mBase = p.clientBase + 200
	}
	for _, port := range []int{p.clientBase, p.ctrlBase, p.mBase} {
		if port < 1 || port+p.nodes-1 > 65535 {
			return fmt.Errorf("port range starting at %d does not fit %d nodes", port, p.nodes)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if c.Bool("init-only") && !c.Bool("secure") {
		return errors.New("--init-only goes with --secure")
	}
	if c.Bool("secure") {
		if p.secure, err = prepareSecureLocal(p.dir, strings.Split(c.String("tls-hosts"), ",")); err != nil {
			return fmt.Errorf("--secure: %w", err)
		}
		if c.Bool("init-only") {
			fmt.Fprintln(os.Stdout, p.secure.password)
			return nil
		}
	}
	clusterID, err := localClusterID(c.Context, self, p.dir)
	if err != nil {
		return err
	}
	console := isatty.IsTerminal(os.Stderr.Fd())
	for id := 1; id <= p.nodes; id++ {
		if err := os.MkdirAll(p.nodeDir(id), 0o755); err != nil {
			return err
		}
		cfg := filepath.Join(p.nodeDir(id), "server.properties")
		if err := os.WriteFile(cfg, []byte(p.properties(id)), 0o644); err != nil {
			return err
		}
		fargs := []string{"storage", "format", "--config", cfg, "--cluster-id", clusterID, "--ignore-formatted"}
		if p.secure != nil {
			fargs = append(fargs, p.secure.formatArgs()...)
		}
		format := exec.CommandContext(c.Context, self, fargs...)
		if out, err := format.CombinedOutput(); err != nil {
			return fmt.Errorf("formatting node %d: %v\n%s", id, err, out)
		}
	}

	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)

	var out sync.Mutex // one line at a time on our stdout
	type child struct {
		id   int
		cmd  *exec.Cmd
		done chan error // the Wait result, then closed
	}
	children := make(map[int]*child)
	exited := make(chan int, p.nodes)
	start := func(id int) error {
		args := []string{"server", "--config", filepath.Join(p.nodeDir(id), "server.properties")}
		if console {
			args = append([]string{"--log-format", "console"}, args...)
		}
		cmd := exec.Command(self, args...)
		cmd.SysProcAttr = localSysProcAttr()
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting node %d: %w", id, err)
		}
		ch := &child{id: id, cmd: cmd, done: make(chan error, 1)}
		children[id] = ch
		go prefixLines(pipe, fmt.Sprintf("[n%d] ", id), os.Stdout, &out)
		go func() { ch.done <- cmd.Wait(); close(ch.done); exited <- ch.id }()
		logger.Info().Int("node", id).Int("pid", cmd.Process.Pid).Int("client_port", p.clientBase+id-1).Msg("node started")
		return nil
	}
	for id := 1; id <= p.nodes; id++ {
		if err := start(id); err != nil {
			return err
		}
	}
	logger.Info().Str("bootstrap", localBootstrap(p)).Msg("cluster starting; Ctrl-C stops every node cleanly")
	if p.secure != nil {
		out.Lock()
		fmt.Fprintln(os.Stdout, p.secure.howTo(p))
		out.Unlock()
	}

	// A node that dies (a kill -9 while trying failover, a crash) leaves the
	// others running, as a real cluster would, and comes back after
	// --restart-delay, as under systemd's Restart=on-failure.
	restartDelay := c.Duration("restart-delay")
	restart := make(chan int, p.nodes)
	running := p.nodes
supervise:
	for {
		select {
		case <-sig:
			logger.Info().Msg("stopping every node")
			break supervise
		case id := <-exited:
			running--
			err := <-children[id].done
			if restartDelay <= 0 {
				logger.Warn().Int("node", id).AnErr("exit", err).Msg("node exited; the others keep running (--restart-delay 0: not restarting it)")
				if running == 0 {
					return errors.New("every node has exited")
				}
				continue
			}
			logger.Warn().Int("node", id).AnErr("exit", err).Dur("restart_in", restartDelay).Msg("node exited; the others keep running")
			time.AfterFunc(restartDelay, func() { restart <- id })
		case id := <-restart:
			if err := start(id); err != nil {
				logger.Error().Err(err).Int("node", id).Msg("restart failed")
				continue
			}
			running++
		}
	}
	var stopping []*child
	for _, ch := range children {
		select {
		case <-ch.done: // already exited
			continue
		default:
		}
		_ = ch.cmd.Process.Signal(syscall.SIGTERM)
		stopping = append(stopping, ch)
	}
	deadline := time.After(c.Duration("shutdown-timeout"))
	for _, ch := range stopping {
		select {
		case <-ch.done:
		case <-deadline:
			logger.Warn().Int("node", ch.id).Msg("did not stop in time; killing it")
			_ = ch.cmd.Process.Kill()
			<-ch.done
		case <-sig:
			logger.Warn().Msg("second interrupt: killing every node")
			for _, o := range stopping {
				_ = o.cmd.Process.Kill()
			}
			<-ch.done
		}
	}
	return nil
}

func localBootstrap(p localPlan) string {
	var addrs []string
	for i := 0; i < p.nodes; i++ {
		addrs = append(addrs, "localhost:"+strconv.Itoa(p.clientBase+i))
	}
	return strings.Join(addrs, ",")
}

// localClusterID keeps one cluster id per local cluster directory, so a
// restarted `raftka local` finds its formatted nodes again.
func localClusterID(ctx context.Context, self, dir string) (string, error) {
	path := filepath.Join(dir, "cluster.id")
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	out, err := exec.CommandContext(ctx, self, "storage", "random-uuid").Output()
	if err != nil {
		return "", fmt.Errorf("storage random-uuid: %w", err)
	}
	id := strings.TrimSpace(string(out))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return id, os.WriteFile(path, []byte(id+"\n"), 0o644)
}

func prefixLines(r io.Reader, prefix string, w io.Writer, mu *sync.Mutex) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		mu.Lock()
		fmt.Fprintf(w, "%s%s\n", prefix, sc.Bytes())
		mu.Unlock()
	}
}
