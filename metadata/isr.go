package metadata

import (
	"fmt"
	"slices"
)

// AlterPartitionRequest is one partition of a leader's AlterPartition.
type AlterPartitionRequest struct {
	BrokerID int32 // the leader sending the request
	// BrokerEpoch is the sender's broker epoch, or -1 when the request
	// version does not carry it.
	BrokerEpoch    int64
	TopicID        [16]byte
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
	// NewISRBrokerEpochs, when not nil, holds the broker epoch of each
	// NewISR member as the leader saw it (KIP-903, AlterPartition v3+; -1 for
	// unknown), so a replica that restarted since it caught up is not added
	// with stale state.
	NewISRBrokerEpochs []int64
	// MinISR is the topic's min.insync.replicas, which decides, with
	// eligible.leader.replicas.version 1, who leaving the ISR stays
	// eligible to lead (KIP-966).
	MinISR int
}

// ValidateAlterPartition checks an AlterPartition against the image as
// Kafka's controller does and returns the record that applies it (nil when
// the ISR is already as requested: answer with the current state). The
// errors, in the order they are checked:
//
//   - ErrStaleBrokerEpoch: the sender is not registered with that epoch
//     (STALE_BROKER_EPOCH).
//   - ErrUnknownTopic / ErrUnknownPartition (UNKNOWN_TOPIC_ID /
//     UNKNOWN_TOPIC_OR_PARTITION).
//   - ErrFencedLeaderEpoch: the leader epoch differs from the partition's
//     (FENCED_LEADER_EPOCH): the sender led an older epoch.
//   - ErrNotLeader: the sender is not the partition's leader (INVALID_REQUEST,
//     as Kafka's controller answers).
//   - ErrInvalidUpdateVersion: the partition epoch differs
//     (INVALID_UPDATE_VERSION): the request was built from a stale state
//     and the leader must refresh its view before retrying.
//   - ErrInvalidRequest: the new ISR is empty, has duplicates, lacks the
//     leader, or names a broker that is not a replica.
//   - ErrIneligibleReplica: a new ISR member is unregistered, fenced, in
//     controlled shutdown, or (KIP-903) registered with another epoch than
//     the one the leader saw (INELIGIBLE_REPLICA).
func (img *Image) ValidateAlterPartition(req AlterPartitionRequest) (*PartitionChange, error) {
	if b, ok := img.brokers[req.BrokerID]; !ok || (req.BrokerEpoch != -1 && b.Epoch != req.BrokerEpoch) {
		return nil, fmt.Errorf("%w: broker %d epoch %d is not registered", ErrStaleBrokerEpoch, req.BrokerID, req.BrokerEpoch)
	}
	t, ok := img.TopicByID(req.TopicID)
	if !ok {
		return nil, fmt.Errorf("%w: id %x", ErrUnknownTopic, req.TopicID)
	}
	p, ok := t.Partition(req.Partition)
	if !ok {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, t.Name, req.Partition)
	}
	if req.LeaderEpoch != p.LeaderEpoch {
		return nil, fmt.Errorf("%w: %s-%d request has leader epoch %d, current is %d", ErrFencedLeaderEpoch, t.Name, req.Partition, req.LeaderEpoch, p.LeaderEpoch)
	}
	if req.BrokerID != p.Leader {
		return nil, fmt.Errorf("%w: broker %d does not lead %s-%d (leader %d)", ErrNotLeader, req.BrokerID, t.Name, req.Partition, p.Leader)
	}
	if req.PartitionEpoch != p.PartitionEpoch {
		return nil, fmt.Errorf("%w: %s-%d request has partition epoch %d, current is %d", ErrInvalidUpdateVersion, t.Name, req.Partition, req.PartitionEpoch, p.PartitionEpoch)
	}
	if err := img.checkNewISR(p, req); err != nil {
		return nil, fmt.Errorf("%s-%d: %w", t.Name, req.Partition, err)
	}
	return BuildPartitionChange(PartitionChangeRequest{
		TopicID: req.TopicID, Partition: p, Reason: ReasonISRChange,
		Usable: img.UsableBrokers(), TargetISR: req.NewISR,
		ELR: img.ELREnabled(), MinISR: req.MinISR,
	})
}

func (img *Image) checkNewISR(p PartitionRegistration, req AlterPartitionRequest) error {
	isr := req.NewISR
	if len(isr) == 0 {
		return fmt.Errorf("%w: empty ISR", ErrInvalidRequest)
	}
	if req.NewISRBrokerEpochs != nil && len(req.NewISRBrokerEpochs) != len(isr) {
		return fmt.Errorf("%w: %d broker epochs for an ISR of %d", ErrInvalidRequest, len(req.NewISRBrokerEpochs), len(isr))
	}
	if !slices.Contains(isr, p.Leader) {
		return fmt.Errorf("%w: new ISR %v does not contain the leader %d", ErrInvalidRequest, isr, p.Leader)
	}
	for i, r := range isr {
		if slices.Contains(isr[:i], r) {
			return fmt.Errorf("%w: new ISR %v lists %d twice", ErrInvalidRequest, isr, r)
		}
		if !slices.Contains(p.Replicas, r) {
			return fmt.Errorf("%w: new ISR member %d is not a replica (%v)", ErrInvalidRequest, r, p.Replicas)
		}
	}
	for i, r := range isr {
		b, ok := img.brokers[r]
		switch {
		case !ok:
			return fmt.Errorf("%w: broker %d is not registered", ErrIneligibleReplica, r)
		case b.Fenced:
			return fmt.Errorf("%w: broker %d is fenced", ErrIneligibleReplica, r)
		case b.InControlledShutdown:
			return fmt.Errorf("%w: broker %d is in controlled shutdown", ErrIneligibleReplica, r)
		case req.NewISRBrokerEpochs != nil && req.NewISRBrokerEpochs[i] != -1 && req.NewISRBrokerEpochs[i] != b.Epoch:
			return fmt.Errorf("%w: broker %d has epoch %d, the leader saw %d", ErrIneligibleReplica, r, b.Epoch, req.NewISRBrokerEpochs[i])
		}
	}
	return nil
}
