package metadata

import (
	"fmt"
	"slices"
)

// ChangeReason says why the controller is changing a partition; it decides
// which election runs.
type ChangeReason int

const (
	// ReasonElection: elect a leader if the partition has none or its leader
	// is no longer usable (a broker was unfenced, an election was asked for).
	ReasonElection ChangeReason = iota
	// ReasonBrokerFenced: some replicas became unusable; drop them from the
	// ISR and move leadership off them.
	ReasonBrokerFenced
	// ReasonControlledShutdown: as ReasonBrokerFenced, for brokers that
	// asked to shut down.
	ReasonControlledShutdown
	// ReasonISRChange: an AlterPartition from the leader set TargetISR
	// (validate it with Image.ValidateAlterPartition first).
	ReasonISRChange
	// ReasonPreferredElection: move leadership to the preferred replica.
	ReasonPreferredElection
	// ReasonReassignment: set the replica list to TargetReplicas.
	ReasonReassignment
)

func (r ChangeReason) String() string {
	switch r {
	case ReasonElection:
		return "election"
	case ReasonBrokerFenced:
		return "broker fenced"
	case ReasonControlledShutdown:
		return "controlled shutdown"
	case ReasonISRChange:
		return "ISR change"
	case ReasonPreferredElection:
		return "preferred leader election"
	case ReasonReassignment:
		return "reassignment"
	}
	return fmt.Sprintf("ChangeReason(%d)", int(r))
}

// PartitionChangeRequest is the input of BuildPartitionChange.
type PartitionChangeRequest struct {
	TopicID   [16]byte
	Partition PartitionRegistration
	Reason    ChangeReason
	// Usable reports whether a broker may lead or stay in the ISR:
	// registered, unfenced and not in controlled shutdown. Image.UsableBrokers
	// gives it for an image.
	Usable func(id int32) bool
	// TargetISR is the new ISR for ReasonISRChange (nil keeps the ISR).
	TargetISR []int32
	// TargetReplicas is the new replica list for ReasonReassignment.
	TargetReplicas []int32
	// Unclean allows electing a replica outside the ISR when no ISR member
	// is usable (the topic's unclean.leader.election.enable, or an UNCLEAN
	// ElectLeaders request).
	Unclean bool
	// BumpLeaderEpochOnISRShrink bumps the leader epoch when the ISR shrinks
	// without a leader change, as Kafka did before metadata version 3.6
	// (and ZooKeeper mode always). Off, only a leader change or a
	// reassignment that removes replicas bumps it, as current Kafka does,
	// which spares clients needless FENCED_LEADER_EPOCH round trips.
	BumpLeaderEpochOnISRShrink bool
	// ELR is eligible.leader.replicas.version 1 (KIP-966) and MinISR the
	// topic's min.insync.replicas, which decides who becomes eligible.
	// Without ELR the partition's ELR lists are cleared.
	ELR    bool
	MinISR int
}

