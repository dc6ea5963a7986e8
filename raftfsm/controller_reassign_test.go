package raftfsm

import (
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testDecider() *controller {
	n := &Node{cfg: Config{DefaultPartitions: 1, DefaultReplicationFactor: 1}}
	n.cfg.setDefaults()
	return &controller{n: n, leases: map[int32]*lease{}}
}

func reassignReq(version int16, allowRF bool, topic string, parts map[int32][]int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Version, req.AllowReplicationFactorChange = version, allowRF
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	for _, p := range slices.Sorted(func(yield func(int32) bool) {
		for k := range parts {
			if !yield(k) {
				return
			}
		}
	}) {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, parts[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func TestDecideAlterPartitionReassignmentsCodes(t *testing.T) {
	c := testDecider()
	img := newImg(t, 4).topic("t", nil, pspec{ids(1, 2, 3), ids(1, 2, 3), 1}, pspec{ids(2, 3, 1), ids(2, 3, 1), 2}).build()
	for _, tc := range []struct {
		name    string
		version int16
		allowRF bool
		topic   string
		parts   map[int32][]int32
		want    int16
	}{
		{"start", 1, true, "t", map[int32][]int32{0: ids(2, 3, 4)}, 0},
		{"v0 allows an RF change", 0, false, "t", map[int32][]int32{0: ids(2, 3, 4, 1)}, 0},
		{"v1 refuses an RF change", 1, false, "t", map[int32][]int32{0: ids(2, 3)}, kerr.InvalidReplicationFactor.Code},
		{"unknown topic", 1, true, "nope", map[int32][]int32{0: ids(1)}, kerr.UnknownTopicOrPartition.Code},
		{"unknown partition", 1, true, "t", map[int32][]int32{7: ids(1)}, kerr.UnknownTopicOrPartition.Code},
		{"cancel with none in progress", 1, true, "t", map[int32][]int32{0: nil}, kerr.NoReassignmentInProgress.Code},
		{"unregistered broker", 1, true, "t", map[int32][]int32{0: ids(1, 2, 9)}, kerr.InvalidReplicaAssignment.Code},
		{"duplicate broker", 1, true, "t", map[int32][]int32{0: ids(1, 1, 2)}, kerr.InvalidReplicaAssignment.Code},
		{"empty list", 1, true, "t", map[int32][]int32{0: {}}, kerr.InvalidReplicaAssignment.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideAlterPartitionReassignments(reassignReq(tc.version, tc.allowRF, tc.topic, tc.parts))(c, img, time.Time{})
			resp := d.resp.(*kmsg.AlterPartitionAssignmentsResponse)
			if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("answer %+v", resp)
			}
			if got := resp.Topics[0].Partitions[0].ErrorCode; got != tc.want {
				t.Fatalf("code %v, want %v", kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
			}
			if (tc.want == 0) != (len(d.recs) > 0) {
				t.Fatalf("%d records for code %d", len(d.recs), tc.want)
			}
			if _, delta := img.Apply(d.recs); len(delta.Skipped) > 0 {
				t.Fatalf("decided records skipped: %v", delta.Skipped[0].Err)
			}
		})
	}
}

// The whole move through the controller's decisions: start, list, the
// leader's AlterPartition that adds 4 completes it in the same batch, and
// the list is then empty; a second move is cancelled halfway.
func TestReassignmentThroughDecisions(t *testing.T) {
	c := testDecider()
	img := newImg(t, 4).topic("t", nil, pspec{ids(1, 2, 3), ids(1, 2, 3), 1}).build()
	d := decideAlterPartitionReassignments(reassignReq(1, false, "t", map[int32][]int32{0: ids(2, 3, 4)}))(c, img, time.Time{})
	img, _ = img.Apply(d.recs)

	list := func() []kmsg.ListPartitionReassignmentsResponseTopic {
		d := decideListPartitionReassignments(kmsg.NewPtrListPartitionReassignmentsRequest())(c, img, time.Time{})
		return d.resp.(*kmsg.ListPartitionReassignmentsResponse).Topics
	}
	got := list()
	if len(got) != 1 || len(got[0].Partitions) != 1 {
		t.Fatalf("list %+v", got)
	}
	if lp := got[0].Partitions[0]; !slices.Equal(lp.Replicas, ids(2, 3, 4, 1)) || !slices.Equal(lp.AddingReplicas, ids(4)) || !slices.Equal(lp.RemovingReplicas, ids(1)) {
		t.Fatalf("listed %+v", lp)
	}
	// Named: the moving partition is listed, an unknown topic is not.
	named := kmsg.NewPtrListPartitionReassignmentsRequest()
	for _, name := range []string{"t", "nope"} {
		rt := kmsg.NewListPartitionReassignmentsRequestTopic()
		rt.Topic, rt.Partitions = name, ids(0, 5)
		named.Topics = append(named.Topics, rt)
	}
	nd := decideListPartitionReassignments(named)(c, img, time.Time{})
	if ts := nd.resp.(*kmsg.ListPartitionReassignmentsResponse).Topics; len(ts) != 1 || ts[0].Topic != "t" || len(ts[0].Partitions) != 1 {
		t.Fatalf("named list %+v", ts)
	}

	p, _ := img.Partition(topicID("t"), 0)
	ap := kmsg.NewPtrAlterPartitionRequest()
	ap.Version, ap.BrokerID, ap.BrokerEpoch = 2, 1, 101
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = topicID("t")
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = p.LeaderEpoch, p.PartitionEpoch, ids(1, 2, 3, 4)
	rt.Partitions = append(rt.Partitions, rp)
	ap.Topics = append(ap.Topics, rt)
	ad := decideAlterPartition(ap)(c, img, time.Time{})
	out := ad.resp.(*kmsg.AlterPartitionResponse).Topics[0].Partitions[0]
	if out.ErrorCode != 0 {
		t.Fatalf("AlterPartition %v", kerr.ErrorForCode(out.ErrorCode))
	}
	img, delta := img.Apply(ad.recs)
	if len(delta.Skipped) > 0 {
		t.Fatal(delta.Skipped[0].Err)
	}
	p, _ = img.Partition(topicID("t"), 0)
	if !slices.Equal(p.Replicas, ids(2, 3, 4)) || !slices.Equal(p.ISR, ids(2, 3, 4)) || p.Leader != 2 || p.Reassigning() {
		t.Fatalf("not completed: %+v", p)
	}
	if out.LeaderID != 2 || out.PartitionEpoch != p.PartitionEpoch {
		t.Fatalf("answer %+v does not show the completed state %+v", out, p)
	}
	if len(list()) != 0 {
		t.Fatal("completed reassignment still listed")
	}

	// Halfway, then cancelled: back to {2,3,4}, nothing listed.
	d = decideAlterPartitionReassignments(reassignReq(1, true, "t", map[int32][]int32{0: ids(1, 2, 3)}))(c, img, time.Time{})
	img, _ = img.Apply(d.recs)
	if len(list()) != 1 {
		t.Fatal("second move not listed")
	}
	d = decideAlterPartitionReassignments(reassignReq(1, true, "t", map[int32][]int32{0: nil}))(c, img, time.Time{})
	if code := d.resp.(*kmsg.AlterPartitionAssignmentsResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("cancel: %v", kerr.ErrorForCode(code))
	}
	img, _ = img.Apply(d.recs)
	p, _ = img.Partition(topicID("t"), 0)
	if slices.Contains(p.Replicas, 1) || len(p.Replicas) != 3 || p.Reassigning() || len(list()) != 0 {
		t.Fatalf("after cancel %+v", p)
	}
}

// An ongoing reassignment is Raft state: the controller elected after the
// active one stops still lists it and can cancel it.
func TestReassignmentSurvivesFailover(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.leader(10 * time.Second)
	startBrokers(t, tc, 3)
	// A fourth broker that registers but, heartbeating, never fetches:
	// the move to it stays in progress.
	startFakeBroker(t, tc, 4, 0)
	cl := NewControllerClient(ClientConfig{Voters: tc.voters})
	defer cl.Close()
	mustCreate(t, cl, "moving", 1, 3)
	var top metadata.TopicImage
	waitFor(t, 10*time.Second, "topic applied", func() bool {
		img, _ := tc.nodes[0].Current()
		var ok bool
		top, ok = img.Topic("moving")
		return ok
	})
	target := slices.Clone(top.Partitions[0].Replicas[1:])
	var dropped int32 = top.Partitions[0].Replicas[0]
	target = append(target, 4)

	resp, err := cl.AlterPartitionReassignments(ctxT(t, 10*time.Second), reassignReq(1, false, "moving", map[int32][]int32{0: target}))
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %v %+v", err, resp)
	}
	old := tc.leader(10 * time.Second)
	tc.stop(old)
	tc.leader(20 * time.Second)

	lr, err := cl.ListPartitionReassignments(ctxT(t, 10*time.Second), kmsg.NewPtrListPartitionReassignmentsRequest())
	if err != nil || len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		t.Fatalf("list after failover: %v %+v", err, lr)
	}
	if lp := lr.Topics[0].Partitions[0]; !slices.Equal(lp.AddingReplicas, ids(4)) || !slices.Equal(lp.RemovingReplicas, ids(dropped)) {
		t.Fatalf("listed %+v", lp)
	}
	cr, err := cl.AlterPartitionReassignments(ctxT(t, 10*time.Second), reassignReq(1, false, "moving", map[int32][]int32{0: nil}))
	if err != nil || cr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("cancel: %v %+v", err, cr)
	}
	lr, err = cl.ListPartitionReassignments(ctxT(t, 10*time.Second), kmsg.NewPtrListPartitionReassignmentsRequest())
	if err != nil || len(lr.Topics) != 0 {
		t.Fatalf("list after cancel: %v %+v", err, lr)
	}
}
