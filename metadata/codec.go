package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
)

// Batch encoding: one Raft entry carries one batch of records.
//
//	offset 0   u8   format version (batchFormat, currently 1)
//	offset 1   u32  CRC-32C (Castagnoli) of every byte from offset 5 to the end
//	offset 5   u32  record count
//	offset 9   records, each:
//	             i16     record type (RecordType)
//	             i16     record version
//	             uvarint body length
//	             body    the record's fields in declaration order
//
// Fields are big-endian: intN as N/8 bytes, bool as one byte 0 or 1, a string
// as uvarint length then bytes, a [16]byte id as 16 bytes, a slice or map as
// a zigzag varint count (-1 for nil) then its elements; map entries are
// written as key, value pairs sorted by key. The encoding is canonical for a
// given set of values, so equal batches have equal bytes.
//
// The CRC catches a torn or corrupted entry before any record is trusted; the
// per-record length lets the decoder insist that every record consumed exactly
// its body.

const (
	batchFormat     = 1
	batchHeaderSize = 9
	// maxRecordsPerBatch bounds a batch so a corrupt count cannot ask for an
	// enormous allocation even before the remaining-length check.
	maxRecordsPerBatch = 1 << 24
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeRecords encodes a batch of records into one Raft entry. It fails only
// for a nil record or a Record implementation that is not one of this
// package's types.
func EncodeRecords(recs []Record) ([]byte, error) {
	if len(recs) > maxRecordsPerBatch {
		return nil, fmt.Errorf("metadata: batch of %d records exceeds %d", len(recs), maxRecordsPerBatch)
	}
	w := &writer{buf: make([]byte, batchHeaderSize, 64+32*len(recs))}
	w.buf[0] = batchFormat
	binary.BigEndian.PutUint32(w.buf[5:], uint32(len(recs)))
	var body writer
	for i, r := range recs {
		if r == nil {
			return nil, fmt.Errorf("metadata: record %d is nil", i)
		}
		body.buf = body.buf[:0]
		if err := encodeBody(&body, r); err != nil {
			return nil, fmt.Errorf("metadata: record %d: %w", i, err)
		}
		w.i16(int16(r.Type()))
		w.i16(r.Version())
		w.uvarint(uint64(len(body.buf)))
		w.buf = append(w.buf, body.buf...)
	}
	binary.BigEndian.PutUint32(w.buf[1:], crc32.Checksum(w.buf[5:], castagnoli))
	return w.buf, nil
}

// DecodeRecords decodes a batch written by EncodeRecords. Any malformed input
// (torn, corrupt, unknown record type or version, trailing bytes, lengths past
// the end) returns an error wrapping ErrCorrupt; it never panics, and it
// allocates no more than the input's length justifies.
func DecodeRecords(b []byte) ([]Record, error) {
	if len(b) < batchHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes is shorter than the %d-byte batch header", ErrCorrupt, len(b), batchHeaderSize)
	}
	if b[0] != batchFormat {
		return nil, fmt.Errorf("%w: unknown batch format %d", ErrCorrupt, b[0])
	}
	if want, got := binary.BigEndian.Uint32(b[1:]), crc32.Checksum(b[5:], castagnoli); want != got {
		return nil, fmt.Errorf("%w: CRC-32C mismatch (stored %08x, computed %08x)", ErrCorrupt, want, got)
	}
	n := binary.BigEndian.Uint32(b[5:])
	rest := b[batchHeaderSize:]
	// Each record takes at least 5 bytes (type, version, length).
	if n > maxRecordsPerBatch || uint64(n)*5 > uint64(len(rest)) {
		return nil, fmt.Errorf("%w: record count %d does not fit in %d bytes", ErrCorrupt, n, len(rest))
	}
	recs := make([]Record, 0, n)
	r := &reader{buf: rest}
	for i := range n {
		typ := RecordType(r.i16())
		ver := r.i16()
		size := r.uvarint()
		if r.err != nil {
			return nil, fmt.Errorf("%w: record %d header: %v", ErrCorrupt, i, r.err)
		}
		if size > uint64(len(r.buf)) {
			return nil, fmt.Errorf("%w: record %d (%v) body of %d bytes, only %d left", ErrCorrupt, i, typ, size, len(r.buf))
		}
		body := &reader{buf: r.buf[:size]}
		r.buf = r.buf[size:]
		rec, err := decodeBody(body, typ, ver)
		if err != nil {
			return nil, fmt.Errorf("%w: record %d (%v v%d): %v", ErrCorrupt, i, typ, ver, err)
		}
		if len(body.buf) != 0 {
			return nil, fmt.Errorf("%w: record %d (%v v%d): %d trailing bytes in body", ErrCorrupt, i, typ, ver, len(body.buf))
		}
		recs = append(recs, rec)
	}
	if len(r.buf) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after %d records", ErrCorrupt, len(r.buf), n)
	}
	return recs, nil
}

