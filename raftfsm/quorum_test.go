package raftfsm

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCheckVoterChanges(t *testing.T) {
	three := []memberState{{1, true, true}, {2, true, true}, {3, true, true}}
	oneDown := []memberState{{1, true, true}, {2, true, true}, {3, true, false}}
	twoDown := []memberState{{1, true, true}, {2, true, false}, {3, true, false}, {4, false, true}}
	cases := []struct {
		name     string
		add      bool
		kraft    int16
		inFlight bool
		members  []memberState
		id       int32
		listener bool
		want     *kerr.Error
	}{
		{name: "add to a static quorum", add: true, kraft: 0, members: three, id: 4, listener: true, want: kerr.UnsupportedVersion},
		{name: "add while another change runs", add: true, kraft: 1, inFlight: true, members: three, id: 4, listener: true, want: kerr.RequestTimedOut},
		{name: "add an existing voter", add: true, kraft: 1, members: three, id: 2, listener: true, want: kerr.DuplicateVoter},
		{name: "add without the controller listener", add: true, kraft: 1, members: three, id: 4, want: kerr.InvalidRequest},
		{name: "add a negative id", add: true, kraft: 1, members: three, id: -1, listener: true, want: kerr.InvalidRequest},
		{name: "add an observer", add: true, kraft: 1, members: twoDown, id: 4, listener: true},
		{name: "add a new node", add: true, kraft: 1, members: three, id: 4, listener: true},
		{name: "remove from a static quorum", kraft: 0, members: three, id: 3, want: kerr.UnsupportedVersion},
		{name: "remove while another change runs", kraft: 1, inFlight: true, members: three, id: 3, want: kerr.RequestTimedOut},
		{name: "remove a node that is not a voter", kraft: 1, members: twoDown, id: 4, want: kerr.VoterNotFound},
		{name: "remove an unknown node", kraft: 1, members: three, id: 9, want: kerr.VoterNotFound},
		{name: "remove the last voter", kraft: 1, members: []memberState{{1, true, true}}, id: 1, want: kerr.InvalidRequest},
		{name: "remove a live voter, two live left", kraft: 1, members: three, id: 3},
		{name: "remove the dead voter", kraft: 1, members: oneDown, id: 3},
		{name: "remove a live voter, one of two left is dead", kraft: 1, members: oneDown, id: 2, want: kerr.InvalidRequest},
		{name: "remove a dead voter, one of two left is dead", kraft: 1, members: twoDown, id: 3, want: kerr.InvalidRequest},
		{name: "remove the active controller", kraft: 1, members: three, id: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *changeRefusal
			if tc.add {
				got = checkAddVoter(tc.kraft, tc.inFlight, tc.members, tc.id, tc.listener)
			} else {
				got = checkRemoveVoter(tc.kraft, tc.inFlight, tc.members, tc.id)
			}
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("refused: %v", got)
			case tc.want != nil && got == nil:
				t.Fatalf("allowed, want %v", tc.want)
			case tc.want != nil && got.code != tc.want.Code:
				t.Fatalf("refused with %v (%s), want %v", kerr.ErrorForCode(got.code), got.msg, tc.want)
			}
		})
	}
}

// setRetention commits a cluster config change through c.
func setRetention(t *testing.T, c *ControllerClient, v string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType = kmsg.ConfigResourceTypeBroker
	kv := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	kv.Name, kv.Value = "log.retention.ms", kmsg.StringPtr(v)
	r.Configs = append(r.Configs, kv)
	req.Resources = append(req.Resources, r)
	if _, err := c.IncrementalAlterConfigs(ctxT(t, 15*time.Second), req); err != nil {
		t.Fatal(err)
	}
}

func addVoterReq(id int32, addr string) *kmsg.AddRaftVoterRequest {
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.ClusterID = kmsg.StringPtr(testClusterID)
	req.VoterID, req.TimeoutMillis, req.AckWhenCommitted = id, 20000, true
	host, port := splitHostPort(addr)
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", host, port
	req.Listeners = append(req.Listeners, l)
	return req
}

func removeVoterReq(id int32) *kmsg.RemoveRaftVoterRequest {
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.ClusterID = kmsg.StringPtr(testClusterID)
	req.VoterID = id
	return req
}

func voterIDs(t *testing.T, n *Node) (voters, observers []int32) {
	t.Helper()
	st, err := n.QuorumStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range st.Voters {
		voters = append(voters, v.ID)
	}
	for _, v := range st.NonVoters {
		observers = append(observers, v.ID)
	}
	return voters, observers
}

