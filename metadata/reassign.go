package metadata

import (
	"fmt"
	"slices"
)

// Partition reassignment (KIP-455), with the rules of Kafka's KRaft
// ReplicationControlManager and PartitionReassignmentReplicas:
//
//  1. A reassignment to target T of a partition whose replicas are R sets
//     Replicas to T followed by R-T (the union), AddingReplicas to T-R and
//     RemovingReplicas to R-T. Leader and ISR stay. The adding replicas
//     become followers through the ordinary LocalChanges path, fetch, and
//     join the ISR by the leader's AlterPartition.
//  2. Once every target replica is in the ISR (CompleteReassignment, run
//     on every ISR change) the controller sets Replicas to T, the ISR to
//     ISR∩T and clears the sets; a leader outside T is replaced by the
//     first target replica that is usable and in the ISR, and the removal
//     bumps the leader epoch, fencing the removed replicas.
//  3. A cancel reverts to R' = Replicas-AddingReplicas (the original), with
//     ISR∩R'; when that ISR is empty the revert needs an unclean election
//     and is refused unless the topic allows one.
//
// A reassignment whose target is already in the ISR completes at once, and
// a new reassignment of a partition that is being reassigned starts from
// its current (union) replicas, as Kafka's does.

// Reassigning reports whether the partition has an ongoing reassignment.
func (p PartitionRegistration) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas returns the replicas the partition is being reassigned to
// (its replicas when it is not being reassigned).
func (p PartitionRegistration) TargetReplicas() []int32 {
	return without(p.Replicas, p.RemovingReplicas)
}

// OriginalReplicas returns the replicas the partition had before its
// reassignment (its replicas when it is not being reassigned).
func (p PartitionRegistration) OriginalReplicas() []int32 {
	return without(p.Replicas, p.AddingReplicas)
}

// without returns the members of a that are not in b, in a's order.
func without(a, b []int32) []int32 {
	out := make([]int32, 0, len(a))
	for _, r := range a {
		if !slices.Contains(b, r) {
			out = append(out, r)
		}
	}
	return out
}

// checkReassignment holds the reassignment sets to what steps 1-3 keep
// true: duplicate-free, disjoint subsets of the replicas, with at least
// one replica that is not being removed.
func checkReassignment(p *PartitionRegistration) error {
	for i, r := range p.AddingReplicas {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.AddingReplicas[:i], r) {
			return invalid("partition %d adding replicas %v not a set within replicas %v", p.Partition, p.AddingReplicas, p.Replicas)
		}
	}
	for i, r := range p.RemovingReplicas {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.RemovingReplicas[:i], r) || slices.Contains(p.AddingReplicas, r) {
			return invalid("partition %d removing replicas %v not a set within replicas %v apart from adding %v", p.Partition, p.RemovingReplicas, p.Replicas, p.AddingReplicas)
		}
	}
	if len(p.RemovingReplicas) >= len(p.Replicas) && len(p.Replicas) > 0 {
		return invalid("partition %d would remove every replica of %v", p.Partition, p.Replicas)
	}
	return nil
}

func (a *topicApplier) reassignment(r *PartitionReassignment) error {
	t, ok := a.topics.get(r.TopicID, hashID(r.TopicID))
	if !ok {
		return fmt.Errorf("%w: id %x", ErrUnknownTopic, r.TopicID)
	}
	cur, ok := t.Partition(r.Partition)
	if !ok {
		return fmt.Errorf("%w: %s-%d", ErrUnknownPartition, t.Name, r.Partition)
	}
	next := cur
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	if len(r.Adding) > 0 {
		next.AddingReplicas = slices.Clone(r.Adding)
	}
	if len(r.Removing) > 0 {
		next.RemovingReplicas = slices.Clone(r.Removing)
	}
	if err := checkReassignment(&next); err != nil {
		return err
	}
	t, _ = a.own(r.TopicID)
	t.Partitions[r.Partition] = next
	return nil
}

// reassignmentRecords returns the PartitionReassignment records that put
// t's ongoing reassignments back after its CreateTopic (Image.Records).
func reassignmentRecords(t TopicImage) []Record {
	var recs []Record
	for _, p := range t.Partitions {
		if p.Reassigning() {
			recs = append(recs, &PartitionReassignment{
				TopicID: t.ID, Partition: p.Partition,
				Adding: slices.Clone(p.AddingReplicas), Removing: slices.Clone(p.RemovingReplicas),
			})
		}
	}
	return recs
}

