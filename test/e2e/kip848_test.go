package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// member848 is one consumer process (runKIP848Member) and what it printed.
type member848 struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	evs   []memberEvent
	done  chan struct{}
	// killedAt is when the test SIGKILLed it (0: not killed).
	killedAt int64
}

func startMember848(t *testing.T, bootstrap, topic, group, name string) *member848 {
	t.Helper()
	return startMemberProcess(t, kip848MemberEnv, bootstrap, topic, group, name)
}

// startMemberProcess starts the test binary as the member process env
// names (kip848MemberEnv: franz-go on the consumer protocol,
// saramaMemberEnv: sarama on the classic protocol).
func startMemberProcess(t *testing.T, env, bootstrap, topic, group, name string) *member848 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+strings.Join([]string{bootstrap, topic, group, name}, ","))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if os.Getenv("KIP848_DUMP") != "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &member848{name: strings.Split(name, ",")[0], cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e memberEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				m.mu.Lock()
				m.evs = append(m.evs, e)
				m.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		if t.Failed() && os.Getenv("KIP848_DUMP") != "" {
			for _, e := range m.events() {
				if e.Ev != "batch" {
					t.Logf("%s: %s %v at %d %s", m.name, e.Ev, e.Partitions, e.T, e.Err)
				}
			}
		}
		if m.cmd.ProcessState == nil {
			_ = m.cmd.Process.Kill()
			_ = m.cmd.Wait()
		}
	})
	return m
}

// owned is what the member owns now, from its callbacks.
func (m *member848) owned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := map[int32]bool{}
	for _, e := range m.evs {
		switch e.Ev {
		case "assign":
			for _, p := range e.Partitions {
				set[p] = true
			}
		case "revoke", "lost":
			for _, p := range e.Partitions {
				delete(set, p)
			}
		case "closed":
			clear(set)
		}
	}
	var out []int32
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func (m *member848) events() []memberEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.evs)
}

// leave closes its stdin: the member leaves the group and exits.
func (m *member848) leave(t *testing.T) {
	t.Helper()
	_ = m.stdin.Close()
	select {
	case <-m.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not leave within 60s", m.name)
	}
	_ = m.cmd.Wait()
}

func (m *member848) kill(t *testing.T) {
	t.Helper()
	m.killedAt = time.Now().UnixNano()
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
	_ = m.cmd.Wait()
}

// waitOwners waits until the live members own all parts partitions
// between them, each member at least one, and returns how long it took.
func waitOwners(t *testing.T, what string, parts int, live ...*member848) time.Duration {
	t.Helper()
	start := time.Now()
	cluster.WaitFor(t, 90*time.Second, func() (bool, string) {
		seen := map[int32]string{}
		var desc []string
		for _, m := range live {
			o := m.owned()
			desc = append(desc, fmt.Sprintf("%s=%v", m.name, o))
			if len(o) == 0 {
				return false, fmt.Sprintf("%s: %s owns nothing yet (%s)", what, m.name, strings.Join(desc, " "))
			}
			for _, p := range o {
				if other, dup := seen[p]; dup {
					return false, fmt.Sprintf("%s: partition %d owned by %s and %s", what, p, other, m.name)
				}
				seen[p] = m.name
			}
		}
		return len(seen) == parts, fmt.Sprintf("%s: %s", what, strings.Join(desc, " "))
	})
	d := time.Since(start)
	t.Logf("rebalance (%s): every partition owned again after %v", what, d)
	return d
}

// describe848 asks the group's coordinator for ConsumerGroupDescribe.
func describe848(ctx context.Context, t *testing.T, cl *kgo.Client, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ConsumerGroupDescribe: %v", err)
	}
	if len(resp.Groups) != 1 {
		t.Fatalf("ConsumerGroupDescribe: %d groups", len(resp.Groups))
	}
	return resp.Groups[0]
}

type interval struct {
	member     string
	start, end int64
}

// checkOwnership checks, from every member's callbacks and batches, that
// no partition was owned by two members at once, that every batch was
// processed while its member owned the partition, and that the processed
// offsets cover every produced offset (nothing skipped).
func checkOwnership(t *testing.T, members []*member848, ends map[int32]int64) {
	t.Helper()
	checkOwnershipInto(t, members, ends)
}

type reporter interface {
	Helper()
	Errorf(string, ...any)
	Logf(string, ...any)
}

