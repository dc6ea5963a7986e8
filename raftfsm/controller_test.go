package raftfsm

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func ledBy(img *metadata.Image, id int32) int {
	n := 0
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			if p.Leader == id {
				n++
			}
		}
	}
	return n
}

func TestFencingMovesLeadershipInSameBatchAndUnfences(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.leader(10 * time.Second)
	brokers := startBrokers(t, tc, 3)
	c := NewControllerClient(ClientConfig{Voters: tc.voters, Waiter: tc.nodes[0]})
	defer c.Close()
	mustCreate(t, c, "fence-me", 6, 3)

	img, _ := tc.nodes[0].Current()
	victim := brokers[0]
	if ledBy(img, victim.id) == 0 {
		t.Fatalf("broker %d leads nothing; placement should spread leaders", victim.id)
	}
	sub := tc.nodes[0].Subscribe()
	defer sub.Close()
	victim.pause(true)

	ctx := ctxT(t, 15*time.Second)
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for the fence: %v", err)
		}
		if ev.Reset || ev.Delta == nil || !slices.Contains(ev.Delta.BrokersFenced, victim.id) {
			if ev.Image != nil {
				if b, ok := ev.Image.Broker(victim.id); ok && b.Fenced && !ev.Reset {
					t.Fatalf("broker fenced without a delta saying so")
				}
			}
			continue
		}
		// The entry that fenced it already moved its leaderships.
		if n := ledBy(ev.Image, victim.id); n != 0 {
			t.Fatalf("fenced broker still leads %d partitions in the fencing entry", n)
		}
		for _, tp := range ev.Image.Topics() {
			for _, p := range tp.Partitions {
				if p.Leader == metadata.NoLeader || !slices.Contains(p.ISR, p.Leader) {
					t.Fatalf("partition %d: leader %d not from the live ISR %v", p.Partition, p.Leader, p.ISR)
				}
				if slices.Contains(p.ISR, victim.id) {
					t.Fatalf("partition %d: fenced broker still in ISR %v", p.Partition, p.ISR)
				}
			}
		}
		break
	}

	victim.pause(false)
	waitFor(t, 10*time.Second, "broker unfenced after heartbeats resume", func() bool {
		img, _ := tc.nodes[0].Current()
		b, ok := img.Broker(victim.id)
		return ok && !b.Fenced
	})
	// Preferred leadership comes back through ElectLeaders once it is in
	// the ISR again; here it is not (nobody sends AlterPartition), so the
	// election must refuse.
	req := kmsg.NewPtrElectLeadersRequest()
	resp, err := c.ElectLeaders(ctxT(t, 5*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != kerr.PreferredLeaderNotAvailable.Code {
				t.Fatalf("partition %d: code %d, want PREFERRED_LEADER_NOT_AVAILABLE (partitions needing no election are left out)", p.Partition, p.ErrorCode)
			}
			refused++
		}
	}
	if refused != ledBy(img, victim.id) {
		t.Fatalf("%d partitions refused, want the %d the victim led before it was fenced", refused, ledBy(img, victim.id))
	}
}

