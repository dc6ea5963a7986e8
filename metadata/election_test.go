package metadata

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func usableSet(ids ...int32) func(int32) bool {
	return func(id int32) bool { return slices.Contains(ids, id) }
}

func part(replicas, isr []int32, leader int32) PartitionRegistration {
	return PartitionRegistration{Partition: 0, Replicas: replicas, ISR: isr, Leader: leader, LeaderEpoch: 5, PartitionEpoch: 9}
}

func TestBuildPartitionChange(t *testing.T) {
	r := func(ids ...int32) []int32 { return ids }
	cases := []struct {
		name       string
		req        PartitionChangeRequest
		wantNil    bool
		wantLeader int32 // NoLeaderChange when the record keeps it
		wantISR    []int32
		wantReps   []int32
	}{
		{name: "fenced leader moves to next ISR replica in replica order",
			req:        PartitionChangeRequest{Partition: part(r(1, 2, 3), r(3, 1, 2), 1), Reason: ReasonBrokerFenced, Usable: usableSet(2, 3)},
			wantLeader: 2, wantISR: r(3, 2)},
		{name: "fenced follower leaves ISR, leader kept",
			req:        PartitionChangeRequest{Partition: part(r(1, 2, 3), r(1, 2, 3), 1), Reason: ReasonBrokerFenced, Usable: usableSet(1, 3)},
			wantLeader: NoLeaderChange, wantISR: r(1, 3)},
		{name: "fenced follower with the old shrink rule bumps the epoch",
			req:        PartitionChangeRequest{Partition: part(r(1, 2, 3), r(1, 2, 3), 1), Reason: ReasonBrokerFenced, Usable: usableSet(1, 3), BumpLeaderEpochOnISRShrink: true},
			wantLeader: 1, wantISR: r(1, 3)},
		{name: "last ISR member fenced: ISR kept, partition offline",
			req:        PartitionChangeRequest{Partition: part(r(1, 2), r(1), 1), Reason: ReasonBrokerFenced, Usable: usableSet(2)},
			wantLeader: NoLeader},
		{name: "all ISR fenced at once keeps the leader in the ISR",
			req:        PartitionChangeRequest{Partition: part(r(1, 2, 3), r(2, 3), 3), Reason: ReasonBrokerFenced, Usable: usableSet(1)},
			wantLeader: NoLeader, wantISR: r(3)},
		{name: "all ISR fenced, unclean elects a live non-ISR replica",
			req:        PartitionChangeRequest{Partition: part(r(1, 2, 3), r(2, 3), 3), Reason: ReasonBrokerFenced, Usable: usableSet(1), Unclean: true},
			wantLeader: 1, wantISR: r(1)},
		{name: "controlled shutdown moves leadership and leaves ISR",
			req:        PartitionChangeRequest{Partition: part(r(1, 2), r(1, 2), 1), Reason: ReasonControlledShutdown, Usable: usableSet(2)},
			wantLeader: 2, wantISR: r(2)},
		{name: "nothing to do when all usable",
			req:     PartitionChangeRequest{Partition: part(r(1, 2), r(1, 2), 1), Reason: ReasonBrokerFenced, Usable: usableSet(1, 2)},
			wantNil: true},
		{name: "offline partition comes back when an ISR member returns",
			req:        PartitionChangeRequest{Partition: part(r(1, 2), r(2), NoLeader), Reason: ReasonElection, Usable: usableSet(2)},
			wantLeader: 2},
		{name: "offline partition stays offline when only a non-ISR replica returns",
			req:     PartitionChangeRequest{Partition: part(r(1, 2), r(2), NoLeader), Reason: ReasonElection, Usable: usableSet(1)},
			wantNil: true},
		{name: "ISR change keeps the leader, bumps only the partition epoch",
			req:        PartitionChangeRequest{Partition: part(r(1, 2, 3), r(1, 2, 3), 1), Reason: ReasonISRChange, Usable: usableSet(1, 2, 3), TargetISR: r(1, 3)},
			wantLeader: NoLeaderChange, wantISR: r(1, 3)},
		{name: "ISR expand",
			req:        PartitionChangeRequest{Partition: part(r(1, 2, 3), r(1), 1), Reason: ReasonISRChange, Usable: usableSet(1, 2, 3), TargetISR: r(1, 2)},
			wantLeader: NoLeaderChange, wantISR: r(1, 2)},
		{name: "ISR unchanged gives no record",
			req:     PartitionChangeRequest{Partition: part(r(1, 2), r(1, 2), 1), Reason: ReasonISRChange, Usable: usableSet(1, 2), TargetISR: r(1, 2)},
			wantNil: true},
		{name: "preferred election",
			req:        PartitionChangeRequest{Partition: part(r(1, 2), r(1, 2), 2), Reason: ReasonPreferredElection, Usable: usableSet(1, 2)},
			wantLeader: 1},
		{name: "reassignment drops removed replicas from ISR and bumps the epoch",
			req:        PartitionChangeRequest{Partition: part(r(1, 2, 3), r(1, 2, 3), 1), Reason: ReasonReassignment, Usable: usableSet(1, 2, 3, 4), TargetReplicas: r(1, 2, 4)},
			wantLeader: 1, wantISR: r(1, 2), wantReps: r(1, 2, 4)},
		{name: "reassignment away from the leader elects in the new replicas",
			req:        PartitionChangeRequest{Partition: part(r(1, 2, 3), r(1, 2, 3), 1), Reason: ReasonReassignment, Usable: usableSet(1, 2, 3), TargetReplicas: r(3, 2)},
			wantLeader: 3, wantISR: r(2, 3), wantReps: r(3, 2)},
		{name: "adding replicas only: no bump, ISR kept",
			req:        PartitionChangeRequest{Partition: part(r(1, 2), r(1, 2), 1), Reason: ReasonReassignment, Usable: usableSet(1, 2, 3), TargetReplicas: r(1, 2, 3)},
			wantLeader: NoLeaderChange, wantReps: r(1, 2, 3)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.req.TopicID = idA
			rec, err := BuildPartitionChange(c.req)
			if err != nil {
				t.Fatal(err)
			}
			if c.wantNil {
				if rec != nil {
					t.Fatalf("want no change, got %+v", rec)
				}
				return
			}
			if rec == nil {
				t.Fatal("no record")
			}
			if rec.TopicID != idA || rec.Leader != c.wantLeader || !slices.Equal(rec.ISR, c.wantISR) || !slices.Equal(rec.Replicas, c.wantReps) {
				t.Fatalf("got leader %d ISR %v replicas %v, want %d %v %v", rec.Leader, rec.ISR, rec.Replicas, c.wantLeader, c.wantISR, c.wantReps)
			}
			// The record applies to the partition it was built from.
			img, d := NewImage().Apply([]Record{&CreateTopic{Name: "t", ID: idA, Partitions: []PartitionRegistration{c.req.Partition}}, rec})
			if len(d.Skipped) != 0 {
				t.Fatalf("built record does not apply: %v", d.Skipped[0].Err)
			}
			p, _ := img.Partition(idA, 0)
			if p.PartitionEpoch != c.req.Partition.PartitionEpoch+1 {
				t.Fatalf("partition epoch %d", p.PartitionEpoch)
			}
			bumped := p.LeaderEpoch == c.req.Partition.LeaderEpoch+1
			if bumped != (c.wantLeader != NoLeaderChange) {
				t.Fatalf("leader epoch %d after leader %d", p.LeaderEpoch, c.wantLeader)
			}
		})
	}
}

