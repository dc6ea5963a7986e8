package metadata

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func elrPart(replicas, isr, elr []int32, leader int32) PartitionRegistration {
	p := part(replicas, isr, leader)
	p.ELR = elr
	return p
}

// TestBuildPartitionChangeELR walks KIP-966's rules one change at a time.
func TestBuildPartitionChangeELR(t *testing.T) {
	r := func(ids ...int32) []int32 { return ids }
	cases := []struct {
		name       string
		req        PartitionChangeRequest
		wantLeader int32
		wantISR    []int32 // nil: unchanged
		wantELR    []int32 // the resulting ELR
	}{
		{name: "shrink to min ISR: nobody eligible",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2, 3), r(1, 2, 3), nil, 1), Reason: ReasonISRChange, TargetISR: r(1, 2), Usable: usableSet(1, 2, 3), ELR: true, MinISR: 2},
			wantLeader: NoLeaderChange, wantISR: r(1, 2), wantELR: r()},
		{name: "shrink below min ISR: the member leaving is eligible",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2, 3), r(1, 2), nil, 1), Reason: ReasonISRChange, TargetISR: r(1), Usable: usableSet(1, 2, 3), ELR: true, MinISR: 2},
			wantLeader: NoLeaderChange, wantISR: r(1), wantELR: r(2)},
		{name: "without ELR the same shrink makes nobody eligible",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2, 3), r(1, 2), nil, 1), Reason: ReasonISRChange, TargetISR: r(1), Usable: usableSet(1, 2, 3), MinISR: 2},
			wantLeader: NoLeaderChange, wantISR: r(1), wantELR: r()},
		{name: "last ISR member fenced: ISR empties, it joins the ELR, offline",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2, 3), r(1), r(2), 1), Reason: ReasonBrokerFenced, Usable: usableSet(3), ELR: true, MinISR: 2},
			wantLeader: NoLeader, wantISR: r(), wantELR: r(1, 2)},
		{name: "last ISR member fenced with min ISR 1 is eligible too",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2), r(1), nil, 1), Reason: ReasonBrokerFenced, Usable: usableSet(2), ELR: true, MinISR: 1},
			wantLeader: NoLeader, wantISR: r(), wantELR: r(1)},
		{name: "an ELR member comes back: it leads, alone in the ISR",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2, 3), r(), r(1, 2), NoLeader), Reason: ReasonElection, Usable: usableSet(2, 3), ELR: true, MinISR: 2},
			wantLeader: 2, wantISR: r(2), wantELR: r(1)},
		{name: "a replica outside ISR and ELR does not lead without unclean",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2, 3), r(), r(1, 2), NoLeader), Reason: ReasonElection, Usable: usableSet(3), ELR: true, MinISR: 2},
			wantLeader: NoLeaderChange, wantELR: r(1, 2)},
		{name: "unclean election clears the ELR",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2, 3), r(), r(1, 2), NoLeader), Reason: ReasonElection, Usable: usableSet(3), ELR: true, MinISR: 2, Unclean: true},
			wantLeader: 3, wantISR: r(3), wantELR: r()},
		{name: "ISR back at min ISR clears the ELR",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2, 3), r(2), r(1), 2), Reason: ReasonISRChange, TargetISR: r(2, 3), Usable: usableSet(1, 2, 3), ELR: true, MinISR: 2},
			wantLeader: NoLeaderChange, wantISR: r(2, 3), wantELR: r()},
		{name: "ISR growing but still short keeps the ELR minus the newcomer",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2, 3), r(2), r(1, 3), 2), Reason: ReasonISRChange, TargetISR: r(2, 3), Usable: usableSet(1, 2, 3), ELR: true, MinISR: 3},
			wantLeader: NoLeaderChange, wantISR: r(2, 3), wantELR: r(1)},
		{name: "ELR turned off: the lists are cleared on the next change",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2, 3), r(2), r(1), 2), Reason: ReasonISRChange, TargetISR: r(2, 3), Usable: usableSet(1, 2, 3), MinISR: 3},
			wantLeader: NoLeaderChange, wantISR: r(2, 3), wantELR: r()},
		{name: "a reassignment that drops an ELR member drops its eligibility",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2, 3), r(2), r(1, 3), 2), Reason: ReasonReassignment, TargetReplicas: r(2, 3, 4), Usable: usableSet(1, 2, 3, 4), ELR: true, MinISR: 2},
			wantLeader: 2, wantISR: nil, wantELR: r(3)},
		{name: "fenced leader with ISR above min: next ISR member leads, nobody eligible",
			req:        PartitionChangeRequest{Partition: elrPart(r(1, 2, 3), r(1, 2, 3), nil, 1), Reason: ReasonBrokerFenced, Usable: usableSet(2, 3), ELR: true, MinISR: 2},
			wantLeader: 2, wantISR: r(2, 3), wantELR: r()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, err := BuildPartitionChange(c.req)
			if err != nil {
				t.Fatal(err)
			}
			cur := c.req.Partition
			next := cur
			if rec != nil {
				if rec.Leader != c.wantLeader {
					t.Fatalf("leader %d, want %d (%+v)", rec.Leader, c.wantLeader, rec)
				}
				if rec.ISR != nil {
					next.ISR = rec.ISR
				}
				if rec.ELR != nil {
					next.ELR = rec.ELR
				}
			} else if c.wantLeader != NoLeaderChange {
				t.Fatalf("no record, want leader %d", c.wantLeader)
			}
			if c.wantISR != nil && !slices.Equal(next.ISR, c.wantISR) {
				t.Fatalf("ISR %v, want %v", next.ISR, c.wantISR)
			}
			if !slices.Equal(next.ELR, c.wantELR) {
				t.Fatalf("ELR %v, want %v", next.ELR, c.wantELR)
			}
		})
	}
}

