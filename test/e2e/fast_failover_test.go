package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Fast death detection (issue 18 P4; raftfsm liveness.go). A broker whose
// process dies has its listeners refuse connections, and the controller
// fences it on that proof as soon as it is suspected (a follower's fetch
// connection broke, its controller connection closed, a new controller
// took over), long before its session times out. A SIGSTOPped broker keeps
// its sockets: its listeners still complete a handshake, so probes find it
// alive and nothing changes until the session timeout, which a 2 s stop
// does not reach.

// leaders is one node's view of topic's partition leaders and epochs, and
// the live (unfenced) brokers it lists.
func leaders(ctx context.Context, n *cluster.Node, topic string) (lead map[int32]int32, epochs map[int32]int32, live []int32, err error) {
	resp, err := nodeMetadata(ctx, n)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, b := range resp.Brokers {
		live = append(live, b.NodeID)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		lead, epochs = map[int32]int32{}, map[int32]int32{}
		for _, p := range t.Partitions {
			lead[p.Partition], epochs[p.Partition] = p.Leader, p.LeaderEpoch
		}
	}
	if lead == nil {
		return nil, nil, nil, fmt.Errorf("node %d does not list topic %s", n.ID(), topic)
	}
	return lead, epochs, live, nil
}

// pickLeader returns a node leading at least one of topic's partitions,
// the quorum leader or not as wanted (nil if none fits).
func pickLeader(c *cluster.Cluster, lead map[int32]int32, quorum int32, wantQuorumLeader bool) *cluster.Node {
	for _, n := range c.Nodes() {
		if (n.ID() == quorum) != wantQuorumLeader {
			continue
		}
		for _, l := range lead {
			if l == n.ID() {
				return n
			}
		}
	}
	return nil
}

// TestKilledLeaderFencedBeforeSessionTimeout SIGKILLs a partition leader
// under produce load, once a broker that is not the active controller and
// once the active controller itself (a combined node: the controller dies
// with the broker, and a new one must be elected first). The session
// timeout is a minute, so leadership moving at all within the wait proves
// the broker was fenced on the probe, not on silence.
func TestKilledLeaderFencedBeforeSessionTimeout(t *testing.T) {
	for _, tc := range []struct {
		name             string
		killQuorumLeader bool
	}{
		{"broker", false},
		{"active controller", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"),
				cluster.Override("broker.session.timeout.ms", "60000"))
			ctx := ctxFor(t, 120*time.Second)
			cl := client(t, c)
			adm := kadm.NewClient(cl)
			const topic = "fast-failover"
			if err := createTopic(ctx, adm, topic, 6, 3); err != nil {
				t.Fatal(err)
			}
			stopLoad := produceLoad(t, c, topic)
			defer stopLoad()

			observer := c.Nodes()[0]
			var lead map[int32]int32
			cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
				var err error
				lead, _, _, err = leaders(ctx, observer, topic)
				if err != nil {
					return false, err.Error()
				}
				for p, l := range lead {
					if l < 0 {
						return false, fmt.Sprintf("partition %d has no leader", p)
					}
				}
				return true, ""
			})
			quorum, err := quorumLeader(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			victim := pickLeader(c, lead, quorum, tc.killQuorumLeader)
			if victim == nil {
				t.Fatalf("no partition leader that is%s the quorum leader (%d): leaders %v", map[bool]string{true: "", false: " not"}[tc.killQuorumLeader], quorum, lead)
			}
			for _, n := range c.Nodes() {
				if n != victim {
					observer = n
					break
				}
			}
			var led []int32
			for p, l := range lead {
				if l == victim.ID() {
					led = append(led, p)
				}
			}
			slices.Sort(led)
			killed := time.Now()
			victim.Kill()
			t.Logf("SIGKILLed node %d (quorum leader %d), leader of partitions %v", victim.ID(), quorum, led)

			// Well inside the 60 s session timeout: only the probe can
			// have fenced it.
			cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
				now, _, live, err := leaders(ctx, observer, topic)
				if err != nil {
					return false, err.Error()
				}
				if slices.Contains(live, victim.ID()) {
					return false, fmt.Sprintf("node %d still listed as a live broker", victim.ID())
				}
				for _, p := range led {
					if now[p] == victim.ID() || now[p] < 0 {
						return false, fmt.Sprintf("partition %d leader %d", p, now[p])
					}
				}
				return true, ""
			})
			t.Logf("leadership of %v moved %v after the kill (session timeout 60 s)", led, time.Since(killed).Round(time.Millisecond))
			logs := strings.Join(nodeLogs(c, victim), "\n")
			if !strings.Contains(logs, "refuses connections: its process is gone; fencing") {
				t.Fatalf("no node logged the fence on a refused probe")
			}
		})
	}
}