func TestBuildPartitionChangeErrors(t *testing.T) {
	cases := []struct {
		req  PartitionChangeRequest
		want error
	}{
		{PartitionChangeRequest{Partition: part([]int32{1, 2}, []int32{1, 2}, 1), Reason: ReasonPreferredElection, Usable: usableSet(1, 2)}, ErrElectionNotNeeded},
		{PartitionChangeRequest{Partition: part([]int32{1, 2}, []int32{2}, 2), Reason: ReasonPreferredElection, Usable: usableSet(1, 2)}, ErrPreferredLeaderNotAvailable},
		{PartitionChangeRequest{Partition: part([]int32{1, 2}, []int32{1, 2}, 2), Reason: ReasonPreferredElection, Usable: usableSet(2)}, ErrPreferredLeaderNotAvailable},
		{PartitionChangeRequest{Partition: part([]int32{1}, []int32{1}, 1), Reason: ReasonReassignment, Usable: usableSet(1)}, ErrInvalidReplicaAssignment},
		{PartitionChangeRequest{Partition: part([]int32{1}, []int32{1}, 1), Reason: ReasonReassignment, TargetReplicas: []int32{2, 2}}, ErrInvalidReplicaAssignment},
		{PartitionChangeRequest{Partition: part([]int32{1, 2}, []int32{1}, 1), Reason: ReasonReassignment, TargetReplicas: []int32{3, 4}}, ErrInvalidReplicaAssignment},
		{PartitionChangeRequest{Partition: part(nil, nil, 1), Reason: ReasonPreferredElection}, ErrInvalidRequest},
		{PartitionChangeRequest{Partition: part([]int32{1}, []int32{1}, 1), Reason: ChangeReason(99)}, ErrInvalidRequest},
	}
	for i, c := range cases {
		if rec, err := BuildPartitionChange(c.req); !errors.Is(err, c.want) || rec != nil {
			t.Errorf("case %d: %+v %v, want %v", i, rec, err, c.want)
		}
	}
}

