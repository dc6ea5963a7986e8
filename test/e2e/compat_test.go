package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
)

// The librdkafka clients, run as scripts from test/compat against a
// three-node cluster: kcat (test/compat/kcat.sh) and confluent-kafka-python
// (test/compat/confluent.py). Without the tools the test skips with the
// reason, except under CI=true, where they are installed and a missing one
// is a failure.
func TestCompatScripts(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	kcat, kcatMissing := findKcat()
	python, pythonMissing := findConfluentPython()
	if kcatMissing != "" && pythonMissing != "" {
		missingTool(t, kcatMissing+"; "+pythonMissing)
	}

	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	adm := kadm.NewClient(client(t, c))

	t.Run("kcat", func(t *testing.T) {
		if kcatMissing != "" {
			missingTool(t, kcatMissing)
		}
		const topic, parts = "compat-kcat", 3
		ctx := ctxFor(t, 150*time.Second)
		createAndWait(t, ctx, c, adm, topic, parts)
		runScript(t, ctx, exec.CommandContext(ctx, "bash", "../compat/kcat.sh",
			c.Bootstrap(), topic, strconv.Itoa(parts), strconv.Itoa(len(c.Nodes()))), kcat, "KCAT="+kcat)
	})

	t.Run("confluent-kafka-python", func(t *testing.T) {
		if pythonMissing != "" {
			missingTool(t, pythonMissing)
		}
		const topic, parts = "compat-python", 3
		ctx := ctxFor(t, 150*time.Second)
		createAndWait(t, ctx, c, adm, topic, parts)
		mode := "assign"
		if groupsAdvertised(t, ctx, c) {
			mode = "subscribe"
		}
		t.Logf("consumer mode: %s", mode)
		runScript(t, ctx, exec.CommandContext(ctx, python, "../compat/confluent.py",
			"--bootstrap", c.Bootstrap(), "--topic", topic, "--partitions", strconv.Itoa(parts),
			"--count", "2000", "--mode", mode), python)
	})
}

// missingTool skips, or fails under CI=true where the tools are installed.
func missingTool(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("compatibility tool missing under CI=true: %s", why)
	}
	t.Skipf("compatibility tool missing (install it to run this test; CI fails instead of skipping): %s", why)
}

func findKcat() (path, missing string) {
	for _, name := range []string{"kcat", "kafkacat"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, ""
		}
	}
	return "", "kcat is not on PATH (Debian/Ubuntu: apt-get install kcat)"
}

// findConfluentPython returns a python3 that can import confluent_kafka:
// $RAFTKA_PYTHON if set, else python3 on PATH, else the distribution's
// python3 (a pyenv or venv python first on PATH often lacks the
// distribution's python3-confluent-kafka).
func findConfluentPython() (path, missing string) {
	candidates := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv("RAFTKA_PYTHON"); p != "" {
		candidates = []string{p}
	}
	var tried []string
	for _, cand := range candidates {
		p, err := exec.LookPath(cand)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = exec.CommandContext(ctx, p, "-c", "import confluent_kafka").Run()
		cancel()
		if err == nil {
			return p, ""
		}
		tried = append(tried, p)
	}
	return "", fmt.Sprintf("no python3 that imports confluent_kafka (tried %v; Debian/Ubuntu: apt-get install python3-confluent-kafka, or set RAFTKA_PYTHON)", tried)
}

// createAndWait creates topic and waits until every node's Metadata lists
// it with a leader for every partition, so a script's first request, to
// whichever node, finds it.
func createAndWait(t *testing.T, ctx context.Context, c *cluster.Cluster, adm *kadm.Client, topic string, parts int32) {
	t.Helper()
	if err := createTopic(ctx, adm, topic, parts, 3); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		for _, n := range c.Nodes() {
			resp, err := nodeMetadata(ctx, n)
			if err != nil {
				return false, fmt.Sprintf("node %d: %v", n.ID(), err)
			}
			ready := false
			for _, tp := range resp.Topics {
				if tp.Topic == nil || *tp.Topic != topic || tp.ErrorCode != 0 || int32(len(tp.Partitions)) != parts {
					continue
				}
				ready = true
				for _, p := range tp.Partitions {
					if p.Leader < 0 || p.ErrorCode != 0 {
						ready = false
					}
				}
			}
			if !ready {
				return false, fmt.Sprintf("node %d does not list %s with %d led partitions yet", n.ID(), topic, parts)
			}
		}
		return true, ""
	})
}

// runScript runs a compatibility script and fails the test with its output
// when it exits non-zero.
func runScript(t *testing.T, ctx context.Context, cmd *exec.Cmd, tool string, env ...string) {
	t.Helper()
	cmd.Env = append(append(os.Environ(), "TMPDIR="+t.TempDir()), env...)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s (%s) did not finish before the deadline:\n%s", strings.Join(cmd.Args, " "), tool, out)
	}
	if err != nil {
		t.Fatalf("%s (%s): %v\n%s", strings.Join(cmd.Args, " "), tool, err, out)
	}
	t.Logf("%s passed in %v:\n%s", cmd.Args[1], time.Since(start).Round(time.Millisecond), out)
}