func encodeBody(w *writer, rec Record) error {
	switch r := rec.(type) {
	case *ClusterID:
		w.str(r.ID)
	case *FeatureLevel:
		w.str(r.Name)
		w.i16(r.Level)
	case *RegisterBroker:
		w.i32(r.BrokerID)
		w.uuid(r.IncarnationID)
		w.i64(r.BrokerEpoch)
		w.count(len(r.Endpoints), r.Endpoints == nil)
		for _, e := range r.Endpoints {
			w.str(e.Listener)
			w.str(e.Host)
			w.u16(e.Port)
			w.i16(e.SecurityProtocol)
		}
		w.str(r.Rack)
		w.bool(r.Fenced)
		w.bool(r.InControlledShutdown)
	case *UnregisterBroker:
		w.i32(r.BrokerID)
		w.i64(r.BrokerEpoch)
	case *FenceBroker:
		w.i32(r.BrokerID)
		w.i64(r.BrokerEpoch)
	case *UnfenceBroker:
		w.i32(r.BrokerID)
		w.i64(r.BrokerEpoch)
	case *BrokerShutdown:
		w.i32(r.BrokerID)
		w.i64(r.BrokerEpoch)
		w.bool(r.InControlledShutdown)
	case *OfflineReplicas:
		w.i32(r.BrokerID)
		w.i64(r.BrokerEpoch)
		w.count(len(r.Replicas), false)
		for _, x := range r.Replicas {
			w.uuid(x.TopicID)
			w.i32(x.Partition)
		}
	case *CreateTopic:
		w.str(r.Name)
		w.uuid(r.ID)
		w.strMap(r.Configs)
		w.partitions(r.Partitions, r.Version())
	case *AddPartitions:
		w.uuid(r.TopicID)
		w.partitions(r.Partitions, r.Version())
	case *PartitionChange:
		w.uuid(r.TopicID)
		w.i32(r.Partition)
		w.i32(r.Leader)
		w.int32s(r.ISR)
		w.int32s(r.Replicas)
		if r.Version() >= 1 {
			w.int32s(r.ELR)
			w.int32s(r.LastKnownELR)
		}
	case *PartitionReassignment:
		w.uuid(r.TopicID)
		w.i32(r.Partition)
		w.int32s(r.Adding)
		w.int32s(r.Removing)
	case *RemoveTopic:
		w.uuid(r.TopicID)
	case *Config:
		w.i8(int8(r.ResourceType))
		w.str(r.ResourceName)
		w.str(r.Key)
		w.str(r.Value)
		w.bool(r.Delete)
	case *CommitOffsets:
		w.str(r.Group)
		w.count(len(r.Offsets), r.Offsets == nil)
		for _, o := range r.Offsets {
			w.str(o.Topic)
			w.i32(o.Partition)
			w.i64(o.Offset)
			w.i32(o.LeaderEpoch)
			w.str(o.Metadata)
			w.i64(o.CommitTimeMs)
		}
	case *DeleteOffsets:
		w.str(r.Group)
		w.count(len(r.Partitions), r.Partitions == nil)
		for _, tp := range r.Partitions {
			w.str(tp.Topic)
			w.i32(tp.Partition)
		}
	case *DeleteGroup:
		w.str(r.Group)
	case *GroupGeneration:
		w.str(r.Group)
		w.i32(r.Generation)
		w.str(r.ProtocolType)
		w.str(r.Protocol)
		w.str(r.Leader)
		w.count(len(r.Members), r.Members == nil)
		for _, m := range r.Members {
			w.str(m.MemberID)
			w.str(m.InstanceID)
		}
		w.i64(r.StateTimestampMs)
		w.count(len(r.SubscribedTopics), r.SubscribedTopics == nil)
		for _, t := range r.SubscribedTopics {
			w.str(t)
		}
	case *ConsumerGroup:
		writeConsumerGroup(w, r)
	case *ConsumerGroupDelta:
		writeConsumerGroupDelta(w, r)
	case *RemoveConsumerGroup:
		w.str(r.Group)
	case *ProducerIds:
		w.i32(r.BrokerID)
		w.i64(r.BrokerEpoch)
		w.i64(r.NextProducerID)
	case *UserScramCredential:
		w.str(r.Name)
		w.i8(int8(r.Mechanism))
		w.str(string(r.Salt))
		w.str(string(r.StoredKey))
		w.str(string(r.ServerKey))
		w.i32(r.Iterations)
	case *RemoveUserScramCredential:
		w.str(r.Name)
		w.i8(int8(r.Mechanism))
	case *AccessControlEntry:
		w.uuid(r.ID)
		w.i8(int8(r.ResourceType))
		w.str(r.ResourceName)
		w.i8(int8(r.PatternType))
		w.str(r.Principal)
		w.str(r.Host)
		w.i8(int8(r.Operation))
		w.i8(int8(r.Permission))
	case *RemoveAccessControlEntry:
		w.uuid(r.ID)
	case *VoterDirectory:
		w.i32(r.NodeID)
		w.uuid(r.DirectoryID)
		w.bool(r.Remove)
	case *ClientQuota:
		w.count(len(r.Entity), r.Entity == nil)
		for _, p := range r.Entity {
			w.str(p.Type)
			w.str(p.Name)
			w.bool(p.Default)
		}
		w.str(r.Key)
		w.i64(int64(math.Float64bits(r.Value)))
		w.bool(r.Remove)
	case *Transaction:
		w.str(r.TransactionalID)
		w.i64(r.ProducerID)
		w.i64(r.PrevProducerID)
		w.i16(r.ProducerEpoch)
		w.i16(r.LastProducerEpoch)
		w.i32(r.TimeoutMs)
		w.i8(int8(r.State))
		w.count(len(r.Partitions), r.Partitions == nil)
		for _, tp := range r.Partitions {
			w.str(tp.Topic)
			w.i32(tp.Partition)
		}
		w.i64(r.TxnStartMs)
		w.i64(r.LastUpdateMs)
		w.i32(r.CoordinatorEpoch)
		w.i8(r.TxnVersion)
		w.i64(r.NextProducerID)
	case *TxnOffsetCommit:
		w.str(r.TransactionalID)
		w.i64(r.ProducerID)
		w.i16(r.ProducerEpoch)
		w.str(r.Group)
		w.count(len(r.Offsets), r.Offsets == nil)
		for _, o := range r.Offsets {
			w.str(o.Topic)
			w.i32(o.Partition)
			w.i64(o.Offset)
			w.i32(o.LeaderEpoch)
			w.str(o.Metadata)
			w.i64(o.CommitTimeMs)
		}
	case *SharePartitionState:
		encodeSharePartition(w, r)
	default:
		if !encodeShareGroup(w, rec) {
			return fmt.Errorf("unsupported record implementation %T", rec)
		}
	}
	return nil
}