// electOracle is the election rule stated on its own, to check
// BuildPartitionChange against: the first replica in replica order that is
// usable and in the ISR, or with unclean set the first usable replica; ok
// is false when there is none.
func electOracle(p PartitionRegistration, usable func(int32) bool, unclean bool) (leader int32, ok bool) {
	for _, r := range p.Replicas {
		if usable(r) && slices.Contains(p.ISR, r) {
			return r, true
		}
	}
	if unclean {
		for _, r := range p.Replicas {
			if usable(r) {
				return r, true
			}
		}
	}
	return NoLeader, false
}

// Whatever the partition, the usable set and the reason, the built record
// applies cleanly and leaves a partition that obeys the election rules.
func TestBuildPartitionChangeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		replicas := rapid.SliceOfNDistinct(rapid.Int32Range(0, 5), 1, 5, rapid.ID[int32]).Draw(t, "replicas")
		isr := rapid.SliceOfNDistinct(rapid.SampledFrom(replicas), 0, len(replicas), rapid.ID[int32]).Draw(t, "isr")
		leader := NoLeader
		if len(isr) > 0 && rapid.Bool().Draw(t, "hasLeader") {
			leader = rapid.SampledFrom(isr).Draw(t, "leader")
		}
		cur := PartitionRegistration{Replicas: replicas, ISR: isr, Leader: leader, LeaderEpoch: 2, PartitionEpoch: 4}
		live := rapid.SliceOfNDistinct(rapid.Int32Range(0, 5), 0, 6, rapid.ID[int32]).Draw(t, "usable")
		req := PartitionChangeRequest{TopicID: idA, Partition: cur, Usable: usableSet(live...),
			Reason:  rapid.SampledFrom([]ChangeReason{ReasonElection, ReasonBrokerFenced, ReasonControlledShutdown, ReasonISRChange, ReasonPreferredElection, ReasonReassignment}).Draw(t, "reason"),
			Unclean: rapid.Bool().Draw(t, "unclean"), BumpLeaderEpochOnISRShrink: rapid.Bool().Draw(t, "bump")}
		if req.Reason == ReasonISRChange && len(isr) > 0 {
			req.TargetISR = rapid.SliceOfNDistinct(rapid.SampledFrom(replicas), 1, len(replicas), rapid.ID[int32]).Draw(t, "targetISR")
		}
		if req.Reason == ReasonReassignment {
			req.TargetReplicas = rapid.SliceOfNDistinct(rapid.Int32Range(0, 5), 1, 5, rapid.ID[int32]).Draw(t, "target")
		}
		rec, err := BuildPartitionChange(req)
		if err != nil {
			if req.Reason != ReasonPreferredElection && !errors.Is(err, ErrInvalidReplicaAssignment) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		img, d := NewImage().Apply([]Record{&CreateTopic{Name: "t", ID: idA, Partitions: []PartitionRegistration{cur}}})
		if len(d.Skipped) != 0 {
			t.Fatal(d.Skipped[0].Err)
		}
		if rec == nil {
			// No change means the current leader is acceptable, or no one is.
			if l, ok := electOracle(cur, req.Usable, req.Unclean); ok && (cur.Leader == NoLeader || !req.Usable(cur.Leader)) && req.Reason != ReasonISRChange {
				t.Fatalf("no change although %d could lead", l)
			}
			return
		}
		next, d := img.Apply([]Record{rec})
		if len(d.Skipped) != 0 {
			t.Fatalf("built record skipped: %v", d.Skipped[0].Err)
		}
		p, _ := next.Partition(idA, 0)
		if p.Leader != NoLeader {
			if !req.Usable(p.Leader) || !slices.Contains(p.ISR, p.Leader) {
				t.Fatalf("leader %d not usable or not in ISR %v", p.Leader, p.ISR)
			}
		}
		if len(cur.ISR) > 0 && len(p.ISR) == 0 {
			t.Fatal("ISR emptied")
		}
		if p.Leader != cur.Leader && p.LeaderEpoch != cur.LeaderEpoch+1 {
			t.Fatal("leader changed without an epoch bump")
		}
		if p.Leader == NoLeader && !req.Unclean {
			if l, ok := electOracle(p, req.Usable, false); ok {
				t.Fatalf("left offline although %d could lead", l)
			}
		}
	})
}

