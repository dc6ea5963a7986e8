package raftfsm

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// imgBuilder builds images for the pure decision tests: brokers 1..n
// registered (epoch 100+id) and unfenced unless listed as fenced, then
// topics from compact partition specs.
type imgBuilder struct {
	t    *testing.T
	recs []metadata.Record
}

func newImg(t *testing.T, brokers int, fenced ...int32) *imgBuilder {
	b := &imgBuilder{t: t}
	for id := int32(1); id <= int32(brokers); id++ {
		b.recs = append(b.recs, &metadata.RegisterBroker{BrokerID: id, BrokerEpoch: 100 + int64(id), Fenced: slices.Contains(fenced, id)})
	}
	return b
}

// pspec is one partition: replicas, ISR, leader.
type pspec struct {
	reps, isr []int32
	leader    int32
}

func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], "topic-"+name)
	return id
}

func (b *imgBuilder) topic(name string, configs map[string]string, parts ...pspec) *imgBuilder {
	ct := &metadata.CreateTopic{Name: name, ID: topicID(name), Configs: configs}
	for i, p := range parts {
		ct.Partitions = append(ct.Partitions, metadata.PartitionRegistration{
			Partition: int32(i), Replicas: p.reps, ISR: p.isr, Leader: p.leader, LeaderEpoch: 3, PartitionEpoch: 7,
		})
	}
	b.recs = append(b.recs, ct)
	return b
}

func (b *imgBuilder) with(recs ...metadata.Record) *imgBuilder {
	b.recs = append(b.recs, recs...)
	return b
}

func (b *imgBuilder) build() *metadata.Image {
	b.t.Helper()
	img, d := metadata.NewImage().Apply(b.recs)
	if len(d.Skipped) > 0 {
		b.t.Fatalf("test image: skipped %v", d.Skipped[0].Err)
	}
	return img
}

func ids(v ...int32) []int32 { return v }

func never(metadata.TopicImage) bool  { return false }
func always(metadata.TopicImage) bool { return true }

// after applies recs and returns the named partition.
func after(t *testing.T, img *metadata.Image, recs []metadata.Record, topic string, p int32) metadata.PartitionRegistration {
	t.Helper()
	next, d := img.Apply(recs)
	if len(d.Skipped) > 0 {
		t.Fatalf("decided records do not apply: %v", d.Skipped[0].Err)
	}
	part, ok := next.Partition(topicID(topic), p)
	if !ok {
		t.Fatalf("%s-%d missing", topic, p)
	}
	return part
}

