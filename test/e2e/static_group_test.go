package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
)

// staticMemberScript is one librdkafka consumer in a static group
// (group.instance.id set), subscribed with the default eager assignors. It
// prints each rebalance callback as a JSON line and runs until its stdin
// closes (then closes the consumer) or it is killed.
const staticMemberScript = `
import json, sys, threading, time
from confluent_kafka import Consumer

bootstrap, topic, group, instance, limit = sys.argv[1:6]

def emit(**kw):
    print(json.dumps(kw), flush=True)

stop = threading.Event()
def watch_stdin():
    sys.stdin.read()
    stop.set()
threading.Thread(target=watch_stdin, daemon=True).start()

c = Consumer({
    "bootstrap.servers": bootstrap,
    "group.id": group,
    "group.instance.id": instance,
    "client.id": instance,
    "session.timeout.ms": 30000,
    "heartbeat.interval.ms": 500,
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "error_cb": lambda e: emit(event="error", error=str(e)),
})

def parts(ps):
    return sorted(p.partition for p in ps)

c.subscribe([topic],
            on_assign=lambda _, ps: emit(event="assign", partitions=parts(ps)),
            on_revoke=lambda _, ps: emit(event="revoke", partitions=parts(ps)))
deadline = time.monotonic() + float(limit)
while not stop.is_set() and time.monotonic() < deadline:
    m = c.poll(0.2)
    if m is not None and m.error():
        emit(event="error", error=str(m.error()))
c.close()
emit(event="closed")
`

// TestStaticGroupLeaderRestart restarts the process of the member that
// leads a Stable static group (librdkafka, JoinGroup v5): with KIP-345 the
// group must stay Stable, so the other member sees no revocation and the
// restarted member gets back the partitions it had.
func TestStaticGroupLeaderRestart(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	python, missing := findConfluentPython()
	if missing != "" {
		missingTool(t, missing)
	}
	const topic, group, parts = "static-restart", "static-group", 6
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"))
	adm := kadm.NewClient(client(t, c))
	ctx := ctxFor(t, 3*time.Minute)
	if !groupsAdvertised(t, ctx, c) {
		t.Fatal("the cluster does not advertise the group APIs")
	}
	createAndWait(t, ctx, c, adm, topic, parts)

	// a joins first and is alone: it leads, and a leader stays the leader
	// while it stays in the group, so it still leads once b has joined.
	a := startStaticMember(t, ctx, python, c.Bootstrap(), topic, group, "member-a")
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		if p, ok := a.assigned(); !ok || len(p) != parts {
			return false, fmt.Sprintf("member-a alone has %v, want all %d partitions", p, parts)
		}
		return true, ""
	})
	b := startStaticMember(t, ctx, python, c.Bootstrap(), topic, group, "member-b")
	var pa, pb []int32
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		var okA, okB bool
		pa, okA = a.assigned()
		pb, okB = b.assigned()
		all := slices.Sorted(slices.Values(append(slices.Clone(pa), pb...)))
		if !okA || !okB || len(pa) == 0 || len(pb) == 0 || len(slices.Compact(all)) != parts || len(all) != parts {
			return false, fmt.Sprintf("assignments a=%v b=%v, want both non-empty splitting %d partitions", pa, pb, parts)
		}
		return true, ""
	})
	waitStaticGroup(t, ctx, adm, group, map[string][]int32{"member-a": pa, "member-b": pb})
	bSettled := b.count()
	t.Logf("settled: member-a %v, member-b %v", pa, pb)

	// The leader's process dies and comes back with the same instance id.
	a.kill(t)
	a2 := startStaticMember(t, ctx, python, c.Bootstrap(), topic, group, "member-a")
	cluster.WaitFor(t, 60*time.Second, func() (bool, string) {
		if _, ok := a2.assigned(); !ok {
			return false, "the restarted member-a has no assignment yet"
		}
		return true, ""
	})
	if first := a2.events()[0]; first.Event != "assign" || !slices.Equal(first.Partitions, pa) {
		t.Fatalf("restarted member-a's first callback %+v, want assign %v", first, pa)
	}
	// b's heartbeats (every 500ms) would have reported a rebalance by now
	// had there been one: an eager rebalance revokes b before a restarted
	// member can be assigned. A few more heartbeats check that none follows.
	time.Sleep(3 * time.Second)
	if evs := b.events()[bSettled:]; slices.ContainsFunc(evs, func(e staticEvent) bool { return e.Event != "error" }) {
		t.Fatalf("member-b saw a rebalance while member-a restarted: %+v", evs)
	}
	if evs := a2.events(); slices.ContainsFunc(evs[1:], func(e staticEvent) bool { return e.Event != "error" }) {
		t.Fatalf("restarted member-a saw more than its assignment: %+v", evs)
	}
	waitStaticGroup(t, ctx, adm, group, map[string][]int32{"member-a": pa, "member-b": pb})
}