// recordVersionKnown reports whether a record type has version ver > 0:
// version 1 of the types that gained a field, version 2 of a consumer
// group's records (its regex resolutions).
func recordVersionKnown(typ RecordType, ver int16) bool {
	switch typ {
	case TypeConsumerGroup, TypeConsumerGroupDelta:
		return ver == 1 || ver == 2
	case TypeGroupGeneration, TypeCreateTopic, TypeAddPartitions, TypePartitionChange:
		return ver == 1
	}
	return false
}

func decodeBody(r *reader, typ RecordType, ver int16) (Record, error) {
	if ver != 0 && !recordVersionKnown(typ, ver) {
		return nil, fmt.Errorf("unsupported version %d", ver)
	}
	var rec Record
	switch typ {
	case TypeClusterID:
		rec = &ClusterID{ID: r.str()}
	case TypeFeatureLevel:
		rec = &FeatureLevel{Name: r.str(), Level: r.i16()}
	case TypeRegisterBroker:
		x := &RegisterBroker{BrokerID: r.i32(), IncarnationID: r.uuid(), BrokerEpoch: r.i64()}
		if n, ok := r.count(6); ok {
			x.Endpoints = make([]Endpoint, n)
			for i := range x.Endpoints {
				x.Endpoints[i] = Endpoint{Listener: r.str(), Host: r.str(), Port: r.u16(), SecurityProtocol: r.i16()}
			}
		}
		x.Rack = r.str()
		x.Fenced = r.bool()
		x.InControlledShutdown = r.bool()
		rec = x
	case TypeUnregisterBroker:
		rec = &UnregisterBroker{BrokerID: r.i32(), BrokerEpoch: r.i64()}
	case TypeFenceBroker:
		rec = &FenceBroker{BrokerID: r.i32(), BrokerEpoch: r.i64()}
	case TypeUnfenceBroker:
		rec = &UnfenceBroker{BrokerID: r.i32(), BrokerEpoch: r.i64()}
	case TypeBrokerShutdown:
		rec = &BrokerShutdown{BrokerID: r.i32(), BrokerEpoch: r.i64(), InControlledShutdown: r.bool()}
	case TypeOfflineReplicas:
		x := &OfflineReplicas{BrokerID: r.i32(), BrokerEpoch: r.i64()}
		if n, ok := r.count(20); ok && n > 0 {
			x.Replicas = make([]ReplicaRef, n)
			for i := range x.Replicas {
				x.Replicas[i] = ReplicaRef{TopicID: r.uuid(), Partition: r.i32()}
			}
		}
		rec = x
	case TypeCreateTopic:
		rec = &CreateTopic{Name: r.str(), ID: r.uuid(), Configs: r.strMap(), Partitions: r.partitions(ver)}
	case TypeAddPartitions:
		rec = &AddPartitions{TopicID: r.uuid(), Partitions: r.partitions(ver)}
	case TypePartitionChange:
		x := &PartitionChange{TopicID: r.uuid(), Partition: r.i32(), Leader: r.i32(), ISR: r.int32s(), Replicas: r.int32s()}
		if ver >= 1 {
			x.ELR, x.LastKnownELR = r.int32s(), r.int32s()
			if x.ELR == nil && x.LastKnownELR == nil {
				// Version 1 exists to carry them: the encoder never writes
				// both null, so a re-encoding would differ.
				return nil, errors.New("PartitionChange v1 without ELR fields")
			}
		}
		rec = x
	case TypePartitionReassignment:
		rec = &PartitionReassignment{TopicID: r.uuid(), Partition: r.i32(), Adding: r.int32s(), Removing: r.int32s()}
	case TypeRemoveTopic:
		rec = &RemoveTopic{TopicID: r.uuid()}
	case TypeConfig:
		rec = &Config{ResourceType: ConfigResourceType(r.i8()), ResourceName: r.str(), Key: r.str(), Value: r.str(), Delete: r.bool()}
	case TypeCommitOffsets:
		x := &CommitOffsets{Group: r.str()}
		if n, ok := r.count(26); ok {
			x.Offsets = make([]OffsetCommit, n)
			for i := range x.Offsets {
				x.Offsets[i] = OffsetCommit{Topic: r.str(), Partition: r.i32(), Offset: r.i64(), LeaderEpoch: r.i32(), Metadata: r.str(), CommitTimeMs: r.i64()}
			}
		}
		rec = x
	case TypeDeleteOffsets:
		x := &DeleteOffsets{Group: r.str()}
		if n, ok := r.count(5); ok {
			x.Partitions = make([]TopicPartition, n)
			for i := range x.Partitions {
				x.Partitions[i] = TopicPartition{Topic: r.str(), Partition: r.i32()}
			}
		}
		rec = x
	case TypeDeleteGroup:
		rec = &DeleteGroup{Group: r.str()}
	case TypeGroupGeneration:
		x := &GroupGeneration{Group: r.str(), Generation: r.i32(), ProtocolType: r.str(), Protocol: r.str(), Leader: r.str()}
		if n, ok := r.count(2); ok {
			x.Members = make([]GroupMember, n)
			for i := range x.Members {
				x.Members[i] = GroupMember{MemberID: r.str(), InstanceID: r.str()}
			}
		}
		if ver >= 1 {
			x.StateTimestampMs = r.i64()
			if n, ok := r.count(1); ok {
				x.SubscribedTopics = make([]string, n)
				for i := range x.SubscribedTopics {
					x.SubscribedTopics[i] = r.str()
				}
			}
		}
		rec = x
	case TypeConsumerGroup:
		rec = readConsumerGroup(r, ver)
	case TypeRemoveConsumerGroup:
		rec = &RemoveConsumerGroup{Group: r.str()}
	case TypeConsumerGroupDelta:
		rec = readConsumerGroupDelta(r, ver)
	case TypeProducerIds:
		rec = &ProducerIds{BrokerID: r.i32(), BrokerEpoch: r.i64(), NextProducerID: r.i64()}
	case TypeUserScramCredential:
		rec = &UserScramCredential{Name: r.str(), Mechanism: ScramMechanism(r.i8()),
			Salt: []byte(r.str()), StoredKey: []byte(r.str()), ServerKey: []byte(r.str()), Iterations: r.i32()}
	case TypeRemoveUserScramCredential:
		rec = &RemoveUserScramCredential{Name: r.str(), Mechanism: ScramMechanism(r.i8())}
	case TypeAccessControlEntry:
		x := &AccessControlEntry{ID: r.uuid()}
		x.ResourceType = ACLResourceType(r.i8())
		x.ResourceName = r.str()
		x.PatternType = ACLPatternType(r.i8())
		x.Principal, x.Host = r.str(), r.str()
		x.Operation, x.Permission = ACLOperation(r.i8()), ACLPermission(r.i8())
		rec = x
	case TypeRemoveAccessControlEntry:
		rec = &RemoveAccessControlEntry{ID: r.uuid()}
	case TypeVoterDirectory:
		rec = &VoterDirectory{NodeID: r.i32(), DirectoryID: r.uuid(), Remove: r.bool()}
	case TypeClientQuota:
		x := &ClientQuota{}
		if n, ok := r.count(3); ok {
			x.Entity = make(QuotaEntity, n)
			for i := range x.Entity {
				x.Entity[i] = QuotaEntityPart{Type: r.str(), Name: r.str(), Default: r.bool()}
			}
		}
		x.Key = r.str()
		x.Value = math.Float64frombits(uint64(r.i64()))
		x.Remove = r.bool()
		rec = x
	case TypeTransaction:
		x := &Transaction{TransactionalID: r.str(), ProducerID: r.i64(), PrevProducerID: r.i64(),
			ProducerEpoch: r.i16(), LastProducerEpoch: r.i16(), TimeoutMs: r.i32(), State: TxnState(r.i8())}
		if n, ok := r.count(5); ok {
			x.Partitions = make([]TopicPartition, n)
			for i := range x.Partitions {
				x.Partitions[i] = TopicPartition{Topic: r.str(), Partition: r.i32()}
			}
		}
		x.TxnStartMs, x.LastUpdateMs, x.CoordinatorEpoch, x.TxnVersion, x.NextProducerID = r.i64(), r.i64(), r.i32(), r.i8(), r.i64()
		rec = x
	case TypeTxnOffsetCommit:
		x := &TxnOffsetCommit{TransactionalID: r.str(), ProducerID: r.i64(), ProducerEpoch: r.i16(), Group: r.str()}
		if n, ok := r.count(26); ok {
			x.Offsets = make([]OffsetCommit, n)
			for i := range x.Offsets {
				x.Offsets[i] = OffsetCommit{Topic: r.str(), Partition: r.i32(), Offset: r.i64(), LeaderEpoch: r.i32(), Metadata: r.str(), CommitTimeMs: r.i64()}
			}
		}
		rec = x
	case TypeSharePartitionState:
		rec = decodeSharePartition(r)
	default:
		var ok bool
		if rec, ok = decodeShareGroup(r, typ); !ok {
			return nil, errors.New("unknown record type")
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return rec, nil
}

type writer struct{ buf []byte }

func (w *writer) i8(v int8)   { w.buf = append(w.buf, byte(v)) }
func (w *writer) i16(v int16) { w.buf = binary.BigEndian.AppendUint16(w.buf, uint16(v)) }
func (w *writer) u16(v uint16) {
	w.buf = binary.BigEndian.AppendUint16(w.buf, v)
}
func (w *writer) i32(v int32)      { w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(v)) }
func (w *writer) i64(v int64)      { w.buf = binary.BigEndian.AppendUint64(w.buf, uint64(v)) }
func (w *writer) uvarint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *writer) uuid(v [16]byte)  { w.buf = append(w.buf, v[:]...) }
func (w *writer) str(s string)     { w.uvarint(uint64(len(s))); w.buf = append(w.buf, s...) }
func (w *writer) count(n int, null bool) {
	if null {
		w.buf = binary.AppendVarint(w.buf, -1)
		return
	}
	w.buf = binary.AppendVarint(w.buf, int64(n))
}
func (w *writer) bool(v bool) {
	if v {
		w.buf = append(w.buf, 1)
	} else {
		w.buf = append(w.buf, 0)
	}
}

