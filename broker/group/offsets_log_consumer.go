package group

import (
	"encoding/binary"
	"slices"

	"github.com/raftka/raftka/metadata"
)

// The records Kafka's group coordinator writes to __consumer_offsets for a
// consumer-protocol (KIP-848) group, made from the group's state in the
// Raft image as the classic groups' GroupMetadata is (offsets_log.go). In
// Kafka the key's version is the record type; every value is version 0 of
// a flexible schema (group-coordinator's ConsumerGroup*Key/Value.json):
//
//	3 ConsumerGroupMetadata                  the group epoch
//	5 ConsumerGroupMemberMetadata            a member's subscription and client (ClassicMemberMetadata tagged)
//	6 ConsumerGroupTargetAssignmentMetadata  the target assignment's epoch
//	7 ConsumerGroupTargetAssignmentMember    a member's share of the target
//	8 ConsumerGroupCurrentMemberAssignment   a member's epochs, state, owned and pending-revocation partitions
//	16 ConsumerGroupRegularExpression        a subscribed regex's resolution: its topics, version, timestamp
//
// kmsg has no types for these, so they are encoded here, field by field
// in the schemas' order. Not written, as Kafka 4.1 does not write it:
// record 4, ConsumerGroupPartitionMetadata (the subscribed topics'
// metadata), which KAFKA-17747 replaced with a hash in record 3. Not
// written either: that hash (record 3's tagged MetadataHash; absent means
// 0, which Kafka's coordinator takes as "not computed"), as raftka
// detects topic changes from the group's resolved topics instead of a
// hash.
//
// Record 16 is the image's ConsumerGroupRegex. Its Version is, in Kafka,
// the offset of the metadata image the regex was resolved against; in
// raftka, the Raft log index of the image the coordinator resolved it
// against (-1 if the coordinator did not know it), and its Timestamp the
// coordinator's time at that heartbeat. Kafka rewrites the record at each
// background refresh; raftka's coordinator matches regexes on every
// heartbeat and records a new resolution only when the topics change, so
// the record is written when a regex is first used or takes other topics,
// and tombstoned when its last member leaves or changes regex, or the
// group goes.
const (
	cgMetadataType               = 3
	cgMemberMetadataType         = 5
	cgTargetAssignmentMetaType   = 6
	cgTargetAssignmentMemberType = 7
	cgCurrentAssignmentType      = 8
	cgRegexType                  = 16
)

// cgWriter appends Kafka's wire types: keys are non-flexible (int16-length
// strings), values flexible (compact strings, arrays and bytes, tagged
// fields).
type cgWriter struct{ b []byte }

func (w *cgWriter) int8(v int8)   { w.b = append(w.b, byte(v)) }
func (w *cgWriter) int16(v int16) { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *cgWriter) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *cgWriter) int64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *cgWriter) uvarint(v int) { w.b = binary.AppendUvarint(w.b, uint64(v)) }
func (w *cgWriter) uuid(id [16]byte) {
	w.b = append(w.b, id[:]...)
}
func (w *cgWriter) str(s string) { w.int16(int16(len(s))); w.b = append(w.b, s...) }
func (w *cgWriter) compactStr(s string) {
	w.uvarint(len(s) + 1)
	w.b = append(w.b, s...)
}

// nullableStr writes "" as null: the image keeps absent optional strings
// (instance id, rack, regex, server assignor) as "", Kafka's records as null.
func (w *cgWriter) nullableStr(s string) {
	if s == "" {
		w.uvarint(0)
		return
	}
	w.compactStr(s)
}
func (w *cgWriter) compactBytes(b []byte) { w.uvarint(len(b) + 1); w.b = append(w.b, b...) }
func (w *cgWriter) noTags()               { w.uvarint(0) }

func (w *cgWriter) partitions(ps []metadata.ConsumerGroupPartitions) {
	w.uvarint(len(ps) + 1)
	for _, p := range ps {
		w.uuid(p.TopicID)
		w.uvarint(len(p.Partitions) + 1)
		for _, n := range p.Partitions {
			w.int32(n)
		}
		w.noTags()
	}
}

// cgKey is a record's key: the type, the group, and for the per-member
// records the member id (for record 16 the regex, its second string).
func cgKey(typ int16, group, member string, withMember bool) []byte {
	w := cgWriter{}
	w.int16(typ)
	w.str(group)
	if withMember {
		w.str(member)
	}
	return w.b
}

func cgValue(fill func(w *cgWriter)) []byte {
	w := cgWriter{}
	w.int16(0)
	fill(&w)
	w.noTags()
	return w.b
}

// ConsumerGroupEpochRecord is record 3, the group epoch.
func ConsumerGroupEpochRecord(cg *metadata.ConsumerGroup) OffsetsRecord {
	return OffsetsRecord{Key: cgKey(cgMetadataType, cg.Group, "", false), Value: cgValue(func(w *cgWriter) { w.int32(cg.Epoch) })}
}