func checkOwnershipInto(t reporter, members []*member848, ends map[int32]int64) {
	t.Helper()
	own := map[int32][]interval{}
	processed := map[int32][][2]int64{}
	for _, m := range members {
		open := map[int32]int64{}
		closeAll := func(at int64) {
			for p, s := range open {
				own[p] = append(own[p], interval{m.name, s, at})
			}
			clear(open)
		}
		var last int64
		for _, e := range m.events() {
			last = max(last, e.T, e.T2)
			switch e.Ev {
			case "assign":
				for _, p := range e.Partitions {
					if _, dup := open[p]; !dup {
						open[p] = e.T
					}
				}
			case "revoke", "lost":
				for _, p := range e.Partitions {
					if s, ok := open[p]; ok {
						own[p] = append(own[p], interval{m.name, s, e.T})
						delete(open, p)
					}
				}
			case "closed":
				closeAll(e.T)
			case "batch":
				s, ok := open[e.Partition]
				if !ok || e.T < s {
					t.Errorf("%s processed partition %d offsets %d-%d while not owning it", m.name, e.Partition, e.First, e.Last)
				}
				processed[e.Partition] = append(processed[e.Partition], [2]int64{e.First, e.Last})
			}
		}
		end := m.killedAt
		if end == 0 {
			end = last
		}
		closeAll(end)
	}
	batches := 0
	for _, spans := range processed {
		batches += len(spans)
	}
	t.Logf("checked %d ownership intervals and %d processed batches", func() int {
		n := 0
		for _, ivs := range own {
			n += len(ivs)
		}
		return n
	}(), batches)
	for p, ivs := range own {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].start < ivs[j].start })
		for i := 1; i < len(ivs); i++ {
			if ivs[i].start < ivs[i-1].end && ivs[i].member != ivs[i-1].member {
				t.Errorf("partition %d owned by %s and %s at once (%v overlap)", p, ivs[i-1].member, ivs[i].member,
					time.Duration(ivs[i-1].end-ivs[i].start))
			}
		}
	}
	for p, end := range ends {
		spans := processed[p]
		sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
		next := int64(0)
		for _, s := range spans {
			if s[0] > next {
				t.Errorf("partition %d: offsets %d-%d never processed", p, next, s[0]-1)
			}
			next = max(next, s[1]+1)
		}
		if next < end {
			t.Errorf("partition %d: processed up to %d, the log ends at %d", p, next, end)
		}
	}
}

// TestKIP848ConsumerGroupChurn runs franz-go consumers on the KIP-848
// protocol through churn (one leaves, one joins, one is SIGKILLed) while a
// producer writes: no partition is ever owned or processed by two members
// at once, nothing is skipped, and the committed offsets end at the logs'
// ends.
func TestKIP848ConsumerGroupChurn(t *testing.T) { testKIP848Churn(t, false) }

// TestKIP848CoordinatorKilled is the same with the group coordinator's node
// SIGKILLed mid-run: the next slot leader restores the group from the Raft
// image and the members carry on.
func TestKIP848CoordinatorKilled(t *testing.T) { testKIP848Churn(t, true) }