func (w *writer) int32s(v []int32) {
	w.count(len(v), v == nil)
	for _, x := range v {
		w.i32(x)
	}
}

func (w *writer) strMap(m map[string]string) {
	w.count(len(m), m == nil)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w.str(k)
		w.str(m[k])
	}
}

func (w *writer) partitions(ps []PartitionRegistration, ver int16) {
	w.count(len(ps), ps == nil)
	for _, p := range ps {
		w.i32(p.Partition)
		w.int32s(p.Replicas)
		w.int32s(p.ISR)
		w.i32(p.Leader)
		w.i32(p.LeaderEpoch)
		w.i32(p.PartitionEpoch)
		if ver >= 1 {
			w.int32s(p.ELR)
			w.int32s(p.LastKnownELR)
		}
	}
}

// reader decodes fields with a sticky error: after the first failure every
// read returns a zero value, so decode functions read straight through and
// check r.err once.
type reader struct {
	buf []byte
	err error
}

var errShort = errors.New("unexpected end of record")

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.buf) {
		r.err = errShort
		return nil
	}
	b := r.buf[:n]
	r.buf = r.buf[n:]
	return b
}

func (r *reader) i8() int8 {
	if b := r.take(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *reader) i16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) u16() uint16 { return uint16(r.i16()) }