// OngoingReassignment is one partition's reassignment as
// ListPartitionReassignments reports it.
type OngoingReassignment struct {
	Topic     string
	TopicID   [16]byte
	Partition PartitionRegistration
}

// Reassignments returns every ongoing reassignment, in topic-name and
// partition order.
func (img *Image) Reassignments() []OngoingReassignment {
	var out []OngoingReassignment
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			if p.Reassigning() {
				out = append(out, OngoingReassignment{Topic: t.Name, TopicID: t.ID, Partition: p})
			}
		}
	}
	return out
}

// ReassignRequest is one partition of an AlterPartitionReassignments.
type ReassignRequest struct {
	Topic     string
	Partition int32
	// Target is the new replica list; nil cancels the ongoing
	// reassignment.
	Target []int32
	// AllowReplicationFactorChange is AlterPartitionReassignments v1's
	// flag (KIP-860); v0 requests allow it.
	AllowReplicationFactorChange bool
	// Unclean is the topic's unclean.leader.election.enable, which a
	// cancel needs when no original replica is left in the ISR.
	Unclean bool
	// MinISR is the topic's min.insync.replicas, for the ELR (KIP-966).
	MinISR int
}

// PlanReassignment decides one partition of an AlterPartitionReassignments
// and returns the records that carry it out (none when nothing changes).
// Errors, as Kafka's controller answers them:
//
//   - ErrUnknownTopic / ErrUnknownPartition (UNKNOWN_TOPIC_OR_PARTITION).
//   - ErrNoReassignmentInProgress: a cancel of a partition that is not
//     being reassigned (NO_REASSIGNMENT_IN_PROGRESS).
//   - ErrInvalidReplicaAssignment: an empty target, a negative, duplicate
//     or unregistered broker, or a cancel that would need an unclean
//     election the topic does not allow (INVALID_REPLICA_ASSIGNMENT).
//   - ErrInvalidReplicationFactor: the target's size differs from the
//     original replication factor and the request does not allow that
//     (INVALID_REPLICATION_FACTOR).
func (img *Image) PlanReassignment(req ReassignRequest) ([]Record, error) {
	t, ok := img.Topic(req.Topic)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, req.Topic)
	}
	p, ok := t.Partition(req.Partition)
	if !ok {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, t.Name, req.Partition)
	}
	if req.Target == nil {
		return img.cancelReassignment(t, p, req.Unclean, req.MinISR)
	}
	if err := img.validateTarget(req.Target); err != nil {
		return nil, fmt.Errorf("%s-%d: %w", t.Name, p.Partition, err)
	}
	if rf := len(p.OriginalReplicas()); !req.AllowReplicationFactorChange && len(req.Target) != rf {
		return nil, fmt.Errorf("%w: %s-%d: the replication factor would change from %d to %d", ErrInvalidReplicationFactor, t.Name, p.Partition, rf, len(req.Target))
	}
	adding := without(req.Target, p.Replicas)
	removing := without(p.Replicas, req.Target)
	if len(adding) == 0 && !p.Reassigning() && slices.Equal(req.Target, p.Replicas) {
		return nil, nil
	}
	if completed := img.completion(t.ID, p, req.Target); completed != nil {
		return completed, nil
	}
	union := append(slices.Clone(req.Target), removing...)
	var recs []Record
	if p.Reassigning() {
		// Clear first: the old sets need not fit the new union.
		recs = append(recs, &PartitionReassignment{TopicID: t.ID, Partition: p.Partition})
	}
	if !slices.Equal(union, p.Replicas) {
		recs = append(recs, &PartitionChange{TopicID: t.ID, Partition: p.Partition, Leader: NoLeaderChange, Replicas: union})
	}
	recs = append(recs, &PartitionReassignment{TopicID: t.ID, Partition: p.Partition, Adding: adding, Removing: removing})
	return recs, nil
}

