package metadata

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// fourBrokers is threeBrokers plus an unfenced broker 4 and the orders
// topic (partition 0 on {1,2,3} led by 1).
func fourBrokers(t *testing.T) *Image {
	t.Helper()
	img, _ := mustApply(t, threeBrokers(t),
		&RegisterBroker{BrokerID: 4, BrokerEpoch: 13, Rack: "d"},
		&UnfenceBroker{BrokerID: 4, BrokerEpoch: 13},
		ordersTopic(),
	)
	return img
}

func TestPlanReassignmentErrors(t *testing.T) {
	img := fourBrokers(t)
	for _, c := range []struct {
		name string
		req  ReassignRequest
		want error
	}{
		{"unknown topic", ReassignRequest{Topic: "nope", Target: []int32{1}, AllowReplicationFactorChange: true}, ErrUnknownTopic},
		{"unknown partition", ReassignRequest{Topic: "orders", Partition: 9, Target: []int32{1}, AllowReplicationFactorChange: true}, ErrUnknownPartition},
		{"negative partition", ReassignRequest{Topic: "orders", Partition: -1, Target: []int32{1}, AllowReplicationFactorChange: true}, ErrUnknownPartition},
		{"cancel without reassignment", ReassignRequest{Topic: "orders", Partition: 0}, ErrNoReassignmentInProgress},
		{"empty target", ReassignRequest{Topic: "orders", Target: []int32{}, AllowReplicationFactorChange: true}, ErrInvalidReplicaAssignment},
		{"duplicate", ReassignRequest{Topic: "orders", Target: []int32{2, 2, 4}, AllowReplicationFactorChange: true}, ErrInvalidReplicaAssignment},
		{"negative broker", ReassignRequest{Topic: "orders", Target: []int32{2, -1, 4}, AllowReplicationFactorChange: true}, ErrInvalidReplicaAssignment},
		{"unregistered broker", ReassignRequest{Topic: "orders", Target: []int32{2, 3, 9}, AllowReplicationFactorChange: true}, ErrInvalidReplicaAssignment},
		{"rf change refused", ReassignRequest{Topic: "orders", Target: []int32{2, 3}}, ErrInvalidReplicationFactor},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs, err := img.PlanReassignment(c.req)
			if !errors.Is(err, c.want) || recs != nil {
				t.Fatalf("got %v %v, want %v", recs, err, c.want)
			}
		})
	}
}

func TestPlanReassignmentDecisions(t *testing.T) {
	img := fourBrokers(t)
	for _, c := range []struct {
		name                     string
		target                   []int32
		replicas, isr            []int32
		adding, removing         []int32
		leader                   int32
		reassigning, leaderMoved bool
	}{
		// The move: 4 is added first, 1 stays (and leads) until 4
		// is in the ISR.
		{name: "move one replica", target: []int32{2, 3, 4}, replicas: []int32{2, 3, 4, 1}, isr: []int32{1, 2, 3},
			adding: []int32{4}, removing: []int32{1}, leader: 1, reassigning: true},
		// Every target replica is in the ISR already: done at once, and
		// the leader, being removed, moves to the first target replica.
		{name: "shrink completes at once", target: []int32{2, 3}, replicas: []int32{2, 3}, isr: []int32{2, 3}, leader: 2, leaderMoved: true},
		{name: "reorder completes at once", target: []int32{3, 1, 2}, replicas: []int32{3, 1, 2}, isr: []int32{1, 2, 3}, leader: 1},
		{name: "grow", target: []int32{1, 2, 3, 4}, replicas: []int32{1, 2, 3, 4}, isr: []int32{1, 2, 3},
			adding: []int32{4}, leader: 1, reassigning: true},
		{name: "same replicas", target: []int32{1, 2, 3}, replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, leader: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs, err := img.PlanReassignment(ReassignRequest{Topic: "orders", Target: c.target, AllowReplicationFactorChange: true})
			if err != nil {
				t.Fatal(err)
			}
			next, _ := mustApply(t, img, recs...)
			p, _ := next.Partition(idA, 0)
			if !slices.Equal(p.Replicas, c.replicas) || !slices.Equal(p.ISR, c.isr) || p.Leader != c.leader ||
				!slices.Equal(p.AddingReplicas, c.adding) || !slices.Equal(p.RemovingReplicas, c.removing) || p.Reassigning() != c.reassigning {
				t.Fatalf("partition %+v", p)
			}
			if c.reassigning && !slices.Equal(p.TargetReplicas(), c.target) {
				t.Fatalf("target %v, want %v", p.TargetReplicas(), c.target)
			}
			if moved := p.LeaderEpoch != 0; moved != (c.leaderMoved || (!c.reassigning && len(c.target) < 3)) {
				t.Fatalf("leader epoch %d", p.LeaderEpoch)
			}
		})
	}
}