func (r *reader) i32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) i64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) uuid() (id [16]byte) {
	if b := r.take(16); b != nil {
		copy(id[:], b)
	}
	return id
}

func (r *reader) bool() bool {
	b := r.take(1)
	if b == nil {
		return false
	}
	switch b[0] {
	case 0:
		return false
	case 1:
		return true
	}
	r.err = fmt.Errorf("bool byte %d is neither 0 nor 1", b[0])
	return false
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		r.err = errors.New("malformed uvarint")
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

func (r *reader) str() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.buf)) {
		r.err = fmt.Errorf("string of %d bytes, only %d left", n, len(r.buf))
		return ""
	}
	return string(r.take(int(n)))
}

// count reads a nullable element count and checks that n elements of at
// least minSize bytes each fit in what is left, which bounds the allocation
// the caller makes by the input's length. ok is false for null or on error.
func (r *reader) count(minSize int) (n int, ok bool) {
	if r.err != nil {
		return 0, false
	}
	v, k := binary.Varint(r.buf)
	if k <= 0 {
		r.err = errors.New("malformed count")
		return 0, false
	}
	r.buf = r.buf[k:]
	if v == -1 {
		return 0, false
	}
	if v < 0 || v > math.MaxInt32 || uint64(v)*uint64(minSize) > uint64(len(r.buf)) {
		r.err = fmt.Errorf("count %d does not fit in %d bytes", v, len(r.buf))
		return 0, false
	}
	return int(v), true
}

func (r *reader) int32s() []int32 {
	n, ok := r.count(4)
	if !ok {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = r.i32()
	}
	return out
}

func (r *reader) strMap() map[string]string {
	n, ok := r.count(2)
	if !ok {
		return nil
	}
	m := make(map[string]string, n)
	prev := ""
	for i := range n {
		k, v := r.str(), r.str()
		if r.err != nil {
			return nil
		}
		if i > 0 && k <= prev {
			r.err = fmt.Errorf("map keys not strictly sorted at %q", k)
			return nil
		}
		prev = k
		m[k] = v
	}
	return m
}

func (r *reader) partitions(ver int16) []PartitionRegistration {
	// Partition + two counts + leader + two epochs: at least 18 bytes.
	n, ok := r.count(18)
	if !ok {
		return nil
	}
	out := make([]PartitionRegistration, n)
	for i := range out {
		out[i] = PartitionRegistration{Partition: r.i32(), Replicas: r.int32s(), ISR: r.int32s(), Leader: r.i32(), LeaderEpoch: r.i32(), PartitionEpoch: r.i32()}
		if ver >= 1 {
			out[i].ELR, out[i].LastKnownELR = r.int32s(), r.int32s()
		}
	}
	return out
}
