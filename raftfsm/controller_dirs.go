package raftfsm

import (
	"encoding/binary"
	"slices"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Failed log dirs (JBOD). A broker whose log dir failed names, in every
// heartbeat from then on, the replicas that were in it (OfflineReplicasTag;
// Kafka's broker reports the dir in OfflineLogDirs and the controller finds
// the replicas through PartitionRecord Directories, which raftka does not
// keep yet). The controller records the set (metadata.OfflineReplicas) and,
// in the same batch, moves each such partition's leadership to another
// usable ISR member and takes the replica out of the ISR, as Kafka's
// handleDirectoriesOffline does. A heartbeat repeats the whole set, so a
// new controller learns it from the next one; a new registration (the
// broker restarted) clears it.

// OfflineReplicasTag carries, in a BrokerHeartbeat request, the sender's
// replicas in failed log dirs: 20 bytes each, topic id then big-endian
// int32 partition.
const OfflineReplicasTag uint32 = 10067

// SetOfflineReplicas puts refs in req's OfflineReplicasTag.
func SetOfflineReplicas(req *kmsg.BrokerHeartbeatRequest, refs []metadata.ReplicaRef) {
	if len(refs) == 0 {
		return
	}
	b := make([]byte, 0, 20*len(refs))
	for _, r := range refs {
		b = append(b, r.TopicID[:]...)
		b = binary.BigEndian.AppendUint32(b, uint32(r.Partition))
	}
	req.UnknownTags.Set(OfflineReplicasTag, b)
}

// offlineReplicas reads OfflineReplicasTag, sorted and without repeats; a
// malformed tag reads as none.
func offlineReplicas(req *kmsg.BrokerHeartbeatRequest) []metadata.ReplicaRef {
	var refs []metadata.ReplicaRef
	req.UnknownTags.Each(func(k uint32, v []byte) {
		if k != OfflineReplicasTag || len(v)%20 != 0 {
			return
		}
		for i := 0; i+20 <= len(v); i += 20 {
			var r metadata.ReplicaRef
			copy(r.TopicID[:], v[i:i+16])
			r.Partition = int32(binary.BigEndian.Uint32(v[i+16:]))
			refs = append(refs, r)
		}
	})
	slices.SortFunc(refs, metadata.CompareReplicaRefs)
	return slices.CompactFunc(refs, func(a, b metadata.ReplicaRef) bool { return metadata.CompareReplicaRefs(a, b) == 0 })
}

// offlineReplicaChanges returns, for a heartbeat of broker b naming refs
// as offline, the OfflineReplicas record (when the set grew) and the
// partition changes that take b's offline replicas out of leadership and
// the ISR. Replicas of partitions that no longer exist, or that b does
// not hold, are dropped. Nothing when the image already has it all.
func offlineReplicaChanges(img *metadata.Image, b metadata.BrokerRegistration, refs []metadata.ReplicaRef, pol policy) []metadata.Record {
	set := slices.Clone(b.OfflineReplicas)
	for _, r := range refs {
		t, ok := img.TopicByID(r.TopicID)
		if !ok {
			continue
		}
		p, ok := t.Partition(r.Partition)
		if !ok || !slices.Contains(p.Replicas, b.ID) {
			continue
		}
		if i, found := slices.BinarySearchFunc(set, r, metadata.CompareReplicaRefs); !found {
			set = slices.Insert(set, i, r)
		}
	}
	var recs []metadata.Record
	if !slices.Equal(set, b.OfflineReplicas) {
		recs = append(recs, &metadata.OfflineReplicas{BrokerID: b.ID, BrokerEpoch: b.Epoch, Replicas: set})
	}
	next := img
	if len(recs) > 0 {
		next, _ = img.Apply(recs)
	}
	nb, _ := next.Broker(b.ID)
	recs = append(recs, partitionChanges(next, metadata.ReasonBrokerFenced, pol, func(t metadata.TopicImage, p metadata.PartitionRegistration) bool {
		return (p.Leader == b.ID || slices.Contains(p.ISR, b.ID)) && nb.ReplicaOffline(t.ID, p.Partition)
	})...)
	return recs
}