func TestUncleanPolicy(t *testing.T) {
	cfg := func(rt metadata.ConfigResourceType, name, v string) metadata.Record {
		return &metadata.Config{ResourceType: rt, ResourceName: name, Key: uncleanKey, Value: v}
	}
	cases := []struct {
		name    string
		def     bool
		topic   map[string]string
		extra   []metadata.Record
		want    bool
		nodeOf1 bool // evaluate as node 1 (whose broker config is set) rather than node 2
	}{
		{name: "off by default", want: false},
		{name: "server.properties default", def: true, want: true},
		{name: "topic override beats the default", def: true, topic: map[string]string{uncleanKey: "false"}, want: false},
		{name: "topic override, any case", topic: map[string]string{uncleanKey: "TRUE"}, want: true},
		{name: "cluster dynamic default beats server.properties",
			extra: []metadata.Record{cfg(metadata.ConfigResourceCluster, "", "true")}, want: true},
		{name: "this node's dynamic config beats the cluster default", nodeOf1: true,
			extra: []metadata.Record{cfg(metadata.ConfigResourceCluster, "", "true"), cfg(metadata.ConfigResourceBroker, "1", "false")}, want: false},
		{name: "another node's dynamic config does not count",
			extra: []metadata.Record{cfg(metadata.ConfigResourceBroker, "1", "true")}, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newImg(t, 2).with(tc.extra...)
			img := b.topic("t", tc.topic, pspec{ids(1), ids(1), 1}).build()
			node := int32(2)
			if tc.nodeOf1 {
				node = 1
			}
			ti, _ := img.Topic("t")
			if got := uncleanPolicy(img, node, tc.def)(ti); got != tc.want {
				t.Fatalf("unclean = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEvacuate(t *testing.T) {
	cases := []struct {
		name       string
		part       pspec
		fenced     int32
		reason     metadata.ChangeReason
		unclean    bool
		wantNone   bool
		wantLeader int32
		wantISR    []int32
		wantBump   bool // leader epoch bumped
	}{
		{name: "fenced leader: next ISR replica in replica order leads",
			part: pspec{ids(1, 2, 3), ids(1, 2, 3), 1}, fenced: 1, reason: metadata.ReasonBrokerFenced,
			wantLeader: 2, wantISR: ids(2, 3), wantBump: true},
		{name: "fenced follower leaves the ISR without a leader epoch bump",
			part: pspec{ids(1, 2, 3), ids(1, 2, 3), 1}, fenced: 3, reason: metadata.ReasonBrokerFenced,
			wantLeader: 1, wantISR: ids(1, 2)},
		{name: "last ISR member fenced: kept in the ISR, partition offline",
			part: pspec{ids(1, 2), ids(1), 1}, fenced: 1, reason: metadata.ReasonBrokerFenced,
			wantLeader: metadata.NoLeader, wantISR: ids(1), wantBump: true},
		{name: "last ISR member fenced with unclean election: live replica leads alone",
			part: pspec{ids(1, 2), ids(1), 1}, fenced: 1, reason: metadata.ReasonBrokerFenced, unclean: true,
			wantLeader: 2, wantISR: ids(2), wantBump: true},
		{name: "controlled shutdown of the leader",
			part: pspec{ids(1, 2), ids(1, 2), 1}, fenced: 1, reason: metadata.ReasonControlledShutdown,
			wantLeader: 2, wantISR: ids(2), wantBump: true},
		{name: "uninvolved broker changes nothing",
			part: pspec{ids(1, 2), ids(1, 2), 1}, fenced: 3, reason: metadata.ReasonBrokerFenced, wantNone: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img := newImg(t, 3, tc.fenced).topic("t", nil, tc.part).build()
			pol := policy{unclean: never}
			if tc.unclean {
				pol.unclean = always
			}
			recs := evacuate(img, tc.fenced, tc.reason, pol)
			if tc.wantNone {
				if len(recs) != 0 {
					t.Fatalf("records %v, want none", recs)
				}
				return
			}
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1", len(recs))
			}
			p := after(t, img, recs, "t", 0)
			if p.Leader != tc.wantLeader || !slices.Equal(p.ISR, tc.wantISR) {
				t.Fatalf("leader %d ISR %v, want %d %v", p.Leader, p.ISR, tc.wantLeader, tc.wantISR)
			}
			if bumped := p.LeaderEpoch != 3; bumped != tc.wantBump {
				t.Fatalf("leader epoch %d, bump wanted %v", p.LeaderEpoch, tc.wantBump)
			}
			if p.PartitionEpoch != 8 {
				t.Fatalf("partition epoch %d, want 8", p.PartitionEpoch)
			}
		})
	}
}

func TestElectLeaderless(t *testing.T) {
	cases := []struct {
		name       string
		part       pspec
		fenced     []int32
		unclean    bool
		wantLeader int32 // NoLeader: no record
		wantISR    []int32
	}{
		{name: "returning ISR member leads again",
			part: pspec{ids(1, 2), ids(1), metadata.NoLeader}, fenced: ids(2), wantLeader: 1, wantISR: ids(1)},
		{name: "ISR member that is not the unfenced one still leads (every leaderless partition)",
			part: pspec{ids(2, 3), ids(3), metadata.NoLeader}, wantLeader: 3, wantISR: ids(3)},
		{name: "only a non-ISR replica usable: stays offline without unclean",
			part: pspec{ids(1, 2), ids(1), metadata.NoLeader}, fenced: ids(1), wantLeader: metadata.NoLeader},
		{name: "only a non-ISR replica usable: unclean elects it",
			part: pspec{ids(1, 2), ids(1), metadata.NoLeader}, fenced: ids(1), unclean: true, wantLeader: 2, wantISR: ids(2)},
		{name: "a partition with a usable leader is left alone",
			part: pspec{ids(1, 2), ids(1, 2), 2}, wantLeader: metadata.NoLeader},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img := newImg(t, 3, tc.fenced...).topic("t", nil, tc.part).build()
			pol := policy{unclean: never}
			if tc.unclean {
				pol.unclean = always
			}
			recs := electLeaderless(img, pol)
			if tc.wantLeader == metadata.NoLeader {
				if len(recs) != 0 {
					t.Fatalf("records %v, want none", recs)
				}
				return
			}
			p := after(t, img, recs, "t", 0)
			if p.Leader != tc.wantLeader || !slices.Equal(p.ISR, tc.wantISR) {
				t.Fatalf("leader %d ISR %v, want %d %v", p.Leader, p.ISR, tc.wantLeader, tc.wantISR)
			}
		})
	}
}