// A node joins as an observer, AddRaftVoter promotes it once caught up, and
// then its vote is needed: with one of the original three stopped, four
// voters elect and commit only with it. Removing the active controller
// hands leadership over first.
func TestAddAndRemoveVoter(t *testing.T) {
	dynamic := func(c *Config) {
		c.BootstrapRecords = []metadata.Record{&metadata.FeatureLevel{Name: metadata.KRaftVersionFeature, Level: 1}}
	}
	tc := startCluster(t, 3, dynamic)
	tc.leader(10 * time.Second)
	c := NewControllerClient(ClientConfig{Voters: tc.voters})
	defer c.Close()
	setRetention(t, c, "1")
	waitFor(t, 10*time.Second, "kraft.version 1", func() bool { return tc.nodes[0].KRaftVersion() == 1 })

	cfg := tc.config(0, nil)
	cfg.NodeID, cfg.Voter, cfg.ListenAddr, cfg.DataDir = 4, false, "127.0.0.1:0", t.TempDir()
	n4, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n4.Shutdown()
	waitFor(t, 10*time.Second, "node 4 an observer", n4.inConfiguration)

	ctx := ctxT(t, 30*time.Second)
	add := addVoterReq(4, n4.Addr())
	add.VoterDirectoryID = [16]byte{4, 4}
	resp, _, err := c.Request(ctx, add)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.AddRaftVoterResponse); r.ErrorCode != 0 {
		t.Fatalf("AddRaftVoter: %v %s", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	waitFor(t, 10*time.Second, "node 4's directory id in its own image", func() bool {
		img, _ := n4.Latest()
		d, ok := img.VoterDirectory(4)
		return ok && d == add.VoterDirectoryID
	})
	l := tc.nodes[tc.leader(5*time.Second)]
	if v, o := voterIDs(t, l); len(v) != 4 || len(o) != 0 {
		t.Fatalf("voters %v observers %v after adding 4", v, o)
	}
	resp, _, err = c.Request(ctx, addVoterReq(4, n4.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.AddRaftVoterResponse); r.ErrorCode != kerr.DuplicateVoter.Code {
		t.Fatalf("adding 4 again: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// Four voters, one stopped: the three left commit only with node 4.
	stopped := tc.follower()
	tc.stop(stopped)
	c4 := NewControllerClient(ClientConfig{Voters: append(tc.voters, Voter{ID: 4, Addr: n4.Addr()})})
	defer c4.Close()
	setRetention(t, c4, "2")

	// Remove the stopped one (not live: removed outright), then the
	// active controller (handed over first, kept as an observer).
	waitFor(t, 10*time.Second, "the stopped voter seen as not live", func() bool {
		ms, _, err := tc.nodes[tc.leader(5*time.Second)].members()
		if err != nil {
			return false
		}
		for _, m := range ms {
			if m.ID == tc.voters[stopped].ID {
				return !m.Live
			}
		}
		return false
	})
	resp, _, err = c.Request(ctx, removeVoterReq(tc.voters[stopped].ID))
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.RemoveRaftVoterResponse); r.ErrorCode != 0 {
		t.Fatalf("removing the stopped voter: %v %s", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	li := tc.leader(5 * time.Second)
	old := tc.nodes[li].ID()
	resp, _, err = c.Request(ctx, removeVoterReq(old))
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.RemoveRaftVoterResponse); r.ErrorCode != 0 {
		t.Fatalf("removing the active controller: %v %s", kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	var nl *Node
	waitFor(t, 10*time.Second, "a leader among the two voters left", func() bool {
		for _, n := range append(tc.nodes, n4) {
			if n != nil && n.IsLeader() && n.activeController() != nil {
				nl = n
				return true
			}
		}
		return false
	})
	if nl.ID() == old {
		t.Fatal("the removed controller still leads")
	}
	v, o := voterIDs(t, nl)
	if len(v) != 2 || len(o) != 1 || o[0] != old {
		t.Fatalf("voters %v observers %v after removing %d and %d", v, o, tc.voters[stopped].ID, old)
	}
	// Two voters left: removing either leaves one, a majority of one.
	// Stopping the other voter's peer makes removing it a loss of quorum.
	resp, _, err = c.Request(ctx, removeVoterReq(9))
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.RemoveRaftVoterResponse); r.ErrorCode != kerr.VoterNotFound.Code {
		t.Fatalf("removing an unknown voter: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// A static quorum (kraft.version 0) refuses changes as Kafka's does.
func TestVoterChangesNeedKRaftVersion1(t *testing.T) {
	tc := startCluster(t, 1, nil)
	tc.leader(10 * time.Second)
	c := NewControllerClient(ClientConfig{Voters: tc.voters})
	defer c.Close()
	ctx := ctxT(t, 10*time.Second)
	resp, _, err := c.Request(ctx, addVoterReq(2, "127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.AddRaftVoterResponse); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("AddRaftVoter: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	resp, _, err = c.Request(ctx, removeVoterReq(1))
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.RemoveRaftVoterResponse); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("RemoveRaftVoter: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// A voter of a dynamic quorum that comes back on another controller
// listener sends UpdateRaftVoter, and the leader replicates to it there.
func TestVoterMovesItsListener(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) {
		c.InitialVoters, c.Voters, c.BootstrapServers = c.Voters, nil, nil
		for _, v := range c.InitialVoters {
			c.BootstrapServers = append(c.BootstrapServers, v.Addr)
		}
		c.BootstrapRecords = []metadata.Record{&metadata.FeatureLevel{Name: metadata.KRaftVersionFeature, Level: 1}}
	})
	l := tc.leader(10 * time.Second)
	waitFor(t, 10*time.Second, "kraft.version 1", func() bool { return tc.nodes[l].KRaftVersion() == 1 })
	moved := (l + 1) % 3
	tc.stop(moved)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := tc.config(moved, ln)
	cfg.AdvertisedAddr = ln.Addr().String()
	n, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc.nodes[moved] = n
	waitFor(t, 15*time.Second, "the leader's configuration names the new listener", func() bool {
		li := tc.leader(5 * time.Second)
		st, err := tc.nodes[li].QuorumStatus(context.Background())
		if err != nil {
			return false
		}
		for _, v := range st.Voters {
			if v.ID == n.ID() {
				return v.Addr == ln.Addr().String()
			}
		}
		return false
	})
	c := NewControllerClient(ClientConfig{Voters: []Voter{{ID: n.ID(), Addr: n.Addr()}}, Waiter: n})
	defer c.Close()
	setRetention(t, c, "5")
	if img, _ := n.Current(); img.ClusterConfigs()["log.retention.ms"] != "5" {
		t.Fatal("the moved voter did not apply a change committed after its move")
	}
}