// ConsumerGroupMemberRecord is record 5, a member's subscription; a
// classic member's session timeout and protocols are its tagged
// ClassicMemberMetadata (tag 0).
func ConsumerGroupMemberRecord(group string, m *metadata.ConsumerGroupMember) OffsetsRecord {
	return OffsetsRecord{Key: cgKey(cgMemberMetadataType, group, m.MemberID, true), Value: memberValue(m)}
}

func memberValue(m *metadata.ConsumerGroupMember) []byte {
	w := cgWriter{}
	w.int16(0)
	w.nullableStr(m.InstanceID)
	w.nullableStr(m.RackID)
	w.compactStr(m.ClientID)
	w.compactStr(m.ClientHost)
	names := slices.Sorted(slices.Values(m.SubscribedTopicNames)) // Kafka sorts them
	w.uvarint(len(names) + 1)
	for _, n := range names {
		w.compactStr(n)
	}
	w.nullableStr(m.SubscribedTopicRegex)
	w.int32(m.RebalanceTimeoutMs)
	w.nullableStr(m.ServerAssignor)
	if m.Classic == nil {
		w.noTags()
		return w.b
	}
	c := cgWriter{}
	c.int32(m.Classic.SessionTimeoutMs)
	c.uvarint(len(m.Classic.Protocols) + 1)
	for _, p := range m.Classic.Protocols {
		c.compactStr(p.Name)
		c.compactBytes(p.Metadata)
		c.noTags()
	}
	c.noTags()
	w.uvarint(1) // one tagged field
	w.uvarint(0) // tag 0: ClassicMemberMetadata
	w.uvarint(len(c.b))
	w.b = append(w.b, c.b...)
	return w.b
}

// ConsumerGroupTargetEpochRecord is record 6, the target assignment epoch.
func ConsumerGroupTargetEpochRecord(cg *metadata.ConsumerGroup) OffsetsRecord {
	return OffsetsRecord{Key: cgKey(cgTargetAssignmentMetaType, cg.Group, "", false), Value: cgValue(func(w *cgWriter) { w.int32(cg.AssignmentEpoch) })}
}

// ConsumerGroupTargetMemberRecord is record 7, a member's target.
func ConsumerGroupTargetMemberRecord(group string, m *metadata.ConsumerGroupMember) OffsetsRecord {
	return OffsetsRecord{Key: cgKey(cgTargetAssignmentMemberType, group, m.MemberID, true), Value: cgValue(func(w *cgWriter) { w.partitions(m.Target) })}
}

// ConsumerGroupCurrentRecord is record 8, a member's current assignment.
func ConsumerGroupCurrentRecord(group string, m *metadata.ConsumerGroupMember) OffsetsRecord {
	return OffsetsRecord{Key: cgKey(cgCurrentAssignmentType, group, m.MemberID, true), Value: cgValue(func(w *cgWriter) {
		w.int32(m.Epoch)
		w.int32(m.PreviousEpoch)
		w.int8(m.State) // the coordinator's states carry Kafka's MemberState values
		w.partitions(m.Assigned)
		w.partitions(m.PendingRevocation)
	})}
}

// ConsumerGroupRegexRecord is record 16, a regex's resolution: key
// (GroupId, RegularExpression), value (Topics sorted, Version, Timestamp).
func ConsumerGroupRegexRecord(group string, r *metadata.ConsumerGroupRegex) OffsetsRecord {
	return OffsetsRecord{Key: cgKey(cgRegexType, group, r.Regex, true), Value: cgValue(func(w *cgWriter) {
		topics := slices.Sorted(slices.Values(r.Topics)) // Kafka sorts them
		w.uvarint(len(topics) + 1)
		for _, t := range topics {
			w.compactStr(t)
		}
		w.int64(r.Version)
		w.int64(r.TimestampMs)
	})}
}