func TestElectOne(t *testing.T) {
	cases := []struct {
		name       string
		part       pspec
		fenced     []int32
		typ        int8
		wantErr    error
		wantLeader int32
		wantISR    []int32
	}{
		{name: "preferred: moves to the first replica", part: pspec{ids(1, 2), ids(1, 2), 2}, typ: 0, wantLeader: 1, wantISR: ids(1, 2)},
		{name: "preferred: already leads", part: pspec{ids(1, 2), ids(1, 2), 1}, typ: 0, wantErr: metadata.ErrElectionNotNeeded},
		{name: "preferred: not in the ISR", part: pspec{ids(1, 2), ids(2), 2}, typ: 0, wantErr: metadata.ErrPreferredLeaderNotAvailable},
		{name: "preferred: fenced", part: pspec{ids(1, 2), ids(1, 2), 2}, fenced: ids(1), typ: 0, wantErr: metadata.ErrPreferredLeaderNotAvailable},
		{name: "unclean: a usable leader needs no election", part: pspec{ids(1, 2), ids(1, 2), 1}, typ: 1, wantErr: metadata.ErrElectionNotNeeded},
		{name: "unclean: clean choice first", part: pspec{ids(1, 2, 3), ids(1, 3), metadata.NoLeader}, fenced: ids(1), typ: 1, wantLeader: 3, wantISR: ids(1, 3)},
		{name: "unclean: outside the ISR whatever the topic says", part: pspec{ids(1, 2), ids(1), metadata.NoLeader}, fenced: ids(1), typ: 1, wantLeader: 2, wantISR: ids(2)},
		{name: "unclean: nobody usable", part: pspec{ids(1, 2), ids(1), metadata.NoLeader}, fenced: ids(1, 2), typ: 1, wantErr: metadata.ErrLeaderNotAvailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img := newImg(t, 3, tc.fenced...).topic("t", nil, tc.part).build()
			ti, _ := img.Topic("t")
			rec, err := electOne(img, ti, ti.Partitions[0], tc.typ, policy{})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := after(t, img, []metadata.Record{rec}, "t", 0)
			if p.Leader != tc.wantLeader || !slices.Equal(p.ISR, tc.wantISR) {
				t.Fatalf("leader %d ISR %v, want %d %v", p.Leader, p.ISR, tc.wantLeader, tc.wantISR)
			}
		})
	}
}

func TestDecideElectLeadersAllPartitionsLeavesOutUnneeded(t *testing.T) {
	img := newImg(t, 2).topic("t", nil, pspec{ids(1, 2), ids(1, 2), 2}, pspec{ids(1, 2), ids(1, 2), 1}, pspec{ids(2, 1), ids(1), 1}).build()
	d := decideElectLeaders(kmsg.NewPtrElectLeadersRequest())(nil, img, time.Time{})
	resp := d.resp.(*kmsg.ElectLeadersResponse)
	if len(resp.Topics) != 1 {
		t.Fatalf("topics %+v", resp.Topics)
	}
	got := map[int32]int16{}
	for _, p := range resp.Topics[0].Partitions {
		got[p.Partition] = p.ErrorCode
	}
	want := map[int32]int16{0: 0, 2: kerr.PreferredLeaderNotAvailable.Code}
	if len(got) != len(want) || got[0] != want[0] || got[2] != want[2] {
		t.Fatalf("partitions %v, want %v", got, want)
	}
	if len(d.recs) != 1 {
		t.Fatalf("%d records, want 1", len(d.recs))
	}
}