// TestELRProperties drives one partition through random fencing,
// unfencing, leader ISR changes, appends and elections, with a model of
// each replica's log, and checks KIP-966's promises: no leader from
// outside the ISR and ELR unless the election is unclean, and every
// acknowledged record (below the HW, which only moves while the ISR has
// min.insync.replicas members) is on every ISR and ELR member.
func TestELRProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rf := rapid.IntRange(1, 5).Draw(t, "rf")
		minISR := rapid.IntRange(1, rf).Draw(t, "minISR")
		unclean := rapid.Bool().Draw(t, "unclean")
		replicas := make([]int32, rf)
		for i := range replicas {
			replicas[i] = int32(i + 1)
		}
		p := PartitionRegistration{Replicas: replicas, ISR: slices.Clone(replicas), Leader: 1}
		live := map[int32]bool{}
		leo := map[int32]int64{} // each replica's log end
		for _, r := range replicas {
			live[r] = true
		}
		var hw int64 // acknowledged records are below it
		usable := func(id int32) bool { return live[id] }
		apply := func(rec *PartitionChange, unclean bool) {
			if rec == nil {
				return
			}
			oldLeader := p.Leader
			if rec.ISR != nil {
				p.ISR = rec.ISR
			}
			if rec.ELR != nil {
				p.ELR = rec.ELR
			}
			if rec.Leader != NoLeaderChange {
				p.Leader = rec.Leader
			}
			if p.Leader != NoLeader && p.Leader != oldLeader {
				if !unclean && !slices.Contains(p.ISR, p.Leader) {
					t.Fatalf("leader %d elected from outside ISR %v", p.Leader, p.ISR)
				}
				// Followers truncate to the new leader's log.
				for _, r := range replicas {
					leo[r] = min(leo[r], leo[p.Leader])
				}
				if !unclean && leo[p.Leader] < hw {
					t.Fatalf("clean election of %d (log end %d) lost acknowledged records below %d", p.Leader, leo[p.Leader], hw)
				}
				if unclean {
					hw = min(hw, leo[p.Leader])
				}
			}
		}
		req := func(reason ChangeReason) PartitionChangeRequest {
			return PartitionChangeRequest{Partition: p, Reason: reason, Usable: usable, ELR: true, MinISR: minISR, Unclean: unclean}
		}
		for step := range 60 {
			_ = step
			id := int32(rapid.IntRange(1, rf).Draw(t, "broker"))
			wasUnclean := false
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0: // fence
				if !live[id] {
					continue
				}
				live[id] = false
				before := slices.Concat(p.ISR, p.ELR)
				rec, err := BuildPartitionChange(req(ReasonBrokerFenced))
				if err != nil {
					t.Fatal(err)
				}
				if rec != nil && rec.Leader != NoLeaderChange && rec.Leader != NoLeader && !slices.Contains(before, rec.Leader) {
					wasUnclean = true
				}
				apply(rec, wasUnclean)
			case 1: // unfence and elect
				if live[id] {
					continue
				}
				live[id] = true
				before := slices.Concat(p.ISR, p.ELR)
				rec, err := BuildPartitionChange(req(ReasonElection))
				if err != nil {
					t.Fatal(err)
				}
				if rec != nil && rec.Leader != NoLeaderChange && rec.Leader != NoLeader && !slices.Contains(before, rec.Leader) {
					if !unclean {
						t.Fatalf("leader %d from outside ISR+ELR %v without unclean", rec.Leader, before)
					}
					wasUnclean = true
				}
				apply(rec, wasUnclean)
			case 2: // the leader appends
				if p.Leader != NoLeader {
					leo[p.Leader] += int64(rapid.IntRange(1, 3).Draw(t, "n"))
				}
			case 3: // a live follower fetches: catches up, may join the ISR
				if p.Leader == NoLeader || !live[id] || id == p.Leader {
					continue
				}
				leo[id] = leo[p.Leader]
				if !slices.Contains(p.ISR, id) {
					rec, err := BuildPartitionChange(PartitionChangeRequest{Partition: p, Reason: ReasonISRChange, TargetISR: append(slices.Clone(p.ISR), id), Usable: usable, ELR: true, MinISR: minISR})
					if err != nil {
						t.Fatal(err)
					}
					apply(rec, false)
				}
			case 4: // the leader drops a lagging follower
				if p.Leader == NoLeader || id == p.Leader || !slices.Contains(p.ISR, id) {
					continue
				}
				target := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
				rec, err := BuildPartitionChange(PartitionChangeRequest{Partition: p, Reason: ReasonISRChange, TargetISR: target, Usable: usable, ELR: true, MinISR: minISR})
				if err != nil {
					t.Fatal(err)
				}
				apply(rec, false)
			}
			// The leader's HW rule (KIP-966): the smallest log end over the
			// ISR, and only while the ISR has min.insync.replicas members.
			if p.Leader != NoLeader && len(p.ISR) >= minISR {
				h := leo[p.Leader]
				for _, r := range p.ISR {
					h = min(h, leo[r])
				}
				hw = max(hw, h)
			}
			for _, r := range slices.Concat(p.ISR, p.ELR) {
				if leo[r] < hw {
					t.Fatalf("member %d of ISR %v / ELR %v has log end %d below the HW %d", r, p.ISR, p.ELR, leo[r], hw)
				}
			}
			for i, r := range p.ELR {
				if slices.Contains(p.ISR, r) || slices.Contains(p.ELR[:i], r) || !slices.Contains(replicas, r) {
					t.Fatalf("ELR %v overlaps ISR %v or repeats or holds a non-replica", p.ELR, p.ISR)
				}
			}
		}
	})
}

