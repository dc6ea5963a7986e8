package metadata

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Placement asks PlaceReplicas for replica lists.
type Placement struct {
	// FirstPartition is the number of the first partition to place: 0 for a
	// new topic, the current partition count for CreatePartitions. It keeps
	// the round-robin going where the existing partitions left off.
	FirstPartition int32
	// Partitions is how many partitions to place.
	Partitions int32
	// ReplicationFactor is the number of replicas per partition.
	ReplicationFactor int16
	// StartIndex picks the broker (in the usable, rack-interleaved list)
	// that gets partition 0's first replica, and Shift the distance of the
	// followers from it. Kafka draws both at random per topic, which spreads
	// leaders of different topics over different brokers; the caller draws
	// them (this package has no randomness) and any value is valid: both are
	// taken modulo the broker count.
	StartIndex int
	Shift      int
}

// PlaceReplicas assigns replicas the way Kafka's AdminUtils (and, in spirit,
// KRaft's StripedReplicaPlacer) does, so clusters look as Kafka users expect:
//
//   - Only usable brokers count: registered, unfenced, not in controlled
//     shutdown.
//   - Without racks, partition p's first replica is broker (p + StartIndex)
//     mod n in id order, and its followers follow at a distance that grows
//     by one every n partitions (the shift), so leaders are spread evenly and
//     followers of one broker's partitions are spread over the others.
//   - With racks, the broker list is interleaved across racks (one broker
//     from each rack in turn, racks sorted by name) before the same
//     round-robin, and a follower is skipped while a rack without a replica
//     of this partition remains, and while a broker without one remains. So
//     every partition spans min(RF, racks) racks. A broker without a rack
//     counts as a rack of its own ("") when others have racks; Kafka's legacy
//     placer refuses such mixed clusters, the KRaft placer accepts them.
//
// It fails with ErrInvalidPartitions for Partitions < 1 and with
// ErrInvalidReplicationFactor when ReplicationFactor < 1 or exceeds the
// number of usable brokers.
func PlaceReplicas(brokers []BrokerRegistration, p Placement) ([][]int32, error) {
	if p.Partitions < 1 || p.FirstPartition < 0 || int64(p.FirstPartition)+int64(p.Partitions) > maxPartitions {
		return nil, fmt.Errorf("%w: %d partitions starting at %d", ErrInvalidPartitions, p.Partitions, p.FirstPartition)
	}
	usable := make([]BrokerRegistration, 0, len(brokers))
	for _, b := range brokers {
		if b.Usable() && !slices.ContainsFunc(usable, func(u BrokerRegistration) bool { return u.ID == b.ID }) {
			usable = append(usable, b)
		}
	}
	if p.ReplicationFactor < 1 {
		return nil, fmt.Errorf("%w: replication factor must be larger than 0, got %d", ErrInvalidReplicationFactor, p.ReplicationFactor)
	}
	if int(p.ReplicationFactor) > len(usable) {
		return nil, fmt.Errorf("%w: replication factor: %d larger than available brokers: %d", ErrInvalidReplicationFactor, p.ReplicationFactor, len(usable))
	}
	slices.SortFunc(usable, func(a, b BrokerRegistration) int { return cmp.Compare(a.ID, b.ID) })
	anyRack := slices.ContainsFunc(usable, func(b BrokerRegistration) bool { return b.Rack != "" })
	if anyRack {
		return placeRackAware(usable, p), nil
	}
	ids := make([]int32, len(usable))
	for i, b := range usable {
		ids[i] = b.ID
	}
	return placeRoundRobin(ids, p), nil
}

func mod(a, n int) int { return ((a % n) + n) % n }

// followerIndex is the j-th follower's position for a partition whose
// first replica is at first: never first itself, and spread by shift.
func followerIndex(first, shift, j, n int) int {
	return (first + 1 + mod(shift+j, n-1)) % n
}

func placeRoundRobin(ids []int32, p Placement) [][]int32 {
	n := len(ids)
	start, shift := mod(p.StartIndex, n), mod(p.Shift, n)
	out := make([][]int32, p.Partitions)
	for i := range out {
		part := int(p.FirstPartition) + i
		s := shift + part/n // the shift grows by one every n partitions
		first := (part + start) % n
		reps := make([]int32, 0, p.ReplicationFactor)
		reps = append(reps, ids[first])
		for j := 0; j < int(p.ReplicationFactor)-1; j++ {
			reps = append(reps, ids[followerIndex(first, s, j, n)])
		}
		out[i] = reps
	}
	return out
}

