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
	mustCreate(t, c, "single", 1, 1) // RF 1: no other replica to move to

	b := brokers[1]
	img, _ := tc.nodes[0].Current()
	if ledBy(img, b.id) == 0 {
		t.Fatalf("broker %d leads nothing before shutdown", b.id)
	}
	// Heartbeat by hand so each reply can be checked against the image.
	for attempt := 0; ; attempt++ {
		if attempt > 50 {
			t.Fatal("ShouldShutdown never came")
		}
		_, applied := b.node.Current()
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset, req.WantShutdown = b.id, b.epoch, int64(applied), true
		resp, index, err := c.Request(ctxT(t, 5*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		hb := resp.(*kmsg.BrokerHeartbeatResponse)
		if err := tc.nodes[0].WaitForIndex(ctxT(t, 5*time.Second), index); err != nil {
			t.Fatal(err)
		}
		img, _ := tc.nodes[0].Current()
		if hb.ShouldShutdown {
			if n := ledBy(img, b.id); n != 0 {
				t.Fatalf("ShouldShutdown while still leading %d partitions", n)
			}
			reg, _ := img.Broker(b.id)
			if !reg.InControlledShutdown {
				t.Fatal("broker not marked in controlled shutdown")
			}
			for _, tp := range img.Topics() {
				for _, p := range tp.Partitions {
					if len(p.ISR) > 1 && slices.Contains(p.ISR, b.id) {
						t.Fatalf("%s-%d: still in ISR %v", tp.Name, p.Partition, p.ISR)
					}
				}
			}
			break
		}
	}
	b.stop()
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