// validateTarget is Kafka's validateManualPartitionAssignment for a
// reassignment: brokers must be registered, not necessarily unfenced (a
// target replica that is down catches up when it comes back).
func (img *Image) validateTarget(target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: the manual partition assignment includes an empty replica list", ErrInvalidReplicaAssignment)
	}
	for i, r := range target {
		if r < 0 {
			return fmt.Errorf("%w: broker id %d is negative", ErrInvalidReplicaAssignment, r)
		}
		if slices.Contains(target[:i], r) {
			return fmt.Errorf("%w: the manual partition assignment includes the broker %d more than once", ErrInvalidReplicaAssignment, r)
		}
		if _, ok := img.brokers[r]; !ok {
			return fmt.Errorf("%w: the manual partition assignment includes broker %d, but no such broker is registered", ErrInvalidReplicaAssignment, r)
		}
	}
	return nil
}

// completion returns the records that finish moving p to target when
// every target replica is in the ISR, nil otherwise.
func (img *Image) completion(topicID [16]byte, p PartitionRegistration, target []int32) []Record {
	for _, r := range target {
		if !slices.Contains(p.ISR, r) {
			return nil
		}
	}
	rec, err := BuildPartitionChange(PartitionChangeRequest{
		TopicID: topicID, Partition: p, Reason: ReasonReassignment,
		Usable: img.UsableBrokers(), TargetReplicas: target,
		// Every target replica is in the ISR: min.insync.replicas is
		// met unless it exceeds the replication factor, and then the
		// ELR is cleared (nobody is made eligible by a move).
		ELR: img.ELREnabled(), MinISR: len(target),
	})
	if err != nil {
		return nil
	}
	var recs []Record
	if p.Reassigning() {
		recs = append(recs, &PartitionReassignment{TopicID: topicID, Partition: p.Partition})
	}
	if rec != nil {
		recs = append(recs, rec)
	}
	return recs
}

// CompleteReassignment returns the records that finish a partition's
// reassignment when its ISR now holds every target replica (step 2), nil
// when it is not being reassigned or not ready. The controller runs it
// after every ISR change, in the same batch, so completion is atomic with
// the AlterPartition that made it possible.
func (img *Image) CompleteReassignment(topicID [16]byte, partition int32) []Record {
	p, ok := img.Partition(topicID, partition)
	if !ok || !p.Reassigning() {
		return nil
	}
	return img.completion(topicID, p, p.TargetReplicas())
}

// CompletableReassignments returns the completion records of every
// reassignment that is ready: a new active controller runs it once, in
// case a partition became ready in a way no AlterPartition reported.
func (img *Image) CompletableReassignments() []Record {
	var recs []Record
	for _, o := range img.Reassignments() {
		recs = append(recs, img.completion(o.TopicID, o.Partition, o.Partition.TargetReplicas())...)
	}
	return recs
}

func (img *Image) cancelReassignment(t TopicImage, p PartitionRegistration, unclean bool, minISR int) ([]Record, error) {
	if !p.Reassigning() {
		return nil, fmt.Errorf("%w: %s-%d", ErrNoReassignmentInProgress, t.Name, p.Partition)
	}
	orig := p.OriginalReplicas()
	recs := []Record{&PartitionReassignment{TopicID: t.ID, Partition: p.Partition}}
	isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !slices.Contains(orig, r) })
	if len(isr) > 0 {
		rec, err := BuildPartitionChange(PartitionChangeRequest{
			TopicID: t.ID, Partition: p, Reason: ReasonReassignment,
			Usable: img.UsableBrokers(), TargetReplicas: orig,
			ELR: img.ELREnabled(), MinISR: minISR,
		})
		if err != nil {
			return nil, err
		}
		if rec != nil {
			recs = append(recs, rec)
		}
		return recs, nil
	}
	if !unclean {
		return nil, fmt.Errorf("%w: unable to revert the assignment of %s-%d because it would require an unclean leader election", ErrInvalidReplicaAssignment, t.Name, p.Partition)
	}
	// No original replica is in the ISR: the first usable one leads with
	// whatever it has, as an unclean election would choose.
	usable := img.UsableBrokers()
	rec := &PartitionChange{TopicID: t.ID, Partition: p.Partition, Leader: NoLeader, Replicas: orig, ISR: []int32{orig[0]}}
	if len(p.ELR) > 0 || len(p.LastKnownELR) > 0 {
		// An unclean election: nobody is known to hold everything.
		rec.ELR, rec.LastKnownELR = []int32{}, []int32{}
	}
	for _, r := range orig {
		if usable(r) {
			rec.Leader, rec.ISR = r, []int32{r}
			break
		}
	}
	return append(recs, rec), nil
}