func TestControlledShutdownMovesLeadershipsFirst(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.leader(10 * time.Second)
	brokers := startBrokers(t, tc, 3)
	c := NewControllerClient(ClientConfig{Voters: tc.voters, Waiter: tc.nodes[0]})
	defer c.Close()
	mustCreate(t, c, "shut", 6, 3)

	b := brokers[1]
	// RF 1 on the broker that stops: no other replica to move to, so it
	// stays the ISR and the partition goes offline, as in Kafka.
	single := createTopicReq("single", -1, -1)
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{b.id}
	single.Topics[0].ReplicaAssignment = append(single.Topics[0].ReplicaAssignment, a)
	if resp, err := c.CreateTopics(ctxT(t, 10*time.Second), single); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create single: %v %+v", err, resp)
	}
	img, _ := tc.nodes[0].Current()
	if ledBy(img, b.id) < 2 {
		t.Fatalf("broker %d leads %d partitions before shutdown, want the single one and some of shut", b.id, ledBy(img, b.id))
	}
	// Only the heartbeats below speak for this broker from now on, so each
	// reply can be checked against the image.
	b.pause(true)
	sub := tc.nodes[0].Subscribe()
	defer sub.Close()

	heartbeat := func(epoch int64, wantShutdown bool) (*kmsg.BrokerHeartbeatResponse, uint64) {
		t.Helper()
		_, applied := b.node.Current()
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset, req.WantShutdown = b.id, epoch, int64(applied), wantShutdown
		resp, index, err := c.Request(ctxT(t, 5*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.nodes[0].WaitForIndex(ctxT(t, 5*time.Second), index); err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.BrokerHeartbeatResponse), index
	}

	var stopIndex uint64
	for attempt := 0; ; attempt++ {
		if attempt > 50 {
			t.Fatal("ShouldShutdown never came")
		}
		hb, index := heartbeat(b.epoch, true)
		if hb.ErrorCode != 0 {
			t.Fatalf("shutdown heartbeat: error code %d", hb.ErrorCode)
		}
		img, _ := tc.nodes[0].Current()
		if !hb.ShouldShutdown {
			if reg, _ := img.Broker(b.id); reg.Fenced || hb.IsFenced {
				t.Fatal("broker fenced before it was told to shut down")
			}
			continue
		}
		if !hb.IsFenced {
			t.Fatal("ShouldShutdown answered with IsFenced=false")
		}
		if n := ledBy(img, b.id); n != 0 {
			t.Fatalf("ShouldShutdown while still leading %d partitions", n)
		}
		reg, _ := img.Broker(b.id)
		if !reg.InControlledShutdown || !reg.Fenced {
			t.Fatalf("after ShouldShutdown the image has %+v, want fenced and in controlled shutdown", reg)
		}
		for _, tp := range img.Topics() {
			for _, p := range tp.Partitions {
				switch {
				case tp.Name == "single":
					if p.Leader != metadata.NoLeader || !slices.Equal(p.ISR, []int32{b.id}) {
						t.Fatalf("single-%d: leader %d ISR %v, want offline with ISR [%d]", p.Partition, p.Leader, p.ISR, b.id)
					}
				case slices.Contains(p.ISR, b.id):
					t.Fatalf("%s-%d: still in ISR %v", tp.Name, p.Partition, p.ISR)
				case p.Leader == metadata.NoLeader:
					t.Fatalf("%s-%d: no leader though ISR %v is live", tp.Name, p.Partition, p.ISR)
				}
			}
		}
		stopIndex = index
		break
	}

	// The fence is in the entry that answered ShouldShutdown, not a later
	// one: the entry before it still shows the broker unfenced.
	var prev *metadata.Image
	for {
		ev, err := sub.Next(ctxT(t, 5*time.Second))
		if err != nil {
			t.Fatalf("reading events up to %d: %v", stopIndex, err)
		}
		if ev.Index < stopIndex {
			prev = ev.Image
			continue
		}
		if ev.Index != stopIndex || ev.Reset {
			t.Fatalf("event at %d (reset %v), want the entry %d itself", ev.Index, ev.Reset, stopIndex)
		}
		if !slices.Contains(ev.Delta.BrokersFenced, b.id) {
			t.Fatalf("entry %d fenced %v, want broker %d", stopIndex, ev.Delta.BrokersFenced, b.id)
		}
		if prev == nil {
			t.Fatal("no event before the shutdown entry")
		}
		if reg, _ := prev.Broker(b.id); reg.Fenced {
			t.Fatal("broker was fenced before the entry that told it to shut down")
		}
		break
	}

	// A late heartbeat of the stopping process, not asking to shut down,
	// must not unfence it, and a shutdown heartbeat is granted at once.
	if hb, _ := heartbeat(b.epoch, false); hb.ErrorCode != 0 || !hb.IsFenced {
		t.Fatalf("late heartbeat: code %d fenced %v, want fenced", hb.ErrorCode, hb.IsFenced)
	}
	if hb, _ := heartbeat(b.epoch, true); hb.ErrorCode != 0 || !hb.IsFenced || !hb.ShouldShutdown {
		t.Fatalf("repeated shutdown heartbeat: %+v", hb)
	}
	if img, _ := tc.nodes[0].Current(); !mustBroker(t, img, b.id).Fenced {
		t.Fatal("late heartbeats unfenced the stopped broker")
	}

	// The restarted process registers at once, well within the session
	// timeout of the old one.
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID = b.id, testClusterID
	req.IncarnationID = [16]byte{byte(b.id), 2}
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9000+b.id)
	req.Listeners = append(req.Listeners, l)
	reg, err := c.RegisterBroker(ctxT(t, 5*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	if reg.ErrorCode != 0 {
		t.Fatalf("re-registration: error code %d (%v), want accepted", reg.ErrorCode, kerr.ErrorForCode(reg.ErrorCode))
	}
	if reg.BrokerEpoch <= b.epoch {
		t.Fatalf("new epoch %d not above the old %d", reg.BrokerEpoch, b.epoch)
	}
	img, _ = tc.nodes[0].Current()
	if got := mustBroker(t, img, b.id); got.Epoch != reg.BrokerEpoch || !got.Fenced || got.InControlledShutdown || got.IncarnationID != req.IncarnationID {
		t.Fatalf("after re-registration the image has %+v", got)
	}
	// The old incarnation's heartbeats are refused now.
	if hb, _ := heartbeat(b.epoch, true); hb.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("old-epoch heartbeat: code %d, want STALE_BROKER_EPOCH", hb.ErrorCode)
	}
	b.stop()
}