// rackInterleaved lists brokers one rack at a time: the first broker of
// each rack (racks sorted), then the second of each, and so on.
func rackInterleaved(usable []BrokerRegistration) ([]BrokerRegistration, int) {
	byRack := map[string][]BrokerRegistration{}
	for _, b := range usable {
		byRack[b.Rack] = append(byRack[b.Rack], b)
	}
	racks := make([]string, 0, len(byRack))
	for r := range byRack {
		racks = append(racks, r)
	}
	slices.SortFunc(racks, strings.Compare)
	out := make([]BrokerRegistration, 0, len(usable))
	for i := 0; len(out) < len(usable); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out, len(racks)
}

func placeRackAware(usable []BrokerRegistration, p Placement) [][]int32 {
	list, nRacks := rackInterleaved(usable)
	n := len(list)
	start, shift := mod(p.StartIndex, n), mod(p.Shift, n)
	out := make([][]int32, p.Partitions)
	for i := range out {
		part := int(p.FirstPartition) + i
		s := shift + part/n
		first := (part + start) % n
		reps := []int32{list[first].ID}
		racks := map[string]bool{list[first].Rack: true}
		used := map[int32]bool{list[first].ID: true}
		// Every n-1 steps of k visit each other broker once, and RF <= n, so
		// each follower is found within n-1 steps; the bound is a backstop.
		for k := 0; len(reps) < int(p.ReplicationFactor) && k < 4*n*n; k++ {
			b := list[followerIndex(first, s*nRacks, k, n)]
			if (racks[b.Rack] && len(racks) < nRacks) || (used[b.ID] && len(used) < n) {
				continue
			}
			reps = append(reps, b.ID)
			racks[b.Rack] = true
			used[b.ID] = true
		}
		out[i] = reps
	}
	return out
}

// ValidateReplicaAssignment checks a manual assignment (CreateTopics with
// replica assignments, CreatePartitions with assignments), where
// assignment[i] holds the replicas of the i-th partition being created. Like
// Kafka, it requires at least one replica per partition, no duplicate
// broker within a partition, the same replication factor everywhere (and
// equal to wantRF when wantRF > 0, as CreatePartitions requires), every
// broker registered, and at least one usable broker per partition. Errors
// wrap ErrInvalidReplicaAssignment (ErrInvalidPartitions for an empty
// assignment).
func ValidateReplicaAssignment(assignment [][]int32, brokers []BrokerRegistration, wantRF int) error {
	if len(assignment) == 0 || len(assignment) > maxPartitions {
		return fmt.Errorf("%w: %d partitions in the assignment", ErrInvalidPartitions, len(assignment))
	}
	byID := make(map[int32]BrokerRegistration, len(brokers))
	for _, b := range brokers {
		byID[b.ID] = b
	}
	rf := wantRF
	if rf <= 0 {
		rf = len(assignment[0])
	}
	for i, reps := range assignment {
		if len(reps) == 0 {
			return fmt.Errorf("%w: partition %d has an empty replica list", ErrInvalidReplicaAssignment, i)
		}
		if len(reps) != rf {
			return fmt.Errorf("%w: partition %d has %d replicas, expected %d (inconsistent replication factor)", ErrInvalidReplicaAssignment, i, len(reps), rf)
		}
		usable := false
		for j, id := range reps {
			if slices.Contains(reps[:j], id) {
				return fmt.Errorf("%w: partition %d lists broker %d twice", ErrInvalidReplicaAssignment, i, id)
			}
			b, ok := byID[id]
			if !ok {
				return fmt.Errorf("%w: partition %d includes broker %d, but no such broker is registered", ErrInvalidReplicaAssignment, i, id)
			}
			usable = usable || b.Usable()
		}
		if !usable {
			return fmt.Errorf("%w: all brokers of partition %d are fenced or in controlled shutdown", ErrInvalidReplicaAssignment, i)
		}
	}
	return nil
}

// NewPartitions turns replica lists into registrations for CreateTopic or
// AddPartitions, numbered from first: each partition's ISR is its usable
// replicas and its leader is the first of them (NoLeader if none), with both
// epochs 0, as Kafka's controller creates them.
func NewPartitions(first int32, assignment [][]int32, usable func(id int32) bool) []PartitionRegistration {
	out := make([]PartitionRegistration, len(assignment))
	for i, reps := range assignment {
		p := PartitionRegistration{Partition: first + int32(i), Replicas: slices.Clone(reps), Leader: NoLeader}
		for _, r := range reps {
			if usable(r) {
				p.ISR = append(p.ISR, r)
			}
		}
		if len(p.ISR) > 0 {
			p.Leader = p.ISR[0]
		} else {
			// Kafka keeps the full replica list as ISR when none is alive,
			// so the partition can come online when one returns.
			p.ISR = slices.Clone(reps)
		}
		out[i] = p
	}
	return out
}

// UsableBrokers returns a predicate for brokers that are registered,
// unfenced and not shutting down in img.
func (img *Image) UsableBrokers() func(id int32) bool {
	return func(id int32) bool {
		b, ok := img.brokers[id]
		return ok && b.Usable()
	}
}