// TestELRSurvivesSnapshot: a partition's ELR comes back from Image.Records
// (what a Raft snapshot stores), and an ELR-free image writes only the
// version 0 records older binaries read.
func TestELRSurvivesSnapshot(t *testing.T) {
	img := threeBrokers(t)
	img, _ = mustApply(t, img, &FeatureLevel{Name: MetadataVersionFeature, Level: 28}, ordersTopic())
	for _, r := range img.Records() {
		if r.Version() != 0 && (r.Type() == TypeCreateTopic || r.Type() == TypePartitionChange) {
			t.Fatalf("%v v%d from an image without ELR", r.Type(), r.Version())
		}
	}
	img, _ = mustApply(t, img, &PartitionChange{TopicID: idA, Partition: 0, Leader: NoLeader, ISR: []int32{}, ELR: []int32{1, 2}, LastKnownELR: []int32{3}})
	b, err := EncodeRecords(img.Records())
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	back, _ := mustApply(t, NewImage(), recs...)
	if !back.Equal(img) {
		t.Fatal("image rebuilt from its records differs")
	}
	p, _ := back.Partition(idA, 0)
	if !slices.Equal(p.ELR, []int32{1, 2}) || !slices.Equal(p.LastKnownELR, []int32{3}) {
		t.Fatalf("ELR %v last known %v after the snapshot", p.ELR, p.LastKnownELR)
	}
	// A change that moves a member into the ISR drops it from the ELR.
	after, _ := mustApply(t, back, &PartitionChange{TopicID: idA, Partition: 0, Leader: 2, ISR: []int32{2}})
	if p, _ := after.Partition(idA, 0); !slices.Equal(p.ELR, []int32{1}) {
		t.Fatalf("ELR %v, want [1]", p.ELR)
	}
}

// The ELR fields need metadata.version 28: a 27 cluster never writes them.
func TestELRRecordsGated(t *testing.T) {
	rec := &PartitionChange{TopicID: idA, Leader: NoLeaderChange, ELR: []int32{2}}
	if err := CheckRecords([]Record{rec}, 27); err == nil {
		t.Fatal("PartitionChange v1 allowed at metadata.version 27")
	}
	if err := CheckRecords([]Record{rec}, 28); err != nil {
		t.Fatal(err)
	}
	if err := CheckRecords([]Record{&PartitionChange{TopicID: idA, Leader: 1}}, 27); err != nil {
		t.Fatalf("PartitionChange v0 refused at 27: %v", err)
	}
}