// BuildPartitionChange decides, with Kafka's election rules, what a
// partition should become and returns the PartitionChange record for it, or
// nil when nothing would change. Replaying the record gives the decided
// state: a set Leader bumps the leader epoch, and every record bumps the
// partition epoch.
//
// The rules (Kafka's PartitionChangeBuilder):
//   - ReasonBrokerFenced / ReasonControlledShutdown drop unusable brokers
//     from the ISR, except that the ISR never becomes empty: when no member
//     is usable, the member most likely to hold every acknowledged record
//     stays (the current leader if it is in the ISR, else the first member),
//     so that broker can lead again when it returns, and the leader becomes
//     NoLeader.
//   - The current leader stays if it is usable and in the new ISR.
//     Otherwise the new leader is the first replica, in replica order, that
//     is usable and in the ISR. If there is none and Unclean is set, the
//     first usable replica leads and the ISR becomes just that replica (data
//     may be lost: this is what unclean means). Otherwise NoLeader.
//   - ReasonPreferredElection moves leadership to the first replica if it is
//     usable and in the ISR; it returns ErrElectionNotNeeded when it already
//     leads and ErrPreferredLeaderNotAvailable when it cannot.
//   - ReasonReassignment sets the replicas to TargetReplicas and keeps in
//     the ISR only members that are still replicas; removing replicas bumps
//     the leader epoch so the removed ones are fenced. A target that shares
//     no member with a non-empty ISR is refused (ErrInvalidReplicaAssignment):
//     the caller reassigns in Kafka's steps, first to the union of old and
//     new replicas, then, once the new ones are in the ISR, to the target.
//   - With ELR (KIP-966) fencing may empty the ISR, the ELR follows
//     targetELR, and while the ISR is empty a usable ELR member may lead
//     (it becomes the ISR alone); an unclean election, or ELR off, clears
//     the ELR and LastKnownELR.
func BuildPartitionChange(req PartitionChangeRequest) (*PartitionChange, error) {
	cur := req.Partition
	if len(cur.Replicas) == 0 {
		return nil, fmt.Errorf("%w: partition %d has no replicas", ErrInvalidRequest, cur.Partition)
	}
	usable := req.Usable
	if usable == nil {
		usable = func(int32) bool { return false }
	}
	replicas := cur.Replicas
	isr := slices.Clone(cur.ISR)
	bump := false

	switch req.Reason {
	case ReasonBrokerFenced, ReasonControlledShutdown:
		if req.ELR {
			// KIP-966: the ISR may empty; the members leaving it while it
			// is below min.insync.replicas stay eligible in the ELR.
			isr = slices.DeleteFunc(isr, func(r int32) bool { return !usable(r) })
		} else {
			isr = dropUnusable(isr, cur.Leader, usable)
		}
	case ReasonISRChange:
		if req.TargetISR != nil {
			isr = slices.Clone(req.TargetISR)
		}
	case ReasonReassignment:
		if len(req.TargetReplicas) == 0 {
			return nil, fmt.Errorf("%w: reassignment to an empty replica list", ErrInvalidReplicaAssignment)
		}
		for i, r := range req.TargetReplicas {
			if r < 0 || slices.Contains(req.TargetReplicas[:i], r) {
				return nil, fmt.Errorf("%w: target replicas %v", ErrInvalidReplicaAssignment, req.TargetReplicas)
			}
		}
		replicas = slices.Clone(req.TargetReplicas)
		isr = slices.DeleteFunc(isr, func(r int32) bool { return !slices.Contains(replicas, r) })
		if len(isr) == 0 && len(cur.ISR) > 0 {
			// Kafka reassigns in steps (add the new replicas, wait until
			// they join the ISR, then drop the old), so a cut-over never
			// leaves the partition without an in-sync copy.
			return nil, fmt.Errorf("%w: target replicas %v share no member with the ISR %v; add them first and let them catch up", ErrInvalidReplicaAssignment, req.TargetReplicas, cur.ISR)
		}
		for _, r := range cur.Replicas {
			if !slices.Contains(replicas, r) {
				bump = true
			}
		}
	case ReasonElection, ReasonPreferredElection:
	default:
		return nil, fmt.Errorf("%w: unknown change reason %d", ErrInvalidRequest, int(req.Reason))
	}

	elr, lastKnown := targetELR(req, replicas, isr)
	// A leader is an ISR member, or, only while the ISR is empty, an ELR
	// member (Kafka's isValidNewLeader).
	valid := func(r int32) bool {
		return usable(r) && (slices.Contains(isr, r) || (len(isr) == 0 && slices.Contains(elr, r)))
	}
	leader := cur.Leader
	unclean := false
	if req.Reason == ReasonPreferredElection {
		preferred := replicas[0]
		switch {
		case leader == preferred:
			return nil, fmt.Errorf("%w: preferred replica %d already leads", ErrElectionNotNeeded, preferred)
		case !usable(preferred) || !slices.Contains(isr, preferred):
			return nil, fmt.Errorf("%w: preferred replica %d is not usable or not in the ISR %v", ErrPreferredLeaderNotAvailable, preferred, isr)
		}
		leader = preferred
	} else if leader == NoLeader || !valid(leader) || !slices.Contains(replicas, leader) {
		leader = NoLeader
		for _, r := range replicas {
			if valid(r) {
				leader = r
				break
			}
		}
		if leader != NoLeader && !slices.Contains(isr, leader) {
			// Elected from the ELR: it holds every acknowledged record,
			// so it is the ISR now and the others stay eligible.
			isr = []int32{leader}
			elr = slices.DeleteFunc(elr, func(r int32) bool { return r == leader })
		}
		if leader == NoLeader && req.Unclean {
			for _, r := range replicas {
				if usable(r) {
					leader = r
					isr = []int32{r}
					unclean = true
					break
				}
			}
		}
	}
	if len(isr) == 0 && leader != NoLeader {
		isr = []int32{leader}
	}
	if unclean || !req.ELR {
		// Data may be lost, or nobody tracks eligibility: nothing is
		// known to be eligible any more.
		elr, lastKnown = []int32{}, []int32{}
	}

	rec := &PartitionChange{TopicID: req.TopicID, Partition: cur.Partition, Leader: NoLeaderChange}
	changed := false
	if !slices.Equal(replicas, cur.Replicas) {
		rec.Replicas = replicas
		changed = true
	}
	if !slices.Equal(isr, cur.ISR) {
		if isr == nil {
			isr = []int32{}
		}
		rec.ISR = isr
		changed = true
		if len(isr) < len(cur.ISR) && req.BumpLeaderEpochOnISRShrink {
			bump = true
		}
	}
	if !slices.Equal(elr, cur.ELR) {
		rec.ELR = elr
		changed = true
	}
	if !slices.Equal(lastKnown, cur.LastKnownELR) {
		rec.LastKnownELR = lastKnown
		changed = true
	}
	if leader != cur.Leader || bump {
		rec.Leader = leader
		changed = true
	}
	if !changed {
		return nil, nil
	}
	return rec, nil
}