func TestDecideAlterPartition(t *testing.T) {
	base := func(t *testing.T) *metadata.Image {
		return newImg(t, 4, 4).topic("t", nil, pspec{ids(1, 2, 3, 4), ids(1, 2), 1}).build()
	}
	type part struct {
		leaderEpoch, partEpoch int32
		isr                    []int32
		epochs                 []int64 // v3 broker epochs, parallel to isr
	}
	good := part{leaderEpoch: 3, partEpoch: 7}
	cases := []struct {
		name     string
		version  int16
		broker   int32
		epoch    int64
		byName   string // v0/v1: the topic name; v2+: the id of topic "t" unless unknownID
		unknown  bool
		p        part
		isr      []int32
		wantTop  int16
		wantCode int16
		wantISR  []int32 // in the answer and the image
	}{
		{name: "shrink", version: 2, broker: 1, epoch: 101, isr: ids(1), wantISR: ids(1)},
		{name: "expand", version: 2, broker: 1, epoch: 101, isr: ids(1, 2, 3), wantISR: ids(1, 2, 3)},
		{name: "no change answers the current state", version: 2, broker: 1, epoch: 101, isr: ids(1, 2), wantISR: ids(1, 2)},
		{name: "v1 names the topic", version: 1, broker: 1, epoch: 101, byName: "t", isr: ids(1), wantISR: ids(1)},
		{name: "v1 unknown name", version: 1, broker: 1, epoch: 101, byName: "nope", isr: ids(1), wantCode: kerr.UnknownTopicOrPartition.Code},
		{name: "v2 unknown id", version: 2, broker: 1, epoch: 101, unknown: true, isr: ids(1), wantCode: kerr.UnknownTopicID.Code},
		{name: "stale broker epoch fails the request", version: 2, broker: 1, epoch: 99, isr: ids(1), wantTop: kerr.StaleBrokerEpoch.Code},
		{name: "not the leader: INVALID_REQUEST as Kafka", version: 2, broker: 2, epoch: 102, isr: ids(2), wantCode: kerr.InvalidRequest.Code},
		{name: "old leader epoch", version: 2, broker: 1, epoch: 101, p: part{leaderEpoch: 2, partEpoch: 7}, isr: ids(1), wantCode: kerr.FencedLeaderEpoch.Code},
		{name: "old partition epoch", version: 2, broker: 1, epoch: 101, p: part{leaderEpoch: 3, partEpoch: 6}, isr: ids(1), wantCode: kerr.InvalidUpdateVersion.Code},
		{name: "ISR without the leader", version: 2, broker: 1, epoch: 101, isr: ids(2), wantCode: kerr.InvalidRequest.Code},
		{name: "fenced broker cannot join", version: 2, broker: 1, epoch: 101, isr: ids(1, 4), wantCode: kerr.IneligibleReplica.Code},
		{name: "v3 broker epoch the leader saw is stale", version: 3, broker: 1, epoch: 101,
			p: part{leaderEpoch: 3, partEpoch: 7, isr: ids(1, 3), epochs: []int64{101, 50}}, wantCode: kerr.IneligibleReplica.Code},
		{name: "v3 with current epochs", version: 3, broker: 1, epoch: 101,
			p: part{leaderEpoch: 3, partEpoch: 7, isr: ids(1, 3), epochs: []int64{101, 103}}, wantISR: ids(1, 3)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img := base(t)
			p := tc.p
			if p.leaderEpoch == 0 {
				p.leaderEpoch, p.partEpoch = good.leaderEpoch, good.partEpoch
			}
			req := kmsg.NewPtrAlterPartitionRequest()
			req.Version, req.BrokerID, req.BrokerEpoch = tc.version, tc.broker, tc.epoch
			rt := kmsg.NewAlterPartitionRequestTopic()
			rt.Topic, rt.TopicID = tc.byName, topicID("t")
			if tc.unknown {
				rt.TopicID = topicID("nope")
			}
			rp := kmsg.NewAlterPartitionRequestTopicPartition()
			rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = p.leaderEpoch, p.partEpoch, tc.isr
			for i, id := range p.isr {
				e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
				e.BrokerID, e.BrokerEpoch = id, p.epochs[i]
				rp.NewEpochISR = append(rp.NewEpochISR, e)
			}
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)

			d := decideAlterPartition(req)(nil, img, time.Time{})
			resp := d.resp.(*kmsg.AlterPartitionResponse)
			if resp.ErrorCode != tc.wantTop {
				t.Fatalf("top-level code %d, want %d", resp.ErrorCode, tc.wantTop)
			}
			if tc.wantTop != 0 {
				if len(d.recs) != 0 {
					t.Fatal("records for a refused request")
				}
				return
			}
			out := resp.Topics[0].Partitions[0]
			if out.ErrorCode != tc.wantCode {
				t.Fatalf("code %s, want %s", kerr.ErrorForCode(out.ErrorCode), kerr.ErrorForCode(tc.wantCode))
			}
			if tc.wantCode != 0 {
				if len(d.recs) != 0 {
					t.Fatal("records for a refused partition")
				}
				return
			}
			next, _ := img.Apply(d.recs)
			np, _ := next.Partition(topicID("t"), 0)
			if !slices.Equal(np.ISR, tc.wantISR) || !slices.Equal(out.ISR, tc.wantISR) {
				t.Fatalf("image ISR %v, answer ISR %v, want %v", np.ISR, out.ISR, tc.wantISR)
			}
			if out.PartitionEpoch != np.PartitionEpoch || out.LeaderEpoch != np.LeaderEpoch || out.LeaderID != np.Leader {
				t.Fatalf("answer %+v does not match the image %+v", out, np)
			}
			if np.LeaderEpoch != 3 {
				t.Fatalf("an ISR change bumped the leader epoch to %d", np.LeaderEpoch)
			}
		})
	}
}