// The flow end to end at the image level: {1,2,3} -> {2,3,4},
// the ISR growing by AlterPartition, completion in the same batch, and the
// image surviving a snapshot (Records) at every step.
func TestReassignmentLifecycle(t *testing.T) {
	img := fourBrokers(t)
	recs, err := img.PlanReassignment(ReassignRequest{Topic: "orders", Target: []int32{2, 3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	img, d := mustApply(t, img, recs...)
	checkSnapshot(t, img)
	if got := img.Reassignments(); len(got) != 1 || got[0].Topic != "orders" || got[0].Partition.Partition != 0 {
		t.Fatalf("reassignments %+v", got)
	}
	if lc := d.LocalChanges(4); !slices.ContainsFunc(lc.Followers, func(f PartitionDelta) bool { return f.Topic == "orders" && f.Partition == 0 }) {
		t.Fatalf("broker 4 does not follow orders-0: %+v", lc)
	}
	if more := img.CompleteReassignment(idA, 0); more != nil {
		t.Fatalf("completed before 4 is in the ISR: %v", more)
	}

	// 4 caught up: the leader's AlterPartition adds it.
	p, _ := img.Partition(idA, 0)
	rec, err := img.ValidateAlterPartition(AlterPartitionRequest{BrokerID: 1, BrokerEpoch: 10, TopicID: idA, Partition: 0,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{1, 2, 3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	img, _ = mustApply(t, img, rec)
	done := img.CompleteReassignment(idA, 0)
	if done == nil {
		t.Fatal("no completion with every target replica in the ISR")
	}
	img, d = mustApply(t, img, done...)
	checkSnapshot(t, img)
	p, _ = img.Partition(idA, 0)
	if !slices.Equal(p.Replicas, []int32{2, 3, 4}) || !slices.Equal(p.ISR, []int32{2, 3, 4}) || p.Leader != 2 || p.Reassigning() {
		t.Fatalf("after completion %+v", p)
	}
	if lc := d.LocalChanges(1); !slices.ContainsFunc(lc.Deletes, func(f PartitionDelta) bool { return f.Topic == "orders" && f.Partition == 0 }) {
		t.Fatalf("broker 1 does not drop orders-0: %+v", lc)
	}
	if len(img.Reassignments()) != 0 {
		t.Fatal("reassignment still listed")
	}
}

func TestCancelReassignment(t *testing.T) {
	img := fourBrokers(t)
	recs, _ := img.PlanReassignment(ReassignRequest{Topic: "orders", Target: []int32{2, 3, 4}})
	started, _ := mustApply(t, img, recs...)

	recs, err := started.PlanReassignment(ReassignRequest{Topic: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	img, _ = mustApply(t, started, recs...)
	p, _ := img.Partition(idA, 0)
	if !slices.Equal(p.Replicas, []int32{2, 3, 1}) && !slices.Equal(p.Replicas, []int32{1, 2, 3}) {
		t.Fatalf("replicas %v after cancel", p.Replicas)
	}
	if p.Reassigning() || !slices.Equal(p.ISR, []int32{1, 2, 3}) || p.Leader != 1 {
		t.Fatalf("after cancel %+v", p)
	}
	if _, err := img.PlanReassignment(ReassignRequest{Topic: "orders"}); !errors.Is(err, ErrNoReassignmentInProgress) {
		t.Fatalf("second cancel: %v", err)
	}

	// A cancel whose original replicas left the ISR needs an unclean
	// election: refused unless the topic allows it.
	p, _ = started.Partition(idA, 0)
	shrunk, _ := mustApply(t, started,
		&PartitionChange{TopicID: idA, Partition: 0, Leader: 4, ISR: []int32{4}})
	if _, err := shrunk.PlanReassignment(ReassignRequest{Topic: "orders"}); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("unclean cancel: %v", err)
	}
	recs, err = shrunk.PlanReassignment(ReassignRequest{Topic: "orders", Unclean: true})
	if err != nil {
		t.Fatal(err)
	}
	img, _ = mustApply(t, shrunk, recs...)
	q, _ := img.Partition(idA, 0)
	if q.Reassigning() || slices.Contains(q.Replicas, 4) || len(q.ISR) != 1 || q.ISR[0] != q.Leader || q.LeaderEpoch <= p.LeaderEpoch {
		t.Fatalf("after unclean cancel %+v", q)
	}
}

// A second reassignment replaces the first, starting from the union.
func TestReassignmentReplaced(t *testing.T) {
	img := fourBrokers(t)
	recs, _ := img.PlanReassignment(ReassignRequest{Topic: "orders", Target: []int32{2, 3, 4}})
	img, _ = mustApply(t, img, recs...)
	// Back to the original: 4 goes, nothing is added, and the original
	// replicas are all in the ISR, so it completes at once.
	recs, err := img.PlanReassignment(ReassignRequest{Topic: "orders", Target: []int32{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	img, _ = mustApply(t, img, recs...)
	p, _ := img.Partition(idA, 0)
	if !slices.Equal(p.Replicas, []int32{1, 2, 3}) || p.Reassigning() || p.Leader != 1 {
		t.Fatalf("%+v", p)
	}
}

func TestReassignmentRecordChecks(t *testing.T) {
	img := fourBrokers(t)
	for _, r := range []*PartitionReassignment{
		{TopicID: idA, Partition: 0, Adding: []int32{4}},                       // not a replica
		{TopicID: idA, Partition: 0, Removing: []int32{1, 1}},                  // duplicate
		{TopicID: idA, Partition: 0, Adding: []int32{1}, Removing: []int32{1}}, // not disjoint
		{TopicID: idA, Partition: 0, Removing: []int32{1, 2, 3}},               // removes all
		{TopicID: idB, Partition: 0, Adding: []int32{1}},                       // unknown topic
		{TopicID: idA, Partition: 5, Adding: []int32{1}},                       // unknown partition
	} {
		if _, d := img.Apply([]Record{r}); len(d.Skipped) != 1 {
			t.Errorf("%+v applied", r)
		}
	}
	// A PartitionChange that shrinks the replicas under a set is skipped.
	recs, _ := img.PlanReassignment(ReassignRequest{Topic: "orders", Target: []int32{2, 3, 4}})
	img, _ = mustApply(t, img, recs...)
	if _, d := img.Apply([]Record{&PartitionChange{TopicID: idA, Partition: 0, Leader: NoLeaderChange, Replicas: []int32{1, 2, 3}}}); len(d.Skipped) != 1 {
		t.Error("replicas shrunk under the adding set")
	}
}

func checkSnapshot(t *testing.T, img *Image) {
	t.Helper()
	b, err := EncodeRecords(img.Records())
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := mustApply(t, NewImage(), recs...)
	if !again.Equal(img) {
		t.Fatal("image differs after a snapshot round trip")
	}
}

// Random reassignments, cancels, ISR changes and broker fencing against a
// five-broker image: every decided batch replays without a skipped record,
// the snapshot round trip holds, the replicas always contain the target,
// and a partition whose ISR holds its whole target is never left moving
// after CompleteReassignment.
func TestReassignmentProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := []Record{&ClusterID{ID: "c"}}
		for id := int32(1); id <= 5; id++ {
			recs = append(recs, &RegisterBroker{BrokerID: id, BrokerEpoch: int64(id)}, &UnfenceBroker{BrokerID: id, BrokerEpoch: int64(id)})
		}
		recs = append(recs, &CreateTopic{Name: "p", ID: idA, Partitions: []PartitionRegistration{
			{Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
		}})
		img, d := NewImage().Apply(recs)
		if len(d.Skipped) > 0 {
			t.Fatal(d.Skipped[0].Err)
		}
		apply := func(what string, rs []Record) {
			next, d := img.Apply(rs)
			if len(d.Skipped) > 0 {
				t.Fatalf("%s: %T skipped: %v", what, d.Skipped[0].Record, d.Skipped[0].Err)
			}
			img = next
		}
		for step := range rapid.IntRange(1, 12).Draw(t, "steps") {
			p, _ := img.Partition(idA, 0)
			switch rapid.IntRange(0, 3).Draw(t, fmt.Sprint("op", step)) {
			case 0: // reassign to a random target
				n := rapid.IntRange(1, 4).Draw(t, "rf")
				target := rapid.SliceOfNDistinct(rapid.Int32Range(1, 5), n, n, rapid.ID[int32]).Draw(t, "target")
				rs, err := img.PlanReassignment(ReassignRequest{Topic: "p", Target: target, AllowReplicationFactorChange: true})
				if err != nil {
					t.Fatalf("reassign to %v: %v", target, err)
				}
				apply("reassign", rs)
				q, _ := img.Partition(idA, 0)
				for _, r := range target {
					if !slices.Contains(q.Replicas, r) {
						t.Fatalf("target %v not within replicas %+v", target, q)
					}
				}
				if q.Reassigning() && !slices.Equal(q.TargetReplicas(), target) {
					t.Fatalf("target %v recorded as %v", target, q.TargetReplicas())
				}
			case 1: // cancel
				rs, err := img.PlanReassignment(ReassignRequest{Topic: "p", Unclean: rapid.Bool().Draw(t, "unclean")})
				if !p.Reassigning() {
					if !errors.Is(err, ErrNoReassignmentInProgress) {
						t.Fatalf("cancel without a move: %v", err)
					}
					continue
				}
				if err != nil {
					if !errors.Is(err, ErrInvalidReplicaAssignment) {
						t.Fatalf("cancel: %v", err)
					}
					continue
				}
				apply("cancel", rs)
				if q, _ := img.Partition(idA, 0); q.Reassigning() || !slices.Equal(q.Replicas, p.OriginalReplicas()) {
					t.Fatalf("after cancel %+v, original %v", q, p.OriginalReplicas())
				}
			case 2: // the leader adds a caught-up replica to the ISR
				if p.Leader == NoLeader {
					continue
				}
				out := without(p.Replicas, p.ISR)
				if len(out) == 0 {
					continue
				}
				add := rapid.SampledFrom(out).Draw(t, "add")
				b, _ := img.Broker(p.Leader)
				rec, err := img.ValidateAlterPartition(AlterPartitionRequest{BrokerID: p.Leader, BrokerEpoch: b.Epoch, TopicID: idA,
					LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: append(slices.Clone(p.ISR), add)})
				if err != nil {
					continue // a fenced replica may not join
				}
				apply("expand", []Record{rec})
				apply("complete", img.CompleteReassignment(idA, 0))
			case 3: // a replica's broker is fenced and leaves the ISR
				id := rapid.Int32Range(1, 5).Draw(t, "fence")
				b, _ := img.Broker(id)
				rs := []Record{&FenceBroker{BrokerID: id, BrokerEpoch: b.Epoch}}
				next, _ := img.Apply(rs)
				if q, _ := next.Partition(idA, 0); slices.Contains(q.ISR, id) || q.Leader == id {
					rec, err := BuildPartitionChange(PartitionChangeRequest{TopicID: idA, Partition: q, Reason: ReasonBrokerFenced, Usable: next.UsableBrokers()})
					if err == nil && rec != nil {
						rs = append(rs, rec)
					}
				}
				rs = append(rs, &UnfenceBroker{BrokerID: id, BrokerEpoch: b.Epoch})
				apply("fence", rs)
			}
			// A fence step changes the ISR without an AlterPartition;
			// complete what is ready as a new controller's sweep would.
			if rs := img.CompletableReassignments(); len(rs) > 0 {
				apply("sweep", rs)
			}
			q, _ := img.Partition(idA, 0)
			if q.Reassigning() && !slices.ContainsFunc(q.TargetReplicas(), func(r int32) bool { return !slices.Contains(q.ISR, r) }) {
				t.Fatalf("every target replica is in the ISR but the move is not complete: %+v", q)
			}
			checkSnapshotRapid(t, img)
		}
	})
}

func checkSnapshotRapid(t *rapid.T, img *Image) {
	b, err := EncodeRecords(img.Records())
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	again, d := NewImage().Apply(recs)
	if len(d.Skipped) > 0 || !again.Equal(img) {
		t.Fatalf("snapshot round trip differs (%d skipped)", len(d.Skipped))
	}
}