// targetELR is KIP-966's ELR for a partition whose ISR becomes isr (Kafka's
// PartitionChangeBuilder.maybePopulateTargetElr): with the ISR at or above
// min.insync.replicas both lists are empty, since the HW can move without
// anyone outside it. Below, every current ISR or ELR member that is not in
// the new ISR is eligible: the HW has not moved since it left (the leader
// holds it while the ISR is short), so it holds every acknowledged record.
// LastKnownELR keeps former members that are neither, which happens only
// when a reassignment drops them. Both are in replica order and hold only
// replicas.
func targetELR(req PartitionChangeRequest, replicas, isr []int32) (elr, lastKnown []int32) {
	cur := req.Partition
	if !req.ELR {
		return []int32{}, []int32{}
	}
	if len(isr) >= max(req.MinISR, 1) {
		return []int32{}, []int32{}
	}
	elr, lastKnown = []int32{}, []int32{}
	for _, r := range replicas {
		if slices.Contains(isr, r) {
			continue
		}
		switch {
		case slices.Contains(cur.ISR, r) || slices.Contains(cur.ELR, r):
			elr = append(elr, r)
		case slices.Contains(cur.LastKnownELR, r):
			lastKnown = append(lastKnown, r)
		}
	}
	return elr, lastKnown
}

// dropUnusable removes unusable brokers from an ISR without emptying it.
func dropUnusable(isr []int32, leader int32, usable func(int32) bool) []int32 {
	kept := slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return !usable(r) })
	if len(kept) > 0 || len(isr) == 0 {
		return kept
	}
	if slices.Contains(isr, leader) {
		return []int32{leader}
	}
	return []int32{isr[0]}
}

// PreferredLeaderElections is the auto.leader.rebalance.enable decision:
// which partitions get their leadership moved back to the preferred
// replica (the first), as PartitionChange records in topic-name and
// partition order, at most limit of them (Kafka's maxElectionsPerImbalance;
// the rest wait for the next check).
//
// For every broker it counts the partitions whose preferred replica it is
// and, of those, the ones it does not lead. Where that share exceeds pct
// percent (leader.imbalance.per.broker.percentage, the documented rule and
// Kafka's ZooKeeper controller's), each of those partitions is handed to
// BuildPartitionChange with ReasonPreferredElection, which moves
// leadership only where the preferred replica is usable and in the ISR.
// pct 0 moves every misplaced leadership, which is what Kafka 4's KRaft
// controller does whatever the key says.
func (img *Image) PreferredLeaderElections(pct int32, limit int) []*PartitionChange {
	type tally struct{ preferred, misplaced int }
	counts := map[int32]*tally{}
	topics := img.Topics()
	for _, t := range topics {
		for _, p := range t.Partitions {
			if len(p.Replicas) == 0 {
				continue
			}
			c := counts[p.Replicas[0]]
			if c == nil {
				c = &tally{}
				counts[p.Replicas[0]] = c
			}
			c.preferred++
			if p.Leader != p.Replicas[0] {
				c.misplaced++
			}
		}
	}
	over := func(id int32) bool {
		c := counts[id]
		// misplaced/preferred > pct/100, in integers.
		return c != nil && c.misplaced > 0 && c.misplaced*100 > int(pct)*c.preferred
	}
	usable := img.UsableBrokers()
	var out []*PartitionChange
	for _, t := range topics {
		for _, p := range t.Partitions {
			if len(out) >= limit {
				return out
			}
			if len(p.Replicas) == 0 || p.Leader == p.Replicas[0] || !over(p.Replicas[0]) {
				continue
			}
			rec, err := BuildPartitionChange(PartitionChangeRequest{TopicID: t.ID, Partition: p, Reason: ReasonPreferredElection, Usable: usable})
			if err == nil && rec != nil {
				out = append(out, rec)
			}
		}
	}
	return out
}