func TestDecideAlterPartitionAppliesPartitionsInOrder(t *testing.T) {
	// Two changes to one partition in one request: the second was built
	// from the state before the first, so partition-epoch fencing refuses it.
	img := newImg(t, 3).topic("t", nil, pspec{ids(1, 2, 3), ids(1, 2, 3), 1}).build()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = 2, 1, 101
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = topicID("t")
	for _, isr := range [][]int32{ids(1, 2), ids(1, 3)} {
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = 3, 7, isr
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	d := decideAlterPartition(req)(nil, img, time.Time{})
	parts := d.resp.(*kmsg.AlterPartitionResponse).Topics[0].Partitions
	if parts[0].ErrorCode != 0 || parts[1].ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("codes %d %d, want 0 and INVALID_UPDATE_VERSION", parts[0].ErrorCode, parts[1].ErrorCode)
	}
	if len(d.recs) != 1 {
		t.Fatalf("%d records, want 1", len(d.recs))
	}
}

// FuzzDecide feeds arbitrary request frames through the controller's
// decisions against a small image. Property: a request gets an answer,
// never a panic, and whatever records the controller decides replay
// cleanly (Apply skips none), so no answer claims a change replay drops.
// Registration and heartbeats are left out: they read the live Raft log.
func FuzzDecide(f *testing.F) {
	seeds := []kmsg.Request{
		createTopicReq("t", 2, 2),
		kmsg.NewPtrAlterPartitionRequest(),
		kmsg.NewPtrElectLeadersRequest(),
		kmsg.NewPtrSyncGroupRequest(),
		kmsg.NewPtrDeleteGroupsRequest(),
		kmsg.NewPtrOffsetCommitRequest(),
		kmsg.NewPtrIncrementalAlterConfigsRequest(),
		kmsg.NewPtrAlterConfigsRequest(),
		kmsg.NewPtrCreatePartitionsRequest(),
		kmsg.NewPtrDeleteTopicsRequest(),
		kmsg.NewPtrUnregisterBrokerRequest(),
		kmsg.NewPtrAllocateProducerIDsRequest(),
		reassignReq(1, true, "t", map[int32][]int32{0: ids(2, 3), 1: nil}),
		reassignReq(1, false, "t", map[int32][]int32{1: ids(1, 2)}),
		kmsg.NewPtrListPartitionReassignmentsRequest(),
	}
	oc := seeds[5].(*kmsg.OffsetCommitRequest)
	oc.Group = "g"
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}}}
	seeds = append(seeds, offsetCommitRequest("g", 1, func(int) metadata.OffsetCommit { return metadata.OffsetCommit{Topic: "", Partition: -1} }))
	for _, name := range []string{"-5", "007", "1"} {
		ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, name
		kv := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		kv.Value = kmsg.StringPtr("x") // empty name
		r.Configs = append(r.Configs, kv)
		ia.Resources = append(ia.Resources, r)
		seeds = append(seeds, ia)
	}
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.Generation, sg.MemberID = "g", 3, "m"
	seeds = append(seeds, sg)
	for _, req := range seeds {
		req.SetVersion(clientVersion(req))
		frame := encodeRequest(req, "fuzz")
		f.Add(frame[4:])
	}
	n := &Node{cfg: Config{DefaultPartitions: 1, DefaultReplicationFactor: 1}}
	n.cfg.setDefaults()
	c := &controller{n: n, leases: map[int32]*lease{}}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, req, err := parseRequest(b)
		if err != nil {
			return
		}
		switch req.(type) {
		case *kmsg.BrokerRegistrationRequest, *kmsg.BrokerHeartbeatRequest, *kmsg.AddRaftVoterRequest, *kmsg.DescribeQuorumRequest:
			return
		}
		decide := n.decideFor(req)
		if decide == nil {
			return
		}
		img := newImg(t, 3, 3).
			topic("t", nil, pspec{ids(1, 2), ids(1, 2), 1}, pspec{ids(2, 1), ids(2), 2}).
			with(&metadata.CommitOffsets{Group: "g", Offsets: []metadata.OffsetCommit{{Topic: "t", Offset: 1}}},
				&metadata.GroupGeneration{Group: "g", Generation: 2}).build()
		d := decide(c, img, time.UnixMilli(1))
		if d.resp == nil && len(d.recs) > 0 {
			t.Fatal("records without an answer")
		}
		if _, delta := img.Apply(d.recs); len(delta.Skipped) > 0 {
			s := delta.Skipped[0]
			t.Fatalf("%s: decided %T that replay skips: %v", kmsg.NameForKey(req.Key()), s.Record, s.Err)
		}
	})
}

