package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareMember is one share group member driven by raw ShareGroupHeartbeat
// requests: franz-go's share consumer needs ShareFetch, which raftka does
// not serve yet, so the membership protocol is exercised on its own.
type shareMember struct {
	id       string
	epoch    int32
	assigned map[[16]byte][]int32
}

// heartbeat sends one heartbeat (joining at epoch 0 with the topic),
// retrying what a client retries (a moving coordinator, a node coming up)
// until ctx ends; any other error is returned.
func (m *shareMember) heartbeat(ctx context.Context, cl *kgo.Client, group, topic string) error {
	for {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = group, m.id, m.epoch
		if m.epoch == 0 {
			req.SubscribedTopicNames = []string{topic}
		}
		// One attempt at a time: a request to a node just killed waits on
		// its dead connection, and the next attempt finds the new coordinator.
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		var resp *kmsg.ShareGroupHeartbeatResponse
		coord, err := findCoordinator(actx, cl, group)
		if err == nil {
			var kresp kmsg.Response
			if kresp, err = cl.Broker(int(coord)).Request(actx, req); err == nil {
				resp = kresp.(*kmsg.ShareGroupHeartbeatResponse)
			}
		}
		cancel()
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		switch {
		case err == nil:
			m.epoch = resp.MemberEpoch
			if resp.Assignment != nil {
				m.assigned = map[[16]byte][]int32{}
				for _, tp := range resp.Assignment.TopicPartitions {
					m.assigned[tp.TopicID] = slices.Clone(tp.Partitions)
				}
			}
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %w (last: %v)", m.id, ctx.Err(), err)
		case !isKafkaError(err) || kerr.IsRetriable(err) || errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable):
			// A broken connection (the node just killed) or a retriable code.
			time.Sleep(200 * time.Millisecond)
		default:
			return fmt.Errorf("%s at epoch %d: %w", m.id, m.epoch, err)
		}
	}
}

// findCoordinator asks FindCoordinator (key type GROUP) which node
// coordinates group, as a client does before its first heartbeat and after
// NOT_COORDINATOR.
func findCoordinator(ctx context.Context, cl *kgo.Client, group string) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKeys = 0, []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	if len(resp.Coordinators) != 1 {
		return -1, fmt.Errorf("%d coordinators in the answer", len(resp.Coordinators))
	}
	co := resp.Coordinators[0]
	if err := kerr.ErrorForCode(co.ErrorCode); err != nil {
		return -1, err
	}
	return co.NodeID, nil
}

func isKafkaError(err error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke)
}

func (m *shareMember) count() int {
	n := 0
	for _, ps := range m.assigned {
		n += len(ps)
	}
	return n
}