// consumerGroupDiff returns the records 3-8 and 16 that take a reader from
// prev's state of a consumer group to next's (nil: no such group), in the
// order Kafka's coordinator writes them: for a removed member its current
// assignment, target and subscription tombstones; then the subscriptions
// that changed, the tombstones of the regexes no longer used and the
// resolutions of those new or resolved again, the group epoch, the
// targets and the target epoch, the current assignments. A group that is
// gone has its members' and then its own records tombstoned, its regexes
// before the epoch, which is last, as Kafka's createGroupTombstoneRecords.
func consumerGroupDiff(prev, next *metadata.ConsumerGroup) []OffsetsRecord {
	var recs []OffsetsRecord
	tomb := func(typ int16, group, member string, withMember bool) {
		recs = append(recs, OffsetsRecord{Key: cgKey(typ, group, member, withMember)})
	}
	if next == nil {
		if prev == nil {
			return nil
		}
		for _, m := range prev.Members {
			tomb(cgCurrentAssignmentType, prev.Group, m.MemberID, true)
			tomb(cgTargetAssignmentMemberType, prev.Group, m.MemberID, true)
			tomb(cgMemberMetadataType, prev.Group, m.MemberID, true)
		}
		tomb(cgTargetAssignmentMetaType, prev.Group, "", false)
		for _, r := range prev.Regexes {
			tomb(cgRegexType, prev.Group, r.Regex, true)
		}
		tomb(cgMetadataType, prev.Group, "", false)
		return recs
	}
	old := map[string]*metadata.ConsumerGroupMember{}
	if prev != nil {
		for i := range prev.Members {
			old[prev.Members[i].MemberID] = &prev.Members[i]
		}
	}
	live := make(map[string]bool, len(next.Members))
	for _, m := range next.Members {
		live[m.MemberID] = true
	}
	if prev != nil {
		for _, m := range prev.Members {
			if !live[m.MemberID] {
				tomb(cgCurrentAssignmentType, next.Group, m.MemberID, true)
				tomb(cgTargetAssignmentMemberType, next.Group, m.MemberID, true)
				tomb(cgMemberMetadataType, next.Group, m.MemberID, true)
			}
		}
	}
	for i := range next.Members {
		m := &next.Members[i]
		if o := old[m.MemberID]; o == nil || !sameSubscription(o, m) {
			recs = append(recs, ConsumerGroupMemberRecord(next.Group, m))
		}
	}
	oldRegexes := map[string]*metadata.ConsumerGroupRegex{}
	if prev != nil {
		for i := range prev.Regexes {
			oldRegexes[prev.Regexes[i].Regex] = &prev.Regexes[i]
		}
	}
	liveRegexes := make(map[string]bool, len(next.Regexes))
	for _, r := range next.Regexes {
		liveRegexes[r.Regex] = true
	}
	if prev != nil {
		for _, r := range prev.Regexes {
			if !liveRegexes[r.Regex] {
				tomb(cgRegexType, next.Group, r.Regex, true)
			}
		}
	}
	for i := range next.Regexes {
		r := &next.Regexes[i]
		if o := oldRegexes[r.Regex]; o == nil || o.Version != r.Version || o.TimestampMs != r.TimestampMs || !slices.Equal(o.Topics, r.Topics) {
			recs = append(recs, ConsumerGroupRegexRecord(next.Group, r))
		}
	}
	if prev == nil || prev.Epoch != next.Epoch {
		recs = append(recs, ConsumerGroupEpochRecord(next))
	}
	for i := range next.Members {
		m := &next.Members[i]
		if o := old[m.MemberID]; o == nil || !partsSame(o.Target, m.Target) {
			recs = append(recs, ConsumerGroupTargetMemberRecord(next.Group, m))
		}
	}
	if prev == nil || prev.AssignmentEpoch != next.AssignmentEpoch {
		recs = append(recs, ConsumerGroupTargetEpochRecord(next))
	}
	for i := range next.Members {
		m := &next.Members[i]
		o := old[m.MemberID]
		if o == nil || o.Epoch != m.Epoch || o.PreviousEpoch != m.PreviousEpoch || o.State != m.State ||
			!partsSame(o.Assigned, m.Assigned) || !partsSame(o.PendingRevocation, m.PendingRevocation) {
			recs = append(recs, ConsumerGroupCurrentRecord(next.Group, m))
		}
	}
	return recs
}

// sameSubscription compares what record 5 holds, without encoding it: a
// heartbeat of one member of a large group compares every member.
func sameSubscription(a, b *metadata.ConsumerGroupMember) bool {
	if a.InstanceID != b.InstanceID || a.RackID != b.RackID || a.ClientID != b.ClientID || a.ClientHost != b.ClientHost ||
		a.SubscribedTopicRegex != b.SubscribedTopicRegex || a.RebalanceTimeoutMs != b.RebalanceTimeoutMs ||
		a.ServerAssignor != b.ServerAssignor || !slices.Equal(a.SubscribedTopicNames, b.SubscribedTopicNames) ||
		(a.Classic == nil) != (b.Classic == nil) {
		return false
	}
	if a.Classic == nil {
		return true
	}
	return a.Classic.SessionTimeoutMs == b.Classic.SessionTimeoutMs &&
		slices.EqualFunc(a.Classic.Protocols, b.Classic.Protocols, func(x, y metadata.ConsumerGroupClassicProtocol) bool {
			return x.Name == y.Name && string(x.Metadata) == string(y.Metadata)
		})
}

func partsSame(a, b []metadata.ConsumerGroupPartitions) bool {
	return slices.EqualFunc(a, b, func(x, y metadata.ConsumerGroupPartitions) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions)
	})
}