// metadata.ErrNotLeader means an AlterPartition from a broker that does
// not lead the partition; Kafka's controller answers it INVALID_REQUEST
// (ReplicationControlManager.validateAlterPartitionData), wherever the
// error is mapped.
func TestErrNotLeaderIsInvalidRequest(t *testing.T) {
	if code := errCode(fmt.Errorf("wrapped: %w", metadata.ErrNotLeader)); code != kerr.InvalidRequest.Code {
		t.Fatalf("ErrNotLeader answers %s", kerr.ErrorForCode(code))
	}
}

// alterBatchImage is a topic "t" of n partitions on brokers 1-3, each led
// by broker 1 with ISR {1, 2}, and a topic "u" of two.
func alterBatchImage(t testing.TB, n int) *metadata.Image {
	parts := make([]metadata.PartitionRegistration, n)
	for i := range parts {
		parts[i] = metadata.PartitionRegistration{Partition: int32(i), Replicas: ids(1, 2, 3), ISR: ids(1, 2), Leader: 1, LeaderEpoch: 3, PartitionEpoch: 7}
	}
	recs := []metadata.Record{
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 101}, &metadata.RegisterBroker{BrokerID: 2, BrokerEpoch: 102},
		&metadata.RegisterBroker{BrokerID: 3, BrokerEpoch: 103},
		&metadata.CreateTopic{Name: "t", ID: topicID("t"), Partitions: parts},
		&metadata.CreateTopic{Name: "u", ID: topicID("u"), Partitions: slices.Clone(parts[:2])},
	}
	img, d := metadata.NewImage().Apply(recs)
	if len(d.Skipped) > 0 {
		t.Fatalf("test image: skipped %v", d.Skipped[0].Err)
	}
	return img
}

func alterPart(p, partEpoch int32, isr ...int32) kmsg.AlterPartitionRequestTopicPartition {
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = p, 3, partEpoch
	for _, id := range isr {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = id, 100+int64(id)
		rp.NewEpochISR = append(rp.NewEpochISR, e)
	}
	return rp
}