// A broker asking to be fenced and to shut down is let go at once, as
// Kafka's UNFENCED -> SHUTDOWN_NOW: fenced, its leaderships moved, in one
// entry, with no controlled-shutdown step.
func TestShutdownWithWantFenceFencesAtOnce(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.leader(10 * time.Second)
	brokers := startBrokers(t, tc, 3)
	c := NewControllerClient(ClientConfig{Voters: tc.voters, Waiter: tc.nodes[0]})
	defer c.Close()
	mustCreate(t, c, "now", 6, 3)
	b := brokers[2]
	b.pause(true)
	if img, _ := tc.nodes[0].Current(); ledBy(img, b.id) == 0 {
		t.Fatalf("broker %d leads nothing", b.id)
	}
	_, applied := b.node.Current()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = b.id, b.epoch, int64(applied)
	req.WantShutdown, req.WantFence = true, true
	resp, index, err := c.Request(ctxT(t, 5*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	hb := resp.(*kmsg.BrokerHeartbeatResponse)
	if hb.ErrorCode != 0 || !hb.ShouldShutdown || !hb.IsFenced {
		t.Fatalf("heartbeat answer %+v, want fenced and told to shut down", hb)
	}
	if err := tc.nodes[0].WaitForIndex(ctxT(t, 5*time.Second), index); err != nil {
		t.Fatal(err)
	}
	img, _ := tc.nodes[0].Current()
	if reg := mustBroker(t, img, b.id); !reg.Fenced || reg.InControlledShutdown {
		t.Fatalf("image has %+v, want fenced without the controlled-shutdown mark", reg)
	}
	if n := ledBy(img, b.id); n != 0 {
		t.Fatalf("fenced broker still leads %d partitions", n)
	}
	for _, tp := range img.Topics() {
		for _, p := range tp.Partitions {
			if slices.Contains(p.ISR, b.id) {
				t.Fatalf("%s-%d: still in ISR %v", tp.Name, p.Partition, p.ISR)
			}
		}
	}
}

func mustBroker(t *testing.T, img *metadata.Image, id int32) metadata.BrokerRegistration {
	t.Helper()
	b, ok := img.Broker(id)
	if !ok {
		t.Fatalf("broker %d not registered", id)
	}
	return b
}

func TestSnapshotInstallOnLaggingNode(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) {
		c.SnapshotThreshold = 16
		c.TrailingLogs = 8
		c.SnapshotInterval = 100 * time.Millisecond
	})
	li := tc.leader(10 * time.Second)
	fi := tc.follower()
	tc.stop(fi)

	var others []Voter
	for i, v := range tc.voters {
		if i != fi {
			others = append(others, v)
		}
	}
	c := NewControllerClient(ClientConfig{Voters: others})
	defer c.Close()
	for i := range 60 {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeBroker
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = "log.retention.ms", kmsg.StringPtr(strconv.Itoa(1000+i))
		r.Configs = append(r.Configs, cfg)
		req.Resources = append(req.Resources, r)
		resp, err := c.IncrementalAlterConfigs(ctxT(t, 10*time.Second), req)
		if err != nil || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("alter %d: %v %+v", i, err, resp)
		}
	}
	leader := tc.nodes[li]
	if err := leader.Snapshot(); err != nil {
		t.Fatalf("leader snapshot: %v", err)
	}

	n := tc.restart(fi)
	before := n.SnapshotRestores()
	waitFor(t, 15*time.Second, "restarted node equals the leader", func() bool {
		a, ai := leader.Current()
		b, bi := n.Current()
		return ai == bi && a.Equal(b)
	})
	if n.SnapshotRestores() <= before {
		t.Fatalf("node caught up without installing a snapshot (restores %d)", n.SnapshotRestores())
	}
	if got := n.Publisher(); got == nil {
		t.Fatal("no publisher")
	}
	cfgs, _ := n.Current()
	if v := cfgs.ClusterConfigs()["log.retention.ms"]; v != "1059" {
		t.Fatalf("restored cluster configs lack the last change: %q", v)
	}
}

func TestNonvoterJoins(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.leader(10 * time.Second)
	cfg := tc.config(0, nil)
	cfg.NodeID, cfg.Voter, cfg.ListenAddr, cfg.DataDir = 9, false, "127.0.0.1:0", t.TempDir()
	n, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	c := NewControllerClient(ClientConfig{Voters: tc.voters, Waiter: n})
	defer c.Close()
	waitFor(t, 10*time.Second, "non-voter in the configuration", n.inConfiguration)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType = kmsg.ConfigResourceTypeBroker
	kv := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	kv.Name, kv.Value = "log.retention.ms", kmsg.StringPtr("1")
	r.Configs = append(r.Configs, kv)
	req.Resources = append(req.Resources, r)
	if _, err := c.IncrementalAlterConfigs(ctxT(t, 10*time.Second), req); err != nil {
		t.Fatal(err)
	}
	img, _ := n.Current()
	if img.ClusterConfigs()["log.retention.ms"] != "1" {
		t.Fatal("non-voter did not apply the change before the call returned")
	}
	st, err := tc.nodes[tc.leader(time.Second)].QuorumStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Voters) != 3 || len(st.NonVoters) != 1 || st.NonVoters[0].ID != 9 {
		t.Fatalf("quorum status %+v", st)
	}
}