// TestShareGroupMembership runs a share group on three nodes: three members
// join a 6-partition RF=3 topic and end with two partitions each; a member
// that stops heartbeating (as a SIGKILLed consumer would) is removed after
// group.share.session.timeout.ms and the others take its partitions; then
// the coordinator node is SIGKILLed and the group resumes on the new
// coordinator with its epochs, the members heartbeating on unfenced.
func TestShareGroupMembership(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, group, parts = "share-orders", "share-group", 6
	c := cluster.Start(t, cluster.Nodes(3),
		cluster.Override("group.share.session.timeout.ms", "6000"),
		cluster.Override("group.share.min.session.timeout.ms", "6000"),
		cluster.Override("group.share.heartbeat.interval.ms", "1000"),
		cluster.Override("group.share.min.heartbeat.interval.ms", "1000"))
	cl := client(t, c)
	adm := kadm.NewClient(cl)
	ctx := ctxFor(t, 3*time.Minute)
	if err := createTopic(ctx, adm, topic, parts, 3); err != nil {
		t.Fatal(err)
	}
	members := []*shareMember{{id: "member-a"}, {id: "member-b"}, {id: "member-c"}}
	beat := func(ms ...*shareMember) {
		t.Helper()
		for _, m := range ms {
			hctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			err := m.heartbeat(hctx, cl, group, topic)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	balanced := func(ms []*shareMember, each int) string {
		seen := map[int32]int{}
		for _, m := range ms {
			if m.count() != each {
				return fmt.Sprintf("%s has %d partitions, want %d", m.id, m.count(), each)
			}
			for _, ps := range m.assigned {
				for _, p := range ps {
					seen[p]++
				}
			}
		}
		if len(seen) != parts {
			return fmt.Sprintf("%d of %d partitions assigned: %v", len(seen), parts, seen)
		}
		return ""
	}
	describe := func() kadm.DescribedShareGroup {
		t.Helper()
		d, err := adm.DescribeShareGroups(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		g := d[group]
		if g.Err != nil {
			t.Fatal(g.Err)
		}
		return g
	}

	beat(members...)
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		beat(members...)
		why := balanced(members, 2)
		return why == "" && members[0].epoch == members[2].epoch, why
	})
	g := describe()
	t.Logf("joined: group epoch %d, members %d, state %s", g.GroupEpoch, len(g.Members), g.GroupState)
	if g.GroupState != "Stable" || len(g.Members) != 3 || g.Assignor != "simple" {
		t.Fatalf("described %+v", g)
	}
	listed, err := adm.ListGroupsByType(ctx, []string{"share"})
	if err != nil || listed[group].GroupType != "share" {
		t.Fatalf("ListGroups: %v %+v", err, listed)
	}

	// member-c goes silent; the two others keep heartbeating.
	live := members[:2]
	start := time.Now()
	cluster.WaitFor(t, 40*time.Second, func() (bool, string) {
		time.Sleep(time.Second)
		beat(live...)
		why := balanced(live, 3)
		return why == "", why
	})
	t.Logf("silent member removed and its partitions reassigned after %v (session timeout 6s)", time.Since(start).Round(100*time.Millisecond))
	if g := describe(); len(g.Members) != 2 || slices.ContainsFunc(g.Members, func(m kadm.ShareGroupMember) bool { return m.MemberID == "member-c" }) {
		t.Fatalf("after expiry: %+v", g)
	}

	// SIGKILL the coordinator: the group resumes elsewhere with its epochs.
	coords := adm.FindGroupCoordinators(ctx, group)
	coord := coords[group]
	if coord.Err != nil {
		t.Fatal(coord.Err)
	}
	before := describe()
	t.Logf("killing coordinator node %d at group epoch %d", coord.NodeID, before.GroupEpoch)
	c.Node(coord.NodeID).Kill()
	epochs := []int32{live[0].epoch, live[1].epoch}
	beat(live...)
	if live[0].epoch != epochs[0] || live[1].epoch != epochs[1] || balanced(live, 3) != "" {
		t.Fatalf("after failover: epochs %d,%d (were %v), %s", live[0].epoch, live[1].epoch, epochs, balanced(live, 3))
	}
	// A fresh admin client: the old one keeps the dead coordinator cached.
	var alive []*cluster.Node
	for _, n := range c.Nodes() {
		if n.ID() != coord.NodeID {
			alive = append(alive, n)
		}
	}
	adm = kadm.NewClient(client(t, c, alive...))
	after := describe()
	if after.Coordinator.NodeID == coord.NodeID || after.GroupEpoch != before.GroupEpoch || after.AssignmentEpoch != before.AssignmentEpoch || len(after.Members) != 2 {
		t.Fatalf("after failover: coordinator %d, group epoch %d (was %d), %d members", after.Coordinator.NodeID, after.GroupEpoch, before.GroupEpoch, len(after.Members))
	}
	t.Logf("resumed on node %d at group epoch %d", after.Coordinator.NodeID, after.GroupEpoch)

	// raftka share-groups shows the same group.
	out, err := cluster.Run(t, "share-groups", "describe", "--bootstrap-server", c.Node(after.Coordinator.NodeID).ClientAddr(), "--group", group, "--members")
	if err != nil || !strings.Contains(out, "member-a") || !strings.Contains(out, "member-b") || strings.Contains(out, "member-c") {
		t.Fatalf("share-groups describe --members: %v\n%s", err, out)
	}
	t.Logf("raftka share-groups describe --members:\n%s", out)
	out, err = cluster.Run(t, "share-groups", "describe", "--bootstrap-server", c.Node(after.Coordinator.NodeID).ClientAddr(), "--group", group, "--state", "--verbose")
	if err != nil || !strings.Contains(out, "Stable") || !strings.Contains(out, fmt.Sprintf("(%d)", after.Coordinator.NodeID)) || !strings.Contains(out, "simple") {
		t.Fatalf("share-groups describe --state: %v\n%s", err, out)
	}
	t.Logf("raftka share-groups describe --state --verbose:\n%s", out)
	out, err = cluster.Run(t, "share-groups", "list", "--bootstrap-server", c.Node(after.Coordinator.NodeID).ClientAddr(), "--state", "stable")
	if err != nil || !strings.Contains(out, group) || !strings.Contains(out, "STATE") {
		t.Fatalf("share-groups list --state stable: %v\n%s", err, out)
	}

	// Delete: refused while members remain, done once they leave.
	bootstrap := c.Node(after.Coordinator.NodeID).ClientAddr()
	if out, err := cluster.Run(t, "share-groups", "delete", "--bootstrap-server", bootstrap, "--group", group); err == nil || !strings.Contains(out, "NON_EMPTY_GROUP") {
		t.Fatalf("delete with members: %v\n%s", err, out)
	}
	for _, m := range live {
		m.epoch = -1
		beat(m)
	}
	if out, err := cluster.Run(t, "share-groups", "delete", "--bootstrap-server", bootstrap, "--group", group); err != nil {
		t.Fatalf("delete of the empty group: %v\n%s", err, out)
	}
	if out, err := cluster.Run(t, "share-groups", "list", "--bootstrap-server", bootstrap); err != nil || strings.Contains(out, group) {
		t.Fatalf("list after delete: %v\n%s", err, out)
	}
}