// A leader's batched AlterPartition (many partitions, two topics, a
// partition twice, refused ones between) must be answered and recorded
// exactly as deciding its partitions one request at a time, in order,
// each against the image the earlier ones left.
func TestDecideAlterPartitionBatchMatchesOneByOne(t *testing.T) {
	img := alterBatchImage(t, 50)
	type entry struct {
		topic string
		rp    kmsg.AlterPartitionRequestTopicPartition
	}
	var entries []entry
	for p := int32(0); p < 50; p++ {
		switch {
		case p%7 == 3:
			entries = append(entries, entry{"t", alterPart(p, 6, 1, 2, 3)}) // stale partition epoch
		case p%5 == 0:
			entries = append(entries, entry{"t", alterPart(p, 7, 1)}) // shrink
		default:
			entries = append(entries, entry{"t", alterPart(p, 7, 1, 2, 3)}) // expand
		}
	}
	// Partition 1 again, built from the state its first change leaves
	// (epoch 8), and partition 2 again from the old state: accepted and
	// refused as one-by-one deciding would.
	entries = append(entries, entry{"t", alterPart(1, 8, 1, 3)}, entry{"t", alterPart(2, 7, 1)})
	entries = append(entries, entry{"u", alterPart(0, 7, 1, 2, 3)}, entry{"u", alterPart(1, 7, 2)})

	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = 3, 1, 101
	for _, e := range entries {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].TopicID != topicID(e.topic) {
			rt := kmsg.NewAlterPartitionRequestTopic()
			rt.TopicID = topicID(e.topic)
			req.Topics = append(req.Topics, rt)
		}
		req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, e.rp)
	}
	batch := decideAlterPartition(req)(nil, img, time.Time{})
	got := batch.resp.(*kmsg.AlterPartitionResponse)

	cur := img
	var want []kmsg.AlterPartitionResponseTopicPartition
	var wantRecs int
	for _, e := range entries {
		one := kmsg.NewPtrAlterPartitionRequest()
		one.Version, one.BrokerID, one.BrokerEpoch = 3, 1, 101
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.TopicID = topicID(e.topic)
		rt.Partitions = append(rt.Partitions, e.rp)
		one.Topics = append(one.Topics, rt)
		d := decideAlterPartition(one)(nil, cur, time.Time{})
		want = append(want, d.resp.(*kmsg.AlterPartitionResponse).Topics[0].Partitions[0])
		wantRecs += len(d.recs)
		cur, _ = cur.Apply(d.recs)
	}
	var flat []kmsg.AlterPartitionResponseTopicPartition
	for _, rt := range got.Topics {
		flat = append(flat, rt.Partitions...)
	}
	if len(flat) != len(want) {
		t.Fatalf("%d answers, want %d", len(flat), len(want))
	}
	accepted := 0
	for i := range want {
		g, w := flat[i], want[i]
		if g.Partition != w.Partition || g.ErrorCode != w.ErrorCode || g.LeaderID != w.LeaderID ||
			g.LeaderEpoch != w.LeaderEpoch || g.PartitionEpoch != w.PartitionEpoch || !slices.Equal(g.ISR, w.ISR) {
			t.Fatalf("answer %d (%s-%d): %+v, one by one %+v", i, entries[i].topic, entries[i].rp.Partition, g, w)
		}
		if g.ErrorCode == 0 {
			accepted++
		}
	}
	if accepted < 40 || accepted == len(want) {
		t.Fatalf("%d of %d accepted: the request does not mix accepted and refused changes as meant", accepted, len(want))
	}
	if len(batch.recs) != wantRecs {
		t.Fatalf("%d records, one by one %d", len(batch.recs), wantRecs)
	}
	after, d := img.Apply(batch.recs)
	if len(d.Skipped) > 0 {
		t.Fatalf("batch records do not replay: %v", d.Skipped[0].Err)
	}
	for _, name := range []string{"t", "u"} {
		gt, _ := after.TopicByID(topicID(name))
		wt, _ := cur.TopicByID(topicID(name))
		for i := range wt.Partitions {
			if !slices.Equal(gt.Partitions[i].ISR, wt.Partitions[i].ISR) || gt.Partitions[i].PartitionEpoch != wt.Partitions[i].PartitionEpoch {
				t.Fatalf("%s-%d: batch leaves %+v, one by one %+v", name, i, gt.Partitions[i], wt.Partitions[i])
			}
		}
	}
}

// BenchmarkDecideAlterPartition10k decides one leader's expansion of
// 5,000 partitions of a 10,000-partition topic: the request a restarted
// follower's rejoining costs the controller.
func BenchmarkDecideAlterPartition10k(b *testing.B) {
	img := alterBatchImage(b, 10000)
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = 3, 1, 101
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = topicID("t")
	for p := int32(0); p < 5000; p++ {
		rt.Partitions = append(rt.Partitions, alterPart(p, 7, 1, 2, 3))
	}
	req.Topics = append(req.Topics, rt)
	b.ReportAllocs()
	for b.Loop() {
		d := decideAlterPartition(req)(nil, img, time.Time{})
		if len(d.recs) != 5000 {
			b.Fatalf("%d records", len(d.recs))
		}
	}
}