func TestPreferredLeaderElections(t *testing.T) {
	r := func(ids ...int32) []int32 { return ids }
	// misplaced: preferred 1 in the ISR, led by 2.
	misplaced := part(r(1, 2), r(1, 2), 2)
	placed := part(r(1, 2), r(1, 2), 1)
	notInISR := part(r(1, 2), r(2), 2)
	tenWithOneMisplaced := []PartitionRegistration{misplaced, placed, placed, placed, placed, placed, placed, placed, placed, placed}
	cases := []struct {
		name   string
		parts  []PartitionRegistration
		fenced []int32
		pct    int32
		limit  int
		want   []int32 // partitions moved back to broker 1
	}{
		{name: "misplaced leadership moves back", parts: []PartitionRegistration{misplaced, placed}, pct: 10, want: r(0)},
		{name: "preferred replica outside the ISR is not elected", parts: []PartitionRegistration{notInISR, misplaced}, pct: 0, want: r(1)},
		{name: "fenced preferred replica is not elected", parts: []PartitionRegistration{misplaced}, fenced: r(1), pct: 0},
		{name: "share at the threshold does nothing", parts: tenWithOneMisplaced, pct: 10},
		{name: "share over the threshold moves", parts: tenWithOneMisplaced, pct: 9, want: r(0)},
		{name: "percentage 0 moves any misplaced leader (Kafka 4 KRaft)", parts: tenWithOneMisplaced, pct: 0, want: r(0)},
		{name: "limit bounds one round", parts: []PartitionRegistration{misplaced, misplaced, misplaced}, limit: 2, want: r(0, 1)},
		{name: "limit 0 moves nothing", parts: []PartitionRegistration{misplaced}, limit: -1},
		{name: "balanced cluster: nothing", parts: []PartitionRegistration{placed, placed}},
		{name: "leaderless partition: the preferred replica takes it", parts: []PartitionRegistration{part(r(1, 2), r(1), NoLeader)}, want: r(0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := []Record{
				&RegisterBroker{BrokerID: 1, BrokerEpoch: 11, Fenced: slices.Contains(tc.fenced, 1)},
				&RegisterBroker{BrokerID: 2, BrokerEpoch: 12},
			}
			ct := &CreateTopic{Name: "t", ID: idA}
			for i, p := range tc.parts {
				p.Partition = int32(i)
				ct.Partitions = append(ct.Partitions, p)
			}
			img, d := NewImage().Apply(append(recs, ct))
			if len(d.Skipped) > 0 {
				t.Fatal(d.Skipped[0].Err)
			}
			limit := tc.limit
			switch limit {
			case 0:
				limit = 1000
			case -1:
				limit = 0
			}
			changes := img.PreferredLeaderElections(tc.pct, limit)
			var moved []int32
			var apply []Record
			for _, c := range changes {
				if c.Leader != 1 {
					t.Fatalf("partition %d: leader %d after rebalance", c.Partition, c.Leader)
				}
				moved = append(moved, c.Partition)
				apply = append(apply, c)
			}
			if !slices.Equal(moved, tc.want) {
				t.Fatalf("moved %v, want %v", moved, tc.want)
			}
			next, d := img.Apply(apply)
			if len(d.Skipped) > 0 {
				t.Fatal(d.Skipped[0].Err)
			}
			if again := next.PreferredLeaderElections(tc.pct, 1000); tc.limit == 0 && len(again) != 0 {
				t.Fatalf("a second round still moves %d partitions", len(again))
			}
		})
	}
}