// TestStoppedLeaderNotFenced SIGSTOPs a partition leader for 2 s with
// Kafka's default session timeout (9 s) and the harness's 250 ms heartbeat,
// so the controller finds its heartbeats overdue and probes it many times
// during the stop (and, when it is the quorum leader, a new controller
// probes every broker when it takes over). Its listeners still accept, so it
// is never fenced and no partition changes leader.
func TestStoppedLeaderNotFenced(t *testing.T) {
	c := cluster.Start(t, cluster.Nodes(3), cluster.LogLevel("info"),
		cluster.Override("broker.session.timeout.ms", "9000"))
	ctx := ctxFor(t, 120*time.Second)
	cl := client(t, c)
	adm := kadm.NewClient(cl)
	const topic = "stopped-leader"
	if err := createTopic(ctx, adm, topic, 6, 3); err != nil {
		t.Fatal(err)
	}
	observer := c.Nodes()[0]
	var lead, epochs map[int32]int32
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		var err error
		lead, epochs, _, err = leaders(ctx, observer, topic)
		if err != nil {
			return false, err.Error()
		}
		for p, l := range lead {
			if l < 0 {
				return false, fmt.Sprintf("partition %d has no leader", p)
			}
		}
		return true, ""
	})
	victim := c.Node(lead[0])
	for _, n := range c.Nodes() {
		if n != victim {
			observer = n
			break
		}
	}
	stopLoad := produceLoad(t, c, topic)
	defer stopLoad()
	time.Sleep(time.Second)

	victim.Stop()
	stopped := time.Now()
	t.Logf("SIGSTOPped node %d, leader of partition 0", victim.ID())
	check := func(when string) {
		t.Helper()
		now, nowEpochs, live, err := leaders(ctx, observer, topic)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if !slices.Contains(live, victim.ID()) {
			t.Fatalf("%s: node %d was fenced (live brokers %v)", when, victim.ID(), live)
		}
		for p, l := range lead {
			if now[p] != l || nowEpochs[p] != epochs[p] {
				t.Fatalf("%s: partition %d leader %d epoch %d, was %d epoch %d", when, p, now[p], nowEpochs[p], l, epochs[p])
			}
		}
	}
	for time.Since(stopped) < 2*time.Second {
		check(fmt.Sprintf("%v into the stop", time.Since(stopped).Round(time.Millisecond)))
		time.Sleep(100 * time.Millisecond)
	}
	victim.Cont()
	t.Logf("SIGCONT after %v", time.Since(stopped).Round(time.Millisecond))
	// The controller may still hold a probe or an overdue heartbeat from
	// the stop; the broker's next heartbeats must settle it alive.
	resumed := time.Now()
	for time.Since(resumed) < 3*time.Second {
		check(fmt.Sprintf("%v after SIGCONT", time.Since(resumed).Round(time.Millisecond)))
		time.Sleep(100 * time.Millisecond)
	}
	if logs := strings.Join(nodeLogs(c, nil), "\n"); strings.Contains(logs, "refuses connections: its process is gone; fencing") {
		t.Fatal("a node fenced a broker on a probe")
	}
}

// produceLoad runs an acks=all producer on topic (about 2,000 small
// records/s, bounded by the test) and returns its stop function.
func produceLoad(t *testing.T, c *cluster.Cluster, topic string) func() {
	t.Helper()
	cl := client(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 200_000; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for j := range 10 {
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r-%d-%d", i, j)}, nil)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// nodeLogs is the log of every node but skip (nil: all).
func nodeLogs(c *cluster.Cluster, skip *cluster.Node) []string {
	var out []string
	for _, n := range c.Nodes() {
		if n != skip {
			out = append(out, n.Logs())
		}
	}
	return out
}