// waitStaticGroup waits until DescribeGroups shows group Stable with
// exactly the given instances holding the given partitions.
func waitStaticGroup(t *testing.T, ctx context.Context, adm *kadm.Client, group string, want map[string][]int32) {
	t.Helper()
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		ds, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		d := ds[group]
		if d.Err != nil || d.State != "Stable" || len(d.Members) != len(want) {
			return false, fmt.Sprintf("group %s: state %q, %d members, err %v", group, d.State, len(d.Members), d.Err)
		}
		for _, m := range d.Members {
			if m.InstanceID == nil {
				return false, fmt.Sprintf("member %s has no instance id", m.MemberID)
			}
			ca, ok := m.Assigned.AsConsumer()
			if !ok {
				return false, fmt.Sprintf("member %s: assignment does not decode", m.MemberID)
			}
			var got []int32
			for _, tp := range ca.Topics {
				got = append(got, tp.Partitions...)
			}
			slices.Sort(got)
			if w, ok := want[*m.InstanceID]; !ok || !slices.Equal(got, w) {
				return false, fmt.Sprintf("instance %s holds %v, want %v", *m.InstanceID, got, w)
			}
		}
		return true, ""
	})
}

type staticEvent struct {
	Event      string  `json:"event"`
	Partitions []int32 `json:"partitions"`
	Error      string  `json:"error"`
}

// staticMember is one running staticMemberScript.
type staticMember struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when the process has exited and its output is read

	mu     sync.Mutex // guards evs
	evs    []staticEvent
	stderr lockedBuffer
}

func startStaticMember(t *testing.T, ctx context.Context, python, bootstrap, topic, group, instance string) *staticMember {
	t.Helper()
	m := &staticMember{name: instance, done: make(chan struct{})}
	m.cmd = exec.CommandContext(ctx, python, "-c", staticMemberScript, bootstrap, topic, group, instance, "170")
	m.cmd.Env = append(m.cmd.Environ(), "TMPDIR="+t.TempDir())
	m.cmd.Stderr = &m.stderr
	m.cmd.WaitDelay = 5 * time.Second
	var err error
	if m.stdin, err = m.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", instance, err)
	}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e staticEvent
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				e = staticEvent{Event: "error", Error: "unparsed output: " + sc.Text()}
			}
			m.mu.Lock()
			m.evs = append(m.evs, e)
			m.mu.Unlock()
		}
		_ = m.cmd.Wait()
	}()
	t.Cleanup(func() {
		m.stdin.Close()
		select {
		case <-m.done:
		case <-time.After(20 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.done
		}
		if t.Failed() {
			t.Logf("%s (pid %d) callbacks: %+v\nstderr:\n%s", m.name, m.cmd.Process.Pid, m.events(), m.stderr.String())
		}
	})
	return m
}

// kill ends the process at once, as a crash or a container restart does:
// librdkafka gets no chance to leave the group.
func (m *staticMember) kill(t *testing.T) {
	t.Helper()
	if err := m.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill %s: %v", m.name, err)
	}
	select {
	case <-m.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not exit after SIGKILL", m.name)
	}
}

func (m *staticMember) events() []staticEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.evs)
}

func (m *staticMember) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.evs)
}

// assigned returns the partitions of the last rebalance callback; ok is
// false before the first assignment or after a revocation.
func (m *staticMember) assigned() (partitions []int32, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range slices.Backward(m.evs) {
		switch e.Event {
		case "assign":
			return e.Partitions, true
		case "revoke", "closed":
			return nil, false
		}
	}
	return nil, false
}