func testKIP848Churn(t *testing.T, killCoordinator bool) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, group, parts = "kip848", "kip848-group", 6
	// A short session makes the SIGKILLed member's partitions move soon.
	// With the coordinator killed it must outlast how long franz-go keeps
	// sending heartbeats to the dead coordinator before it finds the new
	// one (it retries in place with backoff up to 5 s; 8 s was seen): a
	// member whose session the new coordinator ends meanwhile keeps
	// processing until its client learns it (UNKNOWN_MEMBER_ID), which is
	// the protocol's rule for the client, not the coordinator's, to keep.
	session := "6000"
	if killCoordinator {
		session = "30000"
	}
	r := start848Run(t, topic, parts, 6000, 20*time.Millisecond, session)
	c, ctx, cl, adm, bootstrap := r.c, r.ctx, r.cl, r.adm, r.bootstrap
	a := startMember848(t, bootstrap, topic, group, "a")
	b := startMember848(t, bootstrap, topic, group, "b")
	m3 := startMember848(t, bootstrap, topic, group, "c")
	all := []*member848{a, b, m3}
	waitOwners(t, "three members start", parts, a, b, m3)

	// They really are KIP-848 members.
	d := describe848(ctx, t, cl, group)
	if d.ErrorCode != 0 || len(d.Members) != 3 {
		t.Fatalf("ConsumerGroupDescribe: error %d, %d members", d.ErrorCode, len(d.Members))
	}
	for _, m := range d.Members {
		if m.MemberType != 1 || len(m.Assignment.TopicPartitions) == 0 {
			t.Fatalf("member %s: type %d, assignment %+v", m.MemberID, m.MemberType, m.Assignment)
		}
	}
	t.Logf("ConsumerGroupDescribe: state %s, epoch %d, assignor %s", d.State, d.Epoch, d.AssignorName)

	a.leave(t)
	waitOwners(t, "a leaves", parts, b, m3)
	dm := startMember848(t, bootstrap, topic, group, "d")
	all = append(all, dm)
	waitOwners(t, "d joins", parts, b, m3, dm)

	if killCoordinator {
		coord := adm.FindGroupCoordinators(ctx, group)
		var id int32 = -1
		for _, r := range coord {
			if r.Err != nil {
				t.Fatalf("FindCoordinator: %v", r.Err)
			}
			id = r.NodeID
		}
		t.Logf("SIGKILL of the coordinator, node %d", id)
		c.Node(id).Kill()
		start := time.Now()
		var live []string
		for _, n := range c.Nodes() {
			if n.ID() != id {
				live = append(live, n.ClientAddr())
			}
		}
		cluster.WaitFor(t, 90*time.Second, func() (bool, string) {
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			// A fresh client: kgo keeps a coordinator it cannot dial.
			fresh, err := kgo.NewClient(kgo.SeedBrokers(live...))
			if err != nil {
				return false, err.Error()
			}
			defer fresh.Close()
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{group}
			resp, err := req.RequestWith(dctx, fresh)
			if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
				return false, fmt.Sprintf("describe at the new coordinator: %v", err)
			}
			return len(resp.Groups[0].Members) == 3, fmt.Sprintf("%d members", len(resp.Groups[0].Members))
		})
		t.Logf("the new coordinator serves the group (3 members, restored) after %v", time.Since(start))
	}

	m3.kill(t)
	waitOwners(t, "c SIGKILLed", parts, b, dm)

	ends := r.waitCommitted(t, group)
	b.leave(t)
	dm.leave(t)
	checkOwnership(t, all, ends)
}

// The checker itself finds an overlap, a batch outside ownership and a gap.
func TestKIP848OwnershipChecker(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	mk := func(name string, evs ...memberEvent) *member848 { return &member848{name: name, evs: evs} }
	cases := map[string][]*member848{
		"overlap": {
			mk("x", memberEvent{Ev: "assign", Partitions: []int32{0}, T: 1}, memberEvent{Ev: "batch", Partition: 0, First: 0, Last: 9, T: 2, T2: 3}, memberEvent{Ev: "revoke", Partitions: []int32{0}, T: 10}),
			mk("y", memberEvent{Ev: "assign", Partitions: []int32{0}, T: 5}, memberEvent{Ev: "closed", T: 20}),
		},
		"unowned batch": {
			mk("x", memberEvent{Ev: "batch", Partition: 0, First: 0, Last: 9, T: 2, T2: 3}),
		},
		"gap": {
			mk("x", memberEvent{Ev: "assign", Partitions: []int32{0}, T: 1}, memberEvent{Ev: "batch", Partition: 0, First: 0, Last: 4, T: 2, T2: 3},
				memberEvent{Ev: "batch", Partition: 0, First: 6, Last: 9, T: 4, T2: 5}, memberEvent{Ev: "closed", T: 20}),
		},
	}
	for name, ms := range cases {
		rec := &recordingT{}
		checkOwnershipInto(rec, ms, map[int32]int64{0: 10})
		if !rec.failed {
			t.Errorf("%s: not detected", name)
		}
	}
	ok := &recordingT{}
	checkOwnershipInto(ok, []*member848{
		mk("x", memberEvent{Ev: "assign", Partitions: []int32{0}, T: 1}, memberEvent{Ev: "batch", Partition: 0, First: 0, Last: 4, T: 2, T2: 3}, memberEvent{Ev: "revoke", Partitions: []int32{0}, T: 4}),
		mk("y", memberEvent{Ev: "assign", Partitions: []int32{0}, T: 5}, memberEvent{Ev: "batch", Partition: 0, First: 5, Last: 9, T: 6, T2: 7}, memberEvent{Ev: "closed", T: 20}),
	}, map[int32]int64{0: 10})
	if ok.failed {
		t.Errorf("a clean hand-over reported: %v", ok.msgs)
	}
}

type recordingT struct {
	failed bool
	msgs   []string
}

func (r *recordingT) Helper() {}
func (r *recordingT) Errorf(f string, a ...any) {
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(f, a...))
}
func (r *recordingT) Logf(string, ...any) {}
